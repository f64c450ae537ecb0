import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.testing import run_layer_test
from tf_input import LearnedPE
from tf_input import TokenEmbedding

X = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")


def test_layer_contract():
    run_layer_test(LearnedPE, {"max_length": 16}, X, num_trainable_weights=1)


def test_adds_table_rows():
    layer = LearnedPE(16)
    got = layer(X).numpy()
    table = layer.position_embeddings.numpy()
    np.testing.assert_allclose(got, X + table[:5], rtol=1e-6)
    got = layer(X, start_index=11).numpy()
    np.testing.assert_allclose(got, X + table[11:16], rtol=1e-6)
    packed = np.array([[0, 1, 2, 0, 1], [0, 1, 2, 3, 4]])
    got = layer(X, positions=packed).numpy()
    np.testing.assert_allclose(got, X + table[packed], rtol=1e-6)


def test_whole_sequence_equals_token_by_token():
    layer = LearnedPE(16)
    whole = layer(X).numpy()
    steps = [layer(X[:, i : i + 1], start_index=i).numpy() for i in range(5)]
    np.testing.assert_array_equal(np.concatenate(steps, 1), whole)


def test_table_stays_float32_output_in_compute_dtype():
    for policy in ("mixed_float16", "mixed_bfloat16"):
        layer = LearnedPE(16, dtype=policy)
        out = layer(X)
        assert layer.position_embeddings.dtype == "float32"
        assert out.dtype == keras.DTypePolicy(policy).compute_dtype


def test_static_overflow_names_both_lengths():
    with pytest.raises(
        ValueError, match="Input length 10 exceeds LearnedPE's max_length=8"
    ):
        LearnedPE(8)(np.zeros((2, 10, 4), "float32"))


def test_packed_rows_longer_than_the_table_are_fine():
    # Positions restart per segment, so a row of 10 fits a table of 8.
    layer = LearnedPE(8)
    positions = np.array([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    got = layer(np.zeros((1, 10, 4), "float32"), positions=positions).numpy()
    np.testing.assert_allclose(
        got[0], layer.position_embeddings.numpy()[positions]
    )


# Eager: "... position: 8, largest: 9, input length: 5."; graph: "] [8] [...".
DYNAMIC = (
    r"positions outside \[0, max_length=8\).*offending position:\W+8\W+"
    r"largest:\W+9\W+input length:\W+5"
)


def test_start_index_overflow_in_eager_and_graph():
    layer = LearnedPE(8)
    x = np.zeros((1, 5, 4), "float32")
    with pytest.raises(ValueError, match=DYNAMIC):
        layer(x, start_index=5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=DYNAMIC):
        tf.function(layer)(x, start_index=tf.constant(5))


def test_dynamic_length_overflow_in_graph():
    layer = LearnedPE(4)
    layer.build((None, None, 4))
    spec = tf.TensorSpec((None, None, 4), "float32")
    fn = tf.function(layer, input_signature=[spec])
    fn(tf.zeros((1, 4, 4)))  # fits exactly
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="max_length=4.*input length:\\W+6"
    ):
        fn(tf.zeros((1, 6, 4)))


def test_overflow_under_xla_gives_nan_not_clamped_rows():
    layer = LearnedPE(8)
    x = tf.zeros((1, 5, 4))
    got = tf.function(layer, jit_compile=True)(
        x, start_index=tf.constant(5)
    ).numpy()
    table = layer.position_embeddings.numpy()
    np.testing.assert_allclose(got[0, :3], table[5:8], rtol=1e-6)
    assert np.isnan(got[0, 3:]).all()


def test_negative_positions_are_errors():
    with pytest.raises(ValueError, match="offending position: -1"):
        LearnedPE(8)(X, positions=np.array([-1, 0, 1, 2, 3]))


def test_new_start_index_does_not_recompile_under_xla():
    # A start index baked into the program as a constant would give one XLA
    # program per value (keras-hub's ops.slice does). Here the HLO for two
    # start values is the same program, with start_index as a parameter.
    layer = LearnedPE(64)
    x = tf.zeros((2, 5, 8))
    fn = tf.function(lambda x, s: layer(x, start_index=s), jit_compile=True)
    hlo_3 = fn.experimental_get_compiler_ir(x, tf.constant(3))(stage="hlo")
    hlo_40 = fn.experimental_get_compiler_ir(x, tf.constant(40))(stage="hlo")
    assert hlo_3 == hlo_40
    assert "s32[] parameter" in hlo_3


def test_mask_passes_through():
    inputs = keras.Input((None,), dtype="int32")
    out = LearnedPE(8)(TokenEmbedding(10, 4)(inputs))
    model = keras.Model(inputs, out)
    ids = np.array([[1, 2, 0]])
    x = model.layers[1](ids)
    mask = model.layers[2].compute_mask(x, ids != 0)
    np.testing.assert_array_equal(mask, ids != 0)
    assert out._keras_mask is not None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_length": 0}, "max_length=0"),
        ({"max_length": 8, "embeddings_initializer": "nope"}, "nope"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LearnedPE(**kwargs)


def test_unknown_feature_size_is_a_build_error():
    with pytest.raises(
        ValueError, match="static feature_dim.*Received: input_shape"
    ):
        LearnedPE(8).build((2, 5, None))


# Positions past int32 are an error naming them; a cast to int32 made
# start_index=2**32 silently use positions 0-3.
PAST_INT32 = r"outside the int32 range.*never wrapped.*4294967296"


def test_start_index_past_int32_is_an_error_not_wrapped():
    layer = LearnedPE(16)
    x = np.zeros((1, 4, 8), "float32")
    with pytest.raises(ValueError, match=PAST_INT32):
        layer(x, start_index=2**32)
    wide = tf.constant(2**32, tf.int64)
    with pytest.raises(ValueError, match=PAST_INT32):
        layer(x, start_index=wide)

    def step(x, start):
        return layer(x, start_index=start)

    with pytest.raises(tf.errors.InvalidArgumentError, match=PAST_INT32):
        tf.function(step)(x, wide)
    ds = tf.data.Dataset.from_tensors((x, wide)).map(step)
    with pytest.raises(tf.errors.InvalidArgumentError, match=PAST_INT32):
        list(ds)
    got = tf.function(step, jit_compile=True)(x, wide).numpy()
    assert np.isnan(got).all()


def test_int64_positions_past_int32_under_xla_are_nan_rows():
    layer = LearnedPE(16)
    x = tf.zeros((1, 3, 8))
    positions = tf.constant([0, 1, 2**32 + 1], tf.int64)
    with pytest.raises(ValueError, match="`positions` outside the int32"):
        layer(x, positions=positions)
    got = tf.function(layer, jit_compile=True)(x, positions=positions).numpy()
    table = layer.position_embeddings.numpy()
    np.testing.assert_allclose(got[0, :2], table[:2], rtol=1e-6)
    assert np.isnan(got[0, 2]).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_length": None}, r"max_length=None \(of type NoneType\)"),
        ({"max_length": 8.0}, r"max_length=8.0 \(of type float\)"),
    ],
)
def test_bad_argument_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        LearnedPE(**kwargs)
