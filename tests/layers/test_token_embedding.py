import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.testing import run_layer_test
from tf_input import TokenEmbedding

IDS = np.array([[5, 7, 0, 0], [1, 2, 3, 9]], "int32")


def test_layer_contract():
    run_layer_test(
        TokenEmbedding,
        {"vocabulary_size": 10, "embedding_dim": 6},
        IDS,
        expected_mask=IDS != 0,
        num_trainable_weights=1,
    )


@pytest.mark.parametrize("scale", [True, False])
def test_lookup_matches_numpy(scale):
    layer = TokenEmbedding(10, 16, scale=scale)
    got = layer(IDS).numpy().astype("float64")
    table = layer.embeddings.numpy().astype("float64")
    want = table[IDS] * (np.sqrt(16) if scale else 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_default_initializer_gives_unit_std_after_scaling():
    layer = TokenEmbedding(5000, 256)
    out = layer(np.arange(5000)[None]).numpy()
    # 1.28M samples of N(0, 1): the std is 1 within ~0.002.
    assert abs(out.std() - 1.0) < 0.01


def test_mask_and_no_mask():
    assert TokenEmbedding(10, 4, padding_id=None).compute_mask(IDS) is None
    mask = TokenEmbedding(10, 4, padding_id=9).compute_mask(IDS)
    np.testing.assert_array_equal(mask, IDS != 9)


def test_mask_propagates_through_functional_model():
    inputs = keras.Input((None,), dtype="int32")
    x = TokenEmbedding(10, 4)(inputs)
    x = keras.layers.LSTM(3)(x)  # consumes the mask
    model = keras.Model(inputs, x)
    # Trailing padding must not change the result.
    a = model(np.array([[5, 7]])).numpy()
    b = model(np.array([[5, 7, 0, 0]])).numpy()
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_attend_is_tied_projection():
    layer = TokenEmbedding(10, 4)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    layer.build()
    got = layer.attend(x).numpy()
    want = x.astype("float64") @ layer.embeddings.numpy().astype("float64").T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.shape == (2, 3, 10)
    with pytest.raises(
        ValueError, match="embedding_dim=4.*shape \\(2, 3, 5\\)"
    ):
        layer.attend(np.zeros((2, 3, 5), "float32"))


BAD_IDS = np.array([[1, 10, -3]], "int32")
# Eager: "... id: -3, largest: 10."; graph: "... id:] [-3] [largest:] [10]".
MESSAGE = (
    r"outside \[0, vocabulary_size=10\).*offending id:\W+-3\W+largest:\W+10"
)


def test_out_of_range_ids_raise_in_eager():
    with pytest.raises(ValueError, match=MESSAGE):
        TokenEmbedding(10, 4)(BAD_IDS)


def test_out_of_range_ids_raise_in_tf_function_and_tf_data():
    layer = TokenEmbedding(10, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match=MESSAGE):
        tf.function(layer)(tf.constant(BAD_IDS))
    ds = tf.data.Dataset.from_tensors(BAD_IDS).map(layer)
    with pytest.raises(tf.errors.InvalidArgumentError, match=MESSAGE):
        list(ds)


def test_out_of_range_ids_under_xla_are_nan_not_clamped():
    layer = TokenEmbedding(10, 4)
    got = tf.function(layer, jit_compile=True)(tf.constant(BAD_IDS)).numpy()
    np.testing.assert_allclose(got[0, 0], layer(BAD_IDS[:, :1]).numpy()[0, 0])
    assert np.isnan(got[0, 1:]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "bool"])
def test_float_ids_are_a_type_error(dtype):
    with pytest.raises(
        TypeError, match=f"integer `token_ids`.*dtype {dtype[:4]}"
    ):
        TokenEmbedding(10, 4)(IDS.astype(dtype))


def test_int64_and_uint8_ids_work():
    layer = TokenEmbedding(10, 4)
    np.testing.assert_array_equal(layer(IDS.astype("int64")), layer(IDS))
    np.testing.assert_array_equal(layer(IDS.astype("uint8")), layer(IDS))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"vocabulary_size": 0, "embedding_dim": 4}, "vocabulary_size=0"),
        ({"vocabulary_size": 10, "embedding_dim": -1}, "embedding_dim=-1"),
        (
            {"vocabulary_size": 10, "embedding_dim": 4, "padding_id": 10},
            "padding_id=10",
        ),
        (
            {"vocabulary_size": 10, "embedding_dim": 4, "padding_id": -1},
            "padding_id=-1",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TokenEmbedding(**kwargs)


def test_numpy_int_arguments_accepted():
    layer = TokenEmbedding(np.int64(10), np.int32(4))
    assert layer.get_config()["vocabulary_size"] == 10


# 64-bit ids are checked in their own dtype, before any cast: a cast to
# int32 first turned 2**32 + 5 into the valid id 5 (row 5, silently).
WIDE_IDS = [
    ("int64", 2**32 + 5),
    ("int64", -(2**32) + 5),
    ("uint64", 2**32 + 5),
    ("uint64", 2**64 - 1),
    ("uint32", 2**31 + 5),
]


@pytest.mark.parametrize("dtype, value", WIDE_IDS)
def test_wide_ids_are_errors_in_every_mode_never_wrapped(dtype, value):
    layer = TokenEmbedding(10, 4)
    ids = tf.constant([[1, value]], dtype)
    message = f"outside \\[0, vocabulary_size=10\\).*offending id:\\W+{value}"
    with pytest.raises(ValueError, match=message):
        layer(ids)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.function(layer)(ids)
    ds = tf.data.Dataset.from_tensors(ids).map(layer)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        list(ds)
    got = tf.function(layer, jit_compile=True)(ids).numpy()
    np.testing.assert_allclose(got[0, 0], layer(ids[:, :1]).numpy()[0, 0])
    assert np.isnan(got[0, 1]).all()


def test_wide_ids_in_range_give_the_same_rows():
    layer = TokenEmbedding(10, 4)
    want = layer(IDS).numpy()
    for dtype in ("int64", "uint32", "uint64", "int16"):
        np.testing.assert_array_equal(layer(IDS.astype(dtype)).numpy(), want)
        got = tf.function(layer, jit_compile=True)(IDS.astype(dtype))
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"vocabulary_size": 2.5, "embedding_dim": 4}, "of type float"),
        ({"vocabulary_size": True, "embedding_dim": 4}, "of type bool"),
        (
            {"vocabulary_size": 10, "embedding_dim": 4, "scale": 1},
            r"`scale` must be True or False.*scale=1 \(of type int\)",
        ),
    ],
)
def test_bad_argument_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        TokenEmbedding(**kwargs)
