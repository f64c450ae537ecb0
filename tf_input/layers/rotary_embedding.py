"""Rotary position embedding (RoPE), with the long-context scaling variants."""

from __future__ import annotations

import numbers

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tf_input._validation import check_one_of
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_float
from tf_input._validation import check_type
from tf_input._validation import in_xla_context
from tf_input.layers import position_math
from tf_input.layers import rope_scaling

LAYOUTS = ("half", "interleaved")


@keras.saving.register_keras_serializable(package="tf_input")
class RotaryEmbedding(keras.layers.Layer):
    """Rotates queries and keys by their position (RoPE).

    RoPE (Su et al., 2021, https://arxiv.org/abs/2104.09864) adds no vector to
    the embeddings. Inside attention it rotates each feature pair `i` of a
    query or key at position `m` by the angle `m * w_i`, with
    `w_i = max_wavelength ** (-2i / rotary_dim)`. The score
    `rope(q, m) . rope(k, n)` then depends only on `q`, `k` and `m - n`.

    Two pairings are in use and are not interchangeable with a checkpoint:
    `layout="half"` pairs feature `j` with `j + rotary_dim/2` (rotate-half:
    GPT-NeoX, Llama, Mistral, Qwen); `layout="interleaved"` pairs features
    `2j` and `2j + 1` (RoFormer, GPT-J). `rotary_dim < feature_dim` rotates
    only the first `rotary_dim` features and passes the rest through
    (partial rotary, GPT-NeoX / Phi).

    `scaling` takes a Hugging Face `rope_scaling` dict (`rope_type` or legacy
    `type`): `linear`, `dynamic` (NTK, base rescaled from the current length),
    `yarn` or `llama3`; see `tf_input.layers.rope_scaling`. The inverse
    frequencies and attention factor equal transformers' for the same config.
    `dynamic` differs from transformers in one way: it is stateless, so the
    length is always `max(positions) + 1` (or the original length, if
    larger), while transformers keeps the largest length seen so far.

    Angles are reduced modulo 2*pi exactly, in float32 only (no float64, so
    TPUs can run it; see `position_math`): max error ~1e-6 at position
    131,072, where naive float32 is ~1e-2 off. Dynamic NTK is the exception:
    its frequencies depend on the positions and are computed in float32, as
    in transformers. cos and sin are cast to `compute_dtype` and the rotation
    runs in that dtype. Positions are int32: `positions` and `start_index`
    may be int64 (or any integer dtype), and a position outside the int32
    range (e.g. the third of `start_index=2**31 - 2`) is an error naming it,
    never wrapped (NaN under XLA).

    Args:
        max_wavelength: float. The RoPE base (`rope_theta` in Hugging Face
            configs). Defaults to `10000.0`.
        layout: str, `"half"` or `"interleaved"`. Defaults to `"half"`.
        rotary_dim: int or None. Number of leading features to rotate, even.
            Defaults to `None`, all features.
        scaling: dict or None. A Hugging Face `rope_scaling` dict. Defaults to
            `None`.
        sequence_axis: int. Axis of `inputs` that holds positions. Defaults
            to `1`.
        feature_axis: int. Axis of `inputs` that holds features. Defaults to
            `-1`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`, `dtype`.

    Call arguments:
        inputs: float tensor, queries or keys, `(batch, seq_len, num_heads,
            head_dim)` or `(batch, seq_len, head_dim)`.
        positions: optional integer tensor `(seq_len,)` or
            `(batch, seq_len)`, e.g. positions restarting in packed rows.
            Defaults to `arange(seq_len)`.
        start_index: int or scalar int tensor added to the positions, e.g. the
            cache length in incremental decoding. Defaults to `0`.

    Returns:
        The rotated `inputs`, same shape, in `compute_dtype`.

    Example:

    >>> rope = tf_input.RotaryEmbedding()
    >>> q = np.ones((2, 6, 4, 16), "float32")  # (batch, seq, heads, head_dim)
    >>> tuple(rope(q).shape)
    (2, 6, 4, 16)
    >>> long = tf_input.RotaryEmbedding(
    ...     max_wavelength=500_000.0,
    ...     scaling={"rope_type": "llama3", "factor": 8.0,
    ...              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    ...              "original_max_position_embeddings": 8192})
    >>> tuple(long(q, start_index=100_000).shape)
    (2, 6, 4, 16)
    """

    def __init__(
        self,
        *,
        max_wavelength: float = 10_000.0,
        layout: str = "half",
        rotary_dim: int | None = None,
        scaling: dict | None = None,
        sequence_axis: int = 1,
        feature_axis: int = -1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_wavelength = check_positive_float(
            "max_wavelength", max_wavelength, minimum=1.0
        )
        self.layout = check_one_of("layout", layout, LAYOUTS)
        self.rotary_dim = check_optional_int("rotary_dim", rotary_dim, 2)
        if self.rotary_dim is not None and self.rotary_dim % 2:
            raise ValueError(
                "`rotary_dim` must be even: RoPE rotates pairs of features. "
                f"Received: rotary_dim={rotary_dim!r}."
            )
        self.scaling = rope_scaling.parse_scaling(scaling)
        for name, axis in (
            ("sequence_axis", sequence_axis),
            ("feature_axis", feature_axis),
        ):
            check_type(name, axis, numbers.Integral, "an int")
        self.sequence_axis = sequence_axis
        self.feature_axis = feature_axis
        self.supports_masking = True

    def build(self, input_shape):
        rank = len(input_shape)
        sequence_axis = self.sequence_axis % rank if rank else None
        feature_axis = self.feature_axis % rank if rank else None
        if rank < 2 or not (
            -rank <= self.sequence_axis < rank
            and -rank <= self.feature_axis < rank
            and sequence_axis != feature_axis
        ):
            raise ValueError(
                "RotaryEmbedding needs inputs with distinct `sequence_axis` "
                f"({self.sequence_axis}) and `feature_axis` "
                f"({self.feature_axis}). Received: input_shape="
                f"{tuple(input_shape)}."
            )
        feature_dim = input_shape[feature_axis]
        rotary_dim = self.rotary_dim or feature_dim
        if feature_dim is None or rotary_dim % 2 or rotary_dim > feature_dim:
            raise ValueError(
                "RotaryEmbedding needs a static feature dimension and an even "
                "rotary dimension no larger than it: RoPE rotates pairs of "
                f"features. Received: input_shape={tuple(input_shape)}, "
                f"feature_axis={self.feature_axis}, "
                f"rotary_dim={self.rotary_dim}."
            )
        self._rotary_dim = rotary_dim
        self._frequencies, self._attention_factor = (
            rope_scaling.scaled_frequencies(
                rotary_dim, self.max_wavelength, self.scaling
            )
        )
        self._parts = position_math.frequency_parts(self._frequencies)

    def call(self, inputs, positions=None, start_index=0):
        rank = len(inputs.shape)
        sequence_axis = self.sequence_axis % rank
        feature_axis = self.feature_axis % rank
        if feature_axis != rank - 1:
            inputs = ops.moveaxis(inputs, feature_axis, -1)
            sequence_axis -= int(sequence_axis > feature_axis)
        length = ops.shape(inputs)[sequence_axis]
        positions, fits = position_math.positions_for(
            "RotaryEmbedding", length, positions, start_index
        )
        cos, sin = self._cos_sin(positions)  # [(B,) S, rotary_dim] float32
        if fits is not None and in_xla_context():
            # XLA cannot raise: a position past int32 rotates to NaN.
            cos, sin = cos * fits[..., None], sin * fits[..., None]
        # Put the position axes where `inputs` has them, 1 elsewhere.
        shape = [1] * rank
        if positions.shape.rank == 2:
            shape[0] = -1
        shape[sequence_axis], shape[-1] = length, self._rotary_dim
        cos = ops.reshape(ops.cast(cos, self.compute_dtype), shape)
        sin = ops.reshape(ops.cast(sin, self.compute_dtype), shape)

        inputs = ops.cast(inputs, self.compute_dtype)
        if self._rotary_dim == inputs.shape[-1]:
            # No slice when everything rotates: an identity slice's gradient
            # allocates and copies a zero tensor, a cost for nothing.
            outputs = inputs * cos + self._rotate_pairs(inputs) * sin
        else:
            rotated = inputs[..., : self._rotary_dim]
            passed = inputs[..., self._rotary_dim :]
            rotated = rotated * cos + self._rotate_pairs(rotated) * sin
            outputs = ops.concatenate([rotated, passed], axis=-1)
        if feature_axis != rank - 1:
            outputs = ops.moveaxis(outputs, -1, feature_axis)
        return outputs

    def inverse_frequencies(self, positions=None):
        """The inverse frequencies `w_i` used for `positions`.

        Only `dynamic` scaling depends on the positions (through their
        maximum); for the others `positions` is ignored and the result is
        exact (computed in float64 NumPy when the layer is built). Dynamic
        frequencies are computed in the graph in float32, as transformers
        does. With `attention_factor`, this is what transformers' RoPE init
        functions return for the same config. The layer must be built.

        Args:
            positions: None or an integer tensor of positions.

        Returns:
            float64 tensor `(rotary_dim // 2,)`.
        """
        self._check_built()
        if self._is_dynamic():
            if positions is None:
                positions = tf.zeros((1,), "int32")
            frequencies = self._dynamic_frequencies(positions)
            return tf.cast(frequencies, "float64")
        return tf.constant(self._frequencies, "float64")

    @property
    def attention_factor(self):
        """The factor on cos and sin (YaRN's attention scaling; else 1.0)."""
        self._check_built()
        return self._attention_factor

    def _check_built(self):
        if not self.built:
            raise ValueError(
                "This RotaryEmbedding is not built yet: the rotary dimension "
                "comes from the input. Call the layer or "
                "`build(input_shape)` first."
            )

    def _is_dynamic(self):
        return (
            self.scaling is not None and self.scaling["rope_type"] == "dynamic"
        )

    def _cos_sin(self, positions):
        """cos, sin `[(B,) S, rotary_dim]`, float32, in the layout's order."""
        if self._is_dynamic():
            parts = position_math.split_float32(
                self._dynamic_frequencies(positions)
            )
        else:
            parts = self._parts
        theta = position_math.angles(positions, parts)
        cos = tf.cos(theta) * self._attention_factor
        sin = tf.sin(theta) * self._attention_factor
        if self.layout == "half":
            # Feature j and j + rotary_dim/2 share frequency j.
            return tf.concat([cos, cos], -1), tf.concat([sin, sin], -1)
        # Features 2j and 2j + 1 share frequency j.
        return tf.repeat(cos, 2, axis=-1), tf.repeat(sin, 2, axis=-1)

    def _dynamic_frequencies(self, positions):
        """Dynamic NTK: the base grows with the longest position (float32)."""
        dim = self._rotary_dim
        factor = float(self.scaling["factor"])
        original = float(self.scaling["original_max_position_embeddings"])
        # + 1 after the cast: at position 2**31 - 1 an int32 + 1 wraps.
        length = tf.cast(tf.reduce_max(positions), "float32") + 1.0
        length = tf.maximum(length, original)
        base = self.max_wavelength * (
            factor * length / original - (factor - 1)
        ) ** (dim / (dim - 2))
        exponents = tf.constant(np.arange(0, dim, 2) / dim, "float32")
        return 1.0 / tf.pow(base, exponents)

    def _rotate_pairs(self, x):
        """The partner of each feature, with the sign of a 90° rotation."""
        if self.layout == "half":
            first, second = ops.split(x, 2, axis=-1)
            return ops.concatenate([-second, first], axis=-1)
        # [..., D] -> [..., D/2, 2]: (x_2j, x_2j+1) -> (-x_2j+1, x_2j)
        pairs = tf.reshape(x, tf.concat([tf.shape(x)[:-1], [-1, 2]], 0))
        even, odd = pairs[..., 0], pairs[..., 1]
        return tf.reshape(tf.stack([-odd, even], axis=-1), tf.shape(x))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_wavelength": self.max_wavelength,
            "layout": self.layout,
            "rotary_dim": self.rotary_dim,
            "scaling": self.scaling,
            "sequence_axis": self.sequence_axis,
            "feature_axis": self.feature_axis,
        }
