"""A trainable position table (BERT / GPT style)."""

from __future__ import annotations

import keras
from keras import ops

from tf_input._validation import check_positive_int
from tf_input._validation import checked_indices
from tf_input._validation import in_xla_context
from tf_input.layers import position_math


@keras.saving.register_keras_serializable(package="tf_input")
class LearnedPE(keras.layers.Layer):
    """Adds a trained position vector, one row per position, to its input.

    The position embeddings of BERT and GPT: a trainable table
    `position_embeddings` `(max_length, feature_dim)` whose row `p` is added
    to the token at position `p`. Unlike `SinusoidalPE` it has a fixed
    capacity: a sequence that reaches past `max_length` is an error naming
    both lengths (never a clamped or zero row). Under `jit_compile=True`,
    where XLA cannot raise at run time, such positions give NaN rows instead.

    Positions come from `start_index + arange(seq_len)`, or from an explicit
    `positions` tensor (packed rows). They are looked up with a gather, so a
    new `start_index` value is a new input, not a new XLA program: decoding
    step by step compiles once. With explicit `positions` a row may be longer
    than the table, as long as every position is below `max_length` (packed
    rows whose positions restart per segment). `positions` and
    `start_index` may be int64 (or any integer dtype); a position outside
    the int32 range is an error naming it, never wrapped (NaN rows under
    XLA). The mask passes through. The table is float32; the rows are cast
    to `compute_dtype` after the lookup.

    Args:
        max_length: int. Number of positions the table holds.
        embeddings_initializer: initializer for the table. Defaults to
            `"glorot_uniform"`, as in keras-hub's `PositionEmbedding`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`, `dtype`.

    Call arguments:
        inputs: float tensor `(batch, seq_len, feature_dim)`.
        positions: optional integer tensor `(seq_len,)` or
            `(batch, seq_len)`. Defaults to `arange(seq_len)`.
        start_index: int or scalar int tensor added to the positions.
            Defaults to `0`.

    Returns:
        `inputs + position_embeddings[positions]`, shaped like `inputs`, in
        `compute_dtype`; the mask passes through.

    Example:

    >>> layer = tf_input.LearnedPE(max_length=16)
    >>> tuple(layer(np.zeros((2, 5, 8), "float32")).shape)
    (2, 5, 8)
    >>> tuple(layer.position_embeddings.shape)
    (16, 8)
    """

    def __init__(
        self,
        max_length: int,
        *,
        embeddings_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_length = check_positive_int("max_length", max_length)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.supports_masking = True

    def build(self, input_shape):
        feature_dim = input_shape[-1]
        if len(input_shape) < 2 or feature_dim is None:
            raise ValueError(
                "LearnedPE needs inputs (..., seq_len, feature_dim) with a "
                "static feature_dim. "
                f"Received: input_shape={tuple(input_shape)}."
            )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_length, feature_dim),
            initializer=self.embeddings_initializer,
            trainable=True,
        )

    def call(self, inputs, positions=None, start_index=0):
        length = ops.shape(inputs)[-2]
        static_length = inputs.shape[-2]
        if positions is None and static_length is not None:
            if static_length > self.max_length:
                raise ValueError(self._too_long_message(static_length))
        positions, fits = position_math.positions_for(
            "LearnedPE", length, positions, start_index
        )
        positions, valid = checked_indices(
            positions,
            self.max_length,
            f"LearnedPE got positions outside [0, max_length={self.max_length})"
            ": the input reaches past the position table. Raise `max_length`,"
            " or truncate or pack the data into rows of at most "
            f"{self.max_length}.",
            details=[("input length", length)],
            what="position",
        )
        rows = ops.cast(
            ops.take(self.position_embeddings, positions, axis=0),
            self.compute_dtype,
        )
        if in_xla_context():
            # NaN rows for out-of-range positions (see `checked_indices`),
            # and for positions past int32 that the cast wrapped into range.
            if fits is not None:
                valid = valid * fits
            rows = rows * ops.cast(valid[..., None], self.compute_dtype)
        if positions.shape.rank == 2 and len(inputs.shape) > 3:
            new_shape = [-1] + [1] * (len(inputs.shape) - 3)
            new_shape += [length, inputs.shape[-1]]
            rows = ops.reshape(rows, new_shape)
        return inputs + rows

    def _too_long_message(self, length):
        return (
            f"Input length {length} exceeds LearnedPE's max_length="
            f"{self.max_length}. Raise `max_length`, or truncate or pack the "
            f"data into rows of at most {self.max_length}."
        )

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_length": self.max_length,
            "embeddings_initializer": keras.initializers.serialize(
                self.embeddings_initializer
            ),
        }
