"""The dataset feeds `model.fit`, MirroredStrategy and the tf.data service."""

import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_input import VocabularyTokenizer
from tf_input.data import make_dataset

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINES = [f"w{i % 7} w{i % 5} w{i % 3}" + " w1" * (i % 4) for i in range(40)]


def tiny_model(vocabulary_size, packed=False, mask_dtype="int32"):
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype=mask_dtype, name="padding_mask")
    inputs = {"token_ids": token_ids, "padding_mask": padding_mask}
    x = keras.layers.Embedding(vocabulary_size, 8)(token_ids)
    if packed:
        positions = keras.Input((None,), dtype="int32", name="positions")
        example_ids = keras.Input((None,), dtype="int32", name="example_ids")
        inputs.update(positions=positions, example_ids=example_ids)
        x = x + keras.layers.Embedding(64, 8)(positions)
    x = x * keras.ops.cast(padding_mask, x.dtype)[..., None]
    logits = keras.layers.Dense(vocabulary_size)(x)
    model = keras.Model(inputs, logits)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
    )
    return model


@pytest.mark.parametrize(
    "batching",
    [
        # max_length: `fit` on it also runs, under MirroredStrategy, in
        # test_mirrored_strategy_on_two_logical_cpus.
        pytest.param("max_length", marks=pytest.mark.slow),
        "pack",
        pytest.param("longest", marks=pytest.mark.slow),
        pytest.param("bucket", marks=pytest.mark.slow),
        pytest.param("stream", marks=pytest.mark.slow),
    ],
)
def test_model_fit(batching):
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(LINES)
    size = tokenizer.vocabulary_size()
    if True:
        ds = make_dataset(
            LINES, tokenizer, batch_size=8, max_length=16, batching=batching
        )
        model = tiny_model(size, packed=batching == "pack")
        history = model.fit(ds, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0]), batching


def test_tf_data_service():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(LINES)
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    for batching in ("pack", "stream"):
        kwargs = dict(batch_size=4, max_length=16, batching=batching)
        local = make_dataset(LINES, tokenizer, **kwargs)
        remote = make_dataset(
            LINES, tokenizer, data_service=dispatcher.target, **kwargs
        )
        assert remote.element_spec == local.element_spec
        # One worker, parallel_epochs: the same epoch, targets included.
        for want, got in zip(local, remote, strict=True):
            for name in want[0]:
                np.testing.assert_array_equal(want[0][name], got[0][name])
            np.testing.assert_array_equal(want[1], got[1])
            np.testing.assert_array_equal(want[2], got[2])
    del worker, dispatcher


MIRRORED = textwrap.dedent(
    """
    import os
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras
    import numpy as np
    from tests.data.test_scale_out import LINES, tiny_model
    from tf_input import VocabularyTokenizer
    from tf_input.data import make_dataset

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(LINES)
    ds = make_dataset(
        LINES, tokenizer, batch_size=8, max_length=16, batching="max_length"
    )
    # Keras' fit under MirroredStrategy fails on any bool input tensor
    # (AddN on bool, TF 2.21 / Keras 3): the pipeline's int32 mask (the
    # dtype of keras-hub's backbones) goes straight in.
    with strategy.scope():
        model = tiny_model(tokenizer.vocabulary_size())
    first = model.fit(ds, epochs=1, verbose=0).history["loss"]
    # The dataset itself distributes as it is.
    distributed = strategy.experimental_distribute_dataset(ds)
    batch = next(iter(distributed))
    shapes = [t.shape.as_list() for t in
              strategy.experimental_local_results(batch[0]["token_ids"])]
    assert shapes == [[4, 16], [4, 16]], shapes

    @tf.function
    def step(features, labels, weights):
        def replica(features, labels, weights):
            with tf.GradientTape() as tape:
                logits = model(features, training=True)
                loss = model.loss(labels, logits, sample_weight=weights)
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply(grads, model.trainable_variables)
            return loss
        losses = strategy.run(replica, args=(features, labels, weights))
        return strategy.reduce("MEAN", losses, axis=None)

    second = [float(step(*batch)) for batch in distributed]
    assert len(second) == 5 and all(np.isfinite(first + second))
    print("OK", first, second)
    """
)


def test_mirrored_strategy_on_two_logical_cpus():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", MIRRORED],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "OK" in result.stdout
