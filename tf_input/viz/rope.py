"""RoPE: query-key score against distance, and what scaling does.

`rope_scores` and `slowdown_factors` are computed by
`tf_input.RotaryEmbedding` itself; `plot_rope_scores` draws them.
"""

from __future__ import annotations

import collections.abc
import numbers
import os

import numpy as np

from tf_input._validation import check_bool
from tf_input._validation import check_integer_array
from tf_input._validation import check_positive_float
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input._validation import describe
from tf_input.layers import rope_scaling
from tf_input.layers.rotary_embedding import RotaryEmbedding
from tf_input.viz._figure import finish
from tf_input.viz._figure import new_figure

ROPE_SCALINGS = ("none",) + rope_scaling.SCALING_TYPES
_SCORE_CHUNK = 16_384  # distances rotated per call in `rope_scores`


def rope_scaling_preset(
    rope_type: str | None,
    *,
    factor: float = 4.0,
    original_max_position_embeddings: int = 1024,
) -> dict | None:
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
    expected = "a positive even integer: RoPE rotates pairs of features"
    check_type("head_dim", head_dim, numbers.Integral, expected)
    if head_dim < 2 or head_dim % 2:
        raise ValueError(
            f"`head_dim` must be {expected}. Received: head_dim={head_dim!r}."
        )
    return int(head_dim)


def _check_distances(distances):
    expected = "a non-empty 1-D sequence of non-negative integers"
    array = check_integer_array("distances", distances, expected)
    if (
        array.ndim != 1
        or array.size == 0
        or array.min() < 0
        or array.max() > np.iinfo(np.int32).max
    ):
        raise ValueError(
            f"`distances` must be {expected} (at most 2**31 - 1). "
            f"Received: distances={describe(distances)}."
        )
    return array.astype(np.int32)


def rope_scores(
    distances, head_dim: int, *, scaling=None, max_wavelength: float = 10_000.0
) -> np.ndarray:
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


def local_mean(values, ratio: float = 1.25) -> np.ndarray:
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
            f"Received: values={describe(values)}."
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


def slowdown_factors(
    head_dim: int,
    scaling,
    *,
    max_wavelength: float = 10_000.0,
    length: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
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
    head_dim: int = 128,
    max_distance: int = 4096,
    *,
    scalings=ROPE_SCALINGS,
    factor: float = 4.0,
    original_max_position_embeddings: int = 1024,
    max_wavelength: float = 10_000.0,
    log_distance: bool = True,
    smooth: bool = True,
    show_pairs: bool = True,
    path: str | os.PathLike | None = None,
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
    log_distance = check_bool("log_distance", log_distance)
    smooth = check_bool("smooth", smooth)
    show_pairs = check_bool("show_pairs", show_pairs)
    resolved = _resolve_scalings(scalings, factor, original)
    colours = [f"C{i}" for i in range(len(resolved))]
    figure = new_figure(figsize=(12, 4.8) if show_pairs else (7, 4.5))
    if show_pairs:
        axes, pairs = figure.subplots(
            1, 2, gridspec_kw={"width_ratios": [3, 2]}
        )
    else:
        axes = figure.add_subplot()
    for scaling, colour in zip(resolved, colours):
        _draw_scores(
            axes,
            scaling,
            colour,
            head_dim,
            max_distance,
            max_wavelength,
            smooth,
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
        _draw_slowdowns(
            pairs,
            resolved,
            colours,
            head_dim,
            max_wavelength,
            length=max_distance + 1,
            original=original,
        )
    figure.suptitle(
        f"RoPE, head_dim={head_dim}, max_wavelength={max_wavelength:g}"
    )
    return finish(figure, path)


def _resolve_scalings(scalings, factor, original):
    """`plot_rope_scores`' `scalings`, each a parsed `rope_scaling` dict
    (None for no scaling)."""
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
    return resolved


def _draw_scores(
    axes, scaling, colour, head_dim, max_distance, max_wavelength, smooth
):
    """One scaling's scores against distance (faint raw + bold trend)."""
    distances = np.arange(max_distance + 1)
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


def _draw_slowdowns(
    pairs, resolved, colours, head_dim, max_wavelength, *, length, original
):
    """Each scaling's slow-down of every rotary pair, by wavelength."""
    for scaling, colour in zip(resolved, colours):
        wavelengths, factors = slowdown_factors(
            head_dim,
            scaling,
            max_wavelength=max_wavelength,
            length=length,
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
