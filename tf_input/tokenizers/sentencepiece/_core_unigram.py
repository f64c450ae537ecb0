"""SentencePiece unigram models in core TensorFlow ops.

The library's normalizer (`_core_normalizer`), its float32 Viterbi search
(`_lattice`) and its handling of unknown characters, with no TF Text op:
a SavedModel holding one loads with a plain `import tensorflow`.

The search runs on parts of lines ("words"), not whole lines, where that
gives the library's ids:

* Words. Between two characters that no matched piece holds side by
  side (`_pairs`; with ALBERT's model, 28% of the places between two
  characters of English text and nearly all in Chinese text), every path
  has a boundary, so a line splits there into words, searched
  independently, each distinct word of the batch once, and kept across
  batches (`engines/word_cache.py`). The
  library adds float32 scores from the line's start, so a word's sums
  start at the score of the line before it, and rounding could turn a
  near tie the other way. The words are searched in float64 with the
  margin of each decision on the path: where every margin is more than
  `(characters + 1) * ulp(M)` (`M` bounds every sum of the line: its
  length plus one, times the largest score magnitude), float32 sums from
  any start give the same path (each sum is off by at most half an ulp
  of `M` per addition, and a decision moves only if two candidates move
  together by more than its margin).
* The rest. A word that fails that test (an exact tie, as "*" "**"
  against "**" "*" in a run of asterisks) runs the search of the library
  itself, in float32, from the exact float32 score of the line before it.

Unknown nodes then become the unknown id (consecutive ones merged into
one, as the library does) or, with byte fallback, the ids of their bytes.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.engines.word_cache import WordCache
from tf_input.tokenizers.engines.word_cache import content_name
from tf_input.tokenizers.sentencepiece._core_normalizer import CoreNormalizer
from tf_input.tokenizers.sentencepiece._lattice import Lattice
from tf_input.tokenizers.sentencepiece._lattice import piece_scores

_PAIR = 1 << 21  # a pair of code points (a, b) is the key a * _PAIR + b
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
        # The search reads the pieces, their scores and types alone.
        self._cache = WordCache(
            content_name(
                "unigram_words",
                model.pieces,
                np.asarray(model.scores, np.float32),
                np.asarray(model.types, np.int64),
            )
        )
        ids, scores, unk = piece_scores(model)
        self._unk_score = unk
        with tf.init_scope():
            self._scores = tf.constant(scores, tf.float32)
        # Every score lies in [unk, largest]: a sum of n of them, and its
        # float32 roundings, stays within n * `_magnitude`.
        self._magnitude = float(max(abs(unk), float(np.max(scores)))) * 1.01
        # The pairs of characters some matched piece holds side by side:
        # between any other two, every path has a boundary.
        pairs = {
            ord(a) * _PAIR + ord(b)
            for piece in ids
            for a, b in zip(piece, piece[1:])
        }
        with tf.init_scope():
            self._pairs = lookup_table(
                sorted(pairs), [1] * len(pairs), 0, key_dtype=tf.int64
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
        return self._finish(*self._by_words(lines))

    def tokenize_with_offsets(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids, and int64 byte
        begins and ends in the input as `sentencepiece` gives them: the
        `norm_to_orig` of the token's first and past-the-end normalized
        characters (`CoreNormalizer.with_alignments`). A run of unknown
        characters (one unknown token) spans the run; with byte fallback,
        the last byte piece of an unknown character spans the character
        and the others are empty at its start."""
        lines, norm_to_orig = self._normalizer.with_alignments(
            tf.reshape(texts, [-1])
        )
        values, splits = self._by_words(lines)
        # Before runs of unknown nodes merge, each token covers its
        # piece's characters, an unknown node one.
        length = tf.where(
            values >= 0,
            tf.gather(self._piece_chars, tf.maximum(values, 0)),
            1,
        )
        begin = starts_in_rows(length, splits)
        end = begin + length
        if self._byte_ids is not None:
            ids = _expand_bytes(values, splits, self._byte_ids)
            out_splits = tf.concat([[0], tf.cumsum(_utf8_sizes(values))], 0)
            node = row_ids(out_splits)
            last = tf.equal(
                tf.range(out_splits[-1]) + 1, tf.gather(out_splits[1:], node)
            )
            begin = tf.gather(begin, node)
            end = tf.where(last, tf.gather(end, node), begin)
        else:
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

    def _by_words(self, lines):
        """The search over the parts of each line between the boundaries
        every path has (`_pairs`), with float64 paths where they are
        safe (module docstring): `(values, splits)` of the lines."""
        cps = tf.strings.unicode_decode(lines, "UTF-8")
        chars = tf.cast(cps.flat_values, tf.int64)
        total = tf.size(chars, out_type=tf.int64)
        first = tf.scatter_nd(
            cps.row_splits[:-1, None],
            tf.ones_like(cps.row_splits[:-1]),
            [total + 1],
        )[:-1]
        before = tf.concat([[0], chars[:-1]], 0)
        cut = (first > 0) | tf.equal(
            self._pairs.lookup(before * _PAIR + chars), 0
        )
        starts = tf.where(cut)[:, 0]
        units = tf.RaggedTensor.from_row_starts(
            cps.flat_values, starts, validate=False
        )
        words = tf.strings.unicode_encode(units, "UTF-8")
        size = units.row_lengths()
        owner = tf.gather(cps.value_rowids(), starts)
        count = tf.size(lines, out_type=tf.int64)
        distinct, index = tf.unique(words, out_idx=tf.int64)
        values, splits, margin = self._cache(distinct, self._word_search)
        # The bound of every sum up to a word's end: its end's character
        # position in the line + 1, times the largest score magnitude;
        # its float32 ulp.
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

    def _word_search(self, words):
        """The float64 search of `words`: ids, splits and the smallest
        margin on each path (what `WordCache` keeps)."""
        values, splits, margin, _ = self._lattice(words, margins=True)
        return values, splits, margin

    def _resolve(self, values, splits, pending, occurrences):
        """The words whose float64 path is not certain (`pending`) get the
        library's float32 search, from the score the line has before them:
        in each round the first pending word of each line, whose base is
        then exact (the float32 sums of the tokens before it, in order,
        `tf.cumsum` along a row being sequential)."""
        owner, words, lines = occurrences
        total = tf.size(pending, out_type=tf.int64)
        index = tf.range(total)
        # Each line's first word.
        line_first = tf.math.unsorted_segment_min(index, owner, lines)

        def round_(values, splits, pending):
            first = tf.math.unsorted_segment_min(
                tf.where(pending, index, total), owner, lines
            )
            chosen = pending & tf.equal(tf.gather(first, owner), index)
            at = tf.where(chosen)[:, 0]
            # The float32 sums of the tokens before each chosen word in
            # its line, in order (`tf.cumsum` along a row is sequential;
            # the zeros it adds, first and after a row's end, change no
            # sum).
            line = tf.gather(owner, at)
            before = tf.ragged.range(
                tf.gather(splits, tf.gather(line_first, line)),
                tf.gather(splits, at),
            )
            ids = tf.gather(values, before.flat_values)
            scores = before.with_flat_values(
                tf.where(
                    ids >= 0,
                    tf.gather(self._scores, tf.maximum(ids, 0)),
                    self._unk_score,
                )
            ).to_tensor()
            start = tf.zeros([tf.shape(scores)[0], 1], scores.dtype)
            scores = tf.concat([start, scores], 1)
            bases = tf.cumsum(scores, axis=1)[:, -1]
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


def _utf8_sizes(values):
    """int64: the UTF-8 length of each unknown node's character (code
    point `-1 - value`), 1 for a piece: the ids each becomes with byte
    fallback."""
    return utf8_lengths(tf.where(values < 0, -1 - values, 0))


def _expand_bytes(values, splits, byte_ids):
    """Byte fallback: an unknown node becomes the ids of its bytes."""
    is_unk = values < 0
    code = tf.where(is_unk, -1 - values, 0)
    size = utf8_lengths(code)
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
