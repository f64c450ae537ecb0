"""SentencePiece-style BPE from a `tokenizer.json` (Mistral, Llama 2).

A Hugging Face `BPE` model with `byte_fallback` and a `▁` metaspace made by
the normalizer (`Prepend("▁")` + `Replace(" ", "▁")`: Mistral 7B v0.1) or
by a `Metaspace("▁", split=false)` pre-tokenizer (Mistral 7B v0.3): the
line is one word of characters, merged by the ranks of the merges list on
the engine of `engines.char_bpe.CharBPE`; characters missing from the
vocabulary become their `<0xXX>` byte tokens. The ids are HF `tokenizers`'
(for Mistral v0.3 they differ from its `.model`'s on lines that start
with whitespace: the Metaspace adds no "▁" in front of a text that starts
with one, sentencepiece's dummy prefix always goes in).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.engines.char_bpe import CharBPE
from tf_input.tokenizers.hf import added_tokens
from tf_input.tokenizers.hf import decoders
from tf_input.tokenizers.hf import pre_tokenizers
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import require
from tf_input.tokenizers.json_file_tokenizer import JsonFileTokenizer
from tf_input.tokenizers.json_file_tokenizer import added_token_entries
from tf_input.tokenizers.json_file_tokenizer import token_table

_MODEL = "`model`"


def check_supported(data):
    """The file's Metaspace (or None), after checking everything else this
    engine needs; a `SpecError` names what it does not do."""
    model = require(data, "model", "tokenizer.json")
    metaspace = _metaspace(data.get("pre_tokenizer"))
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key):
            raise SpecError(f"a BPE {key} ({model[key]!r}) is not supported")
    if model.get("ignore_merges"):
        raise SpecError("a character BPE with ignore_merges is not supported")
    if not model.get("byte_fallback") and not model.get("fuse_unk"):
        raise SpecError(
            "a character BPE without byte_fallback must have fuse_unk (one "
            "unk token for a run of unknown characters)"
        )
    return metaspace


def _metaspace(spec):
    """The Metaspace of a pre-tokenizer that is none or one
    `Metaspace("▁", split=false)`; else a `SpecError`."""
    try:
        parts = pre_tokenizers.parse(spec)
    except SpecError:
        parts = None
    if parts == []:
        return None
    if (
        parts is not None
        and len(parts) == 1
        and isinstance(parts[0], pre_tokenizers.Metaspace)
        and not parts[0].split
    ):
        return parts[0]
    raise SpecError(
        "a SentencePiece-style BPE with the pre_tokenizer "
        f"{excerpt(spec)} is not supported (only none, or "
        "Metaspace('▁', split=false)); load its SentencePiece `.model` "
        "instead"
    )


def _vocabulary(model):
    vocabulary = require(model, "vocab", _MODEL)
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise SpecTypeError(
            f"{_MODEL}: a BPE 'vocab' must be a non-empty object from token "
            f"to id. Received: {excerpt(vocabulary)}."
        )
    for token, i in vocabulary.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise SpecError(
                f"{_MODEL}: every BPE 'vocab' id must be an integer >= 0. "
                f"Received: {token!r}: {i!r}."
            )
    return vocabulary


def _merge_ids(merges, vocabulary):
    """int64 `[n, 3]`: (left, right, merged) ids of the merges list."""
    if not isinstance(merges, list):
        raise SpecTypeError(
            f"{_MODEL}: 'merges' must be a list. Received: {excerpt(merges)}."
        )
    out = []
    for n, merge in enumerate(merges):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(part, str) for part in pair)
        ):
            raise SpecError(
                f"merge {n} ({merge!r}) must be 'a b' or a pair of tokens"
            )
        left, right = pair
        if left not in vocabulary or right not in vocabulary:
            raise SpecError(
                f"merge {n} ({merge!r}) names a token that is not in "
                "the vocabulary"
            )
        if left + right not in vocabulary:
            raise SpecError(
                f"merge {n} ({merge!r}) makes {left + right!r}, which is "
                "not in the vocabulary"
            )
        out.append(
            (vocabulary[left], vocabulary[right], vocabulary[left + right])
        )
    return np.array(out, np.int64).reshape([-1, 3])


_BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


@keras.saving.register_keras_serializable(package="tf_input")
class MetaspaceBytePairTokenizer(JsonFileTokenizer):
    """SentencePiece-style BPE from a `tokenizer.json`, id for id as HF.

    Built by `tf_input.load_tokenizer` for a `tokenizer.json` whose model
    is a `BPE` over characters with `byte_fallback` and a `▁` metaspace
    (Mistral 7B v0.1, Llama 2). Core TensorFlow ops only: a SavedModel
    holding it loads with a plain `import tensorflow`. `detokenize` is HF's
    `decode(ids)`. In a `.keras` file the `tokenizer.json` is an asset.

    Args:
        tokenizer_json: str, the text of the `tokenizer.json`.
        add_special_tokens: bool. Add the post-processor's tokens (Mistral:
            `<s>` in front). Defaults to `False`.
        roles: None or a dict from role (`"bos"`, ...) to token.
        split_special_tokens: bool. Special added tokens are plain text.
        templates: None or `{"single": [...], "pair": [...]}`, the
            post-processor's templates (see `BytePairTokenizer`).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string scalar or a `[N]` string batch.

    Returns:
        int32 ids: `[S]` for a scalar, `tf.RaggedTensor` `[N, None]` for a
        batch.
    """

    def _build(self, data):
        self._metaspace = check_supported(data)
        model = data["model"]
        vocabulary = _vocabulary(model)
        merges = _merge_ids(require(model, "merges", _MODEL), vocabulary)
        added = added_token_entries(data, "SentencePiece-style BPE")
        tokens, index = token_table(vocabulary.items(), added)
        byte_fallback = bool(model.get("byte_fallback"))
        byte_ids = None
        if byte_fallback:
            if not all(name in vocabulary for name in _BYTE_TOKENS):
                raise SpecError(
                    "byte_fallback needs the 256 tokens <0x00>..<0xFF> in "
                    "the vocabulary"
                )
            byte_ids = [vocabulary[name] for name in _BYTE_TOKENS]
        unk = model.get("unk_token")
        with tf.init_scope():
            self._normalizer = Normalizer(data.get("normalizer"))
            self._added = added_tokens.Extractor(
                added, self.split_special_tokens, "`added_tokens`"
            )
            self._engine = CharBPE(
                tokens,
                vocabulary,
                merges,
                np.arange(len(merges), dtype=np.int64),
                whole=sorted(vocabulary.values()),
                extra_words=(
                    [added_tokens.placeholder(t["id"]) for t in added],
                    [t["id"] for t in added],
                ),
                byte_ids=byte_ids,
                unk_id=vocabulary.get(unk, 0) if unk else 0,
            )
            self._decoder = decoders.Decoder(data.get("decoder"), tokens)
        return tokens, index, added

    # --- Graph code ---------------------------------------------------------
    def _tokenize_graph(self, texts):
        # HF reads Python strings: invalid UTF-8 as `bytes.decode(...,
        # "replace")` gives it.
        texts = to_valid_utf8(texts)
        segments, per_line = self._added(texts)
        is_token = added_tokens.is_placeholder(segments)
        if self._normalizer:
            segments = tf.where(is_token, segments, self._normalizer(segments))
        if self._metaspace is not None:
            segments = self._metaspace.apply(segments, is_token, per_line)
        values, splits = self._engine.encode(segments)
        return tf.RaggedTensor.from_row_splits(
            values, tf.gather(splits, per_line), validate=False
        )

    def _detokenize_graph(self, ids):
        return self._decoder(ids)
