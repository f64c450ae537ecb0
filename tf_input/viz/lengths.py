"""Lengths and padding: a length histogram and each batching's efficiency.

The efficiencies drawn are what `tf_input.data.stats` counts on the
batches of `make_dataset`, run in every batching mode on the same examples
(`length_report`): the pipeline's own figures, never a model of it. Given
texts and a tokenizer, the examples are those texts; given only lengths,
examples of exactly those lengths
(`tf_input.data.efficiency.padding_efficiencies`).
"""

from __future__ import annotations

import os

import numpy as np

from tf_input._validation import check_bool
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input.data.efficiency import check_lengths
from tf_input.viz._figure import finish
from tf_input.viz._figure import new_figure
from tf_input.viz.report import LengthReport
from tf_input.viz.report import length_report

# Colours of the efficiency bars: where each value comes from.
_BAR_STYLES = {
    "measured": {"facecolor": "tab:green", "label": "make_dataset + stats"},
    "given": {"facecolor": "tab:orange", "label": "given"},
}


def integer_bins(lengths, max_length: int, bins: int = 50) -> np.ndarray:
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


def plot_lengths(
    lengths=None,
    *,
    texts=None,
    tokenizer=None,
    batch_size: int,
    max_length: int,
    num_buckets: int = 8,
    bucket_boundaries=None,
    efficiencies=None,
    bins: int = 50,
    log: bool = False,
    path: str | os.PathLike | None = None,
    **dataset_options,
):
    """Draws a length histogram and the padding efficiency of each batching.

    Give the examples either as `texts` with their `tokenizer` (the texts
    are tokenized as `make_dataset` tokenizes them; its start and end
    tokens counted, `len(tokenizer.start_ids) + len(tokenizer.end_ids)`),
    or as `lengths`, the tokens of each example with its special tokens.

    Left: the histogram of the lengths (tokens per example), on integer bins
    (`integer_bins`), its axis fitted to the data. Lengths over
    `max_length` are drawn in red and counted in the legend: the rows that
    `"longest"`, `"max_length"` and `"bucket"` truncate (and `"pack"`
    splits). The red line marks `max_length` (the x label says so when it
    lies beyond the longest example), the dotted lines the bucket
    boundaries `make_dataset` used (between `b` and `b + 1`: bucket `b`
    holds lengths up to `b`), drawn behind the bars. `log=True` puts the
    counts on a logarithmic axis, so that a long thin tail stays visible.

    Right: one bar per batching mode of `BATCHINGS`, its padding efficiency
    (real tokens / all positions), measured: `make_dataset` run in that
    mode on the same examples, its batches counted by
    `tf_input.data.stats` (`tf_input.data.efficiency.compare_batchings`;
    for `lengths`, on examples of those lengths, `padding_efficiencies`).
    Efficiencies given in `efficiencies` (e.g. of your own shuffled
    pipeline) replace those and are drawn orange, "given".

    Args:
        lengths: 1-D sequence of non-negative ints or None. Tokens per
            example, special tokens included. Defaults to `None`.
        texts: sequence of str or None. The examples, with `tokenizer`.
            Defaults to `None`.
        tokenizer: a `tf_input` tokenizer built with
            `add_special_tokens=False`, or None. Defaults to `None`.
        batch_size: int. Rows per batch.
        max_length: int. Truncation length (packed row length for `pack`).
        num_buckets: int. Most buckets for `"bucket"`. Defaults to `8`.
        bucket_boundaries: list of int or None. Explicit bucket boundaries.
            Defaults to `None` (chosen by `make_dataset`).
        efficiencies: dict or None. Given efficiencies by mode, each a
            float in [0, 1] or a `tf_input.data.stats` result. Defaults to
            `None`.
        bins: int. Most histogram bins. Defaults to `50`.
        log: bool. Logarithmic count axis. Defaults to `False`.
        path: str, path-like or None. Where to save the image. Defaults to
            `None`.
        **dataset_options: other `make_dataset` arguments, the same for
            every mode, e.g. `add_special_tokens` (with `texts`),
            `sample_size`, `tokens_per_batch`.

    Returns:
        The `matplotlib.figure.Figure` with two axes: the histogram (x
        "tokens per example", y "examples"; its bars are the axes'
        patches) and the efficiency bars (one per mode of `BATCHINGS`, in
        that order, heights in [0, 1]). `length_report` returns the
        numbers.

    Example:

    >>> figure = tf_input.viz.plot_lengths(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> [float(bar.get_height()) for bar in figure.axes[1].patches]
    [0.875, 0.4375, 0.875, 0.65625, 0.65625]
    """
    bins = check_positive_int("bins", bins)
    log = check_bool("log", log)
    report = length_report(
        lengths,
        texts=texts,
        tokenizer=tokenizer,
        batch_size=batch_size,
        max_length=max_length,
        num_buckets=num_buckets,
        bucket_boundaries=bucket_boundaries,
        efficiencies=efficiencies,
        **dataset_options,
    )
    return plot_length_report(report, bins=bins, log=log, path=path)


def plot_length_report(
    report: LengthReport,
    *,
    bins: int = 50,
    log: bool = False,
    path: str | os.PathLike | None = None,
):
    """Draws a `LengthReport`: what `plot_lengths` draws, from its numbers.

    Example:

    >>> report = tf_input.viz.length_report(
    ...     [3, 5, 5, 9], batch_size=2, max_length=8)
    >>> figure = tf_input.viz.plot_length_report(report, bins=4)
    >>> [t.get_text() for t in figure.axes[1].get_xticklabels()]
    ['longest', 'max_length', 'bucket', 'pack', 'stream']
    """
    check_type("report", report, LengthReport, "a `LengthReport`")
    bins = check_positive_int("bins", bins)
    log = check_bool("log", log)
    figure = new_figure(figsize=(11, 4.2))
    histogram, bars = figure.subplots(
        1, 2, gridspec_kw={"width_ratios": [3, 2]}
    )
    _draw_histogram(histogram, report, bins, log)
    _draw_efficiencies(bars, report)
    return finish(figure, path)


def _draw_histogram(histogram, report, bins, log):
    lengths, max_length = report.lengths, report.max_length
    edges = integer_bins(lengths, max_length, bins)
    over = lengths[lengths > max_length]
    style = dict(edgecolor="white", linewidth=0.5, log=log, zorder=2)
    histogram.hist(
        lengths[lengths <= max_length],
        bins=edges,
        color="tab:blue",
        label="examples",
        **style,
    )
    if over.size:
        histogram.hist(
            over,
            bins=edges,
            color="tab:red",
            label=f"{over.size:,} over max_length (truncated; pack splits)",
            **style,
        )
    low, high = edges[0], edges[-1]
    # A boundary b holds lengths <= b: its line runs between b and b + 1.
    boundaries = report.boundaries or [max_length]
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
    skipped = f" ({report.skipped:,} empty skipped)" if report.skipped else ""
    histogram.set_title(
        f"{lengths.size:,} examples{skipped}, mean {lengths.mean():.1f}, "
        f"max {lengths.max()}"
    )
    histogram.legend(loc="upper right", fontsize="small")


def _draw_efficiencies(bars, report):
    from matplotlib.patches import Patch

    used = []
    for i, (mode, value) in enumerate(report.efficiencies.items()):
        kind = "given" if mode in report.given else "measured"
        style = {k: v for k, v in _BAR_STYLES[kind].items() if k != "label"}
        bar = bars.bar(i, value, **style)[0]
        bars.annotate(
            f"{value:.1%}" + ("\n(given)" if kind == "given" else ""),
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize="small",
        )
        if kind not in used:
            used.append(kind)
    bars.set_xticks(range(len(report.efficiencies)), list(report.efficiencies))
    bars.legend(
        handles=[Patch(**_BAR_STYLES[kind]) for kind in used],
        loc="upper right",
        fontsize="small",
    )
    bars.set_ylim(0, 1.3)
    bars.set_xlabel("batching")
    bars.set_ylabel("padding efficiency (real / all tokens)")
    bars.set_title(
        f"batch_size={report.batch_size}, max_length={report.max_length}"
    )
