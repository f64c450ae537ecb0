"""Token embedding: row lookup in `E [V, D]`, scaled by `sqrt(D)`."""

from __future__ import annotations

import math

import keras
from keras import ops

from tf_input._validation import check_bool
from tf_input._validation import check_integer_tensor
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_int
from tf_input._validation import checked_indices
from tf_input._validation import in_xla_context
from tf_input._validation import padding_mask_from_ids


@keras.saving.register_keras_serializable(package="tf_input")
class TokenEmbedding(keras.layers.Layer):
    """Looks up one learned vector per token id, scaled by `sqrt(D)`.

    The first layer of a Transformer: `token_ids` `(batch, seq_len)` become
    `(batch, seq_len, embedding_dim)` rows of the table `embeddings`
    `(vocabulary_size, embedding_dim)`. With `scale=True` the rows are
    multiplied by `sqrt(embedding_dim)`, the convention of "Attention Is All
    You Need" (section 3.4); with the default initializer (normal, stddev
    `1 / sqrt(embedding_dim)`) the scaled output then has std close to 1, the
    same order as a sinusoidal position encoding added to it.

    The layer produces a padding mask, `token_ids != padding_id`, which Keras
    passes on to the following layers. Padding sits at the ends of a row:
    `padding_id` found between two real tokens is an error, because it is
    then a real token of the vocabulary (id 0 is `"!"` in GPT-2's) that the
    mask would hide. For such vocabularies use `padding_id=None` and the
    pipeline's `padding_mask`. `attend(x)` reuses the table as the
    tied output projection `x @ E^T` (logits over the vocabulary).

    Ids are checked: an id outside `[0, vocabulary_size)` raises an error that
    names the offending ids and `vocabulary_size`, in eager mode (`ValueError`)
    and inside `tf.function` or `tf.data` (`InvalidArgumentError`). Under
    `jit_compile=True` XLA cannot raise at run time, so there an out-of-range
    id yields a row of NaN (never a clamped or wrapped row): the loss becomes
    NaN at the first bad batch. Ids of any integer dtype are checked in that
    dtype, before the cast to int32: an int64 id of `2**32 + 5` is an error
    naming 4294967301, never row 5. Float ids raise `TypeError`.

    The table stays float32 under mixed precision; the output is in the
    layer's `compute_dtype`.

    Args:
        vocabulary_size: int. Number of rows `V`; ids run from 0 to V - 1.
        embedding_dim: int. Width `D` of each row.
        scale: bool. Multiply the rows by `sqrt(embedding_dim)`. Defaults to
            `True`.
        padding_id: int or None. The id whose positions are masked out. None
            turns the mask off. Defaults to `0`.
        embeddings_initializer: initializer for the table. Defaults to
            `RandomNormal(stddev=embedding_dim ** -0.5)`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`, `dtype`.

    Call arguments:
        token_ids: integer tensor `(batch, seq_len)` (any rank works).

    Returns:
        float tensor `(batch, seq_len, embedding_dim)` in `compute_dtype`, with
        the padding mask `(batch, seq_len)` attached.

    Example:

    >>> layer = tf_input.TokenEmbedding(vocabulary_size=100, embedding_dim=8)
    >>> x = layer(np.array([[5, 7, 0]]))
    >>> tuple(x.shape)
    (1, 3, 8)
    >>> layer.compute_mask(np.array([[5, 7, 0]])).numpy().tolist()
    [[True, True, False]]
    >>> tuple(layer.attend(x).shape)
    (1, 3, 100)
    """

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int,
        *,
        scale: bool = True,
        padding_id: int | None = 0,
        embeddings_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int(
            "vocabulary_size", vocabulary_size
        )
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.scale = check_bool("scale", scale)
        self.padding_id = check_optional_int("padding_id", padding_id)
        if (
            self.padding_id is not None
            and self.padding_id >= self.vocabulary_size
        ):
            raise ValueError(
                "`padding_id` must be a valid id in [0, vocabulary_size="
                f"{self.vocabulary_size}), or None. "
                f"Received: padding_id={padding_id!r}."
            )
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(
                stddev=self.embedding_dim**-0.5
            )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.supports_masking = self.padding_id is not None
        self._out_of_range_message = (
            "TokenEmbedding got token ids outside [0, vocabulary_size="
            f"{self.vocabulary_size}). Ids must be in 0..."
            f"{self.vocabulary_size - 1}; check that the tokenizer and the "
            "embedding use the same vocabulary."
        )

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.embedding_dim),
            initializer=self.embeddings_initializer,
            trainable=True,
        )

    def call(self, token_ids):
        check_integer_tensor("TokenEmbedding", "token_ids", token_ids)
        token_ids, valid = checked_indices(
            token_ids,
            self.vocabulary_size,
            self._out_of_range_message,
            what="id",
        )
        rows = ops.take(self.embeddings, token_ids, axis=0)
        rows = ops.cast(rows, self.compute_dtype)
        scale = math.sqrt(self.embedding_dim) if self.scale else 1.0
        if in_xla_context():
            # XLA dropped the check: one multiply applies the scale and the
            # NaN that marks an out-of-range id (see `checked_indices`).
            return rows * ops.cast((valid * scale)[..., None], rows.dtype)
        return rows * scale if self.scale else rows

    def compute_mask(self, token_ids, mask=None):
        if self.padding_id is None:
            return None
        if isinstance(token_ids, keras.KerasTensor):
            return ops.not_equal(token_ids, self.padding_id)
        return padding_mask_from_ids(
            ops.convert_to_tensor(token_ids), self.padding_id, "TokenEmbedding"
        )

    def attend(self, inputs):
        """Tied output projection: logits `inputs @ embeddings^T`.

        Args:
            inputs: float tensor `(..., embedding_dim)`.

        Returns:
            float tensor `(..., vocabulary_size)` in `compute_dtype`.
        """
        if inputs.shape[-1] != self.embedding_dim:
            raise ValueError(
                "TokenEmbedding.attend expects inputs whose last dimension is "
                f"embedding_dim={self.embedding_dim}. "
                f"Received: inputs with shape {tuple(inputs.shape)}."
            )
        table = ops.cast(self.embeddings, self.compute_dtype)
        return ops.matmul(
            ops.cast(inputs, self.compute_dtype), ops.transpose(table)
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.embedding_dim,)

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "scale": self.scale,
            "padding_id": self.padding_id,
            "embeddings_initializer": keras.initializers.serialize(
                self.embeddings_initializer
            ),
        }
