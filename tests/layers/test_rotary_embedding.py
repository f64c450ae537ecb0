import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import references
from tests.testing import run_layer_test
from tf_input import RotaryEmbedding

RNG = np.random.default_rng(0)
Q4 = RNG.normal(size=(2, 7, 3, 16)).astype("float32")  # [B, S, H, Dh]
Q3 = RNG.normal(size=(2, 7, 16)).astype("float32")  # [B, S, Dh]

YARN = {
    "rope_type": "yarn",
    "factor": 4.0,
    "original_max_position_embeddings": 64,
}
SCALINGS = {
    "none": None,
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {
        "type": "dynamic",
        "factor": 2.0,
        "original_max_position_embeddings": 4,
    },
    "yarn": YARN,
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    },
}


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("data", [Q4, Q3], ids=["4d", "3d"])
def test_layer_contract(layout, data):
    run_layer_test(RotaryEmbedding, {"layout": layout, "rotary_dim": 8}, data)


def test_layer_contract_with_scaling():
    run_layer_test(RotaryEmbedding, {"scaling": YARN}, Q4)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 8])
@pytest.mark.parametrize("scaling", list(SCALINGS), ids=list(SCALINGS))
def test_matches_float64_reference(layout, rotary_dim, scaling):
    config = SCALINGS[scaling]
    layer = RotaryEmbedding(
        max_wavelength=100.0,
        layout=layout,
        rotary_dim=rotary_dim,
        scaling=config,
    )
    for x in (Q4, Q3):
        got = layer(x, start_index=3).numpy()
        positions = np.arange(3, 10)
        w, attention = references.rope_frequencies(
            rotary_dim or 16, 100.0, config, length=10
        )
        want = references.rope(x, positions, w, attention, layout, rotary_dim)
        np.testing.assert_allclose(got, want, atol=2e-6)
        if rotary_dim:  # the other features pass through untouched
            np.testing.assert_array_equal(got[..., 8:], x[..., 8:])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_explicit_positions(layout):
    layer = RotaryEmbedding(layout=layout)
    packed = np.array([[0, 1, 2, 0, 1, 2, 3], [5, 6, 7, 8, 9, 10, 11]])
    w, _ = references.rope_frequencies(16)
    got = layer(Q4, positions=packed).numpy()
    np.testing.assert_allclose(
        got, references.rope(Q4, packed, w, layout=layout), atol=2e-6
    )
    got = layer(Q3, positions=packed[0], start_index=100).numpy()
    want = references.rope(Q3, packed[0] + 100, w, layout=layout)
    np.testing.assert_allclose(got, want, atol=2e-6)


@pytest.mark.parametrize("scaling", ["none", "linear", "yarn", "llama3"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_score_depends_only_on_relative_distance(scaling, layout):
    layer = RotaryEmbedding(layout=layout, scaling=SCALINGS[scaling])
    q, k = RNG.normal(size=(2, 16)).astype("float32")

    def score(m, n):
        rq = layer(np.tile(q, (1, 1, 1)), start_index=m).numpy()[0, 0]
        rk = layer(np.tile(k, (1, 1, 1)), start_index=n).numpy()[0, 0]
        return float(rq @ rk)

    for offset in (0, 3, 50):
        scores = [score(m + offset, m) for m in (0, 7, 1000, 100_000)]
        np.testing.assert_allclose(scores, scores[0], atol=1e-4)


@pytest.mark.parametrize("scaling", ["none", "linear", "yarn", "llama3"])
def test_whole_sequence_equals_token_by_token(scaling):
    layer = RotaryEmbedding(scaling=SCALINGS[scaling])
    whole = layer(Q4).numpy()
    steps = [layer(Q4[:, i : i + 1], start_index=i).numpy() for i in range(7)]
    np.testing.assert_allclose(np.concatenate(steps, 1), whole, atol=1e-6)


def test_accurate_far_out_in_float32():
    # Max abs error <= 1e-4 against float64 at positions up to 131,072
    # (measured here: ~3e-7; naive float32 angles: ~1e-2).
    positions = np.arange(131_072 - 64, 131_073)
    x = np.ones((1, len(positions), 128), "float32")
    layer = RotaryEmbedding(max_wavelength=10_000.0)
    got = layer(x, positions=positions).numpy()
    w, _ = references.rope_frequencies(128, 10_000.0)
    error = np.abs(got - references.rope(x, positions, w)).max()
    assert error <= 1e-4, error


@pytest.mark.parametrize(
    "policy, atol", [("mixed_bfloat16", 4e-2), ("mixed_float16", 5e-3)]
)
def test_mixed_precision_values_far_out(policy, atol):
    # The rotation runs in the compute dtype, so the error is its rounding of
    # values of size ~|x| (bf16: 8 bits, fp16: 11 bits), not angle noise.
    positions = np.arange(60_000, 60_016)
    x = RNG.uniform(-1, 1, size=(1, 16, 2, 64)).astype("float32")
    got = RotaryEmbedding(dtype=policy)(x, positions=positions)
    assert got.dtype == keras.DTypePolicy(policy).compute_dtype
    w, _ = references.rope_frequencies(64)
    want = references.rope(x, positions, w)
    assert np.abs(got.numpy().astype("float64") - want).max() < atol


def test_other_axes():
    layer = RotaryEmbedding()
    want = layer(Q4).numpy()
    heads_first = np.transpose(Q4, (0, 2, 1, 3))  # [B, H, S, Dh]
    got = RotaryEmbedding(sequence_axis=2)(heads_first).numpy()
    np.testing.assert_allclose(np.transpose(got, (0, 2, 1, 3)), want, atol=1e-6)
    features_first = np.transpose(Q4, (0, 3, 1, 2))  # [B, Dh, S, H]
    got = RotaryEmbedding(sequence_axis=2, feature_axis=1)(
        features_first
    ).numpy()
    np.testing.assert_allclose(np.transpose(got, (0, 2, 3, 1)), want, atol=1e-6)


def test_legacy_type_key_is_normalised_in_config():
    layer = RotaryEmbedding(scaling={"type": "linear", "factor": 2.0})
    assert layer.get_config()["scaling"] == {
        "rope_type": "linear",
        "factor": 2.0,
    }
    assert RotaryEmbedding(scaling={"rope_type": "default"}).scaling is None


# --- Parity with Hugging Face transformers ---------------------------------
# Goldens made by tests/layers/make_hf_rope_goldens.py with transformers'
# own RoPE init functions and rotary modules (versions inside the file).
GOLDENS = json.loads(
    (
        pathlib.Path(__file__).parent / "data" / "hf_rope_goldens.json"
    ).read_text()
)["cases"]


@pytest.mark.parametrize("case", GOLDENS, ids=[c["name"] for c in GOLDENS])
def test_matches_transformers(case):
    args = dict(case["layer_args"])
    seq_len = args.pop("seq_len", None)
    scaling = args["scaling"]
    if scaling and "dynamic" in (scaling.get("type"), scaling.get("rope_type")):
        # transformers reads the original length from the model config.
        scaling = dict(scaling)
        scaling["original_max_position_embeddings"] = case["hf_config"][
            "max_position_embeddings"
        ]
        args["scaling"] = scaling
    rotary_dim = args["rotary_dim"]
    layer = RotaryEmbedding(**args)
    positions = np.array(case["positions"])
    if seq_len is not None:
        assert positions.max() + 1 == seq_len
    half = rotary_dim // 2
    # A query (1, 0) in every feature pair comes out as (cos, sin) * factor.
    x = np.zeros((1, len(positions), rotary_dim), "float32")
    x[..., :half] = 1.0
    out = layer(x, positions=positions).numpy()[0]

    got = layer.inverse_frequencies(positions).numpy()
    # transformers computes base ** exps in float32 (rtol ~3e-7 to exact);
    # dynamic NTK also raises the base to a power in float32.
    rtol = 2e-5 if seq_len else 1e-6
    np.testing.assert_allclose(got, case["inv_freq"], rtol=rtol)
    assert layer.attention_factor == pytest.approx(
        case["attention_factor"], rel=1e-12
    )
    # transformers' float32 angles are off by up to 4.5e-4 at 4095 and 1.1e-3
    # at 16383 (ours are exact to 1e-7), which bounds this tolerance.
    cos, sin = np.array(case["cos"])[:, :half], np.array(case["sin"])[:, :half]
    np.testing.assert_allclose(out[:, :half], cos, atol=3e-3)
    np.testing.assert_allclose(out[:, half:], sin, atol=3e-3)
    # Small positions, where float32 is exact enough for both, agree closely.
    np.testing.assert_allclose(out[:3, :half], cos[:3], atol=2e-6)
    np.testing.assert_allclose(out[:3, half:], sin[:3], atol=2e-6)


# --- Errors -----------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rotary_dim": 7}, "rotary_dim` must be even.*rotary_dim=7"),
        ({"rotary_dim": 0}, "rotary_dim=0"),
        ({"layout": "pairs"}, r"one of \('half', 'interleaved'\)"),
        ({"max_wavelength": -1}, "max_wavelength=-1"),
        (
            {"scaling": {"rope_type": "ntk", "factor": 2.0}},
            r"one of \('linear', 'dynamic', 'yarn', 'llama3'\).*'ntk'",
        ),
        (
            {"scaling": {"type": "linear", "factr": 2.0}},
            r"Missing: \['factor'\]. Unknown: \['factr'\]",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": 2.0, "beta_fast": 3}},
            r"Unknown: \['beta_fast'\]",
        ),
        (
            {"scaling": {"rope_type": "dynamic", "factor": 2.0}},
            r"Missing: \['original_max_position_embeddings'\]",
        ),
        (
            {"scaling": {"rope_type": "yarn", "type": "linear", "factor": 2.0}},
            "disagree",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": -2.0}},
            "factor'\\]` must be a positive number",
        ),
        (
            {"scaling": {**SCALINGS["llama3"], "high_freq_factor": 0.5}},
            "high_freq_factor",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RotaryEmbedding(**kwargs)


@pytest.mark.parametrize(
    "kwargs, shape",
    [
        ({}, (2, 5, 3, 15)),
        ({}, (2, 5, None)),
        ({"rotary_dim": 32}, (2, 5, 16)),
        ({"sequence_axis": 3}, (2, 5, 16)),
        ({"sequence_axis": -1}, (2, 5, 16)),
    ],
)
def test_bad_shapes_are_build_errors(kwargs, shape):
    with pytest.raises(ValueError, match="Received: input_shape"):
        RotaryEmbedding(**kwargs).build(shape)


def test_inverse_frequencies_needs_build():
    with pytest.raises(ValueError, match="not built yet"):
        RotaryEmbedding().inverse_frequencies()


def test_bad_positions():
    with pytest.raises(TypeError, match="integer `positions`"):
        RotaryEmbedding()(Q3, positions=np.zeros(7, "float32"))
    with pytest.raises(ValueError, match=r"seq_len=7.*shape \(2, 3\)"):
        RotaryEmbedding()(Q3, positions=np.zeros((2, 3), "int32"))


def test_xla_with_dynamic_scaling_and_tensor_start_index():
    layer = RotaryEmbedding(scaling=SCALINGS["dynamic"])
    fn = tf.function(lambda x, s: layer(x, start_index=s), jit_compile=True)
    # Dynamic frequencies are float32 and XLA's pow may differ from eager's
    # by an ulp (6e-8 relative): at positions ~26 that is ~2e-6.
    np.testing.assert_allclose(
        fn(Q4, tf.constant(20)), layer(Q4, start_index=20), atol=1e-5
    )


@pytest.mark.parametrize("scaling", list(SCALINGS), ids=list(SCALINGS))
def test_no_float64_in_the_compiled_program(scaling):
    # TPUs run no float64; the exact angle reduction is float32 only.
    layer = RotaryEmbedding(scaling=SCALINGS[scaling])
    fn = tf.function(lambda x: layer(x, start_index=5), jit_compile=True)
    hlo = fn.experimental_get_compiler_ir(tf.constant(Q4))(stage="hlo")
    assert "f64" not in hlo


def test_angles_exact_for_any_int32_position():
    positions = np.array([0, 1, 2**20 + 3, 2**24 - 1, 2**28 + 12345, 2**31 - 1])
    x = np.ones((1, len(positions), 64), "float32")
    got = RotaryEmbedding()(x, positions=positions).numpy()
    w, _ = references.rope_frequencies(64)
    # float64 reference angles are exact to ~1e-6 rad even at 2^31.
    np.testing.assert_allclose(got, references.rope(x, positions, w), atol=1e-5)


def test_positions_past_int32_are_errors_never_wrapped():
    # start_index=2147483646 over 3 positions: the third is 2**31, which a
    # cast to int32 rotated as position -2**31.
    layer = RotaryEmbedding()
    q = Q4[:, :3]
    for start in (2147483646, 4294967303):
        with pytest.raises(ValueError, match="outside the int32 range"):
            layer(q, start_index=start)
    start = tf.constant(2147483646, tf.int64)

    def step(q, start):
        return layer(q, start_index=start)

    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"never wrapped.*offending position:\W+2147483648",
    ):
        tf.function(step)(q, start)
    ds = tf.data.Dataset.from_tensors((q, start)).map(step)
    with pytest.raises(tf.errors.InvalidArgumentError, match="2147483648"):
        list(ds)
    got = tf.function(step, jit_compile=True)(q, start).numpy()
    w, _ = references.rope_frequencies(16)
    positions = np.array([2147483646, 2147483647])
    want = references.rope(Q4[:, :2], positions, w)
    np.testing.assert_allclose(got[:, :2], want, atol=1e-5)
    assert np.isnan(got[:, 2]).all() and not np.isnan(got[:, :2]).any()
    # An int32 tensor start_index cannot overflow the sum either.
    with pytest.raises(tf.errors.InvalidArgumentError, match="2147483648"):
        tf.function(step)(q, tf.constant(2147483646))


def test_int64_positions_and_start_index_in_range_work():
    layer = RotaryEmbedding()
    positions = np.array([0, 5, 2**31 - 1])
    want = layer(Q4[:, :3], positions=positions).numpy()
    got = layer(Q4[:, :3], positions=positions.astype("int64"))
    np.testing.assert_array_equal(got.numpy(), want)
    got = layer(Q4[:, :3], start_index=tf.constant(4, tf.uint64))
    np.testing.assert_array_equal(
        got.numpy(), layer(Q4[:, :3], start_index=4).numpy()
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scaling": "linear"}, "must be None or a dict.*of type str"),
        ({"sequence_axis": 1.0}, r"`sequence_axis` must be an int.*=1.0"),
        (
            {"scaling": {**YARN, "truncate": "yes"}},
            r"`scaling\['truncate'\]` must be True or False",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": "2"}},
            r"`scaling\['factor'\]` must be a positive number.*of type str",
        ),
    ],
)
def test_bad_argument_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        RotaryEmbedding(**kwargs)
