"""Training curves: accuracy per epoch, one line per run."""

from __future__ import annotations

import collections.abc
import os

import numpy as np

from tf_input._validation import check_type
from tf_input.viz._figure import finish
from tf_input.viz._figure import new_figure
from tf_input.viz._figure import percent_formatter


def plot_accuracy(
    history: collections.abc.Mapping,
    *,
    target: float | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
):
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
    expected = "a non-empty dict from a run's name to its accuracy per epoch"
    check_type("history", history, collections.abc.Mapping, expected)
    if not history:
        raise ValueError(
            f"`history` must be {expected}. Received: history={history!r}."
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
    figure = new_figure(figsize=(7, 4.5))
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
    axes.yaxis.set_major_formatter(percent_formatter())
    axes.set_xlabel("epoch")
    axes.set_ylabel("accuracy")
    axes.set_title(title or "Accuracy after each epoch")
    axes.grid(alpha=0.3)
    axes.legend(loc="center right", fontsize="small")
    return finish(figure, path)
