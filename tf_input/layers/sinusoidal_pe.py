"""The fixed sine/cosine position encoding of "Attention Is All You Need"."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from tf_input._validation import check_one_of
from tf_input._validation import check_positive_float
from tf_input._validation import check_positive_int
from tf_input._validation import in_xla_context
from tf_input.layers import position_math

LAYOUTS = ("interleaved", "concat")


def sinusoidal_encoding(
    positions,
    embedding_dim: int,
    *,
    max_wavelength: float = 10_000.0,
    layout: str = "interleaved",
) -> tf.Tensor:
    """The sinusoidal position encoding alone, float32.

    `PE[p, 2i] = sin(p / w^(2i/D))` and `PE[p, 2i+1] = cos(p / w^(2i/D))` with
    `w = max_wavelength`, `D = embedding_dim`. `layout="concat"` puts the same
    values as `[sin(all i) | cos(all i)]` (tensor2tensor's arrangement).

    Args:
        positions: int, or integer tensor of any shape `[...]`. An int `n`
            means `range(n)`.
        embedding_dim: int, even.
        max_wavelength: float. Defaults to `10000.0`.
        layout: `"interleaved"` or `"concat"`. Defaults to `"interleaved"`.

    Returns:
        float32 tensor `[..., embedding_dim]`.

    Example:

    >>> pe = tf_input.sinusoidal_encoding(4, 8)
    >>> pe[1, :4].numpy().astype("float64").round(4).tolist()
    [0.8415, 0.5403, 0.0998, 0.995]
    """
    layout = check_one_of("layout", layout, LAYOUTS)
    max_wavelength = check_positive_float(
        "max_wavelength", max_wavelength, minimum=1.0
    )
    embedding_dim = check_positive_int("embedding_dim", embedding_dim)
    if embedding_dim % 2:
        raise ValueError(
            "Sinusoidal position encoding needs an even feature dimension, "
            "one sine and one cosine per frequency. Received: "
            f"embedding_dim={embedding_dim}. Project to an even width first."
        )
    if isinstance(positions, int):
        positions = tf.range(positions, dtype="int32")
    # A position past int32 is an error (NaN under XLA), never wrapped.
    positions, fits = position_math.checked_positions(
        "sinusoidal_encoding", positions
    )
    parts = position_math.frequency_parts(
        position_math.inverse_frequencies(embedding_dim, max_wavelength)
    )
    theta = position_math.angles(positions, parts)  # [..., D/2]
    if fits is not None and in_xla_context():
        theta = theta * fits[..., None]
    sin, cos = tf.sin(theta), tf.cos(theta)
    if layout == "concat":
        return tf.concat([sin, cos], axis=-1)
    # [..., D/2, 2] -> [..., D]: sin and cos of one frequency side by side.
    pairs = tf.stack([sin, cos], axis=-1)
    return tf.reshape(
        pairs, tf.concat([tf.shape(theta)[:-1], [embedding_dim]], axis=0)
    )


@keras.saving.register_keras_serializable(package="tf_input")
class SinusoidalPE(keras.layers.Layer):
    """Adds the fixed sine/cosine position encoding to token embeddings.

    The encoding of "Attention Is All You Need" (section 3.5): feature pair
    `i` of position `p` is `(sin(p / w^(2i/D)), cos(p / w^(2i/D)))`. Nothing
    is learned and there is no table, so any sequence length works, including
    lengths never seen in training. Use `LearnedPE` for a trained table
    (BERT/GPT style) and `RotaryEmbedding` to rotate queries and keys instead.

    Inputs are `(batch, seq_len, feature_dim)` (any number of leading axes;
    the sequence axis is the second to last). The padding mask of
    `TokenEmbedding(padding_id=0)` passes through. The angles are reduced
    modulo 2*pi exactly, in float32 (see `position_math`), before sin/cos in
    float32, and the encoding is cast to `compute_dtype` once at the end, so
    under
    `mixed_bfloat16` position 60,000 still gets its own encoding (error below
    4e-3, the bfloat16 rounding of the output itself).

    Positions are int32: `positions` and `start_index` may be int64 (or any
    integer dtype), and a position outside the int32 range is an error
    naming it, never wrapped (a NaN row under XLA).

    `sinusoidal_encoding(positions, D)` returns the encoding alone, e.g. to
    plot it.

    Args:
        max_wavelength: float. The `w` above, the longest sinusoid period
            (called `base` or `theta` elsewhere). Defaults to `10000.0`.
        layout: str. `"interleaved"` puts sin and cos of one frequency side by
            side, as in the paper; `"concat"` gives `[sin... | cos...]`, as in
            tensor2tensor. Defaults to `"interleaved"`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`, `dtype`.

    Call arguments:
        inputs: float tensor `(batch, seq_len, feature_dim)`, `feature_dim`
            even and static.
        positions: optional integer tensor `(seq_len,)` or
            `(batch, seq_len)`, e.g. the positions of packed rows that restart
            at each segment. Defaults to `arange(seq_len)`.
        start_index: int or scalar int tensor added to the positions, e.g. the
            cache length in incremental decoding. Defaults to `0`.

    Returns:
        `inputs + PE`, shaped like `inputs`, in `compute_dtype`; the mask
        passes through.

    Example:

    >>> layer = tf_input.SinusoidalPE()
    >>> y = layer(np.zeros((2, 5, 8), "float32"))
    >>> tuple(y.shape)
    (2, 5, 8)
    >>> y[0, 1, :2].numpy().astype("float64").round(4).tolist()
    [0.8415, 0.5403]
    """

    def __init__(
        self,
        *,
        max_wavelength: float = 10_000.0,
        layout: str = "interleaved",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_wavelength = check_positive_float(
            "max_wavelength", max_wavelength, minimum=1.0
        )
        self.layout = check_one_of("layout", layout, LAYOUTS)
        self.supports_masking = True

    def build(self, input_shape):
        feature_dim = input_shape[-1]
        if len(input_shape) < 2 or feature_dim is None or feature_dim % 2:
            raise ValueError(
                "SinusoidalPE needs inputs (..., seq_len, feature_dim) with an "
                "even, static feature_dim: one sine and one cosine per "
                f"frequency. Received: input_shape={tuple(input_shape)}. "
                "Project to an even width first."
            )

    def call(self, inputs, positions=None, start_index=0):
        length = ops.shape(inputs)[-2]
        positions, fits = position_math.positions_for(
            "SinusoidalPE", length, positions, start_index
        )
        encoding = sinusoidal_encoding(
            positions,
            inputs.shape[-1],
            max_wavelength=self.max_wavelength,
            layout=self.layout,
        )
        if fits is not None and in_xla_context():
            # XLA cannot raise: a position past int32 gives a NaN row.
            encoding = encoding * fits[..., None]
        if positions.shape.rank == 2 and len(inputs.shape) > 3:
            # [B, S, D] -> [B, 1, ..., S, D] for inputs with extra axes.
            new_shape = [-1] + [1] * (len(inputs.shape) - 3)
            new_shape += [length, inputs.shape[-1]]
            encoding = ops.reshape(encoding, new_shape)
        return inputs + ops.cast(encoding, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_wavelength": self.max_wavelength,
            "layout": self.layout,
        }
