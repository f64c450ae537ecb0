"""The sinusoidal position encoding: heatmap, sin/cos strip, columns."""

from __future__ import annotations

import os

import numpy as np

from tf_input._validation import check_int
from tf_input._validation import check_positive_int
from tf_input.layers.sinusoidal_pe import sinusoidal_encoding
from tf_input.viz._figure import finish
from tf_input.viz._figure import listed_colormap
from tf_input.viz._figure import new_figure


def sinusoid_columns(
    embedding_dim: int, layout: str = "interleaved"
) -> tuple[list[str], list[int]]:
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
    length: int = 128,
    embedding_dim: int = 64,
    *,
    max_wavelength: float = 10_000.0,
    layout: str = "interleaved",
    num_lines: int = 4,
    path: str | os.PathLike | None = None,
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
    num_lines = check_int("num_lines", num_lines, 0)
    encoding = sinusoidal_encoding(
        length,
        embedding_dim,
        max_wavelength=max_wavelength,
        layout=layout,
    )
    encoding = np.asarray(encoding, np.float64)
    kinds, pairs = sinusoid_columns(embedding_dim, layout)
    figure = new_figure(figsize=(12, 5) if num_lines else (7, 5))
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
    _draw_strip(strip, kinds, pairs, layout)
    figure.suptitle(
        f"Sinusoidal position encoding ({length} positions x "
        f"{embedding_dim} features, {layout}, "
        f"max_wavelength={max_wavelength:g})"
    )
    if num_lines:
        lines = figure.add_subplot(grid[:, 1])
        _draw_columns(lines, encoding, kinds, layout, max_wavelength, num_lines)
    figure.colorbar(image, ax=heatmap, label="value")
    return finish(figure, path)


def _draw_strip(strip, kinds, pairs, layout):
    """The strip above the heatmap: which column is sin, which cos."""
    embedding_dim = len(kinds)
    is_cos = np.array([[kind == "cos" for kind in kinds]], np.float64)
    strip.imshow(
        is_cos,
        aspect="auto",
        cmap=listed_colormap(["#4d4d4d", "#d9d9d9"]),
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


def _draw_columns(lines, encoding, kinds, layout, max_wavelength, count):
    """The sine columns of `count` pairs against position."""
    length, embedding_dim = encoding.shape
    positions = np.arange(length)
    for pair in _line_pairs(length, embedding_dim, max_wavelength, count):
        column = kinds.index("sin") + (
            2 * pair if layout == "interleaved" else pair
        )
        wavelength = 2 * np.pi * max_wavelength ** (2 * pair / embedding_dim)
        shown = f"{wavelength:.1f}" if wavelength < 10 else f"{wavelength:,.0f}"
        lines.plot(
            positions,
            encoding[:, column],
            linewidth=1.2,
            marker="o" if length <= 32 else None,
            markersize=3,
            label=f"feature {column}: sin, wavelength {shown}",
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
