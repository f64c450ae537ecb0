"""Position maths shared by the position layers: frequencies and angles.

Every position encoding here is built from angles `p * w_i`: `p` an integer
position and `w_i = max_wavelength ** (-2i / dim)` one frequency per feature
pair. Done naively in float32, that product loses accuracy far out: the
float32 spacing at 131,072 is 0.0078, and `w_i` itself is rounded by 6e-8
relative, so naive angles are off by up to ~1e-2 radians there (keras-hub's
RotaryEmbedding is measured 3.9e-3 off at 64k).

`angles` avoids this without float64 (which TPUs do not run): it works in
turns, `t_i = w_i / 2pi`, and only needs `frac(p * t_i)`. The frequency is
split into float32 parts of at most 13 significant bits and the position into
11-bit chunks, so that every partial product `chunk * part` has at most 24
bits and is exact in float32; taking `frac` of each exact product and summing
leaves an error of a few float32 roundings of a number below 1 (about 1e-7
turns, 6e-7 radians) at any int32 position. The parts come from float64
NumPy at build time (`frequency_parts`), or from a float32 frequency in the
graph (`split_float32`, for dynamic NTK scaling).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import tensorflow as tf

from tf_input._validation import INT32_MAX
from tf_input._validation import INT32_MIN
from tf_input._validation import check_integer_tensor
from tf_input._validation import checked_range

_CHUNK_BITS = 11  # positions are split into three 11-bit chunks
_PART_BITS = 13  # 11 + 13 = 24 bits: the float32 significand


def inverse_frequencies(dim: int, max_wavelength: float) -> np.ndarray:
    """The `dim // 2` frequencies `max_wavelength ** (-2i / dim)`, float64."""
    exponents = np.arange(0, dim, 2, dtype=np.float64) / dim
    return 1.0 / np.power(np.float64(max_wavelength), exponents)


def _round_to_bits(x, bits):
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.round(mantissa * 2.0**bits), exponent - bits)


def frequency_parts(frequencies) -> np.ndarray:
    """Splits float64 frequencies (radians per position) into turn parts.

    Returns:
        float32 array `[3, F]` whose rows sum to `frequencies / 2pi` to
        float64 accuracy; the first two rows have at most 13 significant
        bits each.
    """
    turns = np.asarray(frequencies, np.float64) / (2.0 * math.pi)
    high = _round_to_bits(turns, _PART_BITS)
    middle = _round_to_bits(turns - high, _PART_BITS)
    low = turns - high - middle
    return np.stack([high, middle, low]).astype(np.float32)


def split_float32(frequencies):
    """In-graph turn parts of a float32 frequency tensor `[F]` -> `[3, F]`.

    Veltkamp's split: `high` keeps the top 13 significant bits and `low` the
    remaining 11, both exact. The third part is zero.
    """
    turns = tf.cast(frequencies, "float32") / (2.0 * math.pi)
    scaled = turns * float(2 ** (24 - _PART_BITS) + 1)
    high = scaled - (scaled - turns)
    return tf.stack([high, turns - high, tf.zeros_like(turns)])


def angles(positions, parts):
    """Angles `positions * frequencies`, reduced to [0, 2pi), float32.

    Args:
        positions: integer tensor of any shape `[...]`.
        parts: float32 `[3, F]` from `frequency_parts` or `split_float32`.

    Returns:
        float32 tensor `[..., F]`.
    """
    positions = tf.cast(positions, "int32")[..., None]
    parts = tf.cast(parts, "float32")
    base = 2**_CHUNK_BITS
    # p = a * 2^22 + b * 2^11 + c, with b, c in [0, 2^11) and a signed.
    chunks = [
        (tf.math.floormod(positions, base), 0),
        (tf.math.floormod(tf.math.floordiv(positions, base), base), 1),
        (tf.math.floordiv(positions, base * base), 2),
    ]
    turns = 0.0
    for chunk, k in chunks:
        chunk = tf.cast(chunk, "float32")
        for j in range(3):
            # 2^(11k) * part is exact, and so is chunk * that (<= 24 bits).
            product = chunk * (parts[j] * float(base**k))
            turns += product - tf.floor(product)
            turns -= tf.floor(turns)  # stay below 1, where float32 is finest
    return turns * (2.0 * math.pi)


def _static_int(value):
    """`value` as a Python int when it is known now, else None."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (tf.Tensor, np.ndarray, np.generic)):
        static = tf.get_static_value(value)
        if static is not None and np.ndim(static) == 0:
            return int(static)
    return None


def _int32_range_message(layer_name, name):
    return (
        f"{layer_name} got {name} outside the int32 range "
        f"[{INT32_MIN}, {INT32_MAX}]: positions are never wrapped."
    )


def _to_int32(layer_name, name, values):
    """`values` as int32, checked first if their dtype is wider.

    Returns `(values, valid)`, `valid` None when no check was needed.
    """
    values = tf.convert_to_tensor(values)
    if values.dtype in (tf.int64, tf.uint32, tf.uint64):
        return checked_range(
            values,
            INT32_MIN,
            INT32_MAX + 1,
            _int32_range_message(layer_name, f"`{name}`"),
            what="position" if name == "positions" else name,
        )
    return tf.cast(values, "int32"), None


def _combine(*valids):
    out = None
    for valid in valids:
        if valid is not None:
            out = valid if out is None else out * valid
    return out


def checked_positions(layer_name, positions):
    """An integer position tensor as int32, checked to fit int32.

    Returns `(positions, valid)`: `valid` is None for int32 (and narrower)
    input, else the float32 mask of `checked_range` (NaN where a position
    does not fit int32; under XLA the caller multiplies by it).
    """
    check_integer_tensor(layer_name, "positions", positions)
    return _to_int32(layer_name, "positions", positions)


def positions_for(layer_name, length, positions=None, start_index=0):
    """Resolves the `positions` and `start_index` call arguments.

    Positions are int32 and never wrap: `start_index` and `positions` of
    any integer dtype (int64, uint64, ...) are added in int64, and a
    position outside the int32 range is an error naming it (`ValueError`
    when known at trace time or in eager mode, `InvalidArgumentError` in a
    graph; under XLA, which cannot raise, a NaN in `valid`). The common
    case, `start_index=0` or a Python int whose positions provably fit,
    with int32 `positions`, takes no check at all.

    Args:
        layer_name: str, for error messages.
        length: scalar int tensor, the sequence length S.
        positions: None, or an integer tensor `[S]` or `[B, S]`.
        start_index: int or scalar integer tensor added to the positions.

    Returns:
        `(positions, valid)`: int32 positions `[S]` or `[B, S]`, and None
        or a float32 tensor of their shape, 1.0 where the position fits
        int32 and NaN where it does not (multiply it in under XLA).
    """
    check_integer_tensor(layer_name, "start_index", start_index)
    start = _static_int(start_index)
    if start is None:
        start_index = tf.convert_to_tensor(start_index)
        if start_index.shape.rank not in (0, None):
            raise ValueError(
                f"{layer_name}: `start_index` must be a scalar. "
                f"Received: start_index with shape {start_index.shape}."
            )
    if positions is not None:
        check_integer_tensor(layer_name, "positions", positions)
        positions = tf.convert_to_tensor(positions)
        static_length = tf.get_static_value(length)
        if positions.shape.rank not in (1, 2) or (
            static_length is not None
            and positions.shape[-1] is not None
            and positions.shape[-1] != static_length
        ):
            raise ValueError(
                f"{layer_name}: `positions` must have shape [seq_len] or "
                f"[batch, seq_len] with seq_len={static_length} like the "
                f"input. Received: positions with shape {positions.shape}."
            )
    if start is not None:
        if not INT32_MIN <= start <= INT32_MAX:
            raise ValueError(
                f"{_int32_range_message(layer_name, 'positions')} "
                f"Received: start_index={start}."
            )
        if positions is None:
            base = tf.range(length, dtype="int32")
            if start == 0:
                return base, None
            static_length = tf.get_static_value(length)
            if static_length is not None:
                last = start + max(int(static_length), 1) - 1
                if last > INT32_MAX:
                    raise ValueError(
                        f"{_int32_range_message(layer_name, 'positions')} "
                        f"Smallest offending position: {INT32_MAX + 1}, "
                        f"largest: {last}; start_index={start}."
                    )
                return base + start, None
        elif start == 0:
            return _to_int32(layer_name, "positions", positions)
    # A sum that may leave int32: each term is checked to fit int32, and
    # their sum is taken in int64 and checked again.
    start32, start_valid = _to_int32(layer_name, "start_index", start_index)
    if positions is None:
        base = tf.range(tf.cast(length, "int64"), dtype="int64")
        base_valid = None
    else:
        base, base_valid = _to_int32(layer_name, "positions", positions)
        base = tf.cast(base, "int64")
    total, total_valid = checked_range(
        base + tf.cast(start32, "int64"),
        INT32_MIN,
        INT32_MAX + 1,
        _int32_range_message(layer_name, "positions"),
        what="position",
    )
    return total, _combine(total_valid, base_valid, start_valid)
