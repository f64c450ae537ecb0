"""Index arithmetic on ragged row splits, shared by tokenizers and data."""

from __future__ import annotations

import tensorflow as tf


def marks(positions, size, values=None):
    """`[size]` tensor: `values` (default 1) summed at `positions`, else 0."""
    if values is None:
        values = tf.ones_like(positions)
    return tf.math.unsorted_segment_sum(values, positions, size)


def row_ids(splits):
    """The row of each value of a ragged tensor, from its row splits.

    A cumulative sum of row starts, not `tf.repeat` or
    `RaggedTensor.value_rowids()`, which tile a dense matrix and are
    several times slower on long, skewed batches (benchmarks/README.md).
    """
    total = splits[-1]
    starts = marks(splits[1:-1], total + 1)[:total]
    return tf.cumsum(starts)


def repeat(values, counts):
    """`tf.repeat(values, counts)` for 1-D int64 `counts`, without the
    dense `[len(values), max(counts)]` matrix `tf.repeat` tiles: one count
    of a million (a word of a million digits) no longer needs a million
    entries for every other value."""
    splits = tf.concat([[0], tf.cumsum(counts)], 0)
    return tf.gather(values, row_ids(splits))


def gather_rows(source, first, splits):
    """Row `r` of the result is `source[first[r]:first[r] + length]`.

    `splits` are the result's row splits (so `length` is their difference);
    returns the flat values.
    """
    row = row_ids(splits)
    offset = tf.range(splits[-1]) - tf.gather(splits, row)
    return tf.gather(source, tf.gather(first, row) + offset)
