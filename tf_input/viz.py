"""Pictures of position information and of padding, drawn with matplotlib.

Every `plot_*` function returns a `matplotlib.figure.Figure` and, given
`path`, also saves it there as a PNG. Figures are built directly (no
`pyplot`, no global state, no display needed): show one in a notebook by
leaving it as the cell's value, or save it.

* `plot_sinusoidal_encoding`: the sine/cosine encoding as a heatmap.
* `plot_position_similarity`: cosine similarity between the rows of a
  learned position table.
* `plot_rope_scores`: RoPE's query-key score against relative distance, one
  curve per scaling type (numbers from `rope_scores`).
* `plot_lengths`: a length histogram and the padding efficiency of each
  batching mode (numbers from `padding_efficiencies`).

matplotlib is an optional dependency: `pip install "tf_input[viz]"`. Only
the `plot_*` functions need it; `rope_scores` and `padding_efficiencies`
are plain NumPy/TensorFlow.
"""

from __future__ import annotations

import collections.abc
import numbers
import pathlib

import numpy as np

from tf_input._validation import check_positive_float
from tf_input._validation import check_positive_int
from tf_input.data.pipeline import check_bucket_boundaries
from tf_input.layers import rope_scaling
from tf_input.layers.learned_pe import LearnedPE
from tf_input.layers.rotary_embedding import RotaryEmbedding
from tf_input.layers.sinusoidal_pe import sinusoidal_encoding

BATCHINGS = ("longest", "max_length", "bucket", "pack")
ROPE_SCALINGS = ("none",) + rope_scaling.SCALING_TYPES
_PNG_DPI = 100
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


def _finish(figure, path):
    """Saves `figure` as a PNG at `path` (parent folders created)."""
    if path is not None:
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png", dpi=_PNG_DPI)
    return figure


def _describe(value):
    """A short repr for error messages (long arrays are abbreviated)."""
    array = np.asarray(value) if not isinstance(value, str) else None
    if array is not None and array.dtype != object and array.size > 8:
        head = ", ".join(str(x) for x in array.reshape(-1)[:4])
        return f"array of shape {array.shape} [{head}, ...]"
    return repr(value)


# --- Sinusoidal encoding ------------------------------------------------------


def plot_sinusoidal_encoding(
    length=128,
    embedding_dim=64,
    *,
    max_wavelength=10_000.0,
    layout="interleaved",
    path=None,
):
    """Draws the sinusoidal position encoding as a heatmap.

    Row `p` of the image is the encoding of position `p`, exactly what
    `tf_input.sinusoidal_encoding(length, embedding_dim)` returns (float32,
    shown as float64): `PE[p, 2i] = sin(p / w^(2i/D))`, `PE[p, 2i+1] =
    cos(p / w^(2i/D))`. The fast-turning pairs are on the left, the slow ones
    on the right (with `layout="concat"`: all sines, then all cosines).

    Args:
        length: int. Number of positions (rows). Defaults to `128`.
        embedding_dim: int, even. Number of features (columns). Defaults to
            `64`.
        max_wavelength: float. The sinusoid base. Defaults to `10000.0`.
        layout: `"interleaved"` or `"concat"`. Defaults to `"interleaved"`.
        path: str, path-like or None. Where to save a PNG. Defaults to
            `None` (not saved).

    Returns:
        The `matplotlib.figure.Figure`: one heatmap axes (position down,
        feature across, values in [-1, 1]) and its colour bar.

    Example:

    >>> figure = tf_input.viz.plot_sinusoidal_encoding(16, 8)
    >>> figure.axes[0].images[0].get_array().shape
    (16, 8)
    """
    length = check_positive_int("length", length)
    encoding = sinusoidal_encoding(
        length,
        embedding_dim,
        max_wavelength=max_wavelength,
        layout=layout,
    )
    encoding = np.asarray(encoding, np.float64)
    figure = _new_figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    image = axes.imshow(
        encoding,
        aspect="auto",
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        interpolation="nearest",
    )
    axes.set_xlabel("feature (embedding dimension)")
    axes.set_ylabel("position")
    axes.set_title(
        f"Sinusoidal position encoding ({layout}, "
        f"max_wavelength={max_wavelength:g})"
    )
    figure.colorbar(image, ax=axes, label="value")
    return _finish(figure, path)


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


def plot_position_similarity(table, *, max_positions=None, path=None):
    """Draws the cosine similarity between the rows of a position table.

    For a learned table (BERT/GPT style) this shows what training made of
    it: after training, nearby positions usually look alike (a bright band
    along the diagonal) and far ones do not; a freshly initialised table is
    noise with a diagonal of ones. Values come from `cosine_similarity`.

    Args:
        table: a built `tf_input.LearnedPE` (its `position_embeddings`), or
            an array `(max_length, feature_dim)`, e.g. a checkpoint's table.
        max_positions: int or None. Show only the first `max_positions`
            rows. Defaults to `None` (all).
        path: str, path-like or None. Where to save a PNG. Defaults to
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
    similarity = cosine_similarity(table)
    figure = _new_figure(figsize=(5.5, 4.5))
    axes = figure.add_subplot()
    image = axes.imshow(
        similarity,
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        interpolation="nearest",
    )
    axes.set_xlabel("position")
    axes.set_ylabel("position")
    axes.set_title(
        f"Cosine similarity of position embeddings "
        f"({table.shape[0]} x {table.shape[1]})"
    )
    figure.colorbar(image, ax=axes, label="cosine similarity")
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


def plot_rope_scores(
    head_dim=128,
    max_distance=4096,
    *,
    scalings=ROPE_SCALINGS,
    factor=4.0,
    original_max_position_embeddings=1024,
    max_wavelength=10_000.0,
    log_distance=False,
    path=None,
):
    """Draws RoPE's query-key score against relative distance, per scaling.

    One curve per entry of `scalings`, each `rope_scores(range(max_distance
    + 1), head_dim, scaling=...)`: the all-ones query and key of RoFormer's
    long-term-decay plot, `score(m) = <R(m) 1, R(0) 1> / head_dim` (see
    `rope_scores`). Scaling stretches the curve: a model trained on
    `original_max_position_embeddings` positions sees, at the longer
    distances, scores like those it was trained on. A dashed vertical line
    marks `original_max_position_embeddings` (if within `max_distance`).

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
            below 1), easier to read over long ranges. Defaults to `False`.
        path: str, path-like or None. Where to save a PNG. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure`: one axes, x "relative distance",
        y "score", one line per scaling, labelled by its type and factor.

    Example:

    >>> figure = tf_input.viz.plot_rope_scores(
    ...     16, 64, scalings=["none", "linear"],
    ...     original_max_position_embeddings=32)
    >>> [line.get_label() for line in figure.axes[0].get_lines()]
    ['none', 'linear (factor 4)', 'original context (32)']
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
    figure = _new_figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    for scaling in resolved:
        scores = rope_scores(
            distances,
            head_dim,
            scaling=scaling,
            max_wavelength=max_wavelength,
        )
        axes.plot(
            distances, scores, linewidth=1.0, label=_scaling_label(scaling)
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
        f"RoPE score vs distance (head_dim={head_dim}, "
        f"max_wavelength={max_wavelength:g})"
    )
    axes.legend(loc="upper right", fontsize="small")
    return _finish(figure, path)


# --- Lengths and padding ------------------------------------------------------


def _check_lengths(lengths):
    array = np.asarray(lengths) if not isinstance(lengths, str) else None
    if (
        array is None
        or array.ndim != 1
        or array.size == 0
        or array.dtype.kind not in "iu"
        or array.min() < 0
    ):
        raise ValueError(
            "`lengths` must be a non-empty 1-D sequence of non-negative "
            "integers (tokens per example). "
            f"Received: lengths={_describe(lengths)}."
        )
    return array.astype(np.int64)


def quantile_boundaries(lengths, num_buckets, max_length):
    """Bucket boundaries at the length quantiles, the last one `max_length`.

    The boundaries are the distinct values of the `k / num_buckets`
    quantiles (`k = 1 .. num_buckets - 1`, each the smallest length with at
    least that share of the examples at or below it) of the lengths cut to
    `max_length`, followed by `max_length`: at most `num_buckets` of them,
    each bucket holding about the same number of examples. (`make_dataset`
    chooses its boundaries by a search that minimises padding instead; pass
    those as `bucket_boundaries` to `padding_efficiencies` to model them.)

    Example:

    >>> tf_input.viz.quantile_boundaries([1, 2, 3, 4, 5, 6, 7, 8], 4, 10)
    [2, 4, 6, 10]
    """
    lengths = _check_lengths(lengths)
    num_buckets = check_positive_int("num_buckets", num_buckets)
    max_length = check_positive_int("max_length", max_length)
    lengths = np.minimum(lengths[lengths > 0], max_length)
    if lengths.size == 0 or num_buckets == 1:
        return [max_length]
    shares = np.arange(1, num_buckets) / num_buckets
    cuts = np.quantile(lengths, shares, method="inverted_cdf")
    boundaries = sorted({int(x) for x in cuts} - {max_length})
    return boundaries + [max_length]


def padding_efficiencies(
    lengths,
    *,
    batch_size,
    max_length,
    num_buckets=8,
    bucket_boundaries=None,
):
    """Estimated padding efficiency of each batching mode, in NumPy.

    Padding efficiency is real tokens / all token positions of the batches,
    as in `tf_input.data.stats`. `lengths` are the tokens of each example
    with its special tokens (what `make_dataset` pads); examples of length
    0 are skipped, as `make_dataset` skips empty examples. Batches follow
    the order of `lengths` (no shuffling). The model of each mode:

    * `"longest"`: rows cut to `max_length`; consecutive groups of
      `batch_size`, each padded to its longest row; the last batch may be
      smaller.
    * `"max_length"`: rows cut to `max_length`; every batch
      `[batch_size, max_length]`, a partial last batch filled with padding
      rows (`make_dataset`'s default `drop_remainder=None`).
    * `"bucket"`: rows cut to `max_length` and put in the bucket of the
      smallest boundary >= their length (`quantile_boundaries`, or
      `bucket_boundaries`); each bucket's rows in batches of `batch_size`
      padded to the boundary. At the end, a bucket's leftover rows move up
      to the next bucket; the last bucket's partial batch is filled with
      padding rows.
    * `"pack"`: the ideal: all tokens laid end to end in rows of exactly
      `max_length`; the rows in batches of `batch_size`, a partial last
      batch filled. `make_dataset` keeps each example whole in one row
      (only one longer than `max_length` is split), so this is an upper
      bound on what it reaches.

    With the same lengths, order and boundaries, `"longest"`,
    `"max_length"` and `"bucket"` give what `tf_input.data.stats` counts on
    `make_dataset`'s batches.

    Args:
        lengths: 1-D sequence of non-negative ints, tokens per example.
        batch_size: int. Rows per batch.
        max_length: int. Truncation length (packed row length for `pack`).
        num_buckets: int. Most buckets for `"bucket"`. Defaults to `8`.
        bucket_boundaries: list of int or None. Explicit bucket boundaries
            (`max_length` appended if missing). Defaults to `None`
            (`quantile_boundaries`).

    Returns:
        dict from each mode of `BATCHINGS` to a float in [0, 1] (0.0 when
        there are no tokens).

    Example:

    >>> efficiencies = tf_input.viz.padding_efficiencies(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> {mode: round(value, 4) for mode, value in efficiencies.items()}
    {'longest': 0.875, 'max_length': 0.4375, 'bucket': 0.875, 'pack': 0.6562}
    """
    lengths = _check_lengths(lengths)
    batch_size = check_positive_int("batch_size", batch_size)
    max_length = check_positive_int("max_length", max_length)
    if bucket_boundaries is None:
        boundaries = quantile_boundaries(lengths, num_buckets, max_length)
    else:
        boundaries = check_bucket_boundaries(bucket_boundaries, max_length)
    lengths = lengths[lengths > 0]
    cut = np.minimum(lengths, max_length)
    real = int(cut.sum())

    def full_batches(rows):  # rows -> rows after filling the last batch
        return -(-rows // batch_size) * batch_size

    longest = sum(
        int(batch.max()) * batch.size
        for batch in np.split(cut, range(batch_size, cut.size, batch_size))
        if batch.size
    )
    padded = {
        "longest": longest,
        "max_length": full_batches(cut.size) * max_length,
    }
    bucket_of = np.searchsorted(boundaries, cut, side="left")
    counts = np.bincount(bucket_of, minlength=len(boundaries))
    # At the end of the data a bucket's leftover rows move up to the next
    # bucket; only the last one ends with a partial (filled) batch.
    padded["bucket"], carried = 0, 0
    for index, (count, boundary) in enumerate(zip(counts, boundaries)):
        rows = int(count) + carried
        if index == len(boundaries) - 1:
            padded["bucket"] += full_batches(rows) * boundary
        else:
            carried = rows % batch_size
            padded["bucket"] += (rows - carried) * boundary
    total = int(lengths.sum())
    rows = -(-total // max_length)
    padded["pack"] = full_batches(rows) * max_length
    out = {}
    for mode in BATCHINGS:
        tokens = total if mode == "pack" else real
        out[mode] = tokens / padded[mode] if padded[mode] else 0.0
    return out


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


def plot_lengths(
    lengths,
    *,
    batch_size,
    max_length,
    num_buckets=8,
    bucket_boundaries=None,
    efficiencies=None,
    bins=50,
    path=None,
):
    """Draws a length histogram and the padding efficiency of each batching.

    Left: the histogram of `lengths` (tokens per example), with `max_length`
    (red) and the bucket boundaries (dotted). Right: one bar per batching
    mode, its padding efficiency (real tokens / all positions). The
    efficiencies come from the NumPy model of `padding_efficiencies` (same
    arguments), except those given in `efficiencies`, which replace them and
    are marked "measured": for example `tf_input.data.stats` results of
    `make_dataset` pipelines, `{"bucket": stats(bucket_ds)}`.

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
        bins: int. Histogram bins. Defaults to `50`.
        path: str, path-like or None. Where to save a PNG. Defaults to
            `None`.

    Returns:
        The `matplotlib.figure.Figure` with two axes: the histogram (x
        "tokens per example", y "examples") and the efficiency bars (one
        per mode of `BATCHINGS`, in that order, heights in [0, 1]).

    Example:

    >>> figure = tf_input.viz.plot_lengths(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8], bins=8)
    >>> [float(bar.get_height()) for bar in figure.axes[1].patches]
    [0.875, 0.4375, 0.875, 0.65625]
    """
    lengths = _check_lengths(lengths)
    max_length = check_positive_int("max_length", max_length)
    bins = check_positive_int("bins", bins)
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

    figure = _new_figure(figsize=(10, 4))
    histogram, bars = figure.subplots(
        1, 2, gridspec_kw={"width_ratios": [3, 2]}
    )
    histogram.hist(lengths, bins=bins, color="tab:blue", edgecolor="white")
    for i, boundary in enumerate(boundaries[:-1]):
        histogram.axvline(
            boundary,
            color="grey",
            linestyle=":",
            linewidth=1.0,
            label="bucket boundaries" if i == 0 else None,
        )
    histogram.axvline(
        max_length, color="tab:red", linewidth=1.5, label="max_length"
    )
    histogram.set_xlabel("tokens per example")
    histogram.set_ylabel("examples")
    histogram.set_title(
        f"{lengths.size:,} examples, mean {lengths.mean():.1f}, "
        f"max {lengths.max()}"
    )
    histogram.legend(loc="upper right", fontsize="small")

    heights = [values[mode] for mode in BATCHINGS]
    drawn = bars.bar(BATCHINGS, heights, color="tab:green")
    for bar, mode in zip(drawn, BATCHINGS):
        note = "measured" if mode in measured else "model"
        bars.annotate(
            f"{values[mode]:.1%}\n({note})",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize="small",
        )
    bars.set_ylim(0, 1.2)
    bars.set_xlabel("batching")
    bars.set_ylabel("padding efficiency (real / all tokens)")
    bars.set_title(f"batch_size={batch_size}, max_length={max_length}")
    return _finish(figure, path)
