import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import references
from tests.testing import run_layer_test
from tf_input.block import InputBlock
from tf_input.layers.rotary_embedding import RotaryEmbedding

ROOT = pathlib.Path(__file__).resolve().parents[1]
V, D = 50, 8
IDS = np.array([[5, 7, 9, 3, 0, 0], [11, 2, 4, 6, 8, 1]], "int32")
SEGMENTS = np.array([[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1]], "int32")
PACKED = np.array([[0, 1, 2, 0, 0, 0], [0, 1, 0, 1, 2, 3]], "int32")


def numpy_norm(x, kind, gamma, beta=None, epsilon=1e-6):
    """Layer / RMS normalization over the last axis, float64."""
    if kind == "layer":
        centered = x - x.mean(-1, keepdims=True)
        variance = (centered**2).mean(-1, keepdims=True)
        return centered / np.sqrt(variance + epsilon) * gamma + beta
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + epsilon) * gamma


def reference_output(block, ids, segments=None, positions=None):
    """The block's output from its weights, in float64 NumPy."""
    table = block.token_embedding.embeddings.numpy().astype("float64")
    x = table[ids] * (np.sqrt(D) if block.scale else 1.0)
    if segments is not None:
        seg = block.segment_embedding.embeddings.numpy().astype("float64")
        x = x + seg[segments]
    if positions is None:
        positions = np.broadcast_to(np.arange(ids.shape[1]), ids.shape)
    if block.position == "sinusoidal":
        x = x + references.sinusoid(positions, D)
    elif block.position == "learned":
        pe = block.position_embedding.position_embeddings.numpy()
        x = x + pe.astype("float64")[positions]
    if block.normalization is not None:
        weights = [w.numpy().astype("float64") for w in block.norm.weights]
        x = numpy_norm(x, block.normalization, *weights)
    return x


# --- The functional model ----------------------------------------------------
def test_layer_contract():
    # Config round trip, registered name, symbolic/eager/XLA, .keras, one
    # XLA fit step, and mixed precision dtypes.
    run_layer_test(
        InputBlock,
        {"vocabulary_size": V, "embedding_dim": D, "dropout": 0.1},
        IDS,
        expected_mask=IDS != 0,
        num_trainable_weights=1,
    )


def test_is_a_functional_model_with_named_inputs():
    block = InputBlock(
        V,
        D,
        position="learned",
        max_length=16,
        num_segments=2,
        positions_input=True,
        normalization="layer",
        dropout=0.1,
    )
    assert isinstance(block, keras.Model)
    # A dict of inputs; Keras lists them sorted by key.
    assert sorted(t.name for t in block.inputs) == [
        "positions",
        "segment_ids",
        "token_ids",
    ]
    assert block.input_names == ("token_ids", "segment_ids", "positions")
    names = [layer.name for layer in block.layers]
    for name in (
        "token_embedding",
        "segment_embedding",
        "position_embedding",
        "normalization",
        "dropout",
    ):
        assert name in names
    assert InputBlock(V, D).input_names == ("token_ids",)
    assert [t.name for t in InputBlock(V, D).inputs] == ["token_ids"]


@pytest.mark.parametrize("position", ["sinusoidal", "learned", "none"])
@pytest.mark.parametrize("normalization", [None, "layer", "rms"])
def test_matches_float64_reference(position, normalization):
    block = InputBlock(
        V,
        D,
        position=position,
        max_length=8,
        normalization=normalization,
    )
    got = block(IDS).numpy().astype("float64")
    # float32 sums of terms of size ~1: a few ulps; the normalization
    # divides by a std near 1.
    np.testing.assert_allclose(got, reference_output(block, IDS), atol=2e-6)


@pytest.mark.parametrize("position", ["sinusoidal", "learned"])
def test_segments_and_packed_positions(position):
    block = InputBlock(
        V,
        D,
        position=position,
        max_length=8,
        num_segments=2,
        positions_input=True,
    )
    inputs = {"token_ids": IDS, "segment_ids": SEGMENTS, "positions": PACKED}
    got = block(inputs).numpy().astype("float64")
    want = reference_output(block, IDS, SEGMENTS, PACKED)
    np.testing.assert_allclose(got, want, atol=2e-6)
    # The explicit positions matter: arange positions give another output.
    arange = np.broadcast_to(np.arange(6), IDS.shape).astype("int32")
    other = block({**inputs, "positions": arange}).numpy()
    assert not np.allclose(got, other)


def test_unscaled_tokens_and_no_mask():
    block = InputBlock(V, D, position="none", scale=False, padding_id=None)
    out = block(IDS)
    table = block.token_embedding.embeddings.numpy()
    np.testing.assert_array_equal(out.numpy(), table[IDS])
    assert getattr(out, "_keras_mask", None) is None


def test_padding_mask_propagates_eager_and_nested():
    block = InputBlock(V, D, num_segments=2)
    out = block({"token_ids": IDS, "segment_ids": SEGMENTS})
    np.testing.assert_array_equal(out._keras_mask.numpy(), IDS != 0)
    # Nested: a downstream masked average sees the mask.
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    segment_ids = keras.Input((None,), dtype="int32", name="segment_ids")
    hidden = block({"token_ids": token_ids, "segment_ids": segment_ids})
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    model = keras.Model([token_ids, segment_ids], pooled)
    got = model([IDS, SEGMENTS]).numpy()
    x = out.numpy()
    mask = (IDS != 0)[..., None]
    want = (x * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- position="rope" ----------------------------------------------------------
def test_rope_adds_nothing_and_exposes_the_configured_rotary():
    scaling = {"type": "linear", "factor": 4.0}
    block = InputBlock(
        V,
        D,
        position="rope",
        rope={"rope_theta": 500.0, "rope_scaling": scaling, "layout": "half"},
    )
    assert block.position_embedding is None
    out = block(IDS).numpy()
    table = block.token_embedding.embeddings.numpy()
    np.testing.assert_allclose(out, table[IDS] * np.sqrt(D), rtol=1e-6)
    assert isinstance(block.rotary, RotaryEmbedding)
    config = block.rotary.get_config()
    assert config["max_wavelength"] == 500.0
    assert config["scaling"] == {"rope_type": "linear", "factor": 4.0}
    assert block.get_config()["rope"] == {
        "max_wavelength": 500.0,
        "scaling": {"rope_type": "linear", "factor": 4.0},
        "layout": "half",
    }
    # The rotary rotates q as the float64 reference does.
    q = np.random.default_rng(0).normal(size=(2, 6, 2, 4)).astype("float32")
    positions = np.arange(6)
    frequencies, factor = references.rope_frequencies(4, 500.0, scaling)
    want = references.rope(q, positions, frequencies, factor)
    np.testing.assert_allclose(block.rotary(q).numpy(), want, atol=1e-5)
    # Packed positions go to the rotary directly.
    got = block.rotary(q, positions=PACKED).numpy()
    np.testing.assert_allclose(
        got, references.rope(q, PACKED, frequencies, factor), atol=1e-5
    )


def test_rotary_is_none_for_other_positions():
    assert InputBlock(V, D).rotary is None


# --- Errors -------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary_size": 0}, r"`vocabulary_size` must be a positive"),
        (
            {"position": "alibi"},
            r"`position` must be one of \('sinusoidal', 'learned', 'rope', "
            r"'none'\)\. Received: position='alibi'",
        ),
        (
            {"position": "learned"},
            r"position='learned' needs `max_length`.*max_length=None",
        ),
        ({"max_length": 0}, r"`max_length` must be None or an integer >= 1"),
        (
            {"num_segments": -1},
            r"`num_segments` must be None or an integer >= 0",
        ),
        ({"dropout": 1.0}, r"`dropout` must be a number in \[0, 1\)"),
        (
            {"normalization": "batch"},
            r"`normalization` must be one of \(None, 'layer', 'rms'\)",
        ),
        (
            {"rope": {"max_wavelength": 10.0}},
            r"only applies with position='rope'.*position='sinusoidal'",
        ),
        (
            {"position": "rope", "rope": {"theta": 1.0}},
            r"`rope` takes the keys.*Received: rope=\{'theta': 1.0\}",
        ),
        (
            {
                "position": "rope",
                "rope": {"rope_theta": 1, "max_wavelength": 2},
            },
            r"`rope` takes the keys.*each once",
        ),
        (
            {"position": "rope", "rope": {"layout": "diagonal"}},
            r"`layout` must be one of \('half', 'interleaved'\)",
        ),
        (
            {"position": "rope", "rope": {"scaling": {"rope_type": "ntk"}}},
            r"`scaling\['rope_type'\]` must be one of",
        ),
        (
            {"position": "rope", "positions_input": True},
            r"needs position 'sinusoidal' or 'learned'.*block.rotary",
        ),
        (
            {"position": "none", "positions_input": True},
            r"Received: position='none'",
        ),
        ({"padding_id": 50}, r"`padding_id` must be a valid id"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": V, "embedding_dim": D, **kwargs}
    with pytest.raises(ValueError, match=message):
        InputBlock(**kwargs)
    # The same checks guard from_config.
    config = InputBlock(V, D).get_config()
    config.update(kwargs)
    with pytest.raises(ValueError, match=message):
        InputBlock.from_config(config)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"embedding_dim": 2.5}, r"`embedding_dim` must be a positive.*float"),
        ({"dropout": True}, r"Received: dropout=True \(of type bool\)"),
        (
            {"position": "rope", "rope": 10_000.0},
            r"`rope` must be None or a dict.*Received: rope=10000.0",
        ),
        (
            {"positions_input": 1},
            r"`positions_input` must be True or False.*\(of type int\)",
        ),
        (
            {"padding_mask_input": "yes"},
            r"`padding_mask_input` must be True or False",
        ),
        ({"scale": "yes"}, r"`scale` must be True or False"),
    ],
)
def test_bad_argument_types(kwargs, message):
    kwargs = {"vocabulary_size": V, "embedding_dim": D, **kwargs}
    with pytest.raises(TypeError, match=message):
        InputBlock(**kwargs)
    # The same checks guard from_config.
    config = InputBlock(V, D).get_config()
    config.update(kwargs)
    with pytest.raises(TypeError, match=message):
        InputBlock.from_config(config)


def test_bad_inputs():
    with pytest.raises(ValueError, match="Input length 6 exceeds LearnedPE's"):
        InputBlock(V, D, position="learned", max_length=4)(IDS)
    with pytest.raises(ValueError, match=r"vocabulary_size=50\).*largest: 61"):
        InputBlock(V, D)(IDS + 50)
    block = InputBlock(V, D, num_segments=2)
    with pytest.raises(ValueError, match=r"vocabulary_size=2\).*largest: 2"):
        block({"token_ids": IDS, "segment_ids": SEGMENTS * 2})
    with pytest.raises(ValueError, match="even, static feature_dim"):
        InputBlock(V, 7)


def test_wide_ids_are_checked_before_keras_casts_them_to_int32():
    # Keras casts each input to its `keras.Input` dtype (int32): without a
    # check an int64 id of 2**32 + 5 became the valid id 5.
    block = InputBlock(
        V, D, position="sinusoidal", num_segments=2, positions_input=True
    )
    ids = IDS.astype("int64")
    wide = ids.copy()
    wide[0, 1] = 2**32 + 5
    inputs = {"token_ids": ids, "segment_ids": SEGMENTS, "positions": PACKED}
    want = block(inputs).numpy()
    np.testing.assert_array_equal(
        block({**inputs, "positions": PACKED.astype("uint64")}).numpy(), want
    )
    message = r"`token_ids` outside the int32 range.*value:\W+4294967301"
    with pytest.raises(ValueError, match=message):
        block({**inputs, "token_ids": wide})
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.function(block)({**inputs, "token_ids": tf.constant(wide)})
    got = tf.function(block, jit_compile=True)(
        {**inputs, "token_ids": tf.constant(wide)}
    ).numpy()
    assert np.isnan(got[0, 1]).all()
    np.testing.assert_allclose(got[1], want[1], atol=1e-5)
    with pytest.raises(ValueError, match="`positions` outside the int32"):
        block({**inputs, "positions": PACKED.astype("int64") + 2**31})


# --- Config and saving -------------------------------------------------------
def test_config_round_trip_and_registration():
    block = InputBlock(
        V,
        D,
        position="rope",
        rope={"scaling": {"rope_type": "linear", "factor": 2.0}},
        num_segments=3,
        dropout=0.2,
        normalization="rms",
        padding_id=None,
        scale=False,
        name="inputs",
    )
    config = block.get_config()
    assert config["name"] == "inputs"
    assert InputBlock.from_config(config).get_config() == config
    assert keras.saving.get_registered_name(InputBlock) == "tf_input>InputBlock"
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(block)
    )
    assert type(restored) is InputBlock
    assert restored.get_config() == config


def full_block():
    return InputBlock(
        V,
        D,
        position="learned",
        max_length=8,
        num_segments=2,
        positions_input=True,
        normalization="layer",
        dropout=0.1,
    )


FEATURES = {"token_ids": IDS, "segment_ids": SEGMENTS, "positions": PACKED}


def test_keras_file_round_trip_is_identical(tmp_path):
    block = full_block()
    want = block(FEATURES).numpy()
    path = str(tmp_path / "block.keras")
    block.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is InputBlock
    assert loaded.get_config() == block.get_config()
    np.testing.assert_array_equal(loaded(FEATURES).numpy(), want)


def test_export_reloads_with_saved_model_and_tfsmlayer(tmp_path):
    block = full_block()
    want = block(FEATURES).numpy()
    path = str(tmp_path / "exported")
    block.export(path, verbose=False)
    tensors = {k: tf.constant(v) for k, v in FEATURES.items()}
    reloaded = tf.saved_model.load(path)
    np.testing.assert_array_equal(reloaded.serve(tensors).numpy(), want)
    layer = keras.layers.TFSMLayer(path, call_endpoint="serve")
    np.testing.assert_array_equal(layer(tensors).numpy(), want)
    # The single-input form exports too.
    simple = InputBlock(V, D, position="rope")
    simple.export(str(tmp_path / "simple"), verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "simple"))
    np.testing.assert_array_equal(
        reloaded.serve(IDS).numpy(), simple(IDS).numpy()
    )


# --- Inside a larger model: training, XLA, mixed precision --------------------
def classifier(block):
    """A small model around `block`: masked mean pooling, then 3 classes."""
    features = {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in block.input_names
    }
    hidden = block(features if len(features) > 1 else features["token_ids"])
    hidden = keras.layers.Dense(D, activation="relu")(hidden)
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    logits = keras.layers.Dense(3, dtype="float32")(pooled)
    return keras.Model(features, logits)


def fit_twice(model, features, jit_compile):
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    labels = np.array([0, 2], "int32")
    history = model.fit(features, labels, epochs=4, batch_size=2, verbose=0)
    return history.history["loss"][0], history.history["loss"][-1]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_nested_model_trains(jit_compile):
    block = full_block()
    model = classifier(block)
    before = block.token_embedding.embeddings.numpy().copy()
    first, last = fit_twice(model, FEATURES, jit_compile)
    assert last < first
    assert not np.array_equal(block.token_embedding.embeddings.numpy(), before)


@pytest.mark.parametrize("position", ["sinusoidal", "learned", "rope"])
def test_xla_equals_eager(position):
    block = InputBlock(
        V, D, position=position, max_length=8, normalization="rms"
    )
    xla = tf.function(lambda x: block(x), jit_compile=True)
    np.testing.assert_allclose(xla(IDS), block(IDS), rtol=1e-6, atol=1e-6)


def test_mixed_bfloat16_trains_and_keeps_positions():
    keras.config.set_dtype_policy("mixed_bfloat16")
    block = InputBlock(V, D, position="sinusoidal", normalization="layer")
    assert block.token_embedding.embeddings.dtype == "float32"
    first, last = fit_twice(classifier(block), IDS, jit_compile=True)
    assert np.isfinite(last) and last < first
    # Long positions keep their encoding: compare with float64 at 2048+.
    ids = np.full((1, 2100), 3, "int32")
    plain = InputBlock(V, D, position="sinusoidal", scale=False)
    got = plain(ids)
    assert got.dtype == "bfloat16"
    row = plain.token_embedding.embeddings.numpy()[3].astype("float64")
    want = row + references.sinusoid(np.arange(2100), D)
    # bfloat16 keeps 8 significant bits: outputs below 2 round by <= 2^-8.
    np.testing.assert_allclose(
        got.numpy().astype("float64")[0], want, atol=1e-2
    )


DISTRIBUTED_SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import sys

    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras
    import numpy as np

    import tf_input.data
    from tf_input.block import InputBlock
    from tf_input.tokenizers import VocabularyTokenizer

    keras.utils.set_random_seed(0)
    texts = ["the cat sat on the mat", "a dog ran", "the dog sat",
             "a cat ran on the mat", "dogs and cats", "the end"] * 4
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(texts)
    ds = tf_input.data.make_dataset(
        texts, tokenizer, batch_size=4, max_length=8, batching="max_length",
        drop_remainder=True)
    spec = sorted(ds.element_spec[0])
    # Keras 3.15's fit under a tf.distribute strategy averages the first
    # batch across replicas to build the model (`_maybe_symbolic_build`),
    # which fails on bool tensors (AddN of bool). Feed the mask as int32.
    ds = ds.map(lambda f, y, w: ({**f, "padding_mask": tf.cast(
        f["padding_mask"], "int32")}, y, w))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input((None,), dtype="int32",
                                   name="padding_mask")
        block = InputBlock(tokenizer.vocabulary_size(), 8,
                           position="learned", max_length=8,
                           normalization="layer", dropout=0.1)
        hidden = block(token_ids)
        # The outer model uses the pipeline's mask, e.g. to zero padding.
        hidden = hidden * keras.ops.cast(padding_mask, hidden.dtype)[..., None]
        logits = keras.layers.Dense(tokenizer.vocabulary_size())(hidden)
        model = keras.Model(
            {"token_ids": token_ids, "padding_mask": padding_mask}, logits)
        model.compile(
            optimizer=keras.optimizers.Adam(0.05),
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=0))
    history = model.fit(ds, epochs=3, verbose=0)
    json.dump({"replicas": strategy.num_replicas_in_sync,
               "loss": history.history["loss"],
               "spec": spec}, sys.stdout)
    """
)


def run_script(script, cwd=ROOT, timeout=240):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_trains_under_mirrored_strategy_on_two_cpus():
    # Logical devices must be set before TensorFlow initialises: subprocess.
    import json

    out = json.loads(run_script(DISTRIBUTED_SCRIPT).strip().splitlines()[-1])
    assert out["replicas"] == 2
    assert out["spec"] == ["padding_mask", "token_ids"]
    assert all(np.isfinite(out["loss"]))
    assert out["loss"][-1] < out["loss"][0]


def test_rms_normalization_keeps_the_mask_without_a_warning():
    # Keras warned that RMSNormalization "will destroy the mask
    # information": it did not declare mask support. The block's mask is
    # intact, and no warning is raised any more.
    import warnings

    block = InputBlock(V, D, normalization="rms")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = block(np.array([[5, 7, 0]]))
        nested = keras.Sequential([keras.Input((None,), dtype="int32"), block])
        nested(np.array([[5, 0, 0]]))
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "destroy the mask" in m], messages
    np.testing.assert_array_equal(x._keras_mask, [[True, True, False]])
