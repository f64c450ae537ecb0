"""The unigram graph of `SentencePieceTokenizer`: routes to TF Text's ops.

See the package docstring for why unigram models take three routes (the
fast op as it is, the library's normalizer then the fast op, and a table
lookup for lines with a single segmentation) and how the model the fast
op gets is rewritten (`_unigram_plan`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.sentencepiece._normalizer import normalizer_proto
from tf_input.tokenizers.sentencepiece._normalizer import whitespace_rules
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_fast
from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_library
from tf_input.tokenizers.sentencepiece._unigram_plan import _unigram_plan

# Space-free runs of this many bytes or more are normalized through the
# byte-fallback model (see `UnigramGraph._normalize`). Shorter
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
    cost every `tf.data` iterator set-up time (see benchmarks/README.md).
    """
    return tf.strings.unsorted_segment_join(
        strings, row_ids(splits), tf.size(splits) - 1
    )


class UnigramGraph(tf.Module):
    """Tables and graph of a unigram model (see the module docstring).

    Args:
        proto: bytes, the `.model` file.
        model: its parsed `_proto` model.
        byte_ids: None, or the ids of the 256 byte pieces (byte fallback).
    """

    uses_core_ops_only = False

    def __init__(self, proto, model, byte_ids):
        super().__init__()
        self._model = model
        self._byte_ids = byte_ids
        plan = _unigram_plan(proto)
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
        self._library_proto = normalizer_proto(model)
        self._plain_pattern = plan.plain_pattern
        self._run_break_pattern = plan.run_break_pattern
        self._byte_normalizer = normalizer_proto(model, True)
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

    def warm_up(self):
        """Makes the library op parse its models now, outside any graph
        (an error in them is then one of the constructor)."""
        _run_library(self._library_proto, tf.constant([""]), tf.int32)
        if self._byte_normalizer is not None:
            _run_library(self._byte_normalizer[0], tf.constant([""]), tf.int32)

    def tokenize(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids."""
        # No `tf.cond` here: inside `tf.data` each conditional costs more
        # to instantiate per iterator than it saves per batch.
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
        (`set_piece(piece() + w)`): quadratic in a run without spaces
        (bench_hostile.py in benchmarks/README.md). So three ways, by line:

        0. no character a normalization rule (or a user-defined piece)
           starts with, valid UTF-8: the whitespace rules alone, by regex;
        1. runs under `_LONG_RUN` bytes between spaces (or characters the
           rules turn into spaces): the library op with the merging
           character model, as before;
        2. longer runs: the library op with a byte-fallback model, which
           gives each byte a piece of its own (linear, slower than 1
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
        out = [whitespace_rules(parts[0], self._model)]
        out.append(_join_rows(merged.values, merged.row_splits))
        if self._byte_normalizer is not None:
            proto, table = self._byte_normalizer
            ids = _run_library(proto, parts[2], tf.int32)
            out.append(_join_rows(tf.gather(table, ids.values), ids.row_splits))
        order = tf.math.invert_permutation(tf.concat(positions, axis=0))
        return tf.gather(tf.concat(out, axis=0), order)

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
        char_lengths = utf8_lengths(code_points)
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
