"""`InputMask`: attaches a given padding mask to a tensor."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tf_input")
class InputMask(keras.layers.Layer):
    """Passes `x` on with the mask given as a second input.

    `InputMask()([x, padding_mask])` returns `x`, with `padding_mask` (bool
    or int, nonzero on real tokens) as its Keras mask. `InputBlock` uses it
    to attach the pipeline's `padding_mask`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        x, _ = inputs
        return x

    def compute_mask(self, inputs, mask=None):
        return ops.cast(inputs[1], "bool")

    def compute_output_shape(self, input_shape):
        return input_shape[0]
