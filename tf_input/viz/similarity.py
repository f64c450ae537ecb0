"""A learned position table: the cosine similarity of its rows."""

from __future__ import annotations

import collections.abc
import numbers
import os

import numpy as np

from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input._validation import describe
from tf_input.layers.learned_pe import LearnedPE
from tf_input.viz._figure import finish
from tf_input.viz._figure import new_figure
from tf_input.viz._figure import outline


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
    expected = (
        "a built LearnedPE or a numeric array `(max_length, feature_dim)` "
        "of rank 2"
    )
    received = f"{describe(table)} (shape {array.shape}, dtype {array.dtype})"
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"`table` must be {expected}. Received: table={received}."
        )
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(
            f"`table` must be {expected}. Received: table={received}."
        )
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(
            "`table` must hold finite values. Received: a table with "
            f"{int(np.sum(~np.isfinite(array)))} NaN or infinite entries."
        )
    return array


def cosine_similarity(table) -> np.ndarray:
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
    expected = f"None or a sequence of {count} strings, one per position shown"
    if isinstance(labels, str) or not isinstance(
        labels, collections.abc.Sequence
    ):
        raise TypeError(
            f"`labels` must be {expected}. Received: labels={labels!r} "
            f"(of type {type(labels).__name__})."
        )
    if len(labels) != count:
        raise ValueError(
            f"`labels` must be {expected}. Received: labels={labels!r}."
        )
    return [str(label) for label in labels]


def _check_groups(groups, count):
    if groups is None:
        return {}
    check_type(
        "groups",
        groups,
        collections.abc.Mapping,
        "None or a dict from a name to a (first, last) pair of positions",
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
    table,
    *,
    max_positions: int | None = None,
    labels: collections.abc.Sequence[str] | None = None,
    groups: collections.abc.Mapping | None = None,
    path: str | os.PathLike | None = None,
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
    figure = new_figure(figsize=(6.2, 5.6) if labels else (5.5, 4.5))
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
        axes.add_patch(outline((first - 0.5, first - 0.5), size, size, "black"))
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
    return finish(figure, path)
