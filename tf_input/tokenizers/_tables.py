"""Static lookup tables: the one way tokenizers build `StaticHashTable`s."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def lookup_table(keys, values, default, *, key_dtype, value_dtype=tf.int64):
    """A `tf.lookup.StaticHashTable` from `keys` to `values`.

    Args:
        keys: sequence or array of str / bytes (`key_dtype=tf.string`) or
            ints (`key_dtype=tf.int64`), each once.
        values: sequence or array of ints, one per key.
        default: int, what a missing key gives.
        key_dtype: `tf.string` or `tf.int64`.
        value_dtype: the values' dtype. Defaults to `tf.int64`.

    A table cannot be empty: with no keys, it holds one key that maps to
    `default` (`""` or `-1`), so every lookup still gives `default`.
    """
    if len(keys) != len(values):
        raise ValueError(
            f"A lookup table needs one value per key. Received: "
            f"{len(keys)} keys and {len(values)} values."
        )
    if not len(keys):
        keys = [b"" if key_dtype == tf.string else -1]
        values = [default]
    if key_dtype != tf.string:
        keys = np.asarray(keys, np.int64)
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, key_dtype),
            tf.constant(np.asarray(values), value_dtype),
        ),
        default_value=tf.constant(default, value_dtype),
    )
