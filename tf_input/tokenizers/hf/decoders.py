"""Hugging Face decoders: the one `type` dispatch, and the chain's graph.

HF's `decode(ids)` takes the token of each id, runs the decoder on that
list of strings and joins what comes out (with no decoder it joins the
tokens with spaces). A decoder maps a list of tokens to a new list, and a
`Sequence` runs its decoders one after the other on the same list, so
some see tokens that earlier ones made (after `Fuse`, one per line).
`Decoder` compiles any chain of HF's types (`Replace`, `ByteFallback`,
`Fuse`, `Strip`, `Metaspace`, `ByteLevel`, `WordPiece`, `CTC`,
`BPEDecoder`, in any order) into core TensorFlow ops on a ragged
`[N, None]` tensor of tokens, one step per decoder, each as HF's
`decode_chain`. `parse` reads and checks the types of a description, for
the tokenizers that take only some chains.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import marks
from tf_input.tokenizers._byte_level import ALPHABET
from tf_input.tokenizers._utf8 import VALID_UTF8
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.engines.bert_tables import DECODER_CLEANUP
from tf_input.tokenizers.engines.bert_tables import literal
from tf_input.tokenizers.hf.normalizers import replacement
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import SPACE
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import Metaspace
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import check_flag
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import unsupported

__all__ = ["Decoder", "Metaspace", "is_byte_level", "parse"]

_TYPES = (
    "ByteLevel",
    "Metaspace",
    "Replace",
    "ByteFallback",
    "Fuse",
    "Strip",
    "WordPiece",
    "CTC",
    "BPEDecoder",
)
# HF's `<0xXX>` test: six bytes, and Rust's `u8::from_str_radix(_, 16)`
# on the middle two, which takes a leading "+".
_BYTE_TOKEN = r"<0x(?:[0-9A-Fa-f]{2}|\+[0-9A-Fa-f])>"
_BYTES = [bytes([b]) for b in range(256)]
# RE2's largest repeat count (a Strip's `start` / `stop`).
_MAX_REPEAT = 1000


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


class Decoder:
    """A compiled `decoder` description: HF's `decode` over ids.

    Build it inside `tf.init_scope` (it holds constants).

    Args:
        spec: None (no decoder: tokens joined by spaces) or a dict as in a
            `tokenizer.json`.
        tokens: list of str, the token of each id (added tokens too).
        where: str, for error messages.

    Raises:
        SpecError: for an unknown type or a field this does not support,
            naming it.
    """

    def __init__(self, spec, tokens, where="`decoder`"):
        self.steps = [_step(part, where) for part in parse(spec, where)]
        self.separator = "" if spec is not None else " "
        self.tokens = tf.constant([t.encode() for t in tokens], tf.string)

    def __call__(self, ids):
        """`[N, None]` int32 ragged ids (int64 row splits) -> `[N]`
        strings."""
        tokens = ids.with_flat_values(tf.gather(self.tokens, ids.flat_values))
        for step in self.steps:
            tokens = step(tokens)
        return tf.strings.reduce_join(tokens, axis=1, separator=self.separator)


def _step(part, where):
    """The graph of one decoder: ragged `[N, None]` tokens -> ragged
    `[N, None]` tokens."""
    if isinstance(part, Metaspace):
        return lambda tokens: _metaspace(tokens, part.prepend_scheme)
    kind = part["type"]
    if kind == "Replace":
        op = replacement(part, where)
        if op is None:
            return lambda tokens: tokens
        return lambda tokens: tokens.with_flat_values(op(tokens.flat_values))
    if kind == "ByteFallback":
        return _byte_fallback
    if kind == "Fuse":
        return _fuse
    if kind == "ByteLevel":
        return _byte_level
    if kind == "Strip":
        return _strip(part, where)
    if kind == "WordPiece":
        prefix = _text(part, "prefix", "##", where, empty=True)
        cleanup = check_flag(part, "cleanup", True, where)
        return lambda tokens: _word_piece(tokens, prefix, cleanup)
    if kind == "CTC":
        pad = _text(part, "pad_token", "<pad>", where, empty=True)
        delimiter = _text(part, "word_delimiter_token", "|", where)
        cleanup = check_flag(part, "cleanup", True, where)
        return lambda tokens: _ctc(tokens, pad, delimiter, cleanup)
    suffix = _text(part, "suffix", "</w>", where)  # BPEDecoder
    return lambda tokens: _bpe_suffix(tokens, suffix)


def _text(part, key, default, where, empty=False):
    value = part.get(key, default)
    if not isinstance(value, str) or not (value or empty):
        need = "a string" if empty else "a non-empty string"
        raise SpecError(
            f"{where}: the {part['type']} decoder's {key!r} must be {need}. "
            f"Received: {excerpt(part)}."
        )
    return value


# --- Steps ------------------------------------------------------------------
def _row_marks(tokens):
    """`(first, last)`: bool `[T]`, the first and the last token of each
    row."""
    size = tf.size(tokens.flat_values, out_type=tf.int64)
    splits = tokens.row_splits
    nonempty = splits[1:] > splits[:-1]
    first = marks(tf.boolean_mask(splits[:-1], nonempty), size + 1)[:-1] > 0
    last = marks(tf.boolean_mask(splits[1:] - 1, nonempty), size + 1)[:-1] > 0
    return first, last


def _one_per_row(texts):
    """`[N]` strings -> ragged `[N, 1]`."""
    count = tf.size(texts, out_type=tf.int64)
    return tf.RaggedTensor.from_row_splits(
        texts, tf.range(count + 1), validate=False
    )


def _fuse(tokens):
    return _one_per_row(tf.strings.reduce_join(tokens, axis=1))


def _replace_literal(texts, old, new):
    return tf.strings.regex_replace(
        texts, literal(old), new.replace("\\", "\\\\")
    )


def _cleanup(texts):
    """WordPiece's `cleanup` (CTC's too)."""
    for old, new in DECODER_CLEANUP:
        texts = _replace_literal(texts, old, new)
    return texts


def _metaspace(tokens, prepend_scheme):
    """ "▁" becomes " "; the first token of a line loses all of its "▁"
    (unless the scheme is "never")."""
    flat = tokens.flat_values
    texts = tf.strings.regex_replace(flat, SPACE, " ")
    if prepend_scheme != "never":
        first, _ = _row_marks(tokens)
        texts = tf.where(
            first, tf.strings.regex_replace(flat, SPACE, ""), texts
        )
    return tokens.with_flat_values(texts)


def _byte_fallback(tokens):
    """A run of `<0xXX>` tokens becomes one token, its bytes, if they are
    valid UTF-8, else one U+FFFD per byte token."""
    flat = tokens.flat_values
    is_byte = tf.strings.regex_full_match(flat, _BYTE_TOKEN)
    digits = tf.io.decode_raw(
        tf.strings.substr(tf.where(is_byte, flat, "<0x00>"), 3, 2),
        tf.uint8,
        fixed_length=2,
    )
    digits = tf.cast(digits, tf.int32)
    # "0"-"9" are 48-57, "A"-"F" 65-70, "a"-"f" 97-102, "+" 43.
    value = tf.where(digits < 58, digits - 48, (digits | 32) - 87)
    high = tf.where(digits[:, 0] == ord("+"), 0, value[:, 0])
    text = tf.gather(_BYTES, high * 16 + value[:, 1])
    rows = tokens.value_rowids()
    continues = tf.concat(
        [[False], is_byte[1:] & is_byte[:-1] & (rows[1:] == rows[:-1])], 0
    )
    run_start = is_byte & ~continues
    run = tf.maximum(tf.cumsum(tf.cast(run_start, tf.int32)) - 1, 0)
    num_runs = tf.reduce_sum(tf.cast(run_start, tf.int32))
    run_text = tf.strings.unsorted_segment_join(
        tf.where(is_byte, text, ""), run, num_runs + 1
    )
    valid = tf.gather(tf.strings.regex_full_match(run_text, VALID_UTF8), run)
    out = tf.where(
        is_byte, tf.where(valid, tf.gather(run_text, run), "\ufffd"), flat
    )
    keep = ~is_byte | ~valid | run_start
    return tf.ragged.boolean_mask(
        tokens.with_flat_values(out), tokens.with_flat_values(keep)
    )


def _alphabet_bytes():
    """`[code point] -> byte` of GPT-2's byte alphabet, -1 elsewhere."""
    out = [-1] * (max(map(ord, ALPHABET)) + 1)
    for byte, char in enumerate(ALPHABET):
        out[ord(char)] = byte
    return out


_TO_BYTE = _alphabet_bytes()


def _byte_level(tokens):
    """Each token in GPT-2's byte alphabet is its bytes (another token is
    its own UTF-8); a line's bytes are then one token, invalid UTF-8
    replaced as Rust's `from_utf8_lossy` does."""
    flat = tokens.flat_values
    chars = tf.strings.unicode_decode(flat, "UTF-8")
    code = chars.flat_values
    byte = tf.gather(
        tf.constant(_TO_BYTE + [-1], tf.int32),
        tf.minimum(code, len(_TO_BYTE)),
    )
    byte = chars.with_flat_values(byte)
    in_alphabet = tf.reduce_all(byte >= 0, axis=1)
    as_bytes = tf.strings.reduce_join(
        byte.with_flat_values(
            tf.gather(_BYTES, tf.maximum(byte.flat_values, 0))
        ),
        axis=1,
    )
    texts = tf.where(in_alphabet, as_bytes, flat)
    return _one_per_row(
        to_valid_utf8(tf.strings.reduce_join(tokens.with_flat_values(texts), 1))
    )


def _strip(part, where):
    content = part.get("content", " ")
    start, stop = part.get("start", 0), part.get("stop", 0)
    if not (
        isinstance(content, str)
        and len(content) == 1
        and all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0
            for n in (start, stop)
        )
    ):
        raise SpecError(
            f"{where}: a Strip decoder needs one character 'content' and "
            f"integers 'start' and 'stop' >= 0. Received: {excerpt(part)}."
        )
    if max(start, stop) > _MAX_REPEAT:
        raise SpecError(
            f"{where}: a Strip decoder of more than {_MAX_REPEAT} "
            f"characters is not supported. Received: {excerpt(part)}."
        )
    char = literal(content)
    patterns = []
    if start:
        patterns.append(f"^{char}{{0,{start}}}")
    if stop:
        patterns.append(f"{char}{{0,{stop}}}$")

    def strip(tokens):
        texts = tokens.flat_values
        for pattern in patterns:
            texts = tf.strings.regex_replace(texts, pattern, "")
        return tokens.with_flat_values(texts)

    return strip


def _word_piece(tokens, prefix, cleanup):
    """After the first token of a line, a token loses its `prefix` or
    gets a space in front; then `cleanup` on each."""
    flat = tokens.flat_values
    first, _ = _row_marks(tokens)
    continues = tf.strings.substr(flat, 0, len(prefix.encode())) == prefix
    rest = tf.strings.regex_replace(
        flat, "^" + literal(prefix), "", replace_global=False
    )
    texts = tf.where(
        first, flat, tf.where(continues, rest, tf.strings.join([" ", flat]))
    )
    return tokens.with_flat_values(_cleanup(texts) if cleanup else texts)


def _ctc(tokens, pad, delimiter, cleanup):
    """Repeats of a token go, then the pad token; with `cleanup`,
    WordPiece's cleanup and the delimiter as a space; empty tokens go."""
    flat = tokens.flat_values
    rows = tokens.value_rowids()
    repeat = tf.concat(
        [[False], (flat[1:] == flat[:-1]) & (rows[1:] == rows[:-1])], 0
    )
    texts = _replace_literal(flat, pad, "") if pad else flat
    if cleanup:
        texts = _replace_literal(_cleanup(texts), delimiter, " ")
    keep = ~repeat & (tf.strings.length(texts) > 0)
    return tf.ragged.boolean_mask(
        tokens.with_flat_values(texts), tokens.with_flat_values(keep)
    )


def _bpe_suffix(tokens, suffix):
    """The suffix becomes a space, or nothing in a line's last token."""
    flat = tokens.flat_values
    _, last = _row_marks(tokens)
    texts = tf.where(
        last,
        _replace_literal(flat, suffix, ""),
        _replace_literal(flat, suffix, " "),
    )
    return tokens.with_flat_values(texts)
