import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import references
from tests.testing import run_layer_test
from tf_input import SinusoidalPE
from tf_input import TokenEmbedding
from tf_input import sinusoidal_encoding


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_layer_contract(layout):
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    run_layer_test(SinusoidalPE, {"layout": layout}, x)


def test_tutorial_table():
    # The table drawn in the tutorials, D = 8, positions 0-3, 4 decimals.
    want = [
        [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
        [0.8415, 0.5403, 0.0998, 0.9950, 0.0100, 1.0, 0.0010, 1.0],
        [0.9093, -0.4161, 0.1987, 0.9801, 0.0200, 0.9998, 0.0020, 1.0],
        [0.1411, -0.9900, 0.2955, 0.9553, 0.0300, 0.9996, 0.0030, 1.0],
    ]
    got = SinusoidalPE()(np.zeros((1, 4, 8), "float32"))[0].numpy()
    np.testing.assert_allclose(got, want, atol=5e-5)


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("max_wavelength", [10000.0, 500.0])
def test_matches_float64_reference(layout, max_wavelength):
    x = np.random.default_rng(1).normal(size=(3, 300, 64)).astype("float32")
    layer = SinusoidalPE(max_wavelength=max_wavelength, layout=layout)
    want = x + references.sinusoid(np.arange(300), 64, max_wavelength, layout)
    np.testing.assert_allclose(layer(x).numpy(), want, atol=2e-6)


def test_float32_is_accurate_far_out():
    # Exact reduction mod 2*pi: within 2e-6 even at position 10^6 (the
    # float32 angle in [0, 2*pi) alone carries 3.7e-7, plus a few roundings;
    # naive float32 angles are ~3e-2 off there).
    positions = np.arange(1_000_000, 1_000_064)
    got = sinusoidal_encoding(tf.constant(positions), 64).numpy()
    want = references.sinusoid(positions, 64)
    np.testing.assert_allclose(got, want, atol=2e-6)


@pytest.mark.parametrize(
    "policy", ["float32", "mixed_float16", "mixed_bfloat16"]
)
def test_mixed_precision_values_at_long_positions(policy):
    layer = SinusoidalPE(dtype=policy)
    x = np.zeros((1, 9, 64), "float32")
    got = layer(x, start_index=60_000)
    assert got.dtype == keras.DTypePolicy(policy).compute_dtype
    want = references.sinusoid(np.arange(60_000, 60_009), 64)
    error = np.abs(got.numpy().astype("float64") - want).max()
    # bfloat16 keeps 8 bits: rounding [-1, 1] costs up to 2^-8 = 3.9e-3.
    assert error < 1e-2, error
    # And over a whole long sequence, as in training.
    long = layer(np.zeros((1, 4096, 64), "float32")).numpy().astype("float64")
    assert (
        np.abs(long[0] - references.sinusoid(np.arange(4096), 64)).max() < 1e-2
    )


def test_explicit_positions_and_start_index():
    x = np.zeros((2, 4, 8), "float32")
    layer = SinusoidalPE()
    packed = np.array([[0, 1, 0, 1], [0, 1, 2, 3]], "int32")
    got = layer(x, positions=packed).numpy()
    np.testing.assert_allclose(got, references.sinusoid(packed, 8), atol=2e-6)
    got = layer(x, positions=np.array([3, 2, 1, 0]), start_index=10).numpy()
    want = references.sinusoid(np.array([13, 12, 11, 10]), 8)
    np.testing.assert_allclose(got[1], want, atol=2e-6)
    got = layer(x, start_index=tf.constant(7)).numpy()
    np.testing.assert_allclose(
        got[0], references.sinusoid(np.arange(7, 11), 8), atol=2e-6
    )


def test_whole_sequence_equals_token_by_token():
    layer = SinusoidalPE()
    x = np.random.default_rng(2).normal(size=(2, 6, 8)).astype("float32")
    whole = layer(x).numpy()
    steps = [layer(x[:, i : i + 1], start_index=i).numpy() for i in range(6)]
    np.testing.assert_allclose(np.concatenate(steps, 1), whole, atol=1e-6)


def test_extra_leading_axes():
    x = np.zeros((2, 3, 5, 8), "float32")
    got = SinusoidalPE()(x).numpy()
    np.testing.assert_allclose(
        got[1, 2], references.sinusoid(np.arange(5), 8), atol=2e-6
    )
    packed = np.tile(np.arange(5), (2, 1))
    got = SinusoidalPE()(x, positions=packed).numpy()
    np.testing.assert_allclose(
        got[1, 2], references.sinusoid(np.arange(5), 8), atol=2e-6
    )


def test_any_length_without_table():
    got = SinusoidalPE()(np.zeros((1, 20_000, 4), "float32"))
    assert got.shape == (1, 20_000, 4)


def test_mask_passes_through():
    inputs = keras.Input((None,), dtype="int32")
    x = SinusoidalPE()(TokenEmbedding(10, 8)(inputs))
    assert x._keras_mask is not None
    ids = np.array([[3, 4, 0]])
    layer = SinusoidalPE()
    embedded = TokenEmbedding(10, 8)(ids)
    np.testing.assert_array_equal(
        layer.compute_mask(embedded, ids != 0), ids != 0
    )


def test_encoding_alone():
    pe = sinusoidal_encoding(50, 16, layout="concat").numpy()
    np.testing.assert_allclose(
        pe, references.sinusoid(np.arange(50), 16, layout="concat"), atol=2e-6
    )


@pytest.mark.parametrize("shape", [(2, 5, 7), (2, 5, None), (5,)])
def test_odd_or_unknown_feature_size_is_a_build_error(shape):
    with pytest.raises(
        ValueError, match="even, static feature_dim.*Received: input_shape"
    ):
        SinusoidalPE().build(shape)
    with pytest.raises(
        ValueError, match="even feature dimension.*embedding_dim=7"
    ):
        sinusoidal_encoding(4, 7)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_wavelength": 0.5}, "max_wavelength=0.5"),
        (
            {"layout": "pairs"},
            r"one of \('interleaved', 'concat'\).*layout='pairs'",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SinusoidalPE(**kwargs)


def test_bad_positions():
    x = np.zeros((2, 4, 8), "float32")
    with pytest.raises(TypeError, match="integer `positions`.*float32"):
        SinusoidalPE()(x, positions=np.zeros(4, "float32"))
    with pytest.raises(ValueError, match=r"seq_len=4.*shape \(5,\)"):
        SinusoidalPE()(x, positions=np.arange(5))
    with pytest.raises(ValueError, match="start_index` must be a scalar"):
        SinusoidalPE()(x, start_index=np.array([1, 2]))


def test_no_float64_in_the_compiled_program():
    layer = SinusoidalPE()
    fn = tf.function(lambda x: layer(x, start_index=5), jit_compile=True)
    hlo = fn.experimental_get_compiler_ir(tf.zeros((2, 7, 16)))(stage="hlo")
    assert "f64" not in hlo


def test_positions_past_int32_are_errors_never_wrapped():
    x = np.zeros((1, 3, 8), "float32")
    positions = tf.constant([0, 1, 2**32 + 1], tf.int64)
    with pytest.raises(ValueError, match=r"int32 range.*4294967297"):
        SinusoidalPE()(x, positions=positions)
    with pytest.raises(ValueError, match=r"int32 range.*4294967297"):
        sinusoidal_encoding(positions, 8)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"int32 range.*4294967297"
    ):
        tf.function(lambda p: sinusoidal_encoding(p, 8))(positions)
    got = tf.function(lambda p: sinusoidal_encoding(p, 8), jit_compile=True)(
        positions
    ).numpy()
    np.testing.assert_allclose(got[:2], references.sinusoid([0, 1], 8), 1e-6)
    assert np.isnan(got[2]).all()
    with pytest.raises(ValueError, match="2147483648"):
        SinusoidalPE()(x, start_index=2**31 - 2)


def test_bad_argument_types():
    with pytest.raises(TypeError, match="max_wavelength='big' .of type str"):
        SinusoidalPE(max_wavelength="big")
