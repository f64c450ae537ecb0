"""Graph helpers written for few graph nodes (see `engines/__init__.py`)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

# "No merge": the largest int64, so that a min over ranks never picks it.
INF = np.iinfo(np.int64).max


def take(values, mask):
    """`values[mask]` for 1-D tensors, in 3 graph nodes (`boolean_mask`
    uses about 15)."""
    return tf.gather(values, tf.reshape(tf.where(mask), [-1]))


def previous(values, fill):
    """`values` shifted right by one, `fill` first: constant slice bounds
    (a slice to a computed length is 3 more graph nodes)."""
    return tf.concat([[fill], values], 0)[:-1]


def lower_bound(sorted_values, values):
    """`tf.searchsorted(sorted_values, values)` (1-D, int64) in 4 graph
    nodes instead of 14."""
    found = tf.raw_ops.LowerBound(
        sorted_inputs=sorted_values[None],
        values=values[None],
        out_type=tf.int64,
    )
    return tf.reshape(found, [-1])
