"""`SentencePieceTokenizer`: the Keras layer, its setup and routing."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os

import keras
import numpy as np
import tensorflow as tf
from keras.src.saving import serialization_lib

from tf_input._ragged import row_ids
from tf_input.tokenizers import _added_tokens
from tf_input.tokenizers._utf8 import replace_invalid_bytes
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.engines.char_bpe import CharBPE
from tf_input.tokenizers.sentencepiece._bpe import model_merges
from tf_input.tokenizers.sentencepiece._decoding import _Decoder
from tf_input.tokenizers.sentencepiece._model_file import _load_proto
from tf_input.tokenizers.sentencepiece._model_file import _parse_model
from tf_input.tokenizers.sentencepiece._proto import _BPE
from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _CHAR
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNKNOWN
from tf_input.tokenizers.sentencepiece._proto import _UNUSED
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED
from tf_input.tokenizers.sentencepiece._proto import TRAINER_BOS_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_BYTE_FALLBACK
from tf_input.tokenizers.sentencepiece._proto import TRAINER_EOS_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_MODEL_TYPE
from tf_input.tokenizers.sentencepiece._proto import TRAINER_PAD_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_UNK_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_UNK_PIECE
from tf_input.tokenizers.sentencepiece._proto import _bytes_field
from tf_input.tokenizers.sentencepiece._proto import _varint_field
from tf_input.tokenizers.sentencepiece._recent import Recent
from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_fast
from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_library
from tf_input.tokenizers.sentencepiece._unigram_plan import _unigram_plan


def _library_reason(model):
    """Why a BPE model runs on TF Text's library op, or None.

    The core-ops engine covers the models of today's LLMs (Mistral, Llama
    2: no normalization rules); these stay on the library op.
    """
    if model.charsmap:
        return "normalization rules (a precompiled charsmap)"
    if model.suffix_space:
        return "treat_whitespace_as_suffix"
    if _UNUSED in model.types:
        return "unused pieces (sentencepiece re-segments them)"
    for piece, piece_type in zip(model.pieces, model.types):
        if piece_type == _USER_DEFINED and (" " in piece or _SPACE in piece):
            return "a user-defined piece with a space"
    return None


# Space-free runs of this many bytes or more are normalized through the
# byte-fallback model (see `SentencePieceTokenizer._normalize`). Shorter
# runs cost the merging model at most a few KB of copying per character;
# 1 MB of random bytes has no run this long (its longest is ~3 KB).
_LONG_RUN = 4096


def _concat_rows(*parts):
    """The rows of ragged `[N, None]` tensors, one after the other.

    Flat ops: a ragged `tf.concat` is 7 more graph nodes, and every node
    costs each `tf.data` iterator graph-optimization time.
    """
    splits, offset = [parts[0].row_splits], parts[0].row_splits[-1]
    for i, part in enumerate(parts[1:], 2):
        splits.append(part.row_splits[1:] + offset)
        if i < len(parts):
            offset += part.row_splits[-1]
    return tf.RaggedTensor.from_row_splits(
        tf.concat([part.values for part in parts], 0),
        tf.concat(splits, 0),
        validate=False,
    )


def _join_rows(strings, splits):
    """The rows of a ragged string tensor, each joined: `[N]` strings.

    Flat segment ops, not a ragged `reduce_join` (or `reduce_max`), which
    cost every `tf.data` iterator some 10-15 ms to set up.
    """
    return tf.strings.unsorted_segment_join(
        strings, row_ids(splits), tf.size(splits) - 1
    )


class _Traced:
    """The layer's own graphs for eager calls, traced on first use.

    A plain (untracked) object, so that a SavedModel holds only the
    functions its exporter defines. Concrete functions are called directly,
    which keeps TensorFlow's retracing warning quiet when a process builds
    many tokenizers.
    """

    def __init__(self, layer):
        self._layer = layer
        self._tokenize = None
        self._detokenize = None

    def tokenize(self, texts):
        if self._tokenize is None:
            self._tokenize = tf.function(
                self._layer._tokenize_graph
            ).get_concrete_function(tf.TensorSpec([None], tf.string))
        return self._tokenize(texts)

    def detokenize(self, ids):
        if self._detokenize is None:
            spec = tf.RaggedTensorSpec(
                [None, None], tf.int32, 1, row_splits_dtype=tf.int64
            )
            self._detokenize = tf.function(
                self._layer._detokenize_graph
            ).get_concrete_function(spec)
        return self._detokenize(ids)


@keras.saving.register_keras_serializable(package="tf_input")
class SentencePieceTokenizer(Tokenizer):
    """Tokenizes text with a SentencePiece model, id for id as `sentencepiece`.

    Gives exactly the ids of `sentencepiece` 0.2.3's
    `SentencePieceProcessor(model_file=...).encode(...)` for unigram and BPE
    models (normalization rules, user-defined pieces, byte fallback), using
    only TensorFlow and TF Text ops, so it runs in `tf.data.Dataset.map`,
    `tf.function` and a SavedModel. Map it over batches of lines
    (`ds.batch(n).map(tokenizer)`), not over single lines. In a `.keras`
    file the model is an asset (`assets/sentencepiece.model`; the config
    holds its SHA-256), and a SavedModel holds it as constants, so neither
    needs another file. A config whose `proto` is a path is read only
    outside Keras' safe mode. BPE models without normalization rules
    (Mistral, Llama 2) run on core TensorFlow ops only: a SavedModel
    holding one loads with a plain `import tensorflow`. Unigram models, and
    BPE models with a precompiled charsmap, use TF Text ops: loading such a
    SavedModel needs `import tensorflow_text` first; `uses_core_ops_only`
    says which.

    Invalid UTF-8 is handled as `sentencepiece` handles it: every byte that
    does not start a valid character becomes U+FFFD before normalization.
    Known limit: on a single line whose best-path score passes 1e5 (about
    25,000 tokens, some 100 KB of text) `sentencepiece` re-centres its
    float32 scores and may then break exact ties differently. Parity is
    guaranteed up to `1e5 / |min piece score - 10|` normalized characters
    in a line (each token covers one or more and scores at least that):
    3,729 for sp-test-ja, 4,249 for ALBERT.

    Args:
        proto: str, path-like or bytes. The path of a `.model` file, or its
            contents.
        add_special_tokens: bool. Put the model's BOS id before and its EOS
            id after each sequence (each only if the model defines it, as
            `encode(..., add_bos=True, add_eos=True)` does). Defaults to
            `False`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a string, a list of strings, or a string tensor of shape
            `[]` or `[N]`.

    Returns:
        int32 ids: a 1-D tensor for a scalar string, a `tf.RaggedTensor`
        `[N, None]` for a batch. `detokenize(ids)` equals `sentencepiece`'s
        `decode(ids)`.

    Example:

    >>> import io
    >>> import sentencepiece as spm
    >>> from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
    >>> model = io.BytesIO()
    >>> lines = ["the cat sat on the mat", "a dog sat on a log"] * 10
    >>> spm.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(lines), model_writer=model, vocab_size=40,
    ...     hard_vocab_limit=False, minloglevel=2)
    >>> tokenizer = SentencePieceTokenizer(model.getvalue())
    >>> ids = tokenizer(["the cat sat", "a log"])
    >>> ids
    <tf.RaggedTensor [[3, 6, 9, 8, 3, 14, 4, 3, 7, 4], [3, 5, 18]]>
    >>> [tokenizer.id_to_token(i) for i in ids[1].numpy()]
    ['▁', 'a', '▁log']
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'the cat sat', b'a log']
    >>> reference = spm.SentencePieceProcessor(model_proto=model.getvalue())
    >>> ids.to_list() == reference.encode(["the cat sat", "a log"])
    True
    """

    def __init__(self, proto, *, add_special_tokens=False, **kwargs):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        self.proto = None
        self._expected_sha256 = None
        if proto is _FROM_ASSETS:
            return  # `load_assets` sets the model (a `.keras` file).
        data, source = _load_proto(proto)
        self._set_proto(data, source)

    def _set_proto(self, data, source):
        model = _parse_model(data, source)
        self.proto = data
        self._model = model
        self._special = {
            name: value
            for name, value in (
                ("pad", model.pad_id),
                ("unk", model.unk_id),
                ("bos", model.bos_id),
                ("eos", model.eos_id),
            )
            if value >= 0
        }
        self._start_ids = [model.bos_id] if model.bos_id >= 0 else []
        self._end_ids = [model.eos_id] if model.eos_id >= 0 else []
        # Byte fallback as `sentencepiece` 0.2.3 detects it: "<0x00>" exists
        # and the 256 byte pieces are consecutive.
        self._byte_ids = None
        if "<0x00>" in model.pieces:
            start = model.pieces.index("<0x00>")
            expected = [f"<0x{b:02X}>" for b in range(256)]
            if model.pieces[start : start + 256] != expected:
                raise ValueError(
                    f"SentencePieceTokenizer could not read {source}: its "
                    "byte pieces <0x00>..<0xFF> are not consecutive."
                )
            self._byte_ids = list(range(start, start + 256))
        try:
            if model.model_type == _BPE:
                self._build_bpe(model)
            else:
                self._build_unigram(model)
            self._build_detokenizer(model)
            with tf.init_scope():
                if self._library_proto is not None:
                    _run_library(
                        self._library_proto, tf.constant([""]), tf.int32
                    )
                if getattr(self, "_byte_normalizer", None) is not None:
                    _run_library(
                        self._byte_normalizer[0], tf.constant([""]), tf.int32
                    )
            # Kept out of object tracking, so that a SavedModel holds only
            # the functions its exporter defines.
            self._traced = _Traced(self)
        except tf.errors.OpError as error:
            raise ValueError(
                f"SentencePieceTokenizer could not load {source}: "
                f"{error.message}"
            ) from None

    # --- Model setup ---------------------------------------------------------
    @staticmethod
    def _normalizer_proto(model, byte_fallback=False):
        """A model that makes the library op return normalized lines.

        A character model turns every character into an unknown piece; runs
        of unknowns are merged, and with string output the op returns their
        normalized text. User-defined pieces stay, as the library keeps
        them out of normalization.

        With `byte_fallback`, unknown characters become the pieces of their
        UTF-8 bytes instead, ids 0.. of the returned byte table; returns
        `(proto, table)`, or None if a user-defined piece is named like a
        byte piece.
        """
        unk = model.pieces[model.unk_id]
        pieces = [(unk, 0.0, _UNKNOWN), (_SPACE, 0.0, _NORMAL)]
        pieces += [
            (p, 0.0, _USER_DEFINED)
            for p, t in zip(model.pieces, model.types)
            if t == _USER_DEFINED and p != _SPACE
        ]
        texts = [b"", _SPACE.encode()] + [p.encode() for p, _, _ in pieces[2:]]
        if byte_fallback:
            names = [f"<0x{b:02X}>" for b in range(256)]
            if set(names) & {p for p, _, _ in pieces}:
                return None
            pieces += [(name, 0.0, _BYTE) for name in names]
            texts += [bytes([b]) for b in range(256)]
        trainer = b"".join(
            [
                _varint_field(TRAINER_MODEL_TYPE, _CHAR),
                _varint_field(TRAINER_BYTE_FALLBACK, int(byte_fallback)),
                _varint_field(TRAINER_UNK_ID, 0),
                _varint_field(TRAINER_BOS_ID, -1),
                _varint_field(TRAINER_EOS_ID, -1),
                _varint_field(TRAINER_PAD_ID, -1),
                _bytes_field(TRAINER_UNK_PIECE, unk.encode("utf-8")),
            ]
        )
        proto = model.serialize(pieces, trainer_extra=trainer)
        return (proto, texts) if byte_fallback else proto

    def _build_bpe(self, model):
        """The BPE engine in core ops (`_bpe.CharBPE`), or for the models it
        does not cover (`_library_reason`) TF Text's op around the
        `sentencepiece` library."""
        self._char_bpe = None
        self._library_proto = None
        if _library_reason(model) is not None:
            self._library_proto = self.proto
            return
        symbols, merges, ranks, tied, whole, runs = model_merges(model)
        user = [
            (p, i)
            for i, (p, t) in enumerate(zip(model.pieces, model.types))
            if t == _USER_DEFINED
        ]
        self._user_pieces = _added_tokens.Extractor(
            _added_tokens.check_added_tokens(
                [{"id": i, "content": p, "special": False} for p, i in user],
                "the user-defined pieces",
            ),
            False,
            "the user-defined pieces",
        )
        self._char_bpe = CharBPE(
            model.pieces,
            symbols,
            merges,
            ranks,
            tied_ranks=tied,
            whole=whole,
            runs=runs,
            extra_words=(
                [_added_tokens.placeholder(i) for _, i in user],
                [i for _, i in user],
            ),
            byte_ids=self._byte_ids,
            unk_id=model.unk_id,
            reserved=[
                (ord(p), i)
                for i, (p, t) in enumerate(zip(model.pieces, model.types))
                if len(p) == 1 and t != _NORMAL and t != _USER_DEFINED
            ],
        )

    def _build_unigram(self, model):
        plan = _unigram_plan(self.proto)
        self._pseudo_start = len(model.pieces)
        self._placeholder = plan.placeholder
        self._rare_pattern = plan.rare_pattern
        self._safe_pattern = plan.safe_pattern
        self._all_second_route = plan.all_second_route
        self._user_pattern = plan.user_pattern
        self._trivial_pattern = plan.trivial_pattern
        if plan.trivial_pattern is not None:
            self._trivial_table = tf.constant(plan.trivial_table)
        self._fast = tf.constant(np.frombuffer(plan.fast, np.uint8))
        self._fast_plain = tf.constant(np.frombuffer(plan.fast_plain, np.uint8))
        self._library_proto = self._normalizer_proto(model)
        self._plain_pattern = plan.plain_pattern
        self._run_break_pattern = plan.run_break_pattern
        self._byte_normalizer = self._normalizer_proto(model, True)
        if self._byte_normalizer is not None:
            proto, texts = self._byte_normalizer
            self._byte_normalizer = (proto, tf.constant(texts, tf.string))
        # Pseudo ids -> output ids: the unknown id, or the character's bytes.
        self._pseudo_outputs = None
        if self._byte_ids is not None:
            values, lengths = [], []
            for c in plan.pseudo_chars:
                raw = c.encode("utf-8")
                values += [self._byte_ids[b] for b in raw]
                lengths.append(len(raw))
            self._pseudo_outputs = (
                tf.constant(values, tf.int32),
                tf.constant(lengths, tf.int64),
            )
            self._placeholder_id = len(model.pieces) + plan.pseudo_chars.index(
                plan.placeholder
            )
            self._byte_id_table = tf.constant(self._byte_ids, tf.int32)

    def _build_detokenizer(self, model):
        self._decoder = _Decoder(model, self._byte_ids)

    # --- Tokenizer API -------------------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def _tokenize_batch(self, texts):
        self._check_model()
        # Eagerly, run one traced graph rather than some 40 separate ops.
        if tf.executing_eagerly():
            return self._traced.tokenize(texts)
        return self._tokenize_graph(texts)

    @tf.autograph.experimental.do_not_convert
    def _detokenize_batch(self, ids):
        self._check_model()
        if tf.executing_eagerly():
            return self._traced.detokenize(ids.with_row_splits_dtype(tf.int64))
        return self._detokenize_graph(ids)

    def _tokenize_graph(self, texts):
        if self._model.model_type == _BPE:
            if self._char_bpe is None:
                return _run_library(self._library_proto, texts, tf.int32)
            return self._tokenize_bpe(texts)
        return self._tokenize_unigram(texts)

    def _tokenize_bpe(self, texts):
        """sentencepiece's BPE in core ops: bad bytes -> U+FFFD, the
        whitespace rules, user-defined pieces cut out (kept whole), the
        merges, then characters without a piece -> byte pieces or unk."""
        texts = tf.reshape(texts, [-1])
        texts = self._plain_normalize(replace_invalid_bytes(texts))
        segments, per_line = self._user_pieces(texts)
        values, splits = self._char_bpe.encode(segments)
        return tf.RaggedTensor.from_row_splits(
            values, tf.gather(splits, per_line), validate=False
        )

    def _tokenize_unigram(self, texts):
        # No `tf.cond` here: inside `tf.data` each conditional costs about
        # 0.1 s to instantiate per iterator, more than it saves per batch.
        texts = tf.reshape(texts, [-1])
        if self._all_second_route:
            ids, rare = self._second_route(texts)
            return self._finish(ids, rare)
        positions = tf.range(tf.size(texts))
        trivial_ids = None
        if self._trivial_pattern is not None:
            # The route's pattern admits valid UTF-8 only (see
            # `_trivial_ids`), and characters whose lattice needs no
            # rewriting, so its lines skip the first test (a regex over
            # each line, 12% of a batch of Chinese text).
            trivial = tf.cast(
                tf.strings.regex_full_match(texts, self._trivial_pattern),
                tf.int32,
            )
            texts, trivial_texts = tf.dynamic_partition(texts, trivial, 2)
            positions, trivial_positions = tf.dynamic_partition(
                positions, trivial, 2
            )
            trivial_ids = self._trivial_ids(trivial_texts)
        first = tf.strings.regex_full_match(texts, self._safe_pattern)
        if self._user_pattern is not None:
            first = tf.logical_and(
                first,
                tf.logical_not(
                    tf.strings.regex_full_match(texts, self._user_pattern)
                ),
            )
        route = tf.cast(tf.logical_not(first), tf.int32)
        parts = tf.dynamic_partition(texts, route, 2)
        positions = tf.dynamic_partition(positions, route, 2)
        ids_first = _run_fast(self._fast, parts[0])
        ids_second, rare = self._second_route(parts[1])
        ids = [ids_first, ids_second]
        if trivial_ids is not None:
            ids.append(trivial_ids)
            positions.append(trivial_positions)
        ids = _concat_rows(*ids)
        # Only second-route rows have rare characters, and `_finish` reads
        # them in row order, so the other rows need no entry.
        ids = self._finish(ids, rare)
        order = tf.math.invert_permutation(tf.concat(positions, axis=0))
        return tf.gather(ids, order)

    def _trivial_ids(self, texts):
        """The ids of lines with one segmentation (`_UnigramPlan.
        _plan_trivial_route`): leading spaces out, the dummy "▁", then one
        piece (or pseudo piece) per character, by code point. Strict
        decoding: the route's pattern admits valid UTF-8 only, so a bad
        byte here is a bug, and raises rather than giving wrong ids."""
        # Leading spaces (none unless the library removes them) become
        # the dummy "▁".
        texts = tf.strings.regex_replace(
            texts, "^ *", _SPACE, replace_global=False
        )
        splits, code_points = tf.raw_ops.UnicodeDecode(
            input=texts,
            input_encoding="UTF-8",
            errors="strict",
            Tsplits=tf.int64,
        )
        return tf.RaggedTensor.from_row_splits(
            tf.gather(self._trivial_table, code_points), splits, validate=False
        )

    def _second_route(self, texts):
        """The library's normalizer, rare characters out, then the fast op.

        Returns the raw ids and, per line, the rare characters that the
        placeholders stand for (for byte fallback).
        """
        normalized = self._normalize(texts)
        mapped = tf.strings.regex_replace(
            normalized, self._rare_pattern, self._placeholder
        )
        rare = tf.strings.regex_replace(
            normalized, f"[^{self._rare_pattern[1:-1]}]", ""
        )
        return _run_fast(self._fast_plain, mapped), rare

    def _normalize(self, texts):
        """Each line as the library normalizes it, in linear time.

        The library op (the `sentencepiece` inside TF Text) merges a run of
        unknown pieces by copying the run so far for every character
        (`set_piece(piece() + w)`): quadratic in a run without spaces.
        Measured on sp-test-ja: 400,000 tabs took 3.4 s, 1 MB of control
        characters 28 s (sentencepiece 0.06 s). So three ways, by line:

        0. no character a normalization rule (or a user-defined piece)
           starts with, valid UTF-8: the whitespace rules alone, by regex;
        1. runs under `_LONG_RUN` bytes between spaces (or characters the
           rules turn into spaces): the library op with the merging
           character model, as before;
        2. longer runs: the library op with a byte-fallback model, which
           gives each byte a piece of its own (linear, ~3x slower than 1
           on ordinary text).
        """
        route = tf.ones_like(texts, tf.int32)
        if self._byte_normalizer is not None:
            spaced = texts
            if self._run_break_pattern is not None:
                spaced = tf.strings.regex_replace(
                    texts, self._run_break_pattern, " "
                )
            # The raw op: `tf.strings.split` adds some 30 graph nodes to
            # make a ragged tensor, and every node costs each `tf.data`
            # iterator graph-optimization time.
            where, words, _ = tf.raw_ops.StringSplitV2(input=spaced, sep=" ")
            longest = tf.math.unsorted_segment_max(
                tf.strings.length(words), where[:, 0], tf.size(texts)
            )
            route = tf.where(longest >= _LONG_RUN, 2, route)
        if self._plain_pattern is not None:
            plain = tf.strings.regex_full_match(texts, self._plain_pattern)
            route = tf.where(plain, 0, route)
        parts = tf.dynamic_partition(texts, route, 3)
        positions = tf.dynamic_partition(tf.range(tf.size(texts)), route, 3)
        merged = _run_library(self._library_proto, parts[1], tf.string)
        out = [self._plain_normalize(parts[0])]
        out.append(_join_rows(merged.values, merged.row_splits))
        if self._byte_normalizer is not None:
            proto, table = self._byte_normalizer
            ids = _run_library(proto, parts[2], tf.int32)
            out.append(_join_rows(tf.gather(table, ids.values), ids.row_splits))
        order = tf.math.invert_permutation(tf.concat(positions, axis=0))
        return tf.gather(tf.concat(out, axis=0), order)

    def _plain_normalize(self, texts):
        """The library's whitespace rules, for lines no other rule touches.

        As sentencepiece's `Normalizer::Normalize`: leading spaces go and
        inner runs of spaces become one (`remove_extra_whitespaces`), a
        dummy "▁" goes in front of a non-empty line (`add_dummy_prefix`),
        spaces become "▁" (`escape_whitespaces`), and trailing "▁" go, a
        literal "▁" included.
        """
        model = self._model
        space = _SPACE if model.escape_whitespaces else " "
        if model.remove_extra_whitespaces:
            texts = tf.strings.regex_replace(texts, "^ +", "")
            texts = tf.strings.regex_replace(texts, " +", " ")
        if model.add_dummy_prefix:
            texts = tf.where(tf.equal(texts, ""), texts, " " + texts)
        if model.escape_whitespaces:
            texts = tf.strings.regex_replace(texts, " ", _SPACE)
        if model.remove_extra_whitespaces:
            texts = tf.strings.regex_replace(texts, f"(?:{space})+$", "")
        return texts

    def _finish(self, ids, rare):
        if self._pseudo_outputs is None:
            return self._merge_unknowns(ids)
        return self._expand_bytes(ids, rare)

    def _merge_unknowns(self, ids):
        """Pseudo ids become the unknown id; runs of unknowns merge."""
        unk = self._model.unk_id
        values = tf.where(ids.values >= self._pseudo_start, unk, ids.values)
        is_unk = tf.equal(values, unk)
        splits = ids.row_splits
        size = tf.size(values, tf.int64)
        row_start = tf.scatter_nd(
            splits[:, None], tf.ones_like(splits, tf.int32), [size + 1]
        )[:-1]
        repeat = tf.logical_and(
            tf.logical_and(is_unk, tf.concat([[False], is_unk[:-1]], 0)),
            tf.equal(row_start, 0),
        )
        # Repeats are few: a row end moves back by the repeats before it,
        # found by a binary search among their positions (a cumulative sum
        # over all values cost more than the rest of the merging), and one
        # partition drops them (a gather of `where` cost twice as much;
        # `boolean_mask` is also some 15 graph nodes, and every node costs
        # each `tf.data` iterator graph-optimization time).
        dropped = tf.searchsorted(
            tf.reshape(tf.where(repeat), [-1]), splits, out_type=tf.int64
        )
        kept = tf.dynamic_partition(
            values, tf.cast(tf.logical_not(repeat), tf.int32), 2
        )[1]
        return tf.RaggedTensor.from_row_splits(
            kept, splits - dropped, validate=False
        )

    def _expand_bytes(self, ids, rare):
        """Byte fallback: unknown characters become the ids of their bytes.

        A pseudo id stands for one known character; the k-th placeholder of
        the batch stands for the k-th character of `rare` (row by row).
        """
        table_values, table_lengths = self._pseudo_outputs
        values = ids.values
        is_pseudo = values >= self._pseudo_start
        is_placeholder = tf.equal(values, self._placeholder_id)
        pseudo = tf.where(is_pseudo, values - self._pseudo_start, 0)
        rank = tf.cumsum(tf.cast(is_placeholder, tf.int64), exclusive=True)
        rank = tf.where(is_placeholder, rank, 0)
        # The rare characters' code points and UTF-8 bytes, flat: raw ops
        # and 1-D joins (the ragged `unicode_split` / `bytes_split` /
        # `repeat` / `from_value_rowids` version was 330 graph nodes, and
        # every node costs each `tf.data` iterator start-up time).
        _, code_points = tf.raw_ops.UnicodeDecode(
            input=rare, input_encoding="UTF-8", Tsplits=tf.int64
        )
        char_lengths = (
            1
            + tf.cast(code_points >= 0x80, tf.int64)
            + tf.cast(code_points >= 0x800, tf.int64)
            + tf.cast(code_points >= 0x10000, tf.int64)
        )
        rare_flat = tf.concat(
            [
                tf.cast(
                    tf.io.decode_raw(tf.strings.reduce_join(rare), tf.uint8),
                    tf.int32,
                ),
                [0],
            ],
            axis=0,
        )
        rare_starts = tf.concat(
            [tf.cumsum(char_lengths, exclusive=True), [0]], axis=0
        )
        rare_lengths = tf.gather(tf.concat([char_lengths, [0]], 0), rank)
        lengths = tf.where(
            is_placeholder,
            rare_lengths,
            tf.where(is_pseudo, tf.gather(table_lengths, pseudo), 1),
        )
        # One output per byte: `token` is its token, `offset` its byte.
        out_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        token = row_ids(out_splits)
        offset = tf.range(out_splits[-1]) - tf.gather(out_splits, token)
        table_starts = tf.cumsum(table_lengths, exclusive=True)
        from_table = tf.gather(
            table_values,
            tf.gather(table_starts, tf.gather(pseudo, token)) + offset,
        )
        token_placeholder = tf.gather(is_placeholder, token)
        rare_index = tf.where(
            token_placeholder,
            tf.gather(rare_starts, tf.gather(rank, token)) + offset,
            tf.cast(tf.size(rare_flat) - 1, tf.int64),
        )
        from_rare = tf.gather(
            self._byte_id_table, tf.gather(rare_flat, rare_index)
        )
        out = tf.where(
            token_placeholder,
            from_rare,
            tf.where(
                tf.gather(is_pseudo, token),
                from_table,
                tf.gather(values, token),
            ),
        )
        return tf.RaggedTensor.from_row_splits(
            out, tf.gather(out_splits, ids.row_splits), validate=False
        )

    def _detokenize_graph(self, ids):
        return self._decoder(ids)

    @property
    def uses_core_ops_only(self):
        """True if the graph needs no TF Text op (see the class doc)."""
        return getattr(self, "_char_bpe", None) is not None

    def get_vocabulary(self):
        self._check_model()
        return list(self._model.pieces)

    @property
    def special_tokens(self):
        self._check_model()
        return dict(self._special)

    # --- Saving ---------------------------------------------------------------
    def get_config(self):
        """The config names the model by its SHA-256; the model itself is a
        Keras asset (`save_assets`), not megabytes of base64 in
        `config.json`. In the same process `from_config` finds the model by
        its digest (layer cloning); from a `.keras` file, `load_assets`
        reads it."""
        self._check_model()
        return {
            **super().get_config(),
            "proto": None,
            "proto_sha256": _KNOWN_PROTOS.remember(self.proto),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        proto = config.pop("proto", None)
        digest = config.pop("proto_sha256", None)
        if isinstance(proto, str):
            proto = _proto_of_config_string(proto)
        elif proto is None:
            proto = _KNOWN_PROTOS.get(digest, _FROM_ASSETS)
        layer = cls(proto, **config)
        layer._expected_sha256 = digest
        return layer

    def save_assets(self, dir_path):
        self._check_model()
        with open(os.path.join(dir_path, _ASSET), "wb") as f:
            f.write(self.proto)

    def load_assets(self, dir_path):
        path = os.path.join(dir_path, _ASSET)
        with open(path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if self._expected_sha256 not in (None, digest):
            raise ValueError(
                f"SentencePieceTokenizer: the model asset {path!r} has "
                f"SHA-256 {digest}, but the config names "
                f"{self._expected_sha256}: the saved file is corrupt or was "
                "edited."
            )
        if self.proto is None:
            self._set_proto(data, f"the model asset {path!r}")

    def _check_model(self):
        if self.proto is None:
            raise ValueError(
                "This SentencePieceTokenizer has no model yet: it was made "
                "by `from_config` from a config that names its model by "
                "digest only, and no `.keras` asset was loaded into it. Load "
                "the `.keras` file with `keras.saving.load_model`, or pass "
                "the `.model` file to `SentencePieceTokenizer`."
            )


# `from_config`: the model comes from the `.keras` file's assets.
_FROM_ASSETS = object()
_ASSET = "sentencepiece.model"
# Models whose config was taken in this process, by SHA-256 (the last 8).
_KNOWN_PROTOS = Recent()


def _proto_of_config_string(proto):
    """A config's `proto` string: base64 (configs written before the model
    became an asset), or a path, which is read only outside Keras' safe
    mode (a config must not make `load_model` read arbitrary files)."""
    try:
        return base64.b64decode(proto, validate=True)
    except (binascii.Error, ValueError):
        pass
    if serialization_lib.in_safe_mode():
        raise ValueError(
            "SentencePieceTokenizer: the config names the model file "
            f"{proto!r}. Reading a file named in a config is refused in "
            "Keras' safe mode; if you trust this config, load it with "
            "`keras.saving.load_model(..., safe_mode=False)`."
        )
    return proto
