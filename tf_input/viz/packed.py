"""A packed batch coloured by segment, and one row's attention mask."""

from __future__ import annotations

import collections.abc
import os

import numpy as np

from tf_input._validation import check_bool
from tf_input._validation import check_int
from tf_input._validation import check_integer_array
from tf_input._validation import describe
from tf_input.data.packing import segment_attention_mask
from tf_input.viz._figure import finish
from tf_input.viz._figure import listed_colormap
from tf_input.viz._figure import new_figure
from tf_input.viz._figure import outline


def _segment_colormap(count):
    """White for padding (segment 0), then one colour per segment."""
    from matplotlib import colormaps

    palette = colormaps["tab20"].colors
    colours = ["white"] + [palette[(2 * i) % 20] for i in range(count)]
    return listed_colormap(colours)


def plot_packed_batch(
    example_ids,
    *,
    row: int = 0,
    causal: bool = True,
    path: str | os.PathLike | None = None,
):
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
    segments, positions = _packed_batch(example_ids)
    row = _check_row(row, segments.shape[0])
    causal = check_bool("causal", causal)
    mask = np.asarray(segment_attention_mask(segments, causal=causal))[row]
    blocks = np.where(mask, segments[row][:, None], 0)
    count = int(segments.max())
    colours = _segment_colormap(count)
    batch, length = segments.shape
    figure = new_figure(figsize=(13, max(4.5, 0.3 * batch + 2.5)))
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    _draw_segments(left, segments, positions, colours, count)
    left.add_patch(outline((-0.5, row - 0.5), length, 1, edgecolor="black"))
    _show_segments(right, blocks, colours, count)
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
    return finish(figure, path)


def _packed_batch(example_ids):
    """`(segments, positions)`: the `[batch, seq_len]` example ids, checked,
    and the positions of a features dict (else None)."""
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
    expected = (
        "a non-empty int array [batch, seq_len] of segment numbers (0 for "
        "padding)"
    )
    segments = check_integer_array("example_ids", example_ids, expected)
    if segments.ndim == 1:
        segments = segments[None]
    if segments.ndim != 2 or segments.size == 0 or segments.min() < 0:
        raise ValueError(
            f"`example_ids` must be {expected}. "
            f"Received: example_ids={describe(example_ids)}."
        )
    if positions is not None:
        positions = np.asarray(positions).reshape(segments.shape)
    return segments, positions


def _check_row(row, count):
    row = check_int("row", row, 0)
    if row >= count:
        raise ValueError(
            f"`row` must be an integer in [0, {count}), a row of the batch. "
            f"Received: row={row!r}."
        )
    return row


def _draw_segments(left, segments, positions, colours, count):
    """The batch, one colour per segment (positions written in, if few)."""
    _show_segments(left, segments, colours, count, aspect="auto")
    if positions is not None and segments.size <= 1024:
        for (i, j), value in np.ndenumerate(positions):
            if segments[i, j]:
                left.text(
                    j, i, str(value), ha="center", va="center", fontsize=6
                )
    left.set_xlabel("position in the row")
    left.set_ylabel("row")
    batch, length = segments.shape
    left.set_title(
        f"Packed batch [{batch}, {length}]: colour = segment, white = "
        "padding"
        + (
            "\nnumbers = positions (restart per segment)"
            if positions is not None
            else ""
        )
    )


def _show_segments(axes, image, colours, count, **kwargs):
    """`image` of segment numbers (0 = padding), one colour each."""
    axes.imshow(
        image,
        cmap=colours,
        vmin=-0.5,
        vmax=count + 0.5,
        interpolation="nearest",
        **kwargs,
    )
