"""SentencePiece-style BPE from a `tokenizer.json` (Mistral, Llama 2).

A Hugging Face `BPE` model with `byte_fallback` and a `▁` metaspace made by
the normalizer (`Prepend("▁")` + `Replace(" ", "▁")`: Mistral 7B v0.1) or
by a `Metaspace("▁", split=false)` pre-tokenizer (Mistral 7B v0.3): the
line is one word of characters, merged by the ranks of the merges list on
the engine of `_bpe.CharBPE`; characters missing from the vocabulary
become their `<0xXX>` byte tokens. The ids are HF `tokenizers`' (for
Mistral v0.3 they differ from its `.model`'s on lines that start with
whitespace: the Metaspace adds no "▁" in front of a text that starts with
one, sentencepiece's dummy prefix always goes in).
"""

from __future__ import annotations

import json

import keras
import numpy as np
import tensorflow as tf

from tf_input.tokenizers import _added_tokens
from tf_input.tokenizers._normalizers import Normalizer
from tf_input.tokenizers._templates import parse_templates
from tf_input.tokenizers.base import traced_graphs
from tf_input.tokenizers.byte_pair import _to_valid_utf8
from tf_input.tokenizers.sentencepiece._bpe import _VALID_UTF8
from tf_input.tokenizers.sentencepiece._bpe import CharBPE
from tf_input.tokenizers.sentencepiece._json_file import JsonFileTokenizer

_SPACE = "\u2581"


def check_supported(data):
    """Raises ValueError naming what this engine does not do, else None."""
    model = data["model"]
    pre = data.get("pre_tokenizer")
    if pre is not None and _metaspace_scheme(pre) is None:
        raise ValueError(
            "a SentencePiece-style BPE with the pre_tokenizer "
            f"{json.dumps(pre)[:200]} is not supported yet (only none, or "
            "Metaspace('▁', split=false)); load its SentencePiece `.model` "
            "instead"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key):
            raise ValueError(f"a BPE {key} ({model[key]!r}) is not supported")
    if model.get("ignore_merges"):
        raise ValueError("a character BPE with ignore_merges is not supported")
    if not model.get("byte_fallback") and not model.get("fuse_unk"):
        raise ValueError(
            "a character BPE without byte_fallback must have fuse_unk (one "
            "unk token for a run of unknown characters)"
        )
    decoder = data.get("decoder")
    wanted = [
        {"type": "Replace", "pattern": {"String": _SPACE}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ]
    if decoder != {"type": "Sequence", "decoders": wanted}:
        raise ValueError(
            f"the decoder {json.dumps(decoder)[:200]} is not supported for a "
            "SentencePiece-style BPE (only Replace('▁', ' '), ByteFallback, "
            "Fuse, Strip(' ', 1, 0))"
        )


def _metaspace_scheme(pre):
    """The prepend scheme of a `Metaspace("▁", split=false)` pre-tokenizer
    ("first", "always", "never"), else None."""
    if not isinstance(pre, dict) or pre.get("type") != "Metaspace":
        return None
    scheme = pre.get("prepend_scheme", "always")
    if (
        pre.get("replacement") != _SPACE
        or pre.get("split", True)
        or scheme not in ("first", "always", "never")
    ):
        return None
    return scheme


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

    def _setup(self, tokenizer_json):
        self._json_text = tokenizer_json
        roles, templates = self._roles_arg, self._templates_arg
        data = json.loads(tokenizer_json)
        check_supported(data)
        model = data["model"]
        vocabulary = model["vocab"]
        added = _added_tokens.check_added_tokens(
            data.get("added_tokens") or [], "`added_tokens`"
        )
        size = max([*vocabulary.values(), *(t["id"] for t in added)]) + 1
        tokens = [""] * size
        for token, i in vocabulary.items():
            tokens[i] = token
        for t in added:
            tokens[t["id"]] = t["content"]
        self._tokens = tokens
        self._index = {**vocabulary, **{t["content"]: t["id"] for t in added}}
        # What `detokenize(..., skip_special_tokens=True)` leaves out.
        self._skipped = [t["id"] for t in added if t["special"]]
        with tf.init_scope():
            self._build(model, vocabulary, added, tokens)
        self._roles = {r: self._index[t] for r, t in (roles or {}).items()}
        if templates is not None:
            parsed, self._start_ids, self._end_ids = parse_templates(
                templates, size
            )
            self._templates = parsed

    def _build(self, model, vocabulary, added, tokens):
        merges = []
        for n, merge in enumerate(model["merges"]):
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            if left not in vocabulary or right not in vocabulary:
                raise ValueError(
                    f"merge {n} ({merge!r}) names a token that is not in "
                    "the vocabulary"
                )
            if left + right not in vocabulary:
                raise ValueError(
                    f"merge {n} ({merge!r}) makes {left + right!r}, which is "
                    "not in the vocabulary"
                )
            merges.append(
                (vocabulary[left], vocabulary[right], vocabulary[left + right])
            )
        self._normalizer = Normalizer(self._spec("normalizer"))
        pre = self._spec("pre_tokenizer")
        self._metaspace = None if pre is None else _metaspace_scheme(pre)
        self._added = _added_tokens.Extractor(
            [t for t in added if not t["normalized"]],
            self.split_special_tokens,
            "`added_tokens`",
        )
        if any(t["normalized"] for t in added):
            raise ValueError(
                "added tokens with normalized=True are not supported for a "
                "SentencePiece-style BPE"
            )
        placeholders = [_added_tokens.placeholder(t["id"]) for t in added]
        byte_ids = None
        names = [f"<0x{b:02X}>" for b in range(256)]
        if model.get("byte_fallback"):
            if not all(n in vocabulary for n in names):
                raise ValueError(
                    "byte_fallback needs the 256 tokens <0x00>..<0xFF> in "
                    "the vocabulary"
                )
            byte_ids = [vocabulary[n] for n in names]
        unk = model.get("unk_token")
        self._engine = CharBPE(
            tokens,
            vocabulary,
            np.array(merges, np.int64).reshape([-1, 3]),
            np.arange(len(merges), dtype=np.int64),
            whole=sorted(vocabulary.values()),
            extra_words=(placeholders, [t["id"] for t in added]),
            byte_ids=byte_ids,
            unk_id=vocabulary.get(unk, 0) if unk else 0,
        )
        # Decoding: each token's text with "▁" as a space; byte tokens are
        # their byte.
        texts, is_byte = [], []
        byte_of = {n: b for b, n in enumerate(names)}
        for i, token in enumerate(tokens):
            if model.get("byte_fallback") and token in byte_of:
                texts.append(bytes([byte_of[token]]))
                is_byte.append(True)
            else:
                texts.append(token.replace(_SPACE, " ").encode())
                is_byte.append(False)
        self._texts = tf.constant(texts, tf.string)
        self._is_byte = tf.constant(is_byte, tf.bool)
        self._graphs = traced_graphs(
            self._tokenize_graph, self._detokenize_graph
        )

    def _spec(self, key):
        return json.loads(self._json_text).get(key)

    # --- Graph code ---------------------------------------------------------
    def _tokenize_batch(self, texts):
        self._check()
        return self._graphs.tokenize(texts)

    def _tokenize_graph(self, texts):
        # HF reads Python strings: invalid UTF-8 as `bytes.decode(...,
        # "replace")` gives it.
        texts = _to_valid_utf8(texts)
        segments, per_line = self._added(texts)
        is_token = _added_tokens.is_placeholder(segments)
        if self._normalizer:
            segments = tf.where(is_token, segments, self._normalizer(segments))
        if self._metaspace is not None:
            segments = self._apply_metaspace(segments, is_token, per_line)
        values, splits = self._engine.encode(segments)
        return tf.RaggedTensor.from_row_splits(
            values, tf.gather(splits, per_line), validate=False
        )

    def _apply_metaspace(self, segments, is_token, per_line):
        """HF's Metaspace("▁", split=false) on the text segments: spaces
        become "▁", and a "▁" goes in front of a non-empty segment that
        does not start with one: every segment ("always"), or only one at
        the start of its line ("first")."""
        spaced = tf.strings.regex_replace(segments, " ", _SPACE)
        if self._metaspace != "never":
            prepend = (
                ~is_token
                & (tf.strings.length(spaced) > 0)
                & (tf.strings.substr(spaced, 0, len(_SPACE.encode())) != _SPACE)
            )
            if self._metaspace == "first":
                first = tf.scatter_nd(
                    per_line[:-1, None],
                    tf.ones_like(per_line[:-1], tf.int32),
                    tf.shape(segments, out_type=tf.int64),
                )
                prepend = prepend & (first > 0)
            spaced = tf.where(prepend, _SPACE + spaced, spaced)
        return tf.where(is_token, segments, spaced)

    def _detokenize_batch(self, ids):
        self._check()
        ids = tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)
        return self._graphs.detokenize(ids)

    def _detokenize_graph(self, ids):
        """HF's Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0):
        a run of byte tokens is its text if it is valid UTF-8, else one
        U+FFFD per byte; then one leading space goes."""
        values = ids.values
        rows = ids.value_rowids()
        texts = tf.gather(self._texts, values)
        is_byte = tf.gather(self._is_byte, values)
        count = tf.size(values)
        previous = tf.concat([[False], is_byte[:-1]], 0)[:count]
        same_row = tf.concat([[False], rows[1:] == rows[:-1]], 0)[:count]
        run_start = is_byte & ~(previous & same_row)
        run = tf.cumsum(tf.cast(run_start, tf.int32)) - 1
        num_runs = tf.reduce_sum(tf.cast(run_start, tf.int32))
        run_text = tf.strings.unsorted_segment_join(
            tf.where(is_byte, texts, ""), tf.maximum(run, 0), num_runs + 1
        )
        run_valid = tf.strings.regex_full_match(run_text, _VALID_UTF8)
        bad = is_byte & ~tf.gather(run_valid, tf.maximum(run, 0))
        texts = tf.where(bad, "\ufffd".encode(), texts)
        joined = tf.strings.reduce_join(ids.with_flat_values(texts), axis=1)
        return tf.strings.regex_replace(joined, "^ ", "")

    # --- Python-side API ----------------------------------------------------
    def get_vocabulary(self):
        return list(self._tokens)

    def token_to_id(self, token):
        if token not in self._index:
            raise ValueError(f"{token!r} is not in the vocabulary.")
        return self._index[token]

    @property
    def special_tokens(self):
        return dict(self._roles)

    def _special_ids(self):
        return self._skipped

    @property
    def uses_core_ops_only(self):
        return True
