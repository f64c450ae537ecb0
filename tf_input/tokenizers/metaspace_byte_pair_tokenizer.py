"""SentencePiece-style BPE from a `tokenizer.json` (Mistral, Llama, Gemma).

A Hugging Face `BPE` model over characters with `byte_fallback` (or
`fuse_unk`) and a `▁` metaspace, in the layouts transformers' converters
write: the "▁" made by the normalizer (`Prepend("▁")` + `Replace(" ",
"▁")`: Mistral 7B v0.1, Llama 2; `Replace` alone: the earlier Gemma) or
by a `Metaspace("▁")` pre-tokenizer (Mistral 7B v0.3; with `split`, the
generic converter), or no "▁" but words cut by a `Split` (Gemma 3:
`Split(" ", MergedWithPrevious)`). Each word (without a pre-tokenizer,
the whole line) is merged by the ranks of the merges list on the engine
of `engines.char_bpe.CharBPE`; a character missing from the vocabulary
becomes its `<0xXX>` byte tokens, which need not all exist: a text that
needs a missing one is an error naming it. Decoding runs the file's
decoder chain (`hf.decoders.Decoder`). The ids are HF `tokenizers'` (for
Mistral v0.3 they differ from its `.model`'s on lines that start with
whitespace: the Metaspace adds no "▁" in front of a text that starts
with one, sentencepiece's dummy prefix always goes in).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers import _offsets
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.engines.char_bpe import CharBPE
from tf_input.tokenizers.hf import added_tokens
from tf_input.tokenizers.hf import decoders
from tf_input.tokenizers.hf import pre_tokenizers
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.normalizers import compose
from tf_input.tokenizers.hf.pre_tokenizers import SPACE
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import require
from tf_input.tokenizers.json_file_tokenizer import JsonFileTokenizer
from tf_input.tokenizers.json_file_tokenizer import added_token_entries
from tf_input.tokenizers.json_file_tokenizer import token_table

_MODEL = "`model`"


def check_model(model):
    """Checks the BPE options this engine needs; a `SpecError` names what
    it does not do."""
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


# HF's Metaspace with `split`: after the "▁"s go in, cut before each one.
_SPLIT_BEFORE_SPACE = {
    "type": "Split",
    "pattern": {"String": SPACE},
    "behavior": "MergedWithNext",
    "invert": False,
}


def pre_tokenization(spec):
    """`(metaspace, words)` of a `pre_tokenizer`: the `Metaspace` that
    puts in the "▁"s (or None), and the `PreTokenizer` that cuts the text
    into words (or None: a segment is one word).

    A Metaspace alone (Mistral v0.3, Llama without `legacy`), or splits
    (`Split`, `Digits`, `WhitespaceSplit`; Gemma: `Split(" ",
    MergedWithPrevious)`), or none (Mistral v0.1, the earlier Gemma: the
    normalizer puts in the "▁"s).
    """
    where = "`pre_tokenizer`"
    parts = pre_tokenizers.parse(spec, where)
    if any(isinstance(p, pre_tokenizers.Metaspace) for p in parts):
        if len(parts) != 1:
            raise SpecError(
                f"{where}: a Metaspace together with other pre-tokenizers "
                f"is not supported for a SentencePiece-style BPE. "
                f"Received: {excerpt(spec)}."
            )
        words = None
        if parts[0].split:
            words = pre_tokenizers.PreTokenizer(_SPLIT_BEFORE_SPACE, where)
        return parts[0], words
    if any(isinstance(p, pre_tokenizers.ByteLevel) for p in parts):
        raise SpecError(
            f"{where}: a ByteLevel pre-tokenizer is not supported for a "
            "SentencePiece-style BPE (with byte_fallback, a vocabulary of "
            "characters, not of GPT-2's byte symbols). "
            f"Received: {excerpt(spec)}."
        )
    return None, pre_tokenizers.PreTokenizer(spec, where) if parts else None


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


def byte_ids(vocabulary):
    """The id of each byte token `<0x00>..<0xFF>`, `-1 - byte` for one
    that the vocabulary lacks (HF needs a byte's token only when a text
    has a character without a token of its own that holds that byte)."""
    return [vocabulary.get(name, -1 - b) for b, name in enumerate(_BYTE_TOKENS)]


def check_byte_ids(values):
    """`values`, once no id is a missing byte token's `-1 - byte`: else an
    `InvalidArgumentError` naming one such byte token."""
    lowest = tf.reduce_min(tf.concat([values, [0]], 0))
    name = tf.gather(_BYTE_TOKENS, tf.maximum(-1 - lowest, 0))
    message = tf.strings.join(
        [
            "Byte fallback needs the token ",
            name,
            " for a character of this text, but the vocabulary has no "
            "such token (Hugging Face `tokenizers` puts the unknown token "
            "there, out of order, or drops the character: tf_input stops "
            "rather than give other ids).",
        ]
    )
    check = tf.debugging.Assert(lowest >= 0, [message])
    with tf.control_dependencies([check]):
        return tf.identity(values)


@keras.saving.register_keras_serializable(package="tf_input")
class MetaspaceBytePairTokenizer(JsonFileTokenizer):
    """SentencePiece-style BPE from a `tokenizer.json`, id for id as HF.

    Built by `tf_input.load_tokenizer` for a `tokenizer.json` whose model
    is a `BPE` over characters with `byte_fallback` or a `▁` metaspace
    (Mistral, Llama 2, Gemma; see the module docstring for the layouts).
    Core TensorFlow ops only: a SavedModel holding it loads with a plain
    `import tensorflow`. `detokenize` is HF's `decode(ids)` with the
    file's decoder chain. In a `.keras` file the `tokenizer.json` is an
    asset.

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
        model = require(data, "model", "tokenizer.json")
        check_model(model)
        self._metaspace, self._words = pre_tokenization(
            data.get("pre_tokenizer")
        )
        vocabulary = _vocabulary(model)
        merges = _merge_ids(require(model, "merges", _MODEL), vocabulary)
        added = added_token_entries(data, "SentencePiece-style BPE")
        tokens, index = token_table(vocabulary.items(), added)
        bytes_of = byte_ids(vocabulary) if model.get("byte_fallback") else None
        self._missing_bytes = bytes_of is not None and min(bytes_of) < 0
        unk = model.get("unk_token")
        unk_id = vocabulary.get(unk, 0) if unk else 0
        # Each token's length in bytes of the text it stands for: a byte
        # token, one byte; without byte fallback the unknown id's is that
        # of the run of characters it replaced (`_offsets_graph`).
        lengths = [len(t.encode()) for t in tokens]
        for i in bytes_of or ():
            if i >= 0:
                lengths[i] = 1
        with tf.init_scope():
            self._token_bytes = tf.constant(lengths, tf.int64)
        self._unk_id = None if bytes_of is not None else unk_id
        self._offsets_refusal = None
        if bytes_of is None and (
            len(tokens[unk_id]) == 1 or unk_id in set(merges[:, 2].tolist())
        ):
            self._offsets_refusal = (
                f"offsets need the unknown token {tokens[unk_id]!r} to "
                "stand only for characters without a token, but a "
                "character or a merge of this file also makes it"
            )
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
                byte_ids=bytes_of,
                unk_id=unk_id,
            )
            self._decoder = decoders.Decoder(data.get("decoder"), tokens)
        self._substitution = self._substitution_setup(
            tokens, vocabulary, bytes_of
        )
        return tokens, index, added

    def _substitution_setup(self, tokens, vocabulary, bytes_of):
        """For a normalizer that only prepends and swaps characters one
        for one (Mistral v0.1's `Prepend("▁")` + `Replace(" ", "▁")`),
        with no pre-tokenizer: `(pattern, prefix bytes, int64 [V] input
        bytes per token)`, else None. A text that holds none of the new
        characters (`pattern` finds those that do) has its spans
        without the alignments: each token's length in the input is
        known from its id (a new character counts as the old one; the
        prefix as if it were in the input, then taken off)."""
        substitution = self._normalizer.substitution()
        if (
            substitution is None
            or self._metaspace is not None
            or self._words is not None
        ):
            return None
        prefix, pairs = substitution
        # A new character without a token would go to byte tokens, of its
        # own bytes rather than the old one's.
        if not all(new in vocabulary for new in pairs):
            return None

        def size(text):
            return sum(len(pairs.get(c, c).encode()) for c in text)

        lengths = [size(t) for t in tokens]
        for i in bytes_of or ():
            if i >= 0:
                lengths[i] = 1
        pattern = None
        if pairs:
            pattern = f"(?s).*{CodePoints.of(*pairs).re2()}.*"
        with tf.init_scope():
            lengths = tf.constant(lengths, tf.int64)
        return pattern, size(prefix), lengths

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
        if self._words is not None:
            words = self._words(segments, is_token)
            segments = words.flat_values
            per_line = tf.gather(words.row_splits, per_line)
        values, splits = self._engine.encode(segments)
        if self._missing_bytes:
            values = check_byte_ids(values)
        return tf.RaggedTensor.from_row_splits(
            values, tf.gather(splits, per_line), validate=False
        )

    def _tokenize_with_offsets_batch(self, texts):
        name = type(self).__name__
        self._normalizer.check_alignments(name)
        if self._offsets_refusal is not None:
            raise NotImplementedError(f"{name}: {self._offsets_refusal}.")
        return self._offsets_graph(texts)

    def _offsets_graph(self, raw):
        """`_tokenize_graph`, keeping track of where every character came
        from: `[N]` strings -> ragged ids, byte starts, byte ends and word
        indices. A token's span is found in the word the engine merged
        (the byte lengths of the tokens before it), then in its segment
        (the word's start, from the pre-tokenizer), then in the segment
        before the normalizer and the Metaspace (their alignments), then
        in the line (the segment's start), then in the bytes given (the
        UTF-8 repair). A word is a word of the pre-tokenizer (Gemma 3's
        `Split`, a Metaspace with `split`) or, without one, a non-empty
        segment: the text between added tokens, or an added token."""
        texts = to_valid_utf8(raw)
        segments, per_line, segment_starts, segment_ends = self._added(
            texts, spans=True
        )
        is_token = added_tokens.is_placeholder(segments)
        plain = tf.where(is_token, "", segments)
        rewritten, sources = plain, None
        if self._substitution is not None:
            rewritten = self._normalizer(plain)
        elif self._normalizer:
            rewritten, sources = self._normalizer.with_sources(plain)
        if self._metaspace is not None:
            spaced = self._metaspace.apply(rewritten, is_token, per_line)
            added = tf.cast(
                tf.strings.length(spaced, unit="UTF8_CHAR")
                - tf.strings.length(rewritten, unit="UTF8_CHAR"),
                tf.int64,
            )  # 1 where a "▁" went in front
            step = tf.ragged.range(
                tf.cast(tf.strings.length(spaced, unit="UTF8_CHAR"), tf.int64)
            )
            step = step.with_flat_values(
                tf.maximum(
                    step.flat_values - tf.gather(added, step.value_rowids()),
                    0,
                )
            )
            sources = step if sources is None else compose(sources, step)
            rewritten = spaced
        inputs = tf.where(is_token, segments, rewritten)
        if self._words is None:  # a segment is one word
            word_splits = tf.range(tf.size(inputs, out_type=tf.int64) + 1)
            word_starts = tf.zeros_like(inputs, tf.int64)
            words = tf.where(is_token | (tf.strings.length(inputs) > 0), 1, 0)
        else:
            words, word_starts = self._words(inputs, is_token, starts=True)
            word_splits, inputs = words.row_splits, words.flat_values
            words = tf.ones_like(inputs, tf.int64)
        values, splits = self._engine.encode(inputs)
        if self._missing_bytes:
            values = check_byte_ids(values)
        token_word = row_ids(splits)
        token_segment = tf.gather(row_ids(word_splits), token_word)
        lengths = tf.gather(self._token_bytes, values)
        if self._unk_id is not None:  # no byte fallback
            lengths = self._unknown_lengths(lengths, values, inputs, splits)
        starts = _offsets.starts_in_rows(lengths, splits)
        starts += tf.gather(word_starts, token_word)
        ends = starts + lengths
        if self._substitution is not None:
            starts, ends = self._substituted_spans(
                (starts, ends, values, splits, inputs),
                (token_segment, plain, rewritten, is_token),
            )
        elif sources is not None:  # else the text is as given
            starts, ends = _offsets.before_rewrite(
                starts, ends, token_segment, plain, rewritten, sources
            )
        starts, ends = _offsets.in_lines(
            starts, ends, is_token, segment_starts, segment_ends, token_segment
        )
        token_line = tf.gather(row_ids(per_line), token_segment)
        starts, ends = _offsets.before_repair(
            raw, texts, starts, ends, token_line
        )
        # Words are numbered in their line: the pre-tokenizer's words, or
        # (without one) the non-empty segments.
        number = tf.cumsum(tf.cast(words, tf.int64), exclusive=True)
        first = tf.gather(
            number, tf.gather(word_splits, tf.gather(per_line, token_line))
        )
        word_ids = tf.gather(number, token_word) - first
        line_splits = tf.gather(splits, tf.gather(word_splits, per_line))

        def rows(x):
            return tf.RaggedTensor.from_row_splits(
                x, line_splits, validate=False
            )

        return rows(values), rows(starts), rows(ends), rows(word_ids)

    def _substituted_spans(self, tokens, segments):
        """Spans in the normalized segments -> in the segments, for a
        normalizer of `_substitution_setup`: from each token's length in
        the input (its id's), less the prefix; a token of the prefix alone
        spans the segment's first character (HF aligns the prefix with
        it). The segments that hold a new character take the
        alignments."""
        starts, ends, values, splits, words = tokens
        token_segment, plain, rewritten, is_token = segments
        pattern, prefix, sizes = self._substitution
        lengths = tf.gather(sizes, values)
        if self._unk_id is not None:  # no byte fallback
            lengths = self._unknown_lengths(lengths, values, words, splits)
        fast_starts = _offsets.starts_in_rows(lengths, splits)
        fast_ends = fast_starts + lengths
        if prefix:
            prefixed = (tf.strings.length(plain) > 0) & ~is_token
            cut = tf.gather(tf.cast(prefixed, tf.int64) * prefix, token_segment)
            first = tf.strings.length(
                tf.strings.substr(plain, 0, 1, unit="UTF8_CHAR")
            )
            first = tf.gather(tf.cast(first, tf.int64), token_segment)
            fast_starts = tf.maximum(fast_starts - cut, 0)
            fast_ends = tf.where(
                (cut > 0) & (fast_ends <= cut), first, fast_ends - cut
            )
        if pattern is None:
            return fast_starts, fast_ends
        literal = tf.strings.regex_full_match(plain, pattern)

        def with_alignments():
            _, sources = self._normalizer.with_sources(plain)
            slow_starts, slow_ends = _offsets.before_rewrite(
                starts, ends, token_segment, plain, rewritten, sources
            )
            slow = tf.gather(literal, token_segment)
            return (
                tf.where(slow, slow_starts, fast_starts),
                tf.where(slow, slow_ends, fast_ends),
            )

        return tf.cond(
            tf.reduce_any(literal),
            with_alignments,
            lambda: (fast_starts, fast_ends),
        )

    def _unknown_lengths(self, lengths, values, words, splits):
        """`lengths` with each unknown id's set to the run of characters
        it replaced: the k-th unknown id of the words that are not added
        tokens is their k-th run of characters without a token."""
        is_token = added_tokens.is_placeholder(words)
        runs = self._engine.unknown_runs(tf.where(is_token, "", words))
        from_text = tf.equal(values, self._unk_id) & ~tf.gather(
            is_token, row_ids(splits)
        )
        return tf.tensor_scatter_nd_update(lengths, tf.where(from_text), runs)

    def _detokenize_graph(self, ids):
        return self._decoder(ids)
