"""`sentencepiece`'s unigram Viterbi search (`EncodeOptimized`), core ops.

As the library (0.2.3) on a normalized line: for each character, the
pieces that end there (normal and user-defined ones; unused pieces never
match); a character without a one-character piece is also an unknown node
scored `min normal score - 10`. Scores add in float32, from 0 at the
line's start; at each position the best candidate wins, and of equal
ones the one that starts earliest (the library keeps the first of its
left-to-right walk and replaces it only by a strictly greater one). A
user-defined piece scores `0.1 * (bytes - 1)` (float32).

The search is `engines/viterbi.py`'s layout (one `tf.while_loop` step per
character position, for all units at once; a window of the last `longest`
best scores), in float32. With `margins=True` it runs in float64 instead
and also gives, per position, how far the winner is ahead of the next
candidate: a unit whose margins are large enough gets the same path from
float32 sums that start at any base score of bounded size (see
`_core_unigram`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers.engines.viterbi import _best_path
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _UNUSED
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED

UNK_PENALTY = np.float32(10.0)  # sentencepiece's kUnkPenalty


def piece_scores(model):
    """`({piece: id}, float32 scores, unk score)` of the pieces the search
    matches, as the library scores them."""
    ids, scores = {}, np.zeros(len(model.pieces), np.float32)
    for i, (piece, score, kind) in enumerate(
        zip(model.pieces, model.scores, model.types)
    ):
        if kind == _NORMAL:
            ids[piece], scores[i] = i, score
        elif kind == _USER_DEFINED:
            size = np.float32(len(piece.encode("utf-8")) - 1)
            ids[piece], scores[i] = i, np.float32(0.1) * size
    normal = [s for s, t in zip(model.scores, model.types) if t == _NORMAL]
    unk = np.float32(np.float32(min(normal)) - UNK_PENALTY)
    return ids, scores, unk


class Lattice(tf.Module):
    """The search over units (normalized lines, or parts of them with a
    boundary of every path at each end).

    Returns per unit the ids of its best path; an unknown node gives
    `-1 - code point`.
    """

    def __init__(self, model):
        super().__init__()
        ids, scores, unk = piece_scores(model)
        prefixes = set()
        for piece, kind in zip(model.pieces, model.types):
            if kind in (_NORMAL, _USER_DEFINED, _UNUSED):
                prefixes.update(piece[:k] for k in range(1, len(piece)))
        self.longest = max(len(p) for p in ids)
        self.unk_score = unk
        with tf.init_scope():
            self._ids = lookup_table(
                [p.encode() for p in ids],
                list(ids.values()),
                -1,
                key_dtype=tf.string,
                value_dtype=tf.int32,
            )
            self._prefixes = lookup_table(
                [p.encode() for p in prefixes],
                [True] * len(prefixes),
                False,
                key_dtype=tf.string,
                value_dtype=tf.bool,
            )
            self._scores = tf.constant(scores, tf.float32)

    def __call__(self, units, margins=False, bases=None):
        """`[U]` non-empty units -> `(values, [U + 1] splits)`, and with
        `margins` also `(smallest margin on the path, characters)` per
        unit (float64 search). `bases`: None, or float32 `[U]`, the score
        each unit's sums start from (float32 searches)."""
        cps = tf.strings.unicode_decode(units, "UTF-8")
        flat = cps.values
        splits = cps.row_splits
        count = tf.size(flat, out_type=tf.int64)
        word = row_ids(splits)
        local = tf.range(count) - tf.gather(splits, word)
        ids = self._candidates(flat, word, count)
        unknown = tf.equal(ids[:, 0], -1)
        exists = tf.concat([tf.ones_like(unknown)[:, None], ids[:, 1:] >= 0], 1)
        dtype = tf.float64 if margins else tf.float32
        scores = tf.gather(self._scores, tf.maximum(ids, 0))
        scores = tf.concat(
            [
                tf.where(unknown, self.unk_score, scores[:, 0])[:, None],
                scores[:, 1:],
            ],
            1,
        )
        scores = tf.cast(scores, dtype)
        scores = tf.where(exists, scores, tf.zeros_like(scores))
        if bases is None:
            bases = tf.zeros(tf.shape(splits)[:1] - 1, dtype)
        back, margin = _search(
            self.longest, word, local, splits, scores, exists, bases
        )
        on_path = _best_path(splits, back, count)
        length = tf.where(on_path, back, 0)
        token = tf.gather(
            tf.reshape(ids, [-1]),
            tf.range(count) * self.longest + tf.maximum(length - 1, 0),
        )
        token = tf.where(
            (length == 1) & unknown, -1 - tf.cast(flat, tf.int32), token
        )
        ends = tf.where(on_path)[:, 0]
        values = tf.gather(token, ends)
        units_count = tf.size(splits, out_type=tf.int64) - 1
        per_unit = tf.math.unsorted_segment_sum(
            tf.ones_like(ends), tf.gather(word, ends), units_count
        )
        out_splits = tf.concat([[0], tf.cumsum(per_unit)], 0)
        if not margins:
            return values, out_splits
        smallest = tf.math.unsorted_segment_min(
            tf.gather(margin, ends), tf.gather(word, ends), units_count
        )
        sizes = splits[1:] - splits[:-1]
        return values, out_splits, smallest, sizes

    def _candidates(self, flat, word, count):
        """int32 `[count, longest]`: column `l - 1` of row `j` is the id of
        the piece of the `l` characters ending at `j`, or -1."""
        chars = tf.strings.unicode_encode(flat[:, None], "UTF-8")
        columns = []
        ends = tf.range(count)
        grown = chars
        for length in range(1, self.longest + 1):
            ids = self._ids.lookup(grown)
            columns.append(
                tf.scatter_nd(ends[:, None], ids + 1, [count])  # 0 = none
            )
            if length == self.longest:
                break
            alive = self._prefixes.lookup(grown)
            nxt = ends + 1
            alive &= nxt < count
            nxt = tf.minimum(nxt, count - 1)
            alive &= tf.gather(word, nxt) == tf.gather(word, ends)
            keep = tf.where(alive)[:, 0]
            ends = tf.gather(nxt, keep)
            grown = tf.strings.join(
                [tf.gather(grown, keep), tf.gather(chars, ends)]
            )
        return tf.stack(columns, 1) - 1


def _search(longest, word, local, splits, scores, exists, bases):
    """`(back, margin)`: per character, the length of the last piece of
    the best path up to it, and how far that candidate is ahead of the
    next best (inf: no other; float64 searches only mean anything).

    Units go longest first, so the units still running at step `k` are
    the first `n_k` (see `engines/viterbi.py`).
    """
    dtype = scores.dtype
    sizes = splits[1:] - splits[:-1]
    rank = tf.argsort(-sizes, stable=True)
    starts = tf.gather(splits[:-1], rank)
    sizes = tf.gather(sizes, rank)
    bases = tf.gather(bases, rank)
    units = tf.size(sizes)
    steps = tf.maximum(tf.reduce_max(sizes), 0)
    lengths = tf.range(1, longest + 1, dtype=tf.int64)
    neg = tf.constant(-np.inf, dtype)

    def step(k, window, found, gaps):
        n = tf.reduce_sum(tf.cast(sizes > k, tf.int32))
        js = starts[:n] + k
        start = k - lengths + 1  # [L], the piece's start in its unit
        before = tf.transpose(tf.reverse(window[:, :n], [0]))
        before = tf.where((start > 0)[None, :], before, bases[:n, None])
        ok = tf.gather(exists, js) & (start >= 0)[None, :]
        candidate = tf.where(ok, before + tf.gather(scores, js), neg)
        top = tf.reduce_max(candidate, 1)
        ties = tf.equal(candidate, top[:, None])
        # Ties: the candidate that starts earliest (the longest) wins.
        chosen = longest - tf.argmax(
            tf.cast(tf.reverse(ties, [1]), tf.int32), 1, output_type=tf.int64
        )
        others = tf.where(
            tf.equal(lengths[None, :], chosen[:, None]), neg, candidate
        )
        gap = top - tf.reduce_max(others, 1)
        window = tf.concat([window[1:, :n], top[None, :]], 0)
        window = tf.ensure_shape(window, [longest, None])
        at = tf.cast(k, tf.int32)
        return k + 1, window, found.write(at, chosen), gaps.write(at, gap)

    def array(kind):
        return tf.TensorArray(
            kind,
            size=tf.cast(steps, tf.int32),
            element_shape=[None],
            infer_shape=False,
        )

    _, _, found, gaps = tf.while_loop(
        lambda k, *_: k < steps,
        step,
        (
            tf.constant(0, tf.int64),
            tf.zeros([longest, units], dtype),
            array(tf.int64),
            array(dtype),
        ),
        shape_invariants=(
            tf.TensorShape([]),
            tf.TensorShape([longest, None]),
            tf.TensorShape(None),
            tf.TensorShape(None),
        ),
        parallel_iterations=1,
    )
    position = tf.gather(tf.math.invert_permutation(rank), word)
    order = tf.argsort(
        local * tf.cast(units, tf.int64) + tf.cast(position, tf.int64),
        stable=True,
    )
    count = tf.size(word, out_type=tf.int64)
    order = tf.cast(order, tf.int64)[:, None]
    back = tf.scatter_nd(order, found.concat()[:count], [count])
    margin = tf.scatter_nd(order, gaps.concat()[:count], [count])
    return back, margin
