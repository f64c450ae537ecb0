"""Shared argument checkers and in-graph range checks.

Argument checkers run in `__init__` and return plain Python values, so that
`get_config` stores exactly what was validated. Their messages follow one
pattern: what is wrong, what was expected, `Received: name=value`.

`checked_indices` guards a table lookup. TensorFlow's gather on CPU reports a
raw `InvalidArgumentError`, on GPU returns zeros, and under XLA clamps the
index to the last row (measured: id 1000 into a 100-row table returns row 99).
None of those is acceptable, so every lookup in tf_input goes through it.
"""

from __future__ import annotations

import numbers

import numpy as np
import tensorflow as tf

try:  # Private, but the only way to ask whether XLA is compiling this graph.
    from tensorflow.python.ops import control_flow_util as _control_flow_util
except ImportError:  # pragma: no cover - a future TF without it
    _control_flow_util = None


def check_positive_int(name: str, value) -> int:
    """Returns `value` as an `int` if it is an integer >= 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 1
    ):
        raise ValueError(
            f"`{name}` must be a positive integer. "
            f"Received: {name}={value!r} (of type {type(value).__name__})."
        )
    return int(value)


def check_optional_int(name: str, value, minimum: int = 0):
    """Returns `None` or `value` as an `int` if it is an integer >= minimum."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(
            f"`{name}` must be None or an integer >= {minimum}. "
            f"Received: {name}={value!r} (of type {type(value).__name__})."
        )
    return int(value)


def check_positive_float(name: str, value, minimum: float = 0.0) -> float:
    """Returns `value` as a `float` if it is a real number > minimum."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not np.isfinite(value)
        or not value > minimum
    ):
        raise ValueError(
            f"`{name}` must be a finite number > {minimum:g}. "
            f"Received: {name}={value!r} (of type {type(value).__name__})."
        )
    return float(value)


def check_one_of(name: str, value, allowed: tuple) -> str:
    """Returns `value` if it is one of `allowed` strings."""
    if value not in allowed:
        raise ValueError(
            f"`{name}` must be one of {allowed}. Received: {name}={value!r}."
        )
    return value


def check_integer_tensor(layer_name: str, arg_name: str, tensor):
    """Rejects float, bool and string ids instead of truncating them."""
    dtype = tf.as_dtype(
        getattr(tensor, "dtype", None) or np.asarray(tensor).dtype
    )
    if not dtype.is_integer:
        raise TypeError(
            f"{layer_name} expects integer `{arg_name}`, e.g. int32. "
            f"Received: {arg_name} with dtype {dtype.name}. Cast with "
            f"`tf.cast({arg_name}, 'int32')` only if the values are whole ids."
        )


def in_xla_context() -> bool:
    """Whether ops built now will be compiled by XLA (`jit_compile=True`).

    When TensorFlow no longer offers the check, answers True: callers then
    always apply their XLA-only safeguard, which is correct, only slower.
    """
    if _control_flow_util is None:  # pragma: no cover
        return True
    graph = tf.compat.v1.get_default_graph()
    return bool(_control_flow_util.GraphOrParentsInXlaContext(graph))


def checked_indices(indices, limit, message: str, details=(), what="index"):
    """Validates integer `indices` against `[0, limit)` before a gather.

    Args:
        indices: integer tensor of any shape.
        limit: int or scalar int tensor, the number of rows in the table.
        message: str. What the caller is looking up, used as the error's
            first sentence, e.g. "TokenEmbedding got token ids outside
            [0, vocabulary_size=100)."
        details: sequence of `(label, scalar tensor)` pairs reported after
            the offending indices, e.g. `[("input length", seq_len)]`.
        what: str, what one index is called in the message ("id",
            "position").

    Returns:
        `(indices, valid)`: `indices` as int32, guarded by the check, and a
        float32 tensor shaped like `indices` that is 1.0 where the index is
        in range and NaN where it is not.

    Eager mode raises `ValueError` naming the smallest and largest offending
    index. `tf.function` raises `InvalidArgumentError` with the same text.
    XLA cannot raise at run time (it compiles the assert away), so there the
    caller multiplies the gathered rows by `valid` (when `in_xla_context()`):
    an out-of-range index gives a NaN row, which reaches the loss instead of
    a silently clamped row. Elsewhere the check has already raised and the
    multiply is skipped: measured, it made TokenEmbedding's forward+backward
    1.43x keras-hub's instead of 0.93x (benchmarks/README.md).
    """
    indices = tf.cast(indices, "int32")
    limit = tf.cast(limit, "int32")
    in_range = tf.logical_and(indices >= 0, indices < limit)
    valid = tf.where(in_range, 1.0, float("nan"))
    bad_min = tf.reduce_min(tf.where(in_range, tf.int32.max, indices))
    bad_max = tf.reduce_max(tf.where(in_range, tf.int32.min, indices))
    all_valid = tf.reduce_all(in_range)
    if tf.executing_eagerly():
        if not bool(all_valid):
            extra = "".join(f", {label}: {int(v)}" for label, v in details)
            raise ValueError(
                f"{message} Smallest offending {what}: {int(bad_min)}, "
                f"largest: {int(bad_max)}{extra}."
            )
        return indices, valid
    data = [
        message,
        f"Smallest offending {what}:",
        bad_min,
        "largest:",
        bad_max,
    ]
    for label, value in details:
        data += [f"{label}:", value]
    check = tf.debugging.Assert(all_valid, data, summarize=1)
    with tf.control_dependencies([check]):
        return tf.identity(indices), valid


def padding_mask_from_ids(token_ids, padding_id, layer_name):
    """`token_ids != padding_id`, checked: padding only at the row ends.

    Padding fills the end of a row (or its start, when left-padded), never
    the middle. An occurrence of `padding_id` between two other ids means
    that it is a real token of the vocabulary (id 0 is `"!"` in GPT-2's),
    and masking it would hide it from attention silently: that is an error
    (`ValueError` eagerly, `InvalidArgumentError` in a graph). Under XLA
    the check is compiled away and the mask is returned as computed.
    Symbolic (Keras) tensors get the mask without the check.
    """
    mask = tf.not_equal(token_ids, tf.cast(padding_id, token_ids.dtype))
    if mask.shape.rank is None or mask.shape.rank < 1 or in_xla_context():
        return mask
    real = tf.cast(mask, tf.int32)
    before = tf.cumsum(real, axis=-1) > 0
    after = tf.cumsum(real, axis=-1, reverse=True) > 0
    inside = tf.logical_and(tf.logical_not(mask), before & after)
    ok = tf.logical_not(tf.reduce_any(inside))
    message = (
        f"{layer_name} masks id {padding_id} as padding, but it occurs "
        "between real tokens, so it is a real token of this vocabulary (id "
        "0 is '!' in GPT-2's, Llama 3's and Qwen's), not padding. Feed the "
        "pipeline's `padding_mask` instead (`InputBlock(..., "
        "padding_mask_input=True)`), or set `padding_id` to the "
        "tokenizer's `padding_id` (None when it has none)."
    )
    if tf.executing_eagerly():
        if not bool(ok):
            raise ValueError(message)
        return mask
    check = tf.debugging.Assert(ok, [message], summarize=1)
    with tf.control_dependencies([check]):
        return tf.identity(mask)
