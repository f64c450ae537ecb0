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

import numpy as np
import tensorflow as tf

from tf_input._validation import check_integer_tensor

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


def positions_for(layer_name, length, positions=None, start_index=0):
    """Resolves the `positions` and `start_index` call arguments.

    Args:
        layer_name: str, for error messages.
        length: scalar int tensor, the sequence length S.
        positions: None, or an integer tensor `[S]` or `[B, S]`.
        start_index: int or scalar integer tensor added to the positions.

    Returns:
        int32 tensor of positions, `[S]` or `[B, S]`.
    """
    check_integer_tensor(layer_name, "start_index", start_index)
    start_index = tf.cast(start_index, "int32")
    if start_index.shape.rank not in (0, None):
        raise ValueError(
            f"{layer_name}: `start_index` must be a scalar. "
            f"Received: start_index with shape {start_index.shape}."
        )
    if positions is None:
        return tf.range(length, dtype="int32") + start_index
    check_integer_tensor(layer_name, "positions", positions)
    positions = tf.cast(positions, "int32")
    static_length = tf.get_static_value(length)
    if positions.shape.rank not in (1, 2) or (
        static_length is not None
        and positions.shape[-1] is not None
        and positions.shape[-1] != static_length
    ):
        raise ValueError(
            f"{layer_name}: `positions` must have shape [seq_len] or "
            f"[batch, seq_len] with seq_len={static_length} like the input. "
            f"Received: positions with shape {positions.shape}."
        )
    return positions + start_index
