"""Static lookup tables: the one way tokenizers build `StaticHashTable`s.

TensorFlow never frees an eagerly built `StaticHashTable`: the table lives
in the process's resource manager under its shared name, and dropping the
Python object leaves it there (a table of 200,000 int64 keys: +7.7 MB of
RSS for every build). Anonymous tables are freed, but a `tf.data`
pipeline that holds one cannot be serialized (tf.data service). So every
table is named after its content: building a tokenizer again, in the same
process, finds its tables already there (TensorFlow checks that the
entries are the same) and uses no more memory. Tables of different
content stay until the process ends, as any eager table does.

While a table is alive, building the same content again (another
tokenizer of the same file, or a second table of one tokenizer) gives the
same Python object. A SavedModel then holds each table once: TensorFlow's
loader gives every saved table a name of its own, so a table saved twice
would be created, filled and kept twice by every load.
"""

from __future__ import annotations

import hashlib
import threading
import weakref

import numpy as np
import tensorflow as tf

# The live tables built eagerly, by content name and default.
_LIVE = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


class _ContentNamed(tf.lookup.KeyValueTensorInitializer):
    """Keys and values under a shared name made of their content."""

    def __init__(self, keys, values, shared_name):
        super().__init__(keys, values)
        self._content_name = shared_name

    @property
    def _shared_name(self):
        return self._content_name


def _content_name(keys, values, key_dtype, value_dtype):
    """A name that only these keys and values (and dtypes) have: a
    128-bit digest of their bytes."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{key_dtype.name} {value_dtype.name} ".encode())
    for items, dtype in ((keys, key_dtype), (values, value_dtype)):
        if dtype == tf.string:
            raw = [
                k.encode() if isinstance(k, str) else bytes(k) for k in items
            ]
            digest.update(np.array([len(k) for k in raw], np.int64).tobytes())
            digest.update(b"".join(raw))
        else:
            digest.update(np.asarray(items, dtype.as_numpy_dtype).tobytes())
    return f"tf_input_table_{digest.hexdigest()}"


def lookup_table(keys, values, default, *, key_dtype, value_dtype=tf.int64):
    """A `tf.lookup.StaticHashTable` from `keys` to `values`.

    Args:
        keys: sequence or array of str / bytes (`key_dtype=tf.string`) or
            ints (`key_dtype=tf.int64` or `tf.int32`), each once.
        values: sequence or array of ints, one per key.
        default: int, what a missing key gives.
        key_dtype: `tf.string`, `tf.int64` or `tf.int32`.
        value_dtype: the values' dtype. Defaults to `tf.int64`.

    A table cannot be empty: with no keys, it holds one key that maps to
    `default` (`""` or `-1`), so every lookup still gives `default`.
    Tables of the same keys and values share one TensorFlow resource
    (see the module docstring): built again, a tokenizer's tables take no
    more memory. Built eagerly while an equal one (same content and
    default) is alive, the table is that one.
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
    name = _content_name(keys, values, key_dtype, value_dtype)

    def build():
        return tf.lookup.StaticHashTable(
            _ContentNamed(
                tf.constant(keys, key_dtype),
                tf.constant(np.asarray(values), value_dtype),
                name,
            ),
            default_value=tf.constant(default, value_dtype),
        )

    if not tf.executing_eagerly():  # a table of this graph
        return build()
    with _LIVE_LOCK:
        table = _LIVE.get((name, default))
        if table is None:
            table = _LIVE[(name, default)] = build()
    return table
