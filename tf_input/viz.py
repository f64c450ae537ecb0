"""Pictures of position information and of padding, drawn with matplotlib.

Every `plot_*` function returns a `matplotlib.figure.Figure` and, given
`path`, also saves it there, in the format its suffix names (`.png`,
`.jpg`, `.svg`, `.pdf`, ...; PNG when it has none). Figures are built
directly (no `pyplot`, no global state, no display needed): show one in a
notebook by leaving it as the cell's value, or save it.

* `plot_sinusoidal_encoding`: the sine/cosine encoding as a heatmap, its
  sin and cos columns marked, next to a few of its columns against
  position.
* `plot_position_similarity`: cosine similarity between the rows of a
  learned position table, optionally labelled with what each position
  holds.
* `plot_rope_scores`: RoPE's query-key score against relative distance, one
  curve per scaling type (numbers from `rope_scores`), and how much each
  scaling slows each rotary pair.
* `plot_lengths`: a length histogram and the padding efficiency of each
  batching mode (numbers from `padding_efficiencies`).
* `plot_packed_batch`: a packed batch coloured by segment, next to one
  row's block-diagonal attention mask.
* `plot_accuracy`: accuracy per epoch, one curve per run.

matplotlib is an optional dependency: `pip install "tf_input[viz]"`. Only
the `plot_*` functions need it; `rope_scores`, `local_mean`,
`padding_efficiencies` and the other helpers are plain NumPy/TensorFlow.
"""

from __future__ import annotations

import collections.abc
import numbers
import pathlib

import numpy as np

from tf_input._validation import check_positive_float
from tf_input._validation import check_positive_int
from tf_input.data.efficiency import BATCHINGS
from tf_input.data.efficiency import check_bucket_boundaries
from tf_input.data.efficiency import check_lengths
from tf_input.data.efficiency import padding_efficiencies  # noqa: F401
from tf_input.data.efficiency import quantile_boundaries  # noqa: F401
from tf_input.data.packing import segment_attention_mask
from tf_input.layers import rope_scaling
from tf_input.layers.learned_pe import LearnedPE
from tf_input.layers.rotary_embedding import RotaryEmbedding
from tf_input.layers.sinusoidal_pe import sinusoidal_encoding

ROPE_SCALINGS = ("none",) + rope_scaling.SCALING_TYPES
_DPI = 100
_SCORE_CHUNK = 16_384  # distances rotated per call in `rope_scores`


# --- matplotlib plumbing ----------------------------------------------------


def _new_figure(**kwargs):
    """A bare `Figure` (rendered by Agg when saved; no pyplot, no display)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "tf_input.viz needs matplotlib to draw. Install it with "
            '`pip install "tf_input[viz]"` (or `pip install matplotlib`).'
        ) from error
    return Figure(layout="constrained", **kwargs)


def image_format(path):
    """The image format `path`'s suffix names, checked: `"png"`, `"jpg"`...

    A path without a suffix gives `"png"`. Raises a `ValueError` naming the
    formats matplotlib can write when the suffix is none of them.

    Example:

    >>> tf_input.viz.image_format("out/pe.JPG"), tf_input.viz.image_format("pe")
    ('jpg', 'png')
    """
    suffix = pathlib.Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return "png"
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(
            "`path` must end in an image format matplotlib can write: "
            f"{', '.join('.' + f for f in sorted(formats))}. "
            f"Received: path={str(path)!r}."
        )
    return suffix


def _finish(figure, path):
    """Saves `figure` at `path` in its suffix's format (folders created)."""
    if path is not None:
        image = image_format(path)
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format=image, dpi=_DPI)
    return figure


def _describe(value):
    """A short repr for error messages (long arrays are abbreviated)."""
    array = np.asarray(value) if not isinstance(value, str) else None
    if array is not None and array.dtype != object and array.size > 8:
        head = ", ".join(str(x) for x in array.reshape(-1)[:4])
        return f"array of shape {array.shape} [{head}, ...]"
    return repr(value)


# --- Sinusoidal encoding ------------------------------------------------------


def sinusoid_columns(embedding_dim, layout="interleaved"):
    """Which feature column holds sin and which cos, and of which pair.

    Returns:
        `(kinds, pairs)`: a list of `"sin"`/`"cos"`, one per column, and
        the pair index `i` of each column (its frequency is
        `max_wavelength ** (-2i / D)`).

    Example:

    >>> tf_input.viz.sinusoid_columns(4)
    (['sin', 'cos', 'sin', 'cos'], [0, 0, 1, 1])
    >>> tf_input.viz.sinusoid_columns(4, layout="concat")
    (['sin', 'sin', 'cos', 'cos'], [0, 1, 0, 1])
    """
    half = embedding_dim // 2
    if layout == "concat":
        return ["sin"] * half + ["cos"] * half, list(range(half)) * 2
    return ["sin", "cos"] * half, [j // 2 for j in range(2 * half)]


def _line_pairs(length, embedding_dim, max_wavelength, count):
    """Pairs whose wavelengths spread from `length / 8` to `2 * length`.

    So that each drawn sine makes from about 8 turns to half a turn over
    the positions shown.
    """
    targets = np.geomspace(length / 8, 2 * length, count)
    pairs = embedding_dim / 2 * np.log(targets / (2 * np.pi))
    pairs = pairs / np.log(max_wavelength)
    pairs = np.clip(np.round(pairs), 0, embedding_dim // 2 - 1)
    return sorted({int(i) for i in pairs})


def plot_sinusoidal_encoding(
    length=128,
    embedding_dim=64,
    *,
    max_wavelength=10_000.0,
    layout="interleaved",
    num_lines=4,
    path=None,
):
    """Draws the sinusoidal position encoding: heatmap and a few columns.

    Left: row `p` of the image is the encoding of position `p`, exactly
    what `tf_input.sinusoidal_encoding(length, embedding_dim)` returns
    (float32, shown as float64): `PE[p, 2i] = sin(p / w^(2i/D))`,
    `PE[p, 2i+1] = cos(p / w^(2i/D))`. A strip above it marks each column
    sin or cos (interleaved: they alternate, which is why the heatmap looks
    like a barcode; `layout="concat"`: all sines, then all cosines). The
    fast-turning pairs are on the left, the slow ones on the right.

    Right: the classic line plot, the sine column of `num_lines` pairs
    whose wavelengths `2 pi w^(2i/D)` spread from about `length / 8` to
    `2 * length` (from some 8 turns to half a turn over the positions
    shown), each labelled with its feature index and wavelength.

    Args:
        length: int. Number of positions (rows). Defaults to `128`.
        embedding_dim: int, even. Number of features (columns). Defaults to
            `64`.
        max_wavelength: float. The sinusoid base. Defaults to `10000.0`.
        layout: `"interleaved"` or `"concat"`. Defaults to `"interleaved"`.
        num_lines: int. Columns drawn against position (0 for none).
            Defaults to `4`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None` (not saved).

    Returns:
        The `matplotlib.figure.Figure`. `figure.axes[0]` is the heatmap
        (position down, feature across, values in [-1, 1]), `axes[1]` the
        sin/cos strip, `axes[2]` the line plot (absent when
        `num_lines=0`), and the last one the colour bar.

    Example:

    >>> figure = tf_input.viz.plot_sinusoidal_encoding(16, 8)
    >>> figure.axes[0].images[0].get_array().shape
    (16, 8)
    >>> [line.get_label() for line in figure.axes[2].get_lines()]
    ['feature 0: sin, wavelength 6.3', 'feature 2: sin, wavelength 63']
    """
    length = check_positive_int("length", length)
    if (
        isinstance(num_lines, bool)
        or not isinstance(num_lines, numbers.Integral)
        or num_lines < 0
    ):
        raise ValueError(
            "`num_lines` must be a non-negative integer. "
            f"Received: num_lines={num_lines!r}."
        )
    encoding = sinusoidal_encoding(
        length,
        embedding_dim,
        max_wavelength=max_wavelength,
        layout=layout,
    )
    encoding = np.asarray(encoding, np.float64)
    kinds, pairs = sinusoid_columns(embedding_dim, layout)
    figure = _new_figure(figsize=(12, 5) if num_lines else (7, 5))
    grid = figure.add_gridspec(
        2,
        2 if num_lines else 1,
        height_ratios=[1, 14],
        width_ratios=[3, 2] if num_lines else [1],
    )
    heatmap = figure.add_subplot(grid[1, 0])
    strip = figure.add_subplot(grid[0, 0], sharex=heatmap)
    image = heatmap.imshow(
        encoding,
        aspect="auto",
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        interpolation="nearest",
    )
    heatmap.set_xlabel("feature (embedding dimension)")
    heatmap.set_ylabel("position")
    is_cos = np.array([[kind == "cos" for kind in kinds]], np.float64)
    colours = _listed_colormap(["#4d4d4d", "#d9d9d9"])
    strip.imshow(
        is_cos,
        aspect="auto",
        cmap=colours,
        vmin=0,
        vmax=1,
        interpolation="nearest",
    )
    strip.set_yticks([0], ["sin/cos"], fontsize="small")
    strip.tick_params(axis="x", labelbottom=False, bottom=False)
    if embedding_dim <= 16:
        for column, (kind, pair) in enumerate(zip(kinds, pairs)):
            strip.text(
                column,
                0,
                f"{kind}{pair}",
                ha="center",
                va="center",
                fontsize="x-small",
                color="white" if kind == "sin" else "black",
            )
    where = (
        "even columns 2i sin, odd columns 2i+1 cos"
        if layout == "interleaved"
        else f"columns 0-{embedding_dim // 2 - 1} sin, the rest cos"
    )
    strip.set_title(where, fontsize="small")
    figure.suptitle(
        f"Sinusoidal position encoding ({length} positions x "
        f"{embedding_dim} features, {layout}, "
        f"max_wavelength={max_wavelength:g})"
    )
    if num_lines:
        lines = figure.add_subplot(grid[:, 1])
        positions = np.arange(length)
        for pair in _line_pairs(
            length, embedding_dim, max_wavelength, num_lines
        ):
            column = kinds.index("sin") + (
                2 * pair if layout == "interleaved" else pair
            )
            wavelength = (
                2 * np.pi * max_wavelength ** (2 * pair / embedding_dim)
            )
            lines.plot(
                positions,
                encoding[:, column],
                linewidth=1.2,
                marker="o" if length <= 32 else None,
                markersize=3,
                label=f"feature {column}: sin, wavelength "
                + (
                    f"{wavelength:.1f}"
                    if wavelength < 10
                    else f"{wavelength:,.0f}"
                ),
            )
        lines.set_xlim(0, length - 1)
        lines.set_ylim(-1.1, 1.1)
        lines.set_xlabel("position")
        lines.set_ylabel("value")
        lines.set_title("A few columns against position", fontsize="medium")
        lines.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, -0.1),
            ncol=2,
            fontsize="small",
        )
    figure.colorbar(image, ax=heatmap, label="value")
    return _finish(figure, path)


def _listed_colormap(colours):
    from matplotlib.colors import ListedColormap

    return ListedColormap(colours)


# --- Learned position table ---------------------------------------------------


def _position_table(table):
    if isinstance(table, LearnedPE):
        if not table.built:
            raise ValueError(
                "`table` is a LearnedPE that is not built yet, so it has no "
                "position table: call it on an input or `build(input_shape)` "
                f"first. Received: table={table.name!r} (not built)."
            )
        table = table.position_embeddings
    if hasattr(table, "numpy"):  # tf.Tensor, tf.Variable, keras Variable
        table = table.numpy()
    array = np.asarray(table)
    if (
        array.ndim != 2
        or array.shape[0] < 1
        or array.shape[1] < 1
        or array.dtype.kind not in "iuf"
    ):
        raise ValueError(
            "`table` must be a built LearnedPE or a numeric array "
            "`(max_length, feature_dim)` of rank 2. Received: table="
            f"{_describe(table)} (shape {array.shape}, dtype {array.dtype})."
        )
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(
            "`table` must hold finite values. Received: a table with "
            f"{int(np.sum(~np.isfinite(array)))} NaN or infinite entries."
        )
    return array


def cosine_similarity(table):
    """Cosine similarity between every pair of rows of a position table.

    Computed in float64: `S[i, j] = <t_i, t_j> / (|t_i| |t_j|)`. An all-zero
    row has no direction; its similarities (its diagonal entry included)
    are 0.

    Args:
        table: a built `LearnedPE`, or an array `(max_length, feature_dim)`.

    Returns:
        float64 array `(max_length, max_length)`.

    Example:

    >>> tf_input.viz.cosine_similarity([[1.0, 0.0], [1.0, 1.0]]).round(4)
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    """
    table = _position_table(table)
    norms = np.linalg.norm(table, axis=1)
    unit = table / np.where(norms > 0, norms, 1.0)[:, None]
    return unit @ unit.T


def _check_labels(labels, count):
    if labels is None:
        return None
    if isinstance(labels, str) or not isinstance(
        labels, collections.abc.Sequence
    ):
        labels = None
    if labels is None or len(labels) != count:
        raise ValueError(
            f"`labels` must be None or a sequence of {count} strings, one per "
            f"position shown. Received: labels={labels!r}."
        )
    return [str(label) for label in labels]


def _check_groups(groups, count):
    if groups is None:
        return {}
    if not isinstance(groups, collections.abc.Mapping):
        raise ValueError(
            "`groups` must be None or a dict from a name to a (first, last) "
            f"pair of positions. Received: groups={groups!r}."
        )
    out = {}
    for name, span in groups.items():
        if (
            not isinstance(span, collections.abc.Sequence)
            or len(span) != 2
            or not all(
                isinstance(p, numbers.Integral) and not isinstance(p, bool)
                for p in span
            )
            or not 0 <= span[0] <= span[1] < count
        ):
            raise ValueError(
                f"`groups[{name!r}]` must be a (first, last) pair of "
                f"positions with 0 <= first <= last < {count}. "
                f"Received: groups={groups!r}."
            )
        out[str(name)] = (int(span[0]), int(span[1]))
    return out


def plot_position_similarity(
    table, *, max_positions=None, labels=None, groups=None, path=None
):
    """Draws the cosine similarity between the rows of a position table.

    For a learned table (BERT/GPT style) this shows what training made of
    it: positions that play the same part look alike, and the model's
    input structure appears as blocks; a freshly initialised table is noise
    with a diagonal of ones. Values come from `cosine_similarity`.

    `labels` names what each position holds (tick labels `"2 tens"`), and
    `groups` outlines blocks of positions on the diagonal with a name: in
    the demo, `{"first operand": (2, 3), "second operand": (6, 7)}`.

    Args:
        table: a built `tf_input.LearnedPE` (its `position_embeddings`), or
            an array `(max_length, feature_dim)`, e.g. a checkpoint's table.
        max_positions: int or None. Show only the first `max_positions`
            rows. Defaults to `None` (all).
        labels: sequence of str or None. What each shown position holds.
            Defaults to `None` (numbers only).
        groups: dict or None. Name -> `(first, last)` positions (inclusive)
            to outline. Defaults to `None`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure`: one axes with the
        `(positions, positions)` similarity image (colour range [-1, 1])
        and its colour bar.

    Example:

    >>> layer = tf_input.LearnedPE(max_length=12)
    >>> _ = layer(np.zeros((1, 12, 8), "float32"))
    >>> figure = tf_input.viz.plot_position_similarity(layer)
    >>> figure.axes[0].images[0].get_array().shape
    (12, 12)
    """
    table = _position_table(table)
    if max_positions is not None:
        max_positions = check_positive_int("max_positions", max_positions)
        table = table[:max_positions]
    count = table.shape[0]
    labels = _check_labels(labels, count)
    groups = _check_groups(groups, count)
    similarity = cosine_similarity(table)
    figure = _new_figure(figsize=(6.2, 5.6) if labels else (5.5, 4.5))
    axes = figure.add_subplot()
    image = axes.imshow(
        similarity,
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        interpolation="nearest",
    )
    if labels is not None:
        ticks = [f"{p} {label}" for p, label in enumerate(labels)]
        axes.set_xticks(range(count), ticks, rotation=60, ha="right")
        axes.set_yticks(range(count), ticks)
    for name, (first, last) in groups.items():
        size = last - first + 1
        axes.add_patch(
            _rectangle((first - 0.5, first - 0.5), size, size, "black")
        )
        axes.annotate(
            name,
            (last + 0.5, first - 0.5),
            xytext=(4, 2),
            textcoords="offset points",
            fontsize="small",
            fontweight="bold",
        )
    axes.set_xlabel("position")
    axes.set_ylabel("position")
    axes.set_title(
        f"Cosine similarity of position embeddings "
        f"({table.shape[0]} x {table.shape[1]})"
    )
    figure.colorbar(image, ax=axes, label="cosine similarity", shrink=0.8)
    return _finish(figure, path)


# --- RoPE ---------------------------------------------------------------------


def rope_scaling_preset(
    rope_type, *, factor=4.0, original_max_position_embeddings=1024
):
    """A Hugging Face `rope_scaling` dict for `rope_type` with usual values.

    `linear`, `dynamic` and `yarn` use `factor`; `llama3` uses `factor` with
    Llama 3.1's `low_freq_factor=1` and `high_freq_factor=4`. `"none"` (or
    None) gives None, no scaling.

    Example:

    >>> tf_input.viz.rope_scaling_preset("linear", factor=2.0)
    {'rope_type': 'linear', 'factor': 2.0}
    """
    if rope_type is None or rope_type == "none":
        return None
    if rope_type not in rope_scaling.SCALING_TYPES:
        raise ValueError(
            f"`rope_type` must be one of {ROPE_SCALINGS}. "
            f"Received: rope_type={rope_type!r}."
        )
    factor = check_positive_float("factor", factor)
    original = check_positive_int(
        "original_max_position_embeddings", original_max_position_embeddings
    )
    scaling = {"rope_type": rope_type, "factor": factor}
    if rope_type != "linear":
        scaling["original_max_position_embeddings"] = original
    if rope_type == "llama3":
        scaling.update(low_freq_factor=1.0, high_freq_factor=4.0)
    return scaling


def _check_head_dim(head_dim):
    if (
        isinstance(head_dim, bool)
        or not isinstance(head_dim, numbers.Integral)
        or head_dim < 2
        or head_dim % 2
    ):
        raise ValueError(
            "`head_dim` must be a positive even integer: RoPE rotates pairs "
            f"of features. Received: head_dim={head_dim!r}."
        )
    return int(head_dim)


def _check_distances(distances):
    array = np.asarray(distances)
    if (
        array.ndim != 1
        or array.size == 0
        or array.dtype.kind not in "iu"
        or array.min() < 0
        or array.max() > np.iinfo(np.int32).max
    ):
        raise ValueError(
            "`distances` must be a non-empty 1-D sequence of non-negative "
            f"integers. Received: distances={_describe(distances)}."
        )
    return array.astype(np.int32)


def rope_scores(distances, head_dim, *, scaling=None, max_wavelength=10_000.0):
    """RoPE's query-key score at each relative distance.

    The score is that of RoFormer's long-term-decay analysis (Su et al.,
    2021, section 3.4.3): query and key are both the all-ones vector `1`,
    the query at position `m` and the key at position 0, and

        score(m) = <R(m) 1, R(0) 1> / head_dim
                 = a^2 * mean_i cos(m * w_i)

    with `w_i` the (scaled) inverse frequencies and `a` the attention factor
    (1, except YaRN's `0.1 ln(factor) + 1`, which multiplies both query and
    key). So `score(0) = a^2` (1 without YaRN), and the score oscillates and
    decays as `m` grows. RoPE scores depend only on `m - n`, so this is the
    score of any pair `m + n, n`. It does not depend on `layout`.

    The rotations come from `tf_input.RotaryEmbedding` itself (float32,
    accurate at any int32 position); the dot product is taken in float64.
    `dynamic` scaling is stateless here as in the layer: all distances are
    rotated in one call, so its frequencies are those of a context of
    `max(distances) + 1` positions.

    Args:
        distances: 1-D sequence of non-negative ints.
        head_dim: int, even. The rotated dimension.
        scaling: a Hugging Face `rope_scaling` dict or None. Defaults to
            `None`.
        max_wavelength: float. The RoPE base (`rope_theta`). Defaults to
            `10000.0`.

    Returns:
        float64 array shaped like `distances`.

    Example:

    >>> tf_input.viz.rope_scores([0, 1], 4).round(4)
    array([1.    , 0.7701])
    """
    distances = _check_distances(distances)
    head_dim = _check_head_dim(head_dim)
    layer = RotaryEmbedding(max_wavelength=max_wavelength, scaling=scaling)
    ones = np.ones((1, 1, head_dim), np.float32)
    key = layer(ones, positions=np.zeros((1,), np.int32))
    key = np.asarray(key, np.float64)[0, 0]  # R(0) 1, [D]
    scores = []
    # Chunks bound the memory; each carries the overall largest distance,
    # so that dynamic scaling sees one context length for all of them.
    largest = distances.max(keepdims=True)
    for start in range(0, distances.size, _SCORE_CHUNK):
        chunk = np.concatenate(
            [distances[start : start + _SCORE_CHUNK], largest]
        )
        query = layer(np.tile(ones, (1, chunk.size, 1)), positions=chunk)
        query = np.asarray(query, np.float64)[0, :-1]  # R(m) 1, [N, D]
        scores.append(query @ key / head_dim)
    return np.concatenate(scores)


def _scaling_label(scaling):
    if scaling is None:
        return "none"
    label = scaling["rope_type"]
    return f"{label} (factor {scaling['factor']:g})"


def local_mean(values, ratio=1.25):
    """Each value averaged over a window that grows with its index.

    `out[m]` is the mean of `values[lo : hi + 1]` with `lo = floor(m /
    ratio)` and `hi = min(ceil(m * ratio), len - 1)`: at index 1000 and
    `ratio=1.25`, the values from 800 to 1250. RoPE scores ripple faster
    the farther out they are; averaged over a window a fixed share of the
    distance wide, the ripples cancel and the trend (the decay) remains,
    at every scale of a logarithmic axis.

    Args:
        values: 1-D sequence of numbers, indexed by distance `0, 1, ...`.
        ratio: float > 1. How far the window reaches on each side, as a
            factor of the index. Defaults to `1.25`.

    Returns:
        float64 array shaped like `values`.

    Example:

    >>> tf_input.viz.local_mean([4.0, 0.0, 2.0, 0.0, 1.0], ratio=1.5)
    array([4.        , 2.        , 0.66666667, 1.        , 1.        ])
    """
    values = np.asarray(values, np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            "`values` must be a non-empty 1-D sequence of numbers. "
            f"Received: values={_describe(values)}."
        )
    ratio = check_positive_float("ratio", ratio)
    if not ratio > 1:
        raise ValueError(
            f"`ratio` must be greater than 1. Received: ratio={ratio!r}."
        )
    index = np.arange(values.size)
    low = np.floor(index / ratio).astype(np.int64)
    high = np.minimum(np.ceil(index * ratio), values.size - 1)
    high = high.astype(np.int64)
    sums = np.concatenate([[0.0], np.cumsum(values)])
    return (sums[high + 1] - sums[low]) / (high - low + 1)


def slowdown_factors(head_dim, scaling, *, max_wavelength=10_000.0, length=1):
    """How many times slower each rotary pair turns under `scaling`.

    `w_i / w_i'`: the unscaled inverse frequency over the scaled one, per
    pair `i` (1 = unchanged). Linear scaling slows every pair by `factor`;
    `llama3` and `yarn` keep the fast pairs, slow the slow ones by
    `factor` and blend those between; `dynamic` raises the base, which
    slows every pair but the first, more the slower it is, once `length`
    exceeds the original context.

    Args:
        head_dim: int, even. The rotated dimension.
        scaling: a Hugging Face `rope_scaling` dict or None.
        max_wavelength: float. The RoPE base. Defaults to `10000.0`.
        length: int. The context length, for `dynamic`. Defaults to `1`.

    Returns:
        `(wavelengths, factors)`: float64 arrays `(head_dim // 2,)`, the
        unscaled wavelength `2 pi / w_i` of each pair and its slow-down.

    Example:

    >>> _, factors = tf_input.viz.slowdown_factors(
    ...     8, {"rope_type": "linear", "factor": 4.0})
    >>> factors.tolist()
    [4.0, 4.0, 4.0, 4.0]
    """
    head_dim = _check_head_dim(head_dim)
    length = check_positive_int("length", length)
    plain = RotaryEmbedding(max_wavelength=max_wavelength)
    scaled = RotaryEmbedding(max_wavelength=max_wavelength, scaling=scaling)
    for layer in (plain, scaled):
        layer.build((None, None, head_dim))
    positions = np.array([length - 1], np.int32)
    base = np.asarray(plain.inverse_frequencies(), np.float64)
    new = np.asarray(scaled.inverse_frequencies(positions), np.float64)
    return 2 * np.pi / base, base / new


def plot_rope_scores(
    head_dim=128,
    max_distance=4096,
    *,
    scalings=ROPE_SCALINGS,
    factor=4.0,
    original_max_position_embeddings=1024,
    max_wavelength=10_000.0,
    log_distance=True,
    smooth=True,
    show_pairs=True,
    path=None,
):
    """Draws RoPE's query-key score against relative distance, per scaling.

    Left: one curve per entry of `scalings`, each `rope_scores(range(
    max_distance + 1), head_dim, scaling=...)`: the all-ones query and key
    of RoFormer's long-term-decay plot, `score(m) = <R(m) 1, R(0) 1> /
    head_dim` (see `rope_scores`). The raw scores ripple ever faster with
    distance, so that several curves merge into one band; with `smooth`,
    each is drawn faint and its `local_mean` (the trend) bold on top.
    Scaling stretches the curve: a model trained on
    `original_max_position_embeddings` positions sees, at the longer
    distances, scores like those it was trained on. A dashed vertical line
    marks `original_max_position_embeddings` (if within `max_distance`).

    Right (`show_pairs`): what each scaling does to the `head_dim / 2`
    rotary pairs, `slowdown_factors` against each pair's unscaled
    wavelength: which pairs it keeps (1x), which it slows by `factor`, and
    which it blends. `dynamic` is shown at a context of `max_distance + 1`.

    Args:
        head_dim: int, even. Rotated dimension. Defaults to `128`.
        max_distance: int. Largest relative distance drawn. Defaults to
            `4096`.
        scalings: sequence of `"none"`, a scaling type (`"linear"`,
            `"dynamic"`, `"yarn"`, `"llama3"`, made with
            `rope_scaling_preset(type, factor=factor,
            original_max_position_embeddings=...)`) or a full Hugging Face
            `rope_scaling` dict. Defaults to all five types.
        factor: float. Scaling factor of the named types. Defaults to `4.0`.
        original_max_position_embeddings: int. Trained context of the named
            types. Defaults to `1024`.
        max_wavelength: float. The RoPE base. Defaults to `10000.0`.
        log_distance: bool. Logarithmic distance axis (`symlog`, linear
            below 1). Defaults to `True`.
        smooth: bool. Draw each curve's `local_mean` over its raw scores.
            Defaults to `True`.
        show_pairs: bool. Add the panel of slow-down factors per pair.
            Defaults to `True`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure`. `axes[0]`: x "relative distance",
        y "score"; per scaling, the raw scores (label starting with `_`,
        hidden from the legend, when `smooth`) and the smoothed ones,
        labelled by type and factor. `axes[1]` (with `show_pairs`): one
        line of slow-down factors per scaling.

    Example:

    >>> figure = tf_input.viz.plot_rope_scores(
    ...     16, 64, scalings=["none", "linear"],
    ...     original_max_position_embeddings=32)
    >>> [line.get_label() for line in figure.axes[0].get_lines()]
    ['_none (raw)', 'none', '_linear (factor 4) (raw)', 'linear (factor 4)', \
'original context (32)']
    """
    head_dim = _check_head_dim(head_dim)
    max_distance = check_positive_int("max_distance", max_distance)
    original = check_positive_int(
        "original_max_position_embeddings", original_max_position_embeddings
    )
    if isinstance(scalings, (str, dict)) or not isinstance(
        scalings, collections.abc.Sequence
    ):
        scalings = [scalings]
    if len(scalings) == 0:
        raise ValueError(
            "`scalings` must name at least one scaling, e.g. ['none', "
            f"'llama3']. Received: scalings={scalings!r}."
        )
    resolved = []
    for scaling in scalings:
        if scaling is None or isinstance(scaling, str):
            scaling = rope_scaling_preset(
                scaling,
                factor=factor,
                original_max_position_embeddings=original,
            )
        resolved.append(rope_scaling.parse_scaling(scaling))
    distances = np.arange(max_distance + 1)
    figure = _new_figure(figsize=(12, 4.8) if show_pairs else (7, 4.5))
    if show_pairs:
        axes, pairs = figure.subplots(
            1, 2, gridspec_kw={"width_ratios": [3, 2]}
        )
    else:
        axes = figure.add_subplot()
    colours = [f"C{i}" for i in range(len(resolved))]
    for scaling, colour in zip(resolved, colours):
        scores = rope_scores(
            distances,
            head_dim,
            scaling=scaling,
            max_wavelength=max_wavelength,
        )
        label = _scaling_label(scaling)
        if smooth:
            axes.plot(
                distances,
                scores,
                color=colour,
                linewidth=0.6,
                alpha=0.25,
                label=f"_{label} (raw)",
            )
            scores = local_mean(scores)
        axes.plot(
            distances,
            scores,
            color=colour,
            linewidth=2.0 if smooth else 1.0,
            label=label,
        )
    if original <= max_distance:
        axes.axvline(
            original,
            color="grey",
            linestyle="--",
            linewidth=1.0,
            label=f"original context ({original})",
        )
    axes.set_xlim(0, max_distance)
    if log_distance:
        axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlabel("relative distance m - n")
    axes.set_ylabel("score <R(m) 1, R(n) 1> / head_dim")
    axes.set_title(
        "RoPE score vs distance"
        + (" (bold: local mean; faint: raw)" if smooth else "")
    )
    axes.legend(loc="lower left", fontsize="small")
    if show_pairs:
        for scaling, colour in zip(resolved, colours):
            wavelengths, factors = slowdown_factors(
                head_dim,
                scaling,
                max_wavelength=max_wavelength,
                length=max_distance + 1,
            )
            pairs.plot(
                wavelengths,
                factors,
                color=colour,
                marker="o",
                markersize=3,
                linewidth=1.2,
                label=_scaling_label(scaling),
            )
        pairs.axvline(
            original,
            color="grey",
            linestyle="--",
            linewidth=1.0,
            label="_original context",
        )
        pairs.set_xscale("log")
        pairs.set_xlabel("unscaled wavelength 2 pi / w_i of each pair")
        pairs.set_ylabel("slowed down by (w_i / scaled w_i)")
        pairs.set_title(f"What each scaling does to the {head_dim // 2} pairs")
        pairs.legend(loc="upper left", fontsize="small")
    figure.suptitle(
        f"RoPE, head_dim={head_dim}, max_wavelength={max_wavelength:g}"
    )
    return _finish(figure, path)


# --- Lengths and padding ------------------------------------------------------


def _check_efficiencies(efficiencies):
    if efficiencies is None:
        return {}
    if not isinstance(efficiencies, collections.abc.Mapping) or set(
        efficiencies
    ) - set(BATCHINGS):
        raise ValueError(
            f"`efficiencies` must be None or a dict whose keys are among "
            f"{BATCHINGS}. Received: efficiencies={efficiencies!r}."
        )
    out = {}
    for mode, value in efficiencies.items():
        if isinstance(value, collections.abc.Mapping):  # a `stats(...)` dict
            value = value.get("padding_efficiency")
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not 0.0 <= value <= 1.0
        ):
            raise ValueError(
                f"`efficiencies[{mode!r}]` must be a number in [0, 1] or a "
                "`tf_input.data.stats` result. "
                f"Received: efficiencies={efficiencies!r}."
            )
        out[mode] = float(value)
    return out


def integer_bins(lengths, max_length, bins=50):
    """Histogram bin edges on integers, fitted to the lengths.

    Each bin holds whole lengths, `width = ceil(span / bins)` of them
    (`span` from the shortest to the longest length), with edges at
    half-integers, and `max_length + 0.5` is always an edge, so no bin
    mixes kept and truncated lengths.

    Returns:
        float64 array of edges, increasing.

    Example:

    >>> tf_input.viz.integer_bins([9, 9, 9], max_length=16).tolist()
    [8.5, 9.5]
    >>> tf_input.viz.integer_bins([1, 7, 12], max_length=8, bins=4).tolist()
    [-0.5, 2.5, 5.5, 8.5, 11.5, 14.5]
    """
    lengths = check_lengths(lengths)
    max_length = check_positive_int("max_length", max_length)
    bins = check_positive_int("bins", bins)
    low, high = int(lengths.min()), int(lengths.max())
    width = max(1, -(-(high - low + 1) // bins))
    anchor = max_length + 0.5  # an edge
    first = anchor - width * np.ceil((anchor - (low - 0.5)) / width)
    count = int(np.ceil((high + 0.5 - first) / width))
    return first + width * np.arange(count + 1, dtype=np.float64)


# Colours of the efficiency bars: how each value was obtained.
_BAR_STYLES = {
    "model": {"facecolor": "tab:green", "label": "model (exact)"},
    "bound": {
        "facecolor": "white",
        "edgecolor": "tab:green",
        "hatch": "//",
        "label": "model (ideal bound)",
    },
    "measured": {"facecolor": "tab:orange", "label": "measured"},
}


def plot_lengths(
    lengths,
    *,
    batch_size,
    max_length,
    num_buckets=8,
    bucket_boundaries=None,
    efficiencies=None,
    bins=50,
    log=False,
    path=None,
):
    """Draws a length histogram and the padding efficiency of each batching.

    Left: the histogram of `lengths` (tokens per example), on integer bins
    (`integer_bins`), its axis fitted to the data. Lengths over
    `max_length` are drawn in red and counted in the legend: the rows that
    `"longest"`, `"max_length"` and `"bucket"` truncate (and `"pack"`
    splits). The red line marks `max_length` (the x label says so when it
    lies beyond the longest example), the dotted lines the bucket
    boundaries (between `b` and `b + 1`: bucket `b` holds lengths up to
    `b`), drawn behind the bars. `log=True` puts the counts on a
    logarithmic axis, so that a long thin tail stays visible.

    Right: one bar per batching mode, its padding efficiency (real tokens /
    all positions). The efficiencies come from the NumPy model of
    `padding_efficiencies` (same arguments): exact for `"longest"`,
    `"max_length"` and `"bucket"` (green), an ideal upper bound for
    `"pack"` (hatched). Those given in `efficiencies` replace them and are
    drawn orange, "measured": for example `tf_input.data.stats` results of
    `make_dataset` pipelines, `{"pack": stats(pack_ds)}`.

    Args:
        lengths: 1-D sequence of non-negative ints, tokens per example
            (special tokens included).
        batch_size: int. Rows per batch.
        max_length: int. Truncation length (packed row length for `pack`).
        num_buckets: int. Most buckets for `"bucket"`. Defaults to `8`.
        bucket_boundaries: list of int or None. See `padding_efficiencies`.
            Defaults to `None`.
        efficiencies: dict or None. Measured efficiencies by mode, each a
            float in [0, 1] or a `tf_input.data.stats` result. Defaults to
            `None`.
        bins: int. Most histogram bins. Defaults to `50`.
        log: bool. Logarithmic count axis. Defaults to `False`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure` with two axes: the histogram (x
        "tokens per example", y "examples"; its bars are the axes'
        patches) and the efficiency bars (one per mode of `BATCHINGS`, in
        that order, heights in [0, 1]).

    Example:

    >>> figure = tf_input.viz.plot_lengths(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> [float(bar.get_height()) for bar in figure.axes[1].patches]
    [0.875, 0.4375, 0.875, 0.65625]
    >>> [t.get_text() for t in figure.axes[1].texts][-1]
    '65.6%\\n(ideal bound)'
    """
    lengths = check_lengths(lengths)
    max_length = check_positive_int("max_length", max_length)
    bins = check_positive_int("bins", bins)
    if not isinstance(log, bool):
        raise ValueError(f"`log` must be True or False. Received: log={log!r}.")
    measured = _check_efficiencies(efficiencies)
    if bucket_boundaries is None:
        boundaries = quantile_boundaries(lengths, num_buckets, max_length)
    else:
        boundaries = check_bucket_boundaries(bucket_boundaries, max_length)
    modelled = padding_efficiencies(
        lengths,
        batch_size=batch_size,
        max_length=max_length,
        bucket_boundaries=boundaries,
    )
    values = {**modelled, **measured}

    figure = _new_figure(figsize=(11, 4.2))
    histogram, bars = figure.subplots(
        1, 2, gridspec_kw={"width_ratios": [3, 2]}
    )
    edges = integer_bins(lengths, max_length, bins)
    over = lengths[lengths > max_length]
    histogram.hist(
        lengths[lengths <= max_length],
        bins=edges,
        color="tab:blue",
        edgecolor="white",
        linewidth=0.5,
        log=log,
        zorder=2,
        label="examples",
    )
    if over.size:
        histogram.hist(
            over,
            bins=edges,
            color="tab:red",
            edgecolor="white",
            linewidth=0.5,
            log=log,
            zorder=2,
            label=f"{over.size:,} over max_length (truncated; pack splits)",
        )
    low, high = edges[0], edges[-1]
    # A boundary b holds lengths <= b: its line runs between b and b + 1.
    shown = [b for b in boundaries[:-1] if low < b + 0.5 < high]
    for i, boundary in enumerate(shown):
        histogram.axvline(
            boundary + 0.5,
            color="grey",
            linestyle=":",
            linewidth=1.2,
            zorder=1,
            label="bucket boundaries" if i == 0 else None,
        )
    label = "tokens per example"
    if max_length + 0.5 <= high:
        histogram.axvline(
            max_length + 0.5,
            color="tab:red",
            linewidth=1.5,
            zorder=3,
            label="max_length",
        )
    else:
        label += f" (max_length={max_length}: longer than all of them)"
    pad = max(1.0, 0.02 * (high - low))
    histogram.set_xlim(low - pad, high + pad)
    histogram.set_xlabel(label)
    histogram.set_ylabel("examples (log scale)" if log else "examples")
    histogram.set_title(
        f"{lengths.size:,} examples, mean {lengths.mean():.1f}, "
        f"max {lengths.max()}"
    )
    histogram.legend(loc="upper right", fontsize="small")

    from matplotlib.patches import Patch

    used = []
    for i, mode in enumerate(BATCHINGS):
        kind = (
            "measured"
            if mode in measured
            else ("bound" if mode == "pack" else "model")
        )
        style = dict(_BAR_STYLES[kind])
        style.pop("label")
        bar = bars.bar(i, values[mode], **style)[0]
        bars.annotate(
            f"{values[mode]:.1%}\n"
            f"({'ideal bound' if kind == 'bound' else kind})",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize="small",
        )
        if kind not in used:
            used.append(kind)
    bars.set_xticks(range(len(BATCHINGS)), BATCHINGS)
    bars.legend(
        handles=[Patch(**_BAR_STYLES[kind]) for kind in used],
        loc="upper right",
        fontsize="small",
    )
    bars.set_ylim(0, 1.3)
    bars.set_xlabel("batching")
    bars.set_ylabel("padding efficiency (real / all tokens)")
    bars.set_title(f"batch_size={batch_size}, max_length={max_length}")
    return _finish(figure, path)


# --- Packed batches -----------------------------------------------------------


def _segment_colormap(count):
    """White for padding (segment 0), then one colour per segment."""
    from matplotlib import colormaps

    palette = colormaps["tab20"].colors
    colours = ["white"] + [palette[(2 * i) % 20] for i in range(count)]
    return _listed_colormap(colours)


def plot_packed_batch(example_ids, *, row=0, causal=True, path=None):
    """Draws a packed batch by segment, next to one row's attention mask.

    Left: the `[batch, seq_len]` example ids of a packed batch
    (`make_dataset(..., batching="pack")`: 1, 2, ... for the examples, or
    segments, of a row), one colour per segment, white for padding. Given
    the features dict, each cell also shows its position, which restarts
    at 0 in every segment. Right: the
    `[seq_len, seq_len]` attention mask of row `row`, as
    `tf_input.data.segment_attention_mask(example_ids, causal=causal)`
    makes it: query `i` (down) may attend to key `j` (across) inside its own
    segment only (and, causal, only `j <= i`), so the mask is
    block-diagonal, each block coloured like its segment.

    Args:
        example_ids: int array `[batch, seq_len]` (1, 2, ... per segment, 0
            for padding), or the features dict of a packed batch (its
            `example_ids`, and `positions` when present).
        row: int. The row whose mask is drawn. Defaults to `0`.
        causal: bool. Draw the causal mask. Defaults to `True`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure`: `axes[0]` shows the example ids
        (its image holds them), `axes[1]` the mask (its image holds the
        query's segment where attention is allowed, 0 elsewhere).

    Example:

    >>> figure = tf_input.viz.plot_packed_batch([[1, 1, 2, 2, 2, 0]])
    >>> figure.axes[1].images[0].get_array().astype(int).tolist()[3]
    [0, 0, 2, 2, 0, 0]
    """
    positions = None
    if isinstance(example_ids, collections.abc.Mapping):
        if "example_ids" not in example_ids:
            raise ValueError(
                "`example_ids` given as a dict must hold the key "
                "'example_ids', as a packed batch of `make_dataset(..., "
                "batching='pack')` does. Received: a dict with keys "
                f"{sorted(example_ids)}."
            )
        positions = example_ids.get("positions")
        example_ids = example_ids["example_ids"]
    segments = np.asarray(example_ids)
    if segments.ndim == 1:
        segments = segments[None]
    if (
        segments.ndim != 2
        or segments.size == 0
        or segments.dtype.kind not in "iu"
        or segments.min() < 0
    ):
        raise ValueError(
            "`example_ids` must be a non-empty int array [batch, seq_len] of "
            "segment numbers (0 for padding). "
            f"Received: example_ids={_describe(example_ids)}."
        )
    if positions is not None:
        positions = np.asarray(positions).reshape(segments.shape)
    if (
        isinstance(row, bool)
        or not isinstance(row, numbers.Integral)
        or not 0 <= row < segments.shape[0]
    ):
        raise ValueError(
            f"`row` must be an integer in [0, {segments.shape[0]}), a row of "
            f"the batch. Received: row={row!r}."
        )
    mask = np.asarray(segment_attention_mask(segments, causal=causal))[row]
    blocks = np.where(mask, segments[row][:, None], 0)
    count = int(segments.max())
    colours = _segment_colormap(count)
    batch, length = segments.shape
    figure = _new_figure(figsize=(13, max(4.5, 0.3 * batch + 2.5)))
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    left.imshow(
        segments,
        cmap=colours,
        vmin=-0.5,
        vmax=count + 0.5,
        interpolation="nearest",
        aspect="auto",
    )
    if positions is not None and segments.size <= 1024:
        for (i, j), value in np.ndenumerate(positions):
            if segments[i, j]:
                left.text(
                    j, i, str(value), ha="center", va="center", fontsize=6
                )
    left.set_xlabel("position in the row")
    left.set_ylabel("row")
    left.set_title(
        f"Packed batch [{batch}, {length}]: colour = segment, white = "
        "padding"
        + (
            "\nnumbers = positions (restart per segment)"
            if positions is not None
            else ""
        )
    )
    left.add_patch(_rectangle((-0.5, row - 0.5), length, 1, edgecolor="black"))
    right.imshow(
        blocks,
        cmap=colours,
        vmin=-0.5,
        vmax=count + 0.5,
        interpolation="nearest",
    )
    for axes in (left, right):
        axes.set_xticks(np.arange(-0.5, length), minor=True)
        axes.set_yticks(np.arange(-0.5, axes.get_ylim()[0] + 0.5), minor=True)
        axes.grid(which="minor", color="white", linewidth=0.5)
        axes.tick_params(which="minor", length=0)
    right.set_xlabel("key position")
    right.set_ylabel("query position")
    right.set_title(
        f"Row {row} (outlined): {'causal ' if causal else ''}attention "
        "mask\nblock-diagonal: each token sees its own segment only"
    )
    return _finish(figure, path)


def _rectangle(corner, width, height, edgecolor):
    from matplotlib.patches import Rectangle

    return Rectangle(
        corner,
        width,
        height,
        fill=False,
        edgecolor=edgecolor,
        linewidth=2.0,
    )


# --- Training curves ----------------------------------------------------------


def plot_accuracy(history, *, target=None, title=None, path=None):
    """Draws accuracy per epoch, one line per run.

    Args:
        history: dict from a run's name (e.g. a position scheme) to its
            accuracy after each epoch, a sequence of numbers in [0, 1].
        target: float in [0, 1] or None. A dashed horizontal line, e.g. the
            accuracy every run should reach. Defaults to `None`.
        title: str or None. Defaults to `None` (a generic title).
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure`: one axes, x "epoch" (1, 2, ...),
        y "accuracy", one line per run labelled with its name and final
        accuracy.

    Example:

    >>> figure = tf_input.viz.plot_accuracy({"none": [0.05, 0.06],
    ...                                      "learned": [0.4, 0.99]})
    >>> [line.get_label() for line in figure.axes[0].get_lines()]
    ['none (6.0%)', 'learned (99.0%)']
    """
    if not isinstance(history, collections.abc.Mapping) or not history:
        raise ValueError(
            "`history` must be a non-empty dict from a run's name to its "
            f"accuracy per epoch. Received: history={history!r}."
        )
    curves = {}
    for name, values in history.items():
        array = (
            np.asarray(values, np.float64)
            if not isinstance(values, str)
            else np.zeros((0,))
        )
        if (
            array.ndim != 1
            or array.size == 0
            or not np.all((array >= 0) & (array <= 1))
        ):
            raise ValueError(
                f"`history[{name!r}]` must be a non-empty sequence of "
                f"accuracies in [0, 1]. Received: {values!r}."
            )
        curves[str(name)] = array
    figure = _new_figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    for name, values in curves.items():
        epochs = np.arange(1, values.size + 1)
        axes.plot(
            epochs,
            values,
            marker="o",
            linewidth=1.5,
            label=f"{name} ({values[-1]:.1%})",
        )
    if target is not None:
        target = float(target)
        axes.axhline(
            target,
            color="grey",
            linestyle="--",
            linewidth=1.0,
            label=f"target {target:.0%}",
        )
    longest = max(values.size for values in curves.values())
    axes.set_xticks(range(1, longest + 1))
    axes.set_ylim(0, 1.02)
    axes.yaxis.set_major_formatter(_percent_formatter())
    axes.set_xlabel("epoch")
    axes.set_ylabel("accuracy")
    axes.set_title(title or "Accuracy after each epoch")
    axes.grid(alpha=0.3)
    axes.legend(loc="center right", fontsize="small")
    return _finish(figure, path)


def _percent_formatter():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0)
