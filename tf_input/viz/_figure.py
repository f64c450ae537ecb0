"""The matplotlib plumbing every picture shares.

Figures are built directly (no `pyplot`, no global state, no display
needed) and saved in the format their path's suffix names. matplotlib is
imported only inside these functions, so that `tf_input.viz`'s NumPy
helpers work without it.
"""

from __future__ import annotations

import os
import pathlib

_DPI = 100


def new_figure(**kwargs):
    """A bare `Figure` (rendered by Agg when saved; no pyplot, no display)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "tf_input.viz needs matplotlib to draw. Install it with "
            '`pip install "tf_input[viz]"` (or `pip install matplotlib`).'
        ) from error
    return Figure(layout="constrained", **kwargs)


def image_format(path: str | os.PathLike) -> str:
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


def finish(figure, path):
    """Saves `figure` at `path` in its suffix's format (folders created)."""
    if path is not None:
        image = image_format(path)
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format=image, dpi=_DPI)
    return figure


def listed_colormap(colours):
    from matplotlib.colors import ListedColormap

    return ListedColormap(colours)


def outline(corner, width, height, edgecolor):
    """An unfilled rectangle, to outline a block of cells."""
    from matplotlib.patches import Rectangle

    return Rectangle(
        corner,
        width,
        height,
        fill=False,
        edgecolor=edgecolor,
        linewidth=2.0,
    )


def percent_formatter():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0)
