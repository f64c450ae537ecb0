"""Hugging Face decoders: the one `type` dispatch, and their graphs.

`parse` reads a `decoder` description (a `Sequence` flattened) and checks
each type; each tokenizer then takes the chains it runs:

* `ByteLevel` alone: byte-level BPE (`BytePairTokenizer` decodes it);
* `Metaspace` (the pre-tokenizer of the same name, re-exported here):
  SentencePiece unigram files;
* the SentencePiece-style BPE chain `SENTENCEPIECE_BPE` (Replace "▁" by
  " ", ByteFallback, Fuse, Strip one leading space): `ByteFallbackDecoder`;
* `WordPiece` (`##` continuations): BERT files.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input.tokenizers._utf8 import VALID_UTF8
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import SPACE
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import Metaspace
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import unsupported

__all__ = [
    "SENTENCEPIECE_BPE",
    "ByteFallbackDecoder",
    "Metaspace",
    "is_byte_level",
    "parse",
]

_TYPES = (
    "ByteLevel",
    "Metaspace",
    "Replace",
    "ByteFallback",
    "Fuse",
    "Strip",
    "WordPiece",
)
SENTENCEPIECE_BPE = [
    {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
    {"type": "ByteFallback"},
    {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0},
]


def parse(spec, where="`decoder`"):
    """The parts of a `decoder` description: `Metaspace` objects for
    `Metaspace` parts, the dicts themselves for the others."""
    out = []
    for part in flatten(spec, "decoder", where):
        kind = part["type"]
        if kind not in _TYPES:
            raise unsupported(
                where, "decoder", kind, ", ".join(_TYPES) + " and Sequence"
            )
        out.append(
            Metaspace.from_spec(part, where) if kind == "Metaspace" else part
        )
    return out


def is_byte_level(parts):
    """True for a non-empty chain of ByteLevel decoders only."""
    return bool(parts) and all(
        isinstance(p, dict) and p["type"] == "ByteLevel" for p in parts
    )


class ByteFallbackDecoder:
    """The `SENTENCEPIECE_BPE` chain over ids: "▁" becomes " ", a run of
    `<0xXX>` byte tokens is its text if it is valid UTF-8, else one U+FFFD
    per byte, and one leading space goes. Build it inside `tf.init_scope`.

    Args:
        tokens: list of str, the token of each id.
        byte_fallback: bool. The `<0xXX>` tokens are bytes.
    """

    def __init__(self, tokens, byte_fallback):
        names = {f"<0x{b:02X}>": b for b in range(256)}
        texts, is_byte = [], []
        for token in tokens:
            if byte_fallback and token in names:
                texts.append(bytes([names[token]]))
                is_byte.append(True)
            else:
                texts.append(token.replace(SPACE, " ").encode())
                is_byte.append(False)
        self.texts = tf.constant(texts, tf.string)
        self.is_byte = tf.constant(is_byte, tf.bool)

    def __call__(self, ids):
        """`[N, None]` int32 ragged ids -> `[N]` strings."""
        values = ids.values
        rows = ids.value_rowids()
        texts = tf.gather(self.texts, values)
        is_byte = tf.gather(self.is_byte, values)
        count = tf.size(values)
        previous = tf.concat([[False], is_byte[:-1]], 0)[:count]
        same_row = tf.concat([[False], rows[1:] == rows[:-1]], 0)[:count]
        run_start = is_byte & ~(previous & same_row)
        run = tf.cumsum(tf.cast(run_start, tf.int32)) - 1
        num_runs = tf.reduce_sum(tf.cast(run_start, tf.int32))
        run_text = tf.strings.unsorted_segment_join(
            tf.where(is_byte, texts, ""), tf.maximum(run, 0), num_runs + 1
        )
        run_valid = tf.strings.regex_full_match(run_text, VALID_UTF8)
        bad = is_byte & ~tf.gather(run_valid, tf.maximum(run, 0))
        texts = tf.where(bad, "\ufffd".encode(), texts)
        joined = tf.strings.reduce_join(ids.with_flat_values(texts), axis=1)
        return tf.strings.regex_replace(joined, "^ ", "")
