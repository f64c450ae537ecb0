"""tf_input.viz: each figure's data against float64 NumPy, PNGs, errors."""

import math
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure

import tf_input
from tests import references
from tests.pictures import bar_heights
from tests.pictures import pipeline_efficiencies
from tests.shared_data import requires_shared_data
from tf_input import viz

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    # A blank 100-dpi figure is ~5 kB; drawn ones are well above 10 kB.
    assert len(data) > 10_000


def image_of(figure, axes=0):
    return np.asarray(figure.axes[axes].images[0].get_array(), np.float64)


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r'pip install "tf_input\[viz\]"'):
        viz.plot_sinusoidal_encoding(4, 4)
    # The numbers still come without matplotlib.
    assert viz.local_mean([1.0, 3.0], ratio=2.0).tolist() == [1.0, 2.0]
    assert viz.integer_bins([9, 9], max_length=16).tolist() == [8.5, 9.5]


# --- Sinusoidal heatmap -------------------------------------------------------


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_sinusoidal_heatmap_matches_float64_formula(layout):
    figure = viz.plot_sinusoidal_encoding(
        96, 32, max_wavelength=500.0, layout=layout
    )
    assert isinstance(figure, Figure)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "feature (embedding dimension)"
    assert axes.get_ylabel() == "position"
    assert layout in figure.get_suptitle()
    want = references.sinusoid(np.arange(96), 32, 500.0, layout)
    # float32 sin/cos of angles < 96 rad: measured error 1e-7.
    np.testing.assert_allclose(image_of(figure), want, rtol=0, atol=1e-6)
    # heatmap, sin/cos strip, line plot, colour bar
    assert len(figure.axes) == 4
    # The strip marks each column: 0 = sin, 1 = cos.
    strip = image_of(figure, 1)[0]
    if layout == "interleaved":
        np.testing.assert_array_equal(strip, [0, 1] * 16)
    else:
        np.testing.assert_array_equal(strip, [0] * 16 + [1] * 16)
    # The lines are sine columns of the encoding, against position.
    lines = figure.axes[2].get_lines()
    assert 2 <= len(lines) <= 4
    for line in lines:
        column = int(line.get_label().split(":")[0].split()[1])
        is_sin = column % 2 == 0 if layout == "interleaved" else column < 16
        assert is_sin and ": sin, wavelength" in line.get_label()
        np.testing.assert_allclose(line.get_ydata(), want[:, column], atol=1e-6)
        np.testing.assert_array_equal(line.get_xdata(), np.arange(96))


def test_sinusoid_columns_and_small_tables_are_labelled():
    assert viz.sinusoid_columns(6) == (
        ["sin", "cos", "sin", "cos", "sin", "cos"],
        [0, 0, 1, 1, 2, 2],
    )
    figure = viz.plot_sinusoidal_encoding(8, 8)
    texts = [t.get_text() for t in figure.axes[1].texts]
    assert texts == ["sin0", "cos0", "sin1", "cos1"] + ["sin2", "cos2"] + [
        "sin3",
        "cos3",
    ]
    # Without lines: heatmap, strip and colour bar.
    assert len(viz.plot_sinusoidal_encoding(8, 8, num_lines=0).axes) == 3
    with pytest.raises(ValueError, match=r"`num_lines` must be .*=-1"):
        viz.plot_sinusoidal_encoding(8, 8, num_lines=-1)
    with pytest.raises(TypeError, match=r"`num_lines` must be .*of type str"):
        viz.plot_sinusoidal_encoding(8, 8, num_lines="4")


def test_sinusoidal_heatmap_saves_png(tmp_path):
    path = tmp_path / "nested" / "pe.png"
    figure = viz.plot_sinusoidal_encoding(64, 16, path=path)
    assert isinstance(figure, Figure)
    assert_png(path)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"length": 0}, r"`length` must be a positive integer.*length=0"),
        ({"embedding_dim": 7}, r"even feature dimension.*embedding_dim=7"),
        ({"layout": "blocks"}, r"`layout` must be one of.*layout='blocks'"),
    ],
)
def test_sinusoidal_heatmap_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        viz.plot_sinusoidal_encoding(**{"length": 8, **kwargs})


# --- Learned PE similarity ----------------------------------------------------


def numpy_cosine(table):
    table = np.asarray(table, np.float64)
    out = np.zeros((len(table), len(table)))
    for i, a in enumerate(table):
        for j, b in enumerate(table):
            out[i, j] = a @ b / math.sqrt((a @ a) * (b @ b))
    return out


def test_similarity_of_learned_pe_matches_numpy():
    layer = tf_input.LearnedPE(max_length=20)
    layer(np.zeros((1, 20, 12), "float32"))
    figure = viz.plot_position_similarity(layer)
    assert isinstance(figure, Figure)
    axes = figure.axes[0]
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("position", "position")
    got = image_of(figure)
    assert got.shape == (20, 20)
    np.testing.assert_allclose(got, got.T, rtol=0, atol=0)
    np.testing.assert_allclose(np.diag(got), np.ones(20), atol=1e-12)
    want = numpy_cosine(layer.position_embeddings.numpy())
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_similarity_of_array_with_max_positions(tmp_path):
    table = np.random.default_rng(0).normal(size=(30, 6))
    path = tmp_path / "similarity.png"
    figure = viz.plot_position_similarity(table, max_positions=10, path=path)
    np.testing.assert_allclose(
        image_of(figure), numpy_cosine(table[:10]), atol=1e-12
    )
    assert_png(path)


def test_similarity_labels_and_groups():
    table = np.random.default_rng(1).normal(size=(9, 8))
    parts = ["BOS", "sign", "tens", "units", "op", "sign", "tens", "units"]
    figure = viz.plot_position_similarity(
        table,
        labels=parts + ["EOS"],
        groups={"first operand": (2, 3), "second operand": (6, 7)},
    )
    axes = figure.axes[0]
    ticks = [t.get_text() for t in axes.get_yticklabels()]
    assert ticks[:3] == ["0 BOS", "1 sign", "2 tens"] and ticks[-1] == "8 EOS"
    boxes = [(p.get_x(), p.get_y(), p.get_width()) for p in axes.patches]
    assert boxes == [(1.5, 1.5, 2), (5.5, 5.5, 2)]
    assert [t.get_text() for t in axes.texts] == [
        "first operand",
        "second operand",
    ]
    with pytest.raises(ValueError, match=r"`labels` must be .* 9 strings"):
        viz.plot_position_similarity(table, labels=["a", "b"])
    with pytest.raises(ValueError, match=r"`groups\['x'\]` must be"):
        viz.plot_position_similarity(table, groups={"x": (3, 12)})
    with pytest.raises(TypeError, match=r"`groups` must be None or a dict"):
        viz.plot_position_similarity(table, groups=[(1, 2)])
    with pytest.raises(TypeError, match=r"`labels` must be .*of type int"):
        viz.plot_position_similarity(table, labels=9)


def test_cosine_similarity_of_zero_row_is_zero():
    got = viz.cosine_similarity([[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_array_equal(got, [[0.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize(
    "table, error",
    [
        (np.zeros((4,)), ValueError),
        (np.zeros((2, 3, 4)), ValueError),
        (np.zeros((0, 4)), ValueError),
        ([["a", "b"]], TypeError),
    ],
)
def test_similarity_rejects_wrong_rank_or_type(table, error):
    with pytest.raises(error, match=r"`table` must be .*Received: table="):
        viz.plot_position_similarity(table)


def test_similarity_rejects_unbuilt_layer_and_nan():
    with pytest.raises(ValueError, match="not built yet"):
        viz.plot_position_similarity(tf_input.LearnedPE(max_length=4))
    with pytest.raises(ValueError, match="finite"):
        viz.cosine_similarity([[1.0, float("nan")]])


# --- RoPE scores --------------------------------------------------------------


def reference_scores(distances, head_dim, scaling=None):
    """<R(m) 1, R(0) 1> / D, one rotation at a time (tests/references)."""
    length = int(np.max(distances)) + 1
    frequencies, attention = references.rope_frequencies(
        head_dim, 10000.0, scaling, length=length
    )
    ones = np.ones((1, len(distances), head_dim))
    query = references.rope(ones, distances, frequencies, attention)[0]
    key = references.rope(ones[:, :1], [0], frequencies, attention)[0, 0]
    return query @ key / head_dim


@pytest.mark.parametrize("rope_type", viz.ROPE_SCALINGS)
def test_rope_scores_match_float64_reference(rope_type):
    scaling = viz.rope_scaling_preset(
        rope_type, factor=4.0, original_max_position_embeddings=64
    )
    distances = np.array([0, 1, 2, 5, 17, 63, 64, 200, 511, 4095, 70_000])
    got = viz.rope_scores(distances, 32, scaling=scaling)
    # float32 rotations: measured error < 2e-6 at distance 70,000. Dynamic
    # NTK computes its frequencies in float32 in the graph (as transformers
    # does): relative error ~6e-8 times angles up to 7e4 rad gives up to
    # ~4e-3 rad per pair, measured 1.8e-4 on the score.
    atol = 1e-3 if rope_type == "dynamic" else 1e-5
    np.testing.assert_allclose(
        got, reference_scores(distances, 32, scaling), rtol=0, atol=atol
    )


def test_rope_score_at_distance_zero():
    for rope_type in ("none", "linear", "dynamic", "llama3"):
        scaling = viz.rope_scaling_preset(rope_type)
        score = viz.rope_scores([0], 8, scaling=scaling)[0]
        assert score == pytest.approx(1.0, abs=1e-6)
    # YaRN's attention factor multiplies query and key.
    yarn = viz.rope_scores([0], 8, scaling=viz.rope_scaling_preset("yarn"))
    assert yarn[0] == pytest.approx((0.1 * math.log(4.0) + 1) ** 2, abs=1e-6)


def test_rope_score_is_mean_cosine_in_closed_form():
    distances = np.arange(50)
    frequencies = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    want = np.cos(distances[:, None] * frequencies).mean(axis=1)
    np.testing.assert_allclose(viz.rope_scores(distances, 16), want, atol=1e-6)


def test_rope_plot_has_one_curve_per_scaling(tmp_path):
    path = tmp_path / "rope.png"
    figure = viz.plot_rope_scores(
        32,
        300,
        scalings=["none", "linear", "dynamic", "yarn", LLAMA3],
        original_max_position_embeddings=64,
        path=path,
    )
    assert isinstance(figure, Figure)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "relative distance m - n"
    assert axes.get_ylabel().startswith("score")
    assert axes.get_xscale() == "symlog"  # log distance by default
    lines = {line.get_label(): line for line in axes.get_lines()}
    names = [
        "none",
        "linear (factor 4)",
        "dynamic (factor 4)",
        "yarn (factor 4)",
        "llama3 (factor 8)",
    ]
    shown = [name for name in lines if not name.startswith("_")]
    assert shown == names + ["original context (64)"]
    raw = lines["_none (raw)"]
    np.testing.assert_array_equal(raw.get_xdata(), np.arange(301))
    assert raw.get_ydata()[0] == pytest.approx(1.0, abs=1e-6)
    want = reference_scores(np.arange(301), 32)
    np.testing.assert_allclose(raw.get_ydata(), want, atol=1e-5)
    # The bold line is the local mean of the raw scores.
    np.testing.assert_allclose(
        lines["none"].get_ydata(), local_mean_reference(want), atol=1e-5
    )
    np.testing.assert_allclose(
        lines["_llama3 (factor 8) (raw)"].get_ydata(),
        reference_scores(np.arange(301), 32, LLAMA3),
        atol=1e-5,
    )
    # The second panel: each scaling's slow-down of each of the 16 pairs.
    pairs = {line.get_label(): line for line in figure.axes[1].get_lines()}
    assert list(pairs) == names + ["_original context"]
    plain = references.rope_frequencies(32, 10000.0, None)[0]
    np.testing.assert_allclose(
        pairs["none"].get_xdata(), 2 * np.pi / plain, rtol=1e-12
    )
    np.testing.assert_allclose(pairs["none"].get_ydata(), np.ones(16))
    np.testing.assert_allclose(pairs["linear (factor 4)"].get_ydata(), 4.0)
    llama = references.rope_frequencies(32, 10000.0, LLAMA3)[0]
    np.testing.assert_allclose(
        pairs["llama3 (factor 8)"].get_ydata(), plain / llama, rtol=1e-6
    )
    assert_png(path)


def local_mean_reference(values, ratio=1.25):
    out = []
    for m in range(len(values)):
        low = math.floor(m / ratio)
        high = min(math.ceil(m * ratio), len(values) - 1)
        out.append(np.mean(values[low : high + 1]))
    return np.array(out)


def test_local_mean_matches_a_loop():
    values = np.random.default_rng(0).normal(size=500)
    for ratio in (1.1, 1.25, 2.0):
        np.testing.assert_allclose(
            viz.local_mean(values, ratio),
            local_mean_reference(values, ratio),
            atol=1e-12,
        )
    with pytest.raises(ValueError, match=r"`ratio` must be greater than 1"):
        viz.local_mean(values, 1.0)
    with pytest.raises(ValueError, match=r"`values` must be a non-empty"):
        viz.local_mean([])


def test_slowdown_factors_of_dynamic_scaling_grow_with_the_context():
    scaling = viz.rope_scaling_preset(
        "dynamic", factor=4.0, original_max_position_embeddings=64
    )
    _, inside = viz.slowdown_factors(16, scaling, length=64)
    np.testing.assert_allclose(inside, 1.0, rtol=1e-6)
    _, outside = viz.slowdown_factors(16, scaling, length=1000)
    frequencies, _ = references.rope_frequencies(
        16, 10000.0, scaling, length=1000
    )
    plain = references.rope_frequencies(16, 10000.0, None)[0]
    np.testing.assert_allclose(outside, plain / frequencies, rtol=1e-5)
    assert outside[0] == pytest.approx(1.0) and np.all(np.diff(outside) > 0)


def test_rope_plot_without_smoothing_or_pairs():
    figure = viz.plot_rope_scores(
        8,
        40,
        scalings=["none"],
        log_distance=False,
        smooth=False,
        show_pairs=False,
        original_max_position_embeddings=64,
    )
    assert len(figure.axes) == 1
    assert figure.axes[0].get_xscale() == "linear"
    [line] = figure.axes[0].get_lines()
    np.testing.assert_allclose(
        line.get_ydata(), reference_scores(np.arange(41), 8), atol=1e-5
    )


def test_rope_scores_in_chunks_equal_one_call(monkeypatch):
    distances = np.array([5, 0, 900, 17, 3000, 64])
    scaling = viz.rope_scaling_preset(
        "dynamic", original_max_position_embeddings=64
    )
    whole = viz.rope_scores(distances, 16, scaling=scaling)
    monkeypatch.setattr(viz.rope, "_SCORE_CHUNK", 4)
    chunked = viz.rope_scores(distances, 16, scaling=scaling)
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-7)
    np.testing.assert_allclose(
        chunked, reference_scores(distances, 16, scaling), atol=1e-4
    )


def test_rope_linear_scaling_stretches_the_curve():
    # Linear interpolation by 4: score at 4m equals unscaled score at m.
    plain = viz.rope_scores(np.arange(100), 16)
    linear = viz.rope_scores(
        np.arange(0, 400, 4),
        16,
        scaling={"rope_type": "linear", "factor": 4.0},
    )
    np.testing.assert_allclose(linear, plain, atol=1e-5)


@pytest.mark.parametrize(
    "head_dim, error",
    [
        (7, ValueError),
        (0, ValueError),
        (-2, ValueError),
        (2.0, TypeError),
        (True, TypeError),
    ],
)
def test_rope_rejects_odd_or_bad_dims(head_dim, error):
    with pytest.raises(
        error,
        match=rf"`head_dim` must be a positive even integer.*"
        rf"Received: head_dim={head_dim!r}",
    ):
        viz.rope_scores([0, 1], head_dim)
    with pytest.raises(error, match="`head_dim` must be"):
        viz.plot_rope_scores(head_dim, 10)


@pytest.mark.parametrize(
    "distances, error",
    [
        ([], ValueError),
        ([[0, 1]], ValueError),
        ([-1, 2], ValueError),
        ([0.5, 1.0], TypeError),
        ("abc", TypeError),
    ],
)
def test_rope_rejects_bad_distances(distances, error):
    with pytest.raises(error, match=r"`distances` must be .*Received"):
        viz.rope_scores(distances, 8)


def test_rope_plot_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"`max_distance` must be .*=-5"):
        viz.plot_rope_scores(8, -5)
    with pytest.raises(ValueError, match=r"`rope_type` must be one of"):
        viz.plot_rope_scores(8, 10, scalings=["ntk"])
    with pytest.raises(ValueError, match=r"`scalings` must name at least"):
        viz.plot_rope_scores(8, 10, scalings=[])
    with pytest.raises(ValueError, match=r"`scaling` of type 'llama3'"):
        viz.plot_rope_scores(8, 10, scalings=[{"rope_type": "llama3"}])
    with pytest.raises(ValueError, match=r"original_max_position_embeddings"):
        viz.plot_rope_scores(8, 10, original_max_position_embeddings=0)


# --- Lengths and padding efficiency -------------------------------------------

# Hand-computed: lengths 1 2 7 8 2 1 (21 tokens), batch_size=2,
# max_length=8, buckets {<=2, <=8}.
# longest: [1,2]->2x2, [7,8]->2x8, [2,1]->2x2 = 24 positions; 21/24.
# max_length: 3 batches x 2 x 8 = 48; 21/48.
# bucket: four rows <=2 -> 2 batches x 2 x 2 = 8; [7,8] -> 16; 21/24.
# pack: rows [8], [7, 1], [2, 2, 1] -> 2 batches (one filled) = 4 x 8; 21/32.
HAND = {
    "longest": 21 / 24,
    "max_length": 21 / 48,
    "bucket": 21 / 24,
    "pack": 21 / 32,
    # 21 tokens joined, rows of 8: 3 rows, in 2 batches of 2.
    "stream": 21 / 32,
}
HAND_LENGTHS = [1, 2, 7, 8, 2, 1]
# Efficiencies given for every mode: the picture runs no pipeline.
GIVEN = {mode: 0.5 for mode in viz.BATCHINGS}


def test_padding_efficiencies_hand_computed_case():
    got = viz.padding_efficiencies(
        HAND_LENGTHS, batch_size=2, max_length=8, bucket_boundaries=[2, 8]
    )
    assert list(got) == list(viz.BATCHINGS)
    assert got == pytest.approx(HAND, abs=1e-15)


def test_padding_efficiencies_truncation_and_empty_examples():
    # 12 cut to 8 except when packing; the 0-length example is skipped.
    got = viz.padding_efficiencies([12, 0, 4], batch_size=2, max_length=8)
    assert got["longest"] == pytest.approx(12 / 16)
    assert got["max_length"] == pytest.approx(12 / 16)
    assert got["pack"] == pytest.approx(16 / 16)
    assert viz.quantile_boundaries([12, 0, 4], 8, 8) == [4, 8]
    # The 4-token row is left over in its bucket and moves up to the 8s.
    assert got["bucket"] == pytest.approx(12 / (2 * 8))


def test_quantile_boundaries_split_examples_evenly():
    lengths = np.arange(1, 101)
    assert viz.quantile_boundaries(lengths, 4, 128) == [25, 50, 75, 128]
    assert viz.quantile_boundaries(lengths, 1, 128) == [128]
    assert viz.quantile_boundaries([5, 5, 5], 8, 5) == [5]


def test_length_plot_data_labels_and_png(tmp_path):
    path = tmp_path / "lengths.png"
    figure = viz.plot_lengths(
        HAND_LENGTHS,
        batch_size=2,
        max_length=8,
        bucket_boundaries=[2, 8],
        bins=8,
        path=path,
    )
    assert isinstance(figure, Figure)
    histogram, bars = figure.axes
    assert histogram.get_xlabel() == "tokens per example"
    assert histogram.get_ylabel() == "examples"
    # One bar per length 1..8, centred on the integer.
    counts = [patch.get_height() for patch in histogram.patches]
    np.testing.assert_array_equal(counts, [2, 2, 0, 0, 0, 0, 1, 1])
    lefts = [patch.get_x() for patch in histogram.patches]
    np.testing.assert_allclose(lefts, np.arange(1, 9) - 0.5)
    assert list(bar_heights(figure)) == list(viz.BATCHINGS)
    assert bar_heights(figure) == pytest.approx(HAND, abs=1e-15)
    notes = [t.get_text() for t in bars.texts]
    assert notes == ["87.5%", "43.8%", "87.5%", "65.6%", "65.6%"]
    legend = [t.get_text() for t in bars.get_legend().get_texts()]
    assert legend == ["make_dataset + stats"]
    # A boundary b holds lengths <= b: its line runs between b and b + 1.
    lines = {line.get_label(): line.get_xdata()[0] for line in histogram.lines}
    assert lines == {"bucket boundaries": 2.5, "max_length": 8.5}
    assert_png(path)


def test_integer_bins():
    np.testing.assert_array_equal(
        viz.integer_bins([9, 9, 9], max_length=16), [8.5, 9.5]
    )
    # Wider bins keep max_length + 0.5 as an edge.
    edges = viz.integer_bins(np.arange(3, 400), max_length=128, bins=50)
    width = edges[1] - edges[0]
    assert width == 8 and float(width).is_integer()
    assert 128.5 in edges and edges[0] <= 2.5 and edges[-1] >= 399.5
    assert len(edges) - 1 <= 51


def test_length_plot_fits_the_data_and_marks_the_truncated_tail():
    # Short data, long max_length: the axis follows the data.
    short = viz.plot_lengths(
        [3, 5, 25, 9], batch_size=2, max_length=128, efficiencies=GIVEN
    )
    low, high = short.axes[0].get_xlim()
    assert low < 3 and 25 < high < 30
    assert "max_length=128: longer than all of them" in (
        short.axes[0].get_xlabel()
    )
    # One length only (the demo's 9 tokens): one visible bar of width 1.
    demo = viz.plot_lengths(
        [9] * 50, batch_size=4, max_length=16, efficiencies=GIVEN
    )
    [bar] = demo.axes[0].patches
    assert (bar.get_x(), bar.get_width(), bar.get_height()) == (8.5, 1, 50)
    low, high = demo.axes[0].get_xlim()
    assert low < 8.5 and high > 9.5
    # A tail over max_length: red bars, counted in the legend, log axis.
    lengths = [4] * 100 + [10, 12, 40]
    figure = viz.plot_lengths(
        lengths, batch_size=4, max_length=8, log=True, efficiencies=GIVEN
    )
    histogram = figure.axes[0]
    assert histogram.get_yscale() == "log"
    red = [p for p in histogram.patches if p.get_facecolor()[0] > 0.8]
    assert sum(p.get_height() for p in red) == 3
    legend = [t.get_text() for t in histogram.get_legend().get_texts()]
    assert "3 over max_length (truncated; pack splits)" in legend
    with pytest.raises(TypeError, match=r"`log` must be True or False"):
        viz.plot_lengths([1], batch_size=1, max_length=2, log="yes")


def test_length_plot_takes_given_efficiencies():
    stats_like = {"padding_efficiency": 0.5, "real_tokens": 10}
    figure = viz.plot_lengths(
        HAND_LENGTHS,
        batch_size=2,
        max_length=8,
        bucket_boundaries=[2, 8],
        efficiencies={"pack": 0.25, "bucket": stats_like},
    )
    heights = list(bar_heights(figure).values())
    assert heights[2:4] == [0.5, 0.25]
    measured = [heights[i] for i in (0, 1, 4)]
    assert measured == pytest.approx(
        [HAND["longest"], HAND["max_length"], HAND["stream"]]
    )
    notes = [t.get_text() for t in figure.axes[1].texts]
    assert notes[2:4] == ["50.0%\n(given)", "25.0%\n(given)"]
    # Given bars are drawn in another colour than measured ones.
    colours = [patch.get_facecolor() for patch in figure.axes[1].patches]
    assert colours[0] == colours[1] == colours[4] != colours[2] == colours[3]
    legend = figure.axes[1].get_legend().get_texts()
    assert [t.get_text() for t in legend] == ["make_dataset + stats", "given"]


def test_length_report_prints_the_numbers_and_counts_empty_examples():
    report = viz.length_report(
        [0, 3, 5, 5, 9, 0], batch_size=2, max_length=8, efficiencies=GIVEN
    )
    assert report.lengths.tolist() == [3, 5, 5, 9]
    assert report.skipped == 2 and report.given == viz.BATCHINGS
    shown = str(report)
    assert "4 examples, 22 tokens (mean 5.5, max 9; 1 over max_length=8)" in (
        shown
    )
    assert "2 empty examples skipped" in shown
    assert "  longest     50.0%  (given)" in shown
    title = viz.plot_length_report(report).axes[0].get_title()
    assert title.startswith("4 examples (2 empty skipped), mean 5.5")


def test_texts_and_lengths_give_the_pipeline_figures():
    """Both forms draw what `stats(make_dataset(...))` counts, every mode:
    boundaries chosen on a sample, buckets regrouped across chunks, the
    packer's rows."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    lines = [
        " ".join(rng.choice(words, size=n))
        for n in rng.integers(0, 20, size=75)  # 0: a blank line
    ]
    assert lines.count("") == 8
    tokenizer = tf_input.VocabularyTokenizer()
    tokenizer.adapt(lines)
    options = dict(batch_size=4, max_length=16, chunk_size=16, sample_size=20)
    want = pipeline_efficiencies(lines, tokenizer, **options)
    from_texts = viz.plot_lengths(texts=lines, tokenizer=tokenizer, **options)
    assert bar_heights(from_texts) == pytest.approx(want, abs=1e-12)
    # + <sos>, <eos>; a blank line's 0 stands where the line does.
    lengths = [len(line.split()) + 2 if line else 0 for line in lines]
    from_lengths = bar_heights(viz.plot_lengths(lengths, **options))
    # A stream puts <eos> alone between texts: from the rows' lengths, one
    # token fewer each (see `padding_efficiencies`).
    joined = [n - 1 if n else 0 for n in lengths]
    from_lengths["stream"] = viz.padding_efficiencies(joined, **options)[
        "stream"
    ]
    assert from_lengths == pytest.approx(want, abs=1e-12)
    # The histogram holds the same lengths, special tokens counted.
    report = viz.length_report(texts=lines, tokenizer=tokenizer, **options)
    assert report.lengths.tolist() == [n for n in lengths if n]
    assert report.skipped == 8
    # Without special tokens, 2 tokens fewer each, as make_dataset makes.
    bare = viz.length_report(
        texts=lines,
        tokenizer=tokenizer,
        add_special_tokens=False,
        efficiencies=GIVEN,
        **options,
    )
    assert bare.lengths.tolist() == [n - 2 for n in lengths if n]


@pytest.fixture(scope="module")
def shared_tokenizers():
    from tests.shared_data import data_path

    return {
        "qwen3": tf_input.load_tokenizer(
            data_path("llm", "qwen3", "tokenizer.json")
        ),
        "bert": tf_input.WordPieceTokenizer.from_vocab_file(
            data_path("bert", "bert-base-uncased-vocab.txt")
        ),
    }


def shared_lines(corpus, count=300):
    """The first `count` non-blank lines of a shared corpus."""
    from tests.shared_data import data_path
    from tests.shared_data import read_lines

    lines = read_lines(data_path("corpora", corpus))
    return [line for line in lines if line.strip()][:count]


@requires_shared_data
@pytest.mark.parametrize(
    "corpus, tokenizer_name",
    [
        ("wikitext-2-raw-test.txt", "bert"),
        # The other pairs with the slow tests (tinyshakespeare with Qwen 3
        # is also checked, through the command line, by test_cli_plot).
        pytest.param("tinyshakespeare.txt", "qwen3", marks=pytest.mark.slow),
        pytest.param("tinyshakespeare.txt", "bert", marks=pytest.mark.slow),
        pytest.param(
            "wikitext-2-raw-test.txt", "qwen3", marks=pytest.mark.slow
        ),
    ],
)
def test_picture_equals_pipeline_stats_on_shared_corpora(
    corpus, tokenizer_name, shared_tokenizers
):
    tokenizer = shared_tokenizers[tokenizer_name]
    lines = shared_lines(corpus)
    options = dict(batch_size=16, max_length=64)
    want = pipeline_efficiencies(lines, tokenizer, **options)
    figure = viz.plot_lengths(texts=lines, tokenizer=tokenizer, **options)
    assert bar_heights(figure) == pytest.approx(want, abs=0.005)
    # The lengths, special tokens counted from the tokenizer (Qwen adds
    # none, BERT [CLS] and [SEP]), give the same figures.
    specials = {"qwen3": 0, "bert": 2}[tokenizer_name]
    ids = tokenizer(lines).to_list()
    lengths = [len(row) + specials for row in ids]
    figure = viz.plot_lengths(lengths, **options)
    heights = bar_heights(figure)
    stream = heights.pop("stream")
    assert heights == pytest.approx(
        {mode: e for mode, e in want.items() if mode != "stream"}, abs=0.005
    )
    # A stream from lengths joins the rows as given: with each text's own
    # tokens and its end token, the pipeline's stream.
    joined = [len(row) + 1 if row else 0 for row in ids]
    got = viz.padding_efficiencies(joined, **options)["stream"]
    assert got == pytest.approx(want["stream"], abs=0.005)
    assert 0 < stream <= 1


@pytest.mark.parametrize(
    "lengths, error",
    [
        ([], ValueError),
        ([[1, 2], [3, 4]], ValueError),
        ([3, -1], ValueError),
        ([0, 0], ValueError),
        ([1.5, 2.0], TypeError),
        ("abc", TypeError),
        ([True, False], TypeError),
    ],
)
def test_lengths_rejects_bad_lengths(lengths, error):
    match = r"`lengths` must .*Received: "
    with pytest.raises(error, match=match):
        viz.padding_efficiencies(lengths, batch_size=2, max_length=8)
    with pytest.raises(error, match=match):
        viz.plot_lengths(lengths, batch_size=2, max_length=8)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_length": -4}, r"`max_length` must be .*max_length=-4"),
        ({"batch_size": 0}, r"`batch_size` must be .*batch_size=0"),
        ({"num_buckets": 0}, r"`num_buckets` must be .*num_buckets=0"),
        (
            {"bucket_boundaries": [4, 2]},
            r"`bucket_boundaries` must be increasing.*\[4, 2\]",
        ),
        (
            {"bucket_boundaries": [4, 20]},
            r"`bucket_boundaries` must be .*max_length=8",
        ),
        (
            {"add_special_tokens": True},
            r"`lengths` already count the special tokens",
        ),
    ],
)
def test_lengths_rejects_bad_arguments(kwargs, match):
    arguments = {"batch_size": 2, "max_length": 8, **kwargs}
    with pytest.raises(ValueError, match=match.replace("`lengths`", "")):
        viz.padding_efficiencies([1, 2, 3], **arguments)
    with pytest.raises(ValueError, match=match):
        viz.plot_lengths([1, 2, 3], **arguments)


def test_lengths_or_texts_with_their_tokenizer():
    tokenizer = tf_input.VocabularyTokenizer()
    tokenizer.adapt(["a b"])
    options = dict(batch_size=2, max_length=8)
    with pytest.raises(ValueError, match=r"either `lengths` .*neither"):
        viz.plot_lengths(**options)
    with pytest.raises(ValueError, match=r"either `lengths` .*both"):
        viz.plot_lengths([2], texts=["a b"], tokenizer=tokenizer, **options)
    with pytest.raises(ValueError, match=r"go together.*texts alone"):
        viz.plot_lengths(texts=["a b"], **options)
    with pytest.raises(ValueError, match=r"go together.*tokenizer alone"):
        viz.plot_lengths([2], tokenizer=tokenizer, **options)
    with pytest.raises(TypeError, match=r"`texts` must be a sequence of str"):
        viz.plot_lengths(texts="a b", tokenizer=tokenizer, **options)
    with pytest.raises(TypeError, match=r"an item 3 \(of type int\)"):
        viz.plot_lengths(texts=["a", 3], tokenizer=tokenizer, **options)
    with pytest.raises(ValueError, match=r"at least one example with a token"):
        viz.plot_lengths(texts=["", " "], tokenizer=tokenizer, **options)


@pytest.mark.parametrize(
    "efficiencies, error",
    [
        ({"greedy": 0.5}, ValueError),
        ({"pack": 1.5}, ValueError),
        ({"pack": "high"}, TypeError),
        ([0.5], TypeError),
    ],
)
def test_length_plot_rejects_bad_efficiencies(efficiencies, error):
    with pytest.raises(error, match=r"`efficiencies"):
        viz.plot_lengths(
            [1, 2], batch_size=2, max_length=8, efficiencies=efficiencies
        )


# --- Packed batches and training curves ---------------------------------------


def test_packed_batch_shows_segments_and_the_block_diagonal_mask(tmp_path):
    from tf_input.data import make_dataset
    from tf_input.data import segment_attention_mask

    lines = ["a b c", "d e", "f g h i", "j", "k l m"]
    tokenizer = tf_input.VocabularyTokenizer()
    tokenizer.adapt(lines)
    dataset = make_dataset(
        lines, tokenizer, batch_size=2, max_length=8, batching="pack"
    )
    features = next(iter(dataset))[0]
    features = {name: value.numpy() for name, value in features.items()}
    path = tmp_path / "packed.png"
    figure = viz.plot_packed_batch(features, row=1, path=path)
    segments = features["example_ids"]
    np.testing.assert_array_equal(image_of(figure, 0), segments)
    # Each cell shows its position, restarting in every segment.
    shown = [int(t.get_text()) for t in figure.axes[0].texts]
    assert shown == features["positions"][segments > 0].tolist()
    mask = segment_attention_mask(segments, causal=True).numpy()[1]
    want = np.where(mask, segments[1][:, None], 0)
    np.testing.assert_array_equal(image_of(figure, 1), want)
    # Block-diagonal and causal: nothing above the diagonal, no padding.
    assert not np.triu(image_of(figure, 1), 1).any()
    assert "Row 1" in figure.axes[1].get_title()
    assert_png(path)
    bidirectional = viz.plot_packed_batch(segments, causal=False)
    full = segment_attention_mask(segments).numpy()[0]
    np.testing.assert_array_equal(image_of(bidirectional, 1) > 0, full)


@pytest.mark.parametrize(
    "segment_ids, kwargs, error, match",
    [
        (
            [[1.0, 2.0]],
            {},
            TypeError,
            r"`example_ids` must be a non-empty int array",
        ),
        ([[1, -1]], {}, ValueError, r"`example_ids` must be"),
        (
            {"token_ids": [[1]]},
            {},
            ValueError,
            r"must hold the key 'example_ids'",
        ),
        (
            [[1, 1], [2, 0]],
            {"row": 2},
            ValueError,
            r"`row` must be an integer in \[0, 2\)",
        ),
        ([[1, 1]], {"row": "0"}, TypeError, r"`row` must be an integer"),
        ([[1, 1]], {"causal": 1}, TypeError, r"`causal` must be True or"),
    ],
)
def test_packed_batch_rejects_bad_arguments(segment_ids, kwargs, error, match):
    with pytest.raises(error, match=match):
        viz.plot_packed_batch(segment_ids, **kwargs)


def test_accuracy_curves(tmp_path):
    history = {"none": [0.05, 0.06, 0.07], "rope": [0.1, 0.8, 0.99]}
    path = tmp_path / "accuracy.png"
    figure = viz.plot_accuracy(history, target=0.95, path=path)
    axes = figure.axes[0]
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert list(lines) == ["none (7.0%)", "rope (99.0%)", "target 95%"]
    np.testing.assert_array_equal(lines["rope (99.0%)"].get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(
        lines["rope (99.0%)"].get_ydata(), [0.1, 0.8, 0.99]
    )
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("epoch", "accuracy")
    assert_png(path)
    for bad in ({}, {"x": []}, {"x": [1.5]}):
        with pytest.raises(ValueError, match=r"`history"):
            viz.plot_accuracy(bad)
    with pytest.raises(TypeError, match=r"`history` must be .*of type list"):
        viz.plot_accuracy([0.5])


@pytest.mark.parametrize(
    "name, signature",
    [
        ("a.png", PNG_SIGNATURE),
        ("a.jpg", b"\xff\xd8\xff"),
        ("a", PNG_SIGNATURE),
    ],
)
def test_saved_format_follows_the_suffix(tmp_path, name, signature):
    viz.plot_accuracy({"x": [0.5]}, path=tmp_path / name)
    assert (tmp_path / name).read_bytes().startswith(signature)


def test_unknown_suffix_is_an_error_naming_the_formats(tmp_path):
    with pytest.raises(
        ValueError, match=r"`path` must end in .*\.png.*x\.bmp2"
    ):
        viz.plot_accuracy({"x": [0.5]}, path=tmp_path / "x.bmp2")
    assert not (tmp_path / "x.bmp2").exists()
