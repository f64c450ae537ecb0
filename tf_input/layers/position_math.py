"""Position maths shared by the position layers: frequencies and angles.

Every position encoding here is built from angles `p * w_i`: `p` an integer
position and `w_i = max_wavelength ** (-2i / dim)` one frequency per feature
pair. In float32 that product loses accuracy far out: the float32 spacing at
131,072 is 0.0078, and `w_i` itself is rounded by 6e-8 relative, so naive
float32 angles are off by up to ~1e-2 radians there (keras-hub's RotaryEmbedding
is measured 3.9e-3 off at 64k). Here the angles are formed in float64, reduced
modulo 2*pi while still exact, and only then cast to float32 for sin/cos. The
angle grid is `[S, dim/2]` (or `[B, S, dim/2]`), small next to the activations,
so the float64 step costs little: see `benchmarks/README.md`.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from tf_input._validation import check_integer_tensor

_TWO_PI = 2.0 * math.pi


def inverse_frequencies(dim: int, max_wavelength: float) -> np.ndarray:
    """The `dim // 2` frequencies `max_wavelength ** (-2i / dim)`, float64."""
    exponents = np.arange(0, dim, 2, dtype=np.float64) / dim
    return 1.0 / np.power(np.float64(max_wavelength), exponents)


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


def angles(positions, frequencies):
    """Angles `positions * frequencies`, exact, reduced to [0, 2*pi), float32.

    Args:
        positions: integer tensor of any shape `[...]`.
        frequencies: float64 array or tensor `[F]`.

    Returns:
        float32 tensor `[..., F]`.
    """
    positions = tf.cast(positions, "float64")[..., None]
    frequencies = tf.cast(frequencies, "float64")
    theta = tf.math.floormod(positions * frequencies, _TWO_PI)
    return tf.cast(theta, "float32")
