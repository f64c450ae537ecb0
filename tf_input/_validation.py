"""Shared argument checkers and in-graph range checks.

Argument checkers run in `__init__` and return plain Python values, so that
`get_config` stores exactly what was validated. Their messages follow one
pattern: what is wrong, what was expected, `Received: name=value (of type
T)`. A value of the wrong type (`"8"` for an int, `1` for a bool) is a
`TypeError`; a value of the right type that is out of range a `ValueError`.

`checked_indices` (`checked_range`) guards a table lookup. TensorFlow's
gather on CPU reports a raw `InvalidArgumentError`, on GPU returns zeros, and
under XLA clamps the index to the last row (measured: id 1000 into a 100-row
table returns row 99). None of those is acceptable, so every lookup in
tf_input goes through it. The check runs in the index's own dtype: a cast to
int32 first would turn an int64 id of 2**32 + 5 into 5, a valid row.
"""

from __future__ import annotations

import numbers

import numpy as np
import tensorflow as tf

try:  # Private, but the only way to ask whether XLA is compiling this graph.
    from tensorflow.python.ops import control_flow_util as _control_flow_util
except ImportError:  # pragma: no cover - a future TF without it
    _control_flow_util = None


def describe(value) -> str:
    """A short repr for error messages (long arrays are abbreviated)."""
    array = np.asarray(value) if not isinstance(value, str) else None
    if array is not None and array.dtype != object and array.size > 8:
        head = ", ".join(str(x) for x in array.reshape(-1)[:4])
        return f"array of shape {array.shape} [{head}, ...]"
    return repr(value)


def _received(name, value):
    return f"Received: {name}={value!r} (of type {type(value).__name__})."


def check_type(name: str, value, types, expected: str):
    """Returns `value` if it is an instance of `types`, else a `TypeError`.

    `expected` completes "`name` must be ...", e.g. "a dict of
    `RotaryEmbedding` arguments"; `bool` is never taken for an `int`.
    """
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (
        isinstance(value, bool) and bool not in types
    ):
        raise TypeError(
            f"`{name}` must be {expected}. {_received(name, value)}"
        )
    return value


def check_bool(name: str, value, *, allow_none: bool = False) -> bool | None:
    """Returns `value` as a `bool` (NumPy bools too); None if `allow_none`.

    Anything else, `1` and `"yes"` included, is a `TypeError`.
    """
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        expected = "True, False or None" if allow_none else "True or False"
        raise TypeError(
            f"`{name}` must be {expected}. {_received(name, value)}"
        )
    return bool(value)


def _integer_at_least(name, value, minimum, expected):
    """`value` as an `int`: a `TypeError` unless it is an integer (NumPy
    too, never a bool), a `ValueError` if it is below `minimum`."""
    check_type(name, value, numbers.Integral, expected)
    if value < minimum:
        raise ValueError(
            f"`{name}` must be {expected}. {_received(name, value)}"
        )
    return int(value)


def check_positive_int(name: str, value) -> int:
    """Returns `value` as an `int` if it is an integer >= 1.

    A non-integer is a `TypeError`; an integer < 1 a `ValueError`.
    """
    return _integer_at_least(name, value, 1, "a positive integer")


def check_int(name: str, value, minimum: int = 0) -> int:
    """Returns `value` as an `int` if it is an integer >= minimum.

    A non-integer is a `TypeError`; an integer < minimum a `ValueError`.
    """
    return _integer_at_least(name, value, minimum, f"an integer >= {minimum}")


def check_optional_int(name: str, value, minimum: int = 0) -> int | None:
    """Returns `None` or `value` as an `int` if it is an integer >= minimum.

    A non-integer is a `TypeError`; an integer < minimum a `ValueError`.
    """
    if value is None:
        return None
    expected = f"None or an integer >= {minimum}"
    return _integer_at_least(name, value, minimum, expected)


def check_positive_float(name: str, value, minimum: float = 0.0) -> float:
    """Returns `value` as a `float` if it is a real number > minimum.

    A non-number (a bool included) is a `TypeError`; a number that is not
    finite or not above `minimum` a `ValueError`.
    """
    expected = f"a finite number > {minimum:g}"
    check_type(name, value, numbers.Real, expected)
    if not np.isfinite(value) or not value > minimum:
        raise ValueError(
            f"`{name}` must be {expected}. {_received(name, value)}"
        )
    return float(value)


def check_integer_array(name: str, value, expected: str) -> np.ndarray:
    """`value` as a NumPy array of integers, for the caller to check further.

    Strings, floats and bools are a `TypeError` ("`name` must be
    {expected}"); an empty sequence is returned as an empty int64 array, so
    that the caller's size check says what is wrong.
    """
    try:
        array = None if isinstance(value, (str, bytes)) else np.asarray(value)
    except ValueError:  # ragged nested lists
        raise ValueError(
            f"`{name}` must be {expected}. Received: {name}={value!r}."
        ) from None
    if array is not None and array.size == 0:
        return array.astype(np.int64)
    if array is None or array.dtype.kind not in "iu":
        kind = type(value).__name__
        if array is not None:
            kind += f" of dtype {array.dtype}"
        raise TypeError(
            f"`{name}` must be {expected}. "
            f"Received: {name}={describe(value)} ({kind})."
        )
    return array


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


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _check_dtype(dtype):
    """A dtype that holds every value of integer `dtype` exactly.

    The range check runs in it, before any cast: a cast to int32 first
    would wrap an int64 id of 2**32 + 5 to 5, a valid row.
    """
    if dtype == tf.uint64:
        return tf.uint64
    if dtype in (tf.int64, tf.uint32):
        return tf.int64
    return tf.int32


def checked_range(values, low, high, message, details=(), what="index"):
    """Validates integer `values` against `[low, high)`, then casts to int32.

    The comparison runs in the values' own dtype (int64 for uint32), never
    after a cast, so a 64-bit value is never wrapped into range first. An
    int32 input takes exactly the ops it always did.

    Args:
        values: integer tensor of any shape.
        low: int or None, the smallest valid value (None: no lower bound).
        high: int or scalar int tensor, one past the largest valid value;
            `[low, high)` must lie within the int32 range, as every
            caller's range does.
        message: str. What the caller is looking up, used as the error's
            first sentence, e.g. "TokenEmbedding got token ids outside
            [0, vocabulary_size=100)."
        details: sequence of `(label, scalar tensor)` pairs reported after
            the offending values, e.g. `[("input length", seq_len)]`.
        what: str, what one value is called in the message ("id",
            "position").

    Returns:
        `(values, valid)`: `values` as int32, guarded by the check, and a
        float32 tensor shaped like `values` that is 1.0 where the value is
        in range and NaN where it is not.

    Eager mode raises `ValueError` naming the smallest and largest offending
    value. `tf.function` raises `InvalidArgumentError` with the same text.
    XLA cannot raise at run time (it compiles the assert away), so there the
    caller multiplies what it computed from the values by `valid` (when
    `in_xla_context()`): an out-of-range value gives a NaN row, which
    reaches the loss instead of a silently clamped or wrapped row.
    Elsewhere the check has already raised and the multiply is skipped: it
    made TokenEmbedding's forward and backward pass markedly slower than
    keras-hub's (figures in benchmarks/README.md).
    """
    values = tf.convert_to_tensor(values)
    dtype = _check_dtype(values.dtype)
    wide = tf.cast(values, dtype)
    in_range = None
    if low is not None and (dtype != tf.uint64 or low > 0):
        in_range = wide >= tf.cast(low, dtype)
    if isinstance(high, int) and high > dtype.max:
        pass  # every value of the dtype is below `high`
    else:
        below = wide < tf.cast(high, dtype)
        in_range = below if in_range is None else in_range & below
    if in_range is None:
        in_range = tf.ones_like(wide, tf.bool)
    valid = tf.where(in_range, 1.0, float("nan"))
    largest, smallest = (
        tf.constant(dtype.max, dtype),
        tf.constant(dtype.min, dtype),
    )
    bad_min = tf.reduce_min(tf.where(in_range, largest, wide))
    bad_max = tf.reduce_max(tf.where(in_range, smallest, wide))
    all_valid = tf.reduce_all(in_range)
    if tf.executing_eagerly():
        if not bool(all_valid):
            extra = "".join(f", {label}: {int(v)}" for label, v in details)
            raise ValueError(
                f"{message} Smallest offending {what}: {int(bad_min)}, "
                f"largest: {int(bad_max)}{extra}."
            )
        return tf.cast(values, "int32"), valid
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
        return tf.identity(tf.cast(values, "int32")), valid


def checked_indices(indices, limit, message: str, details=(), what="index"):
    """Validates integer `indices` against `[0, limit)` before a gather.

    `checked_range(indices, 0, limit, ...)`: see there. Returns the indices
    as int32 and the float32 `valid` mask (1.0, or NaN out of range).
    """
    return checked_range(indices, 0, limit, message, details, what)


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
