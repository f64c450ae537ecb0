"""SentencePiece unigram models in core TensorFlow ops.

The library's normalizer (`_core_normalizer`), its float32 Viterbi search
(`_lattice`) and its handling of unknown characters, with no TF Text op:
a SavedModel holding one loads with a plain `import tensorflow`.

The search runs on words, not lines, where that gives the library's ids:

* Words. When no piece has "▁" after its first character, every path
  has a boundary before each "▁", so a line splits there into words,
  searched independently, each distinct word of the batch once. The
  library adds float32 scores from the line's start, so a word's sums
  start at the score of the line before it, and rounding could turn a
  near tie the other way. The words are searched in float64 with the
  margin of each decision on the path: where every margin is more than
  `(characters + 1) * ulp(M)` (`M` bounds every sum of the line: its
  length plus one, times the largest score magnitude), float32 sums from
  any start give the same path (each sum is off by at most half an ulp
  of `M` per addition, and a decision moves only if two candidates move
  together by more than its margin).
* Lines. A line with a word that fails that test (an exact tie, as "*"
  "**" against "**" "*" in a run of asterisks) runs the search of the
  library itself, in float32 over the whole line, as do all lines of a
  model whose pieces hold "▁" inside.

Unknown nodes then become the unknown id (consecutive ones merged into
one, as the library does) or, with byte fallback, the ids of their bytes.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers.sentencepiece._core_normalizer import CoreNormalizer
from tf_input.tokenizers.sentencepiece._lattice import Lattice
from tf_input.tokenizers.sentencepiece._lattice import piece_scores
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNUSED
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED

_SEP = b"\xfe"  # a word break: never in valid UTF-8
# float32's unit in the last place is 2 ** (exponent - 23).
_MANTISSA_BITS = 23


class CoreUnigramGraph(tf.Module):
    """Tables and graph of a unigram model in core ops.

    Args:
        model: the parsed `_proto` model.
        byte_ids: None, or the ids of the 256 byte pieces (byte fallback).
    """

    uses_core_ops_only = True

    def __init__(self, model, byte_ids):
        super().__init__()
        self._model = model
        self._normalizer = CoreNormalizer(model)
        self._lattice = Lattice(model)
        _, scores, unk = piece_scores(model)
        self._unk_score = unk
        with tf.init_scope():
            self._scores = tf.constant(scores, tf.float32)
        # Every score lies in [unk, largest]: a sum of n of them, and its
        # float32 roundings, stays within n * `_magnitude`.
        self._magnitude = float(max(abs(unk), float(np.max(scores)))) * 1.01
        matched = (_NORMAL, _USER_DEFINED, _UNUSED)
        self._words = not any(
            _SPACE in piece[1:]
            for piece, kind in zip(model.pieces, model.types)
            if kind in matched
        )
        self._unk_id = model.unk_id
        with tf.init_scope():
            # Each piece's length in characters, for offsets.
            self._piece_chars = tf.constant(
                [len(piece) for piece in model.pieces], tf.int64
            )
        self._byte_ids = None
        if byte_ids is not None:
            with tf.init_scope():
                self._byte_ids = tf.constant(byte_ids, tf.int32)

    def warm_up(self):
        """Nothing to parse ahead: the tables are built in `__init__`."""

    def tokenize(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids."""
        lines = self._normalizer(tf.reshape(texts, [-1]))
        if self._words:
            values, splits = self._by_words(lines)
        else:
            values, splits = self._by_lines(lines)
        return self._finish(values, splits)

    def tokenize_with_offsets(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids, and int64 byte
        begins and ends in the input as `sentencepiece` gives them: the
        `norm_to_orig` of the token's first and past-the-end normalized
        characters (`CoreNormalizer.with_alignments`). A run of unknown
        characters (one unknown token) spans the run. Byte fallback is
        not supported here (no model at hand to check it against)."""
        lines, norm_to_orig = self._normalizer.with_alignments(
            tf.reshape(texts, [-1])
        )
        if self._words:
            values, splits = self._by_words(lines)
        else:
            values, splits = self._by_lines(lines)
        # Before runs of unknown nodes merge, each token covers its
        # piece's characters, an unknown node one.
        length = tf.where(
            values >= 0,
            tf.gather(self._piece_chars, tf.maximum(values, 0)),
            1,
        )
        begin = starts_in_rows(length, splits)
        end = begin + length
        ids = _merge_unknowns(values, splits, self._unk_id)
        # The token of each node: merged nodes join the token before.
        token = tf.cumsum(tf.cast(~_repeats(values, splits), tf.int64)) - 1
        count = tf.size(ids.flat_values, out_type=tf.int64)
        begin = tf.math.unsorted_segment_min(begin, token, count)
        end = tf.math.unsorted_segment_max(end, token, count)
        line = ids.value_rowids()
        first = tf.gather(norm_to_orig.row_splits, line)
        begin = tf.gather(norm_to_orig.flat_values, first + begin)
        end = tf.gather(norm_to_orig.flat_values, first + end)
        return ids, ids.with_flat_values(begin), ids.with_flat_values(end)

    def _by_lines(self, lines):
        """The library's search on each whole line: `(values, splits)`."""
        size = tf.strings.length(lines)
        full = tf.where(size > 0)[:, 0]
        values, splits = self._lattice(tf.gather(lines, full))
        counts = tf.scatter_nd(
            full[:, None], splits[1:] - splits[:-1], tf.shape(lines, tf.int64)
        )
        return values, tf.concat([[0], tf.cumsum(counts)], 0)

    def _by_words(self, lines):
        """Words where their float64 paths are safe, else whole lines."""
        marked = tf.strings.regex_replace(lines, _SPACE, _SEP + _SPACE.encode())
        where, words, _ = tf.raw_ops.StringSplitV2(input=marked, sep=_SEP)
        keep = tf.where(tf.strings.length(words) > 0)[:, 0]
        words = tf.gather(words, keep)
        owner = tf.gather(where[:, 0], keep)
        count = tf.size(lines, out_type=tf.int64)
        distinct, index = tf.unique(words, out_idx=tf.int64)
        values, splits, margin, sizes = self._lattice(distinct, margins=True)
        # The bound of every sum up to a word's end: its end's character
        # position in the line + 1, times the largest score magnitude;
        # its float32 ulp.
        size = tf.gather(sizes, index)
        ends = tf.cumsum(size)
        line_start = tf.math.unsorted_segment_min(ends - size, owner, count)
        end = ends - tf.gather(line_start, owner)
        bound = tf.cast(end + 1, tf.float64) * self._magnitude
        ulp = tf.pow(
            tf.constant(2.0, tf.float64),
            tf.math.ceil(tf.math.log(bound) / np.log(2.0)) - _MANTISSA_BITS,
        )
        safe = tf.gather(margin, index) > (
            tf.cast(size + 1, tf.float64) * ulp * 1.01 + 1e-9
        )
        occurrences = tf.gather(
            tf.RaggedTensor.from_row_splits(values, splits, validate=False),
            index,
        )
        values, splits = self._resolve(
            occurrences.values,
            occurrences.row_splits,
            ~safe,
            (owner, words, count),
        )
        counts = tf.math.unsorted_segment_sum(
            splits[1:] - splits[:-1], owner, count
        )
        return values, tf.concat([[0], tf.cumsum(counts)], 0)

    def _resolve(self, values, splits, pending, occurrences):
        """The words whose float64 path is not certain (`pending`) get the
        library's float32 search, from the score the line has before them:
        in each round the first pending word of each line, whose base is
        then exact (the float32 sums of the tokens before it, in order,
        `tf.cumsum` along a row being sequential)."""
        owner, words, lines = occurrences
        total = tf.size(pending, out_type=tf.int64)
        index = tf.range(total)

        def round_(values, splits, pending):
            first = tf.math.unsorted_segment_min(
                tf.where(pending, index, total), owner, lines
            )
            chosen = pending & tf.equal(tf.gather(first, owner), index)
            at = tf.where(chosen)[:, 0]
            # The sums of each line's tokens, in order, in float32.
            scores = tf.where(
                values >= 0,
                tf.gather(self._scores, tf.maximum(values, 0)),
                self._unk_score,
            )
            token_line = tf.gather(owner, row_ids(splits))
            per_line = tf.math.unsorted_segment_sum(
                tf.ones_like(token_line), token_line, lines
            )
            line_start = tf.cumsum(per_line, exclusive=True)
            place = tf.range(tf.size(values, out_type=tf.int64)) - tf.gather(
                line_start, token_line
            )
            width = tf.reduce_max(tf.concat([per_line, [0]], 0))
            sums = tf.cumsum(
                tf.scatter_nd(
                    tf.stack([token_line, place], 1), scores, [lines, width]
                ),
                axis=1,
            )
            line = tf.gather(owner, at)
            before = tf.gather(splits, at) - tf.gather(line_start, line)
            bases = tf.where(
                before > 0,
                tf.gather_nd(
                    sums, tf.stack([line, tf.maximum(before - 1, 0)], 1)
                ),
                0.0,
            )
            new_values, new_splits = self._lattice(
                tf.gather(words, at), bases=bases
            )
            both = tf.concat(
                [
                    tf.RaggedTensor.from_row_splits(
                        values, splits, validate=False
                    ),
                    tf.RaggedTensor.from_row_splits(
                        new_values, new_splits, validate=False
                    ),
                ],
                0,
            )
            rank = tf.cumsum(tf.cast(chosen, tf.int64), exclusive=True)
            out = tf.gather(both, tf.where(chosen, total + rank, index))
            return out.values, out.row_splits, pending & ~chosen

        values, splits, _ = tf.while_loop(
            lambda values, splits, pending: tf.reduce_any(pending),
            round_,
            (values, splits, pending),
            shape_invariants=(
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                pending.shape,
            ),
        )
        return values, splits

    def _finish(self, values, splits):
        if self._byte_ids is None:
            return _merge_unknowns(values, splits, self._unk_id)
        return _expand_bytes(values, splits, self._byte_ids)


def _repeats(values, splits):
    """bool: the unknown nodes that follow one in the same row."""
    is_unk = values < 0
    size = tf.size(values, tf.int64)
    row_start = tf.scatter_nd(
        splits[:, None], tf.ones_like(splits, tf.int32), [size + 1]
    )[:-1]
    return is_unk & tf.concat([[False], is_unk[:-1]], 0) & (row_start == 0)


def _merge_unknowns(values, splits, unk):
    """Unknown nodes become the unknown id; runs of them merge."""
    repeat = _repeats(values, splits)
    values = tf.where(values < 0, unk, values)
    dropped = tf.searchsorted(
        tf.reshape(tf.where(repeat), [-1]), splits, out_type=tf.int64
    )
    kept = tf.boolean_mask(values, ~repeat)
    return tf.RaggedTensor.from_row_splits(
        kept, splits - dropped, validate=False
    )


def _expand_bytes(values, splits, byte_ids):
    """Byte fallback: an unknown node becomes the ids of its bytes."""
    is_unk = values < 0
    code = tf.where(is_unk, -1 - values, 0)
    size = (
        1
        + tf.cast(code >= 0x80, tf.int64)
        + tf.cast(code >= 0x800, tf.int64)
        + tf.cast(code >= 0x10000, tf.int64)
    )
    size = tf.where(is_unk, size, 1)
    encoded = tf.strings.unicode_encode(code[:, None], "UTF-8")
    raw = tf.io.decode_raw(
        tf.strings.reduce_join(tf.where(is_unk, encoded, "")), tf.uint8
    )
    raw = tf.concat([tf.cast(raw, tf.int32), [0]], 0)
    first = tf.cumsum(tf.where(is_unk, size, 0), exclusive=True)
    out_splits = tf.concat([[0], tf.cumsum(size)], 0)
    token = row_ids(out_splits)
    offset = tf.range(out_splits[-1]) - tf.gather(out_splits, token)
    unk_token = tf.gather(is_unk, token)
    byte = tf.gather(
        raw,
        tf.where(
            unk_token,
            tf.gather(first, token) + offset,
            tf.size(raw, tf.int64) - 1,
        ),
    )
    out = tf.where(
        unk_token, tf.gather(byte_ids, byte), tf.gather(values, token)
    )
    return tf.RaggedTensor.from_row_splits(
        out, tf.gather(out_splits, splits), validate=False
    )
