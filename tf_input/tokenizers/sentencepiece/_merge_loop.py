"""The character BPE's merge loop, written for few graph nodes.

The same merges, in the same order, as `byte_pair.merge_sequences` (the
byte-level engine's loop, which the character BPE used until now), but
with no `tf.cond` in the loop body, int64 tokens (no casts) and shifts
with constant slice bounds: each `tf.data` iterator instantiates and
graph-optimizes the map function again, about 0.2 ms of CPU per op, and
the shared loop's functions (167 non-constant ops) took 105 ms of a 220
ms one-line epoch. This body has 124 ops. It is a file of its own because
the byte-level engine's loop is shared and changed by other work; the
tests check that both give the same merges on random tables.

One step, per chunk: the pairs of the chunk's best rank are the picks;
for a rank that several merged pieces share (SentencePiece pieces of
equal score), only the leftmost, as sentencepiece's queue (score, then
leftmost) does. Runs of one picked pair (`a a a`) take every other pick
from the left. When a merge may make a pair ranked better than the
current one (`all_at_once` is False: SentencePiece scores need not grow
with the merges), a chunk keeps its picks only up to the first one whose
merged piece forms such a pair with a neighbour; the rest wait for the
next step. The overlap and first-steps rules are computed on the picked
positions only, every step, rather than behind a `tf.cond`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

_INF = np.iinfo(np.int64).max


def _take(values, mask):
    """`values[mask]` for 1-D tensors, in 3 graph nodes."""
    return tf.gather(values, tf.reshape(tf.where(mask), [-1]))


def _previous(values, fill):
    """`values` shifted right by one, `fill` first: constant slice bounds
    (a slice to a computed length is 3 more graph nodes)."""
    return tf.concat([[fill], values], 0)[:-1]


def _first_steps_only(at, tok, chunk_of, num_chunks, best, lookup):
    """The picks `at` (pair positions, increasing) up to, per chunk, the
    first one whose merged piece pairs at a better rank than this step's
    with its left neighbour (the previous pick's result if adjacent, else
    the token before) or the token after it."""
    size = tf.size(tok, out_type=tf.int64)
    chunk = tf.gather(chunk_of, at)
    picked = tf.gather(best, at)
    merged = tf.bitwise.bitwise_and(picked, 0xFFFFFFFF)
    rank = tf.bitwise.right_shift(picked, 32)
    before = tf.maximum(at - 1, 0)
    has_left = (at > 0) & tf.equal(tf.gather(chunk_of, before), chunk)
    left = tf.where(
        tf.equal(at, _previous(at, -3) + 2),
        _previous(merged, 0),
        tf.gather(tok, before),
    )
    after = tf.minimum(at + 2, size - 1)
    has_right = (at + 2 < size) & tf.equal(tf.gather(chunk_of, after), chunk)
    left_rank = tf.bitwise.right_shift(lookup(left, merged), 32)
    right_rank = tf.bitwise.right_shift(
        lookup(merged, tf.gather(tok, after)), 32
    )
    lower = (has_left & (left_rank < rank)) | (has_right & (right_rank < rank))
    index = tf.range(tf.size(at, out_type=tf.int64))
    first_lower = tf.math.unsorted_segment_min(
        tf.where(lower, index, tf.int64.max), chunk, num_chunks
    )
    return _take(at, index <= tf.gather(first_lower, chunk))


def merge_loop(
    tok,
    chunk_of,
    num_chunks,
    *,
    merge_table,
    num_tokens,
    all_at_once,
    tied_ranks=None,
):
    """The BPE loop: `tok` int32 `[T]`, `chunk_of` int32 `[T]`
    (non-decreasing, `num_chunks` chunks) -> the merged `(tok, chunk_of)`.

    `merge_table`: int64 `left * num_tokens + right` -> `rank << 32 |
    merged id` (`_INF` for no merge). `tied_ranks`: None or a bool tensor
    indexed by rank, True for ranks several merged ids share. Tokens are
    int64 inside the loop (no casts per step).
    """
    num_tokens = tf.constant(num_tokens, tf.int64)

    def step_lookup(left, right):
        return merge_table.lookup(left * num_tokens + right)

    def step(tok, chunk_of, _):
        pair_chunk = chunk_of[:-1]
        # `best`: rank << 32 | merged id, so the min is the best pair.
        best = tf.where(
            tf.equal(pair_chunk, chunk_of[1:]),
            step_lookup(tok[:-1], tok[1:]),
            _INF,
        )
        chunk_best = tf.gather(
            tf.math.unsorted_segment_min(best, pair_chunk, num_chunks),
            pair_chunk,
        )
        rank = tf.bitwise.right_shift(best, 32)
        if tied_ranks is None:
            pick = tf.equal(best, chunk_best)
        else:
            # The chunk's best rank, whichever piece it makes.
            pick = tf.equal(rank, tf.bitwise.right_shift(chunk_best, 32))
        # From here on, the picked positions only (a few per chunk).
        at = tf.reshape(tf.where(pick & (best != _INF)), [-1])
        index = tf.range(tf.size(at, out_type=tf.int64))
        # Runs of adjacent picks (`a a a`): every other one from the left.
        # A run never crosses chunks, so a chunk's first pick starts one.
        new_run = tf.not_equal(at, _previous(at, -2) + 1)
        run_start = tf.gather(
            _take(index, new_run), tf.cumsum(tf.cast(new_run, tf.int64)) - 1
        )
        keep = tf.equal((index - run_start) % 2, 0)
        if tied_ranks is not None:
            chunk = tf.gather(pair_chunk, at)
            first = tf.not_equal(chunk, _previous(chunk, -1))
            tied = tf.gather(
                tied_ranks,
                tf.minimum(
                    tf.gather(rank, at), tf.size(tied_ranks, tf.int64) - 1
                ),
            )
            keep = keep & (first | ~tied)
        at = _take(at, keep)
        if not all_at_once:
            at = _first_steps_only(
                at, tok, chunk_of, num_chunks, best, step_lookup
            )
        tok = tf.tensor_scatter_nd_update(
            tok,
            at[:, None],
            tf.bitwise.bitwise_and(tf.gather(best, at), 0xFFFFFFFF),
        )
        gone = tf.math.unsorted_segment_sum(
            tf.ones_like(at), at + 1, tf.size(tok, out_type=tf.int64)
        )
        kept = tf.reshape(tf.where(tf.equal(gone, 0)), [-1])
        return (
            tf.gather(tok, kept),
            tf.gather(chunk_of, kept),
            tf.size(at) > 0,
        )

    tok, chunk_of, _ = tf.while_loop(
        lambda tok, chunk_of, merged: merged & (tf.size(tok) > 1),
        step,
        [tf.cast(tok, tf.int64), chunk_of, tf.constant(True)],
    )
    return tf.cast(tok, tf.int32), chunk_of
