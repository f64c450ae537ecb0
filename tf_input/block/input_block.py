"""`InputBlock`: token ids in, the first Transformer block's input out.

The class, the layers it is made of (`_Sublayers`) and its functional graph
(`_graph`); its arguments are checked in `tf_input.block.arguments`.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tf_input._validation import INT32_MAX
from tf_input._validation import INT32_MIN
from tf_input._validation import checked_range
from tf_input._validation import in_xla_context
from tf_input._validation import padding_mask_from_ids
from tf_input.block.arguments import LAYER_NORM_EPSILON
from tf_input.block.arguments import Arguments
from tf_input.layers.input_mask import InputMask
from tf_input.layers.learned_pe import LearnedPE
from tf_input.layers.rotary_embedding import RotaryEmbedding
from tf_input.layers.sinusoidal_pe import SinusoidalPE
from tf_input.layers.token_embedding import TokenEmbedding


@keras.saving.register_keras_serializable(package="tf_input")
class InputBlock(keras.Model):
    """Turns token ids into the tensor the first Transformer block reads.

    A functional Keras model (so `summary()` and `keras.utils.plot_model`
    show its graph) computing

        dropout(norm(TokenEmbedding(token_ids)
                     + segment_embedding(segment_ids)     # num_segments > 0
                     + position))                         # additive schemes

    with the padding mask attached to the output, so Keras passes it on to
    the layers that follow. The mask is the pipeline's `padding_mask` input
    with `padding_mask_input=True`, else `token_ids != padding_id`.

    Which mask to use: in many vocabularies id 0 is a real token (`"!"` in
    GPT-2's, Llama 3's, Qwen's; their tokenizers' `padding_id` is None), so
    a mask derived from `token_ids != 0` would hide real tokens. Take the
    pipeline's mask (`padding_mask_input=True`) with such tokenizers; it is
    right for every tokenizer. Masking by id stays the default for ids-only
    use, and is checked: `padding_id` found between two real tokens of a
    row is an error, and `make_dataset(..., features=model)` and
    `export_text_model` refuse a model that masks an id the tokenizer uses
    for a real token.

    `position` chooses the position information:

    * `"sinusoidal"`: the fixed encoding of the paper (`SinusoidalPE`), any
      length.
    * `"learned"`: a trained table (`LearnedPE`) of `max_length` rows; a
      longer input is an error naming both lengths.
    * `"rope"`: nothing is added here. `block.rotary` is a configured
      `RotaryEmbedding` for the attention layers to apply to queries and
      keys, `block.rotary(q, positions=...)`; `rope=` takes its arguments.
    * `"none"`: no position information at all (the model then sees a bag
      of tokens).

    Inputs: with only `token_ids`, the block takes the int tensor
    `(batch, seq_len)` itself. With `num_segments > 0` or
    `positions_input=True` it takes a dict with the keys below, the names
    of `tf_input.data.make_dataset`'s features; extra keys such as
    `padding_mask` can be left to the outer model.

    * `token_ids`: int `(batch, seq_len)`.
    * `segment_ids`: int `(batch, seq_len)` in `[0, num_segments)`, BERT's
      token types (sentence A = 0, sentence B = 1). Only with
      `num_segments > 0`. Not the segment numbers of packed rows (1, 2, ...
      per example): those are for the attention mask
      (`tf_input.data.segment_attention_mask`), not for this block.
    * `positions`: int `(batch, seq_len)`, the position of each token, e.g.
      restarting at 0 in each example of a packed row. Only with
      `positions_input=True` (and an additive `position`).
    * `padding_mask`: bool or int `(batch, seq_len)`, 1 on real tokens, the
      pipeline's mask. Only with `padding_mask_input=True`.

    Under mixed precision the tables stay float32, position math is done in
    float32, and the output is in the compute dtype (e.g. bfloat16).

    Args:
        vocabulary_size: int. Number of token ids.
        embedding_dim: int. Width `D` of the output (even for
            `"sinusoidal"`).
        position: str, one of `"sinusoidal"`, `"learned"`, `"rope"`,
            `"none"`. Defaults to `"sinusoidal"`.
        max_length: int or None. Rows of the learned table; required for
            `"learned"`. With other schemes it is only kept in the config
            (so one set of arguments fits every scheme). Defaults to `None`.
        num_segments: int. Number of segment (token type) ids; 0 for no
            segment embedding and no `segment_ids` input. Defaults to `0`.
        dropout: float in `[0, 1)`. Dropout rate on the output. Defaults to
            `0.0`.
        normalization: None, `"layer"` (LayerNormalization) or `"rms"`
            (RMSNormalization), applied before dropout; epsilon `1e-6`.
            Defaults to `None`.
        padding_id: int, None or `"auto"`. The id masked out as padding
            (None: no mask from the ids). `"auto"` is 0, or None with
            `padding_mask_input=True`. Defaults to `"auto"`.
        scale: bool. Multiply token embeddings by `sqrt(embedding_dim)`.
            Defaults to `True`.
        rope: dict or None. Arguments of `RotaryEmbedding` for
            `position="rope"`: `max_wavelength`, `layout`, `rotary_dim`,
            `scaling` (a Hugging Face `rope_scaling` dict), `sequence_axis`,
            `feature_axis`; the Hugging Face names `rope_theta` and
            `rope_scaling` are accepted too. Defaults to `None`.
        padding_mask_input: bool. Add a `padding_mask` input (the
            pipeline's feature) and use it as the mask instead of
            `token_ids != padding_id`. Defaults to `False`.
        positions_input: bool. Add a `positions` input (packed rows) used
            by the position encoding instead of `0, 1, ..., seq_len - 1`.
            Needs `position` `"sinusoidal"` or `"learned"`; with `"rope"`
            pass the positions to `block.rotary` instead. Defaults to
            `False`.
        name: str or None. Model name.
        **kwargs: base `keras.Model` arguments, e.g. `dtype`, `trainable`.

    Call arguments:
        inputs: int tensor `(batch, seq_len)`, or a dict as described above.
        training: bool. Whether dropout is on.

    Returns:
        float tensor `(batch, seq_len, embedding_dim)` in the compute dtype,
        with the padding mask `(batch, seq_len)` attached.

    Example:

    >>> block = tf_input.block.InputBlock(100, 8, position="learned",
    ...                                   max_length=16)
    >>> x = block(np.array([[5, 7, 0]]))
    >>> tuple(x.shape), x.dtype.name
    ((1, 3, 8), 'float32')
    >>> x._keras_mask.numpy().tolist()
    [[True, True, False]]
    >>> rope_block = tf_input.block.InputBlock(
    ...     100, 8, position="rope", rope={"max_wavelength": 500_000.0})
    >>> q = np.ones((1, 3, 2, 4), "float32")  # (batch, seq, heads, head_dim)
    >>> tuple(rope_block.rotary(q).shape)
    (1, 3, 2, 4)
    """

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int,
        *,
        position: str = "sinusoidal",
        max_length: int | None = None,
        num_segments: int = 0,
        dropout: float = 0.0,
        normalization: str | None = None,
        padding_id: int | str | None = "auto",
        scale: bool = True,
        rope: dict | None = None,
        positions_input: bool = False,
        padding_mask_input: bool = False,
        name: str | None = None,
        **kwargs,
    ):
        # === Arguments ===
        args = Arguments.checked(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            position=position,
            max_length=max_length,
            num_segments=num_segments,
            dropout=dropout,
            normalization=normalization,
            padding_id=padding_id,
            scale=scale,
            rope=rope,
            positions_input=positions_input,
            padding_mask_input=padding_mask_input,
        )
        dtype = kwargs.pop("dtype", None)

        # === Layers ===
        layers = _Sublayers.made(args, dtype)

        # === Functional Model ===
        inputs, outputs = _graph(layers, args, dtype)
        super().__init__(
            inputs=inputs["token_ids"] if len(inputs) == 1 else inputs,
            outputs=outputs,
            dtype=dtype,
            name=name,
            **kwargs,
        )

        # === Config === (each argument, as checked)
        for field in dataclasses.fields(args):
            setattr(self, field.name, getattr(args, field.name))
        self.padding_id = layers.token_embedding.padding_id
        self.scale = layers.token_embedding.scale
        if self.rope is not None and "scaling" in self.rope:
            # normalised: the `rope_type` key
            self.rope["scaling"] = layers.rotary.scaling
        # === Sublayers, for direct use (e.g. `tf_input.trace`) ===
        for field in dataclasses.fields(layers):
            setattr(self, field.name, getattr(layers, field.name))

    @property
    def input_names(self):
        """The names of the inputs, e.g. `("token_ids", "segment_ids")`."""
        names = ["token_ids"]
        if self.num_segments:
            names.append("segment_ids")
        if self.positions_input:
            names.append("positions")
        if self.padding_mask_input:
            names.append("padding_mask")
        return tuple(names)

    def call(self, inputs, training=None, mask=None, **kwargs):
        # Keras casts each input to its `keras.Input` dtype (int32) before
        # the layers see it, which would wrap an int64 id of 2**32 + 5 to
        # the valid id 5: wider integer inputs are checked here first.
        inputs, fits = self._narrowed(inputs)
        outputs = super().call(inputs, training=training, mask=mask, **kwargs)
        if fits is not None and in_xla_context():
            # XLA cannot raise: such a row becomes NaN instead.
            outputs = outputs * ops.cast(fits[..., None], outputs.dtype)
        return outputs

    def _narrowed(self, inputs):
        """Inputs wider than int32 checked to fit int32, then cast.

        Returns the inputs and None, or the float32 mask `[B, S]` that is
        NaN where some input did not fit (see `checked_range`).
        """
        if isinstance(inputs, dict):
            items = list(inputs.items())
        elif isinstance(inputs, (list, tuple)):
            items = list(zip(self.input_names, inputs))
        else:
            items = [("token_ids", inputs)]
        fits, out = None, {}
        for name, value in items:
            dtype = getattr(value, "dtype", None)
            if isinstance(value, (tf.Tensor, np.ndarray)) and tf.as_dtype(
                dtype
            ) in (tf.int64, tf.uint32, tf.uint64):
                value, valid = checked_range(
                    value,
                    INT32_MIN,
                    INT32_MAX + 1,
                    f"InputBlock got `{name}` outside the int32 range "
                    f"[{INT32_MIN}, {INT32_MAX}]; they are never wrapped.",
                    what="value",
                )
                fits = valid if fits is None else fits * valid
            out[name] = value
        if isinstance(inputs, dict):
            return out, fits
        if isinstance(inputs, (list, tuple)):
            return type(inputs)(out.values()), fits
        return out["token_ids"], fits

    def compute_mask(self, inputs, mask=None):
        # Functional models lose their inner masks when called on symbolic
        # inputs (nested in another model); compute it here.
        if self.padding_mask_input:
            return ops.cast(inputs["padding_mask"], "bool")
        if self.padding_id is None:
            return None
        token_ids = inputs["token_ids"] if isinstance(inputs, dict) else inputs
        if isinstance(token_ids, keras.KerasTensor):
            return ops.not_equal(token_ids, self.padding_id)
        return padding_mask_from_ids(
            ops.convert_to_tensor(token_ids), self.padding_id, "InputBlock"
        )

    def get_config(self):
        # Not chained to Functional: its config describes the graph, ours
        # the arguments (rebuilt by `from_config`).
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "position": self.position,
            "max_length": self.max_length,
            "num_segments": self.num_segments,
            "dropout": self.dropout,
            "normalization": self.normalization,
            "padding_id": self.padding_id,
            "scale": self.scale,
            "rope": self.rope,
            "positions_input": self.positions_input,
            "padding_mask_input": self.padding_mask_input,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@dataclasses.dataclass(frozen=True)
class _Sublayers:
    """The layers of an `InputBlock`; None for those it does not use."""

    token_embedding: TokenEmbedding
    segment_embedding: TokenEmbedding | None
    position_embedding: keras.layers.Layer | None
    rotary: RotaryEmbedding | None
    norm: keras.layers.Layer | None
    dropout_layer: keras.layers.Dropout | None

    @classmethod
    def made(cls, args, dtype):
        position_embedding = None
        if args.position == "sinusoidal":
            position_embedding = SinusoidalPE(
                dtype=dtype, name="position_embedding"
            )
        elif args.position == "learned":
            position_embedding = LearnedPE(
                args.max_length, dtype=dtype, name="position_embedding"
            )
        return cls(
            token_embedding=TokenEmbedding(
                args.vocabulary_size,
                args.embedding_dim,
                scale=args.scale,
                padding_id=args.padding_id,
                dtype=dtype,
                name="token_embedding",
            ),
            segment_embedding=None
            if not args.num_segments
            else TokenEmbedding(
                args.num_segments,
                args.embedding_dim,
                scale=False,
                padding_id=None,
                dtype=dtype,
                name="segment_embedding",
            ),
            position_embedding=position_embedding,
            rotary=None
            if args.position != "rope"
            else RotaryEmbedding(
                **(args.rope or {}), dtype=dtype, name="rotary_embedding"
            ),
            norm=_normalization(args.normalization, dtype),
            dropout_layer=None
            if not args.dropout
            else keras.layers.Dropout(
                args.dropout, dtype=dtype, name="dropout"
            ),
        )


def _normalization(normalization, dtype):
    if normalization == "layer":
        return keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=dtype, name="normalization"
        )
    if normalization == "rms":
        norm = keras.layers.RMSNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=dtype, name="normalization"
        )
        # Keras 3.15's RMSNormalization does not declare mask support
        # (LayerNormalization does), so Keras warned that it "will
        # destroy the mask information". It normalises each token on its
        # own, so the padding mask passes through unchanged.
        norm.supports_masking = True
        return norm
    return None


def _graph(layers, args, dtype):
    """The block's functional graph: `(inputs, output)`, the inputs a dict
    from name to `keras.Input`."""
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    inputs = {"token_ids": token_ids}
    x = layers.token_embedding(token_ids)
    if layers.segment_embedding is not None:
        segment_ids = keras.Input((None,), dtype="int32", name="segment_ids")
        inputs["segment_ids"] = segment_ids
        x = keras.layers.Add(dtype=dtype, name="add_segment")(
            [x, layers.segment_embedding(segment_ids)]
        )
    if layers.position_embedding is not None:
        if args.positions_input:
            positions = keras.Input((None,), dtype="int32", name="positions")
            inputs["positions"] = positions
            x = layers.position_embedding(x, positions=positions)
        else:
            x = layers.position_embedding(x)
    if args.padding_mask_input:
        padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
        inputs["padding_mask"] = padding_mask
        x = InputMask(dtype=dtype, name="padding_mask_of_inputs")(
            [x, padding_mask]
        )
    if layers.norm is not None:
        x = layers.norm(x)
    if layers.dropout_layer is not None:
        x = layers.dropout_layer(x)
    return inputs, x
