"""The contract every tf_input layer passes (modelled on Keras's own).

`run_layer_test` checks, for one layer class and one input:

* `get_config` -> `from_config` gives the same config, and Keras's
  `serialize_keras_object` / `deserialize_keras_object` round trip works under
  the registered name `tf_input>ClassName`;
* eager, symbolic (with a dynamic sequence length) and `compute_output_shape`
  agree on the output shape, and the mask is what the layer promises;
* `tf.function(jit_compile=True)` equals eager;
* a traced function with an unknown sequence length runs on two lengths;
* a `.keras` save and load gives the same class and identical outputs;
* one `fit` step runs (XLA-compiled), and trainable weights change;
* under `mixed_float16` and `mixed_bfloat16` the output has the compute dtype.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    *,
    call_kwargs=None,
    expected_mask=None,
    num_trainable_weights=0,
):
    call_kwargs = call_kwargs or {}
    input_data = np.asarray(input_data)
    input_dtype = input_data.dtype.name

    # Config and serialization round trips.
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    assert layer_cls.from_config(config).get_config() == config
    registered = keras.saving.get_registered_name(layer_cls)
    assert registered == f"tf_input>{layer_cls.__name__}"
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    assert type(restored) is layer_cls
    assert restored.get_config() == config

    # Eager call, output shape, mask.
    eager = layer(input_data, **call_kwargs)
    assert tuple(eager.shape) == tuple(
        layer.compute_output_shape(input_data.shape)
    )
    assert len(layer.trainable_weights) == num_trainable_weights
    if expected_mask is not None:
        mask = layer.compute_mask(input_data, None)
        np.testing.assert_array_equal(np.asarray(mask), expected_mask)

    # Symbolic call with an unknown sequence length.
    dynamic_shape = (None,) + input_data.shape[2:]
    symbolic_input = keras.Input(dynamic_shape, dtype=input_dtype)
    symbolic = layer_cls(**init_kwargs)(symbolic_input, **call_kwargs)
    expected = layer.compute_output_shape((None,) + dynamic_shape)
    assert tuple(symbolic.shape) == tuple(expected)

    # XLA equals eager.
    xla = tf.function(lambda x: layer(x, **call_kwargs), jit_compile=True)
    np.testing.assert_allclose(xla(input_data), eager, rtol=1e-6, atol=1e-6)

    # A traced function serves two sequence lengths.
    spec = tf.TensorSpec((None, None) + input_data.shape[2:], input_dtype)
    traced = tf.function(
        lambda x: layer(x, **call_kwargs), input_signature=[spec]
    )
    np.testing.assert_allclose(traced(input_data), eager, rtol=1e-6, atol=1e-6)
    shorter = input_data[:, : max(1, input_data.shape[1] - 1)]
    assert traced(shorter).shape[1] == shorter.shape[1]

    # .keras round trip: same type, identical outputs.
    inputs = keras.Input(input_data.shape[1:], dtype=input_dtype)
    model = keras.Model(inputs, layer_cls(**init_kwargs)(inputs, **call_kwargs))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    assert type(loaded.layers[-1]) is layer_cls
    np.testing.assert_array_equal(
        loaded(input_data).numpy(), model(input_data).numpy()
    )

    # One XLA-compiled fit step; trainable weights move.
    x = keras.layers.Dense(1)(model.outputs[0])
    trainer = keras.Model(inputs, x)
    trainer.compile(
        optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=True
    )
    before = [w.numpy().copy() for w in trainer.layers[1].trainable_weights]
    targets = np.ones(trainer.compute_output_shape(input_data.shape), "float32")
    trainer.fit(
        input_data, targets, epochs=1, batch_size=len(input_data), verbose=0
    )
    after = [w.numpy() for w in trainer.layers[1].trainable_weights]
    for old, new in zip(before, after):
        assert not np.array_equal(old, new)

    # Mixed precision: outputs in the compute dtype.
    for policy in ("mixed_float16", "mixed_bfloat16"):
        mixed = layer_cls(**init_kwargs, dtype=policy)
        out = mixed(input_data, **call_kwargs)
        assert out.dtype == keras.DTypePolicy(policy).compute_dtype, policy
        for weight in mixed.weights:
            assert weight.dtype == "float32"
