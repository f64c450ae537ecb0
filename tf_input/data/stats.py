"""`stats`: how much of a dataset's batches is real data."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._validation import check_optional_int
from tf_input._validation import check_type
from tf_input.data import steps
from tf_input.data.info import PipelineInfo
from tf_input.data.info import pipeline_info

KEYS = (
    "batches",
    "real_tokens",
    "padded_tokens",
    "padding_efficiency",
    "targets",
    "fill_rows",
    "truncated",
    "skipped",
    "shapes",
)


class Stats(dict):
    """A plain dict of statistics that prints as an aligned table."""

    def __str__(self):
        width = max(len(k) for k in self)
        lines = []
        for key, value in self.items():
            if isinstance(value, float):
                value = f"{value:.4f}"
            elif value is None:
                value = "unknown"
            elif isinstance(value, int):
                value = f"{value:,}"
            lines.append(f"{key:<{width}}  {value}")
        return "\n".join(lines)


def _masks(features):
    """The padding masks of one batch's features, or ids != 0 without one."""
    if isinstance(features, dict):
        masks = [v for k, v in features.items() if k.endswith("padding_mask")]
        if masks:
            return masks
        ids = [v for k, v in features.items() if k.endswith("token_ids")]
        if ids:
            return [tf.not_equal(v, 0) for v in ids]
    if isinstance(features, tf.Tensor) and features.dtype.is_integer:
        return [tf.not_equal(features, 0)]
    raise ValueError(
        "`stats` needs batches whose features are a dict with "
        "`*padding_mask` (or `*token_ids`) entries, or an int tensor of ids "
        "padded with 0. Received: features of type "
        f"{type(features).__name__}."
    )


def stats(dataset: tf.data.Dataset, max_batches=None, *, info=None) -> Stats:
    """Counts real and padding tokens in the batches of a dataset.

    Iterates over the dataset (or its first `max_batches` batches). Real
    tokens are the True entries of every `*padding_mask` feature (for
    seq2seq, encoder plus decoder); without masks, the nonzero ids.
    `fill_rows` counts the all-padding rows that complete a last partial
    batch (`"max_length"`, `"pack"`, `"bucket"`): they are in
    `padded_tokens` too, and the efficiency of full batches alone is
    `real_tokens / (real_tokens + padded_tokens - fill_rows * length)`.
    `targets` is the sum of the sample weights (the positions, or rows,
    a loss is computed on); None for batches without weights.
    For `task="chat"` datasets, `truncated` counts the conversations cut
    to `max_length`, and a `dropped` entry those left out for being
    longer (`chat_truncation="drop"`); both for a whole epoch only.
    `truncated` (examples cut to `max_length`) and `skipped` (examples
    that gave no token and were left out) are known for datasets returned
    by `make_dataset`, from their `PipelineInfo` (see
    `tf_input.data.pipeline_info`: counted on a twin of the same
    pipeline); for another dataset pass `info=` explicitly, else they are
    `None`.

    Args:
        dataset: a `tf.data.Dataset` of `features`, `(features, labels)`
            or `(features, labels, sample_weight)` batches.
        max_batches: int or None. Stop after this many batches. Defaults to
            `None` (one whole epoch).
        info: `PipelineInfo` or None. The record of the `make_dataset`
            call that made `dataset` (or the dataset it was derived from):
            the batches are then read from its counting twin. Defaults to
            `pipeline_info(dataset)`.

    Returns:
        A dict (printing as a table) with `batches`, `real_tokens`,
        `padded_tokens` (padding positions), `padding_efficiency`
        (real / all positions), `targets`, `fill_rows`, `truncated`,
        `skipped` and `shapes` (distinct batch shapes).

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer()
    >>> tokenizer.adapt(["a b c d", "e"])
    >>> ds = tf_input.data.make_dataset(
    ...     ["a b c d", "e"], tokenizer, batch_size=2, max_length=4)
    >>> s = tf_input.data.stats(ds)
    >>> s["real_tokens"], s["padded_tokens"], s["truncated"], s["shapes"]
    (7, 1, 1, 1)
    >>> s["targets"], s["skipped"]
    (5, 0)
    """
    check_type("dataset", dataset, tf.data.Dataset, "a `tf.data.Dataset`")
    max_batches = check_optional_int("max_batches", max_batches, 1)
    if info is None:
        info = pipeline_info(dataset)
    else:
        check_type(
            "info",
            info,
            PipelineInfo,
            "a `PipelineInfo` (from `tf_input.data.pipeline_info(ds)`) or None",
        )
    counted = info.counting if info is not None else None
    source = counted if counted is not None else dataset
    if max_batches is not None:
        source = source.take(max_batches)
    batches = real = total = fill = 0
    truncated = 0 if counted is not None else None
    targets = None
    shapes = set()
    for element in source:
        weights = None
        if counted is not None:
            features, _, weights, cut = element
            truncated += int(cut)
        elif isinstance(element, tuple):
            features = element[0]
            weights = element[2] if len(element) > 2 else None
        else:
            features = element
        if isinstance(weights, dict):
            # Question answering: the start and end outputs share the
            # rows' weights; each row is one target.
            weights = weights["start"]
        if weights is not None:
            targets = (targets or 0) + float(tf.reduce_sum(weights))
        batches += 1
        signature = []
        for mask in _masks(features):
            real += int(tf.math.count_nonzero(mask))
            total += int(np.prod(mask.shape))
            signature.append(tuple(mask.shape))
        real_rows = tf.reduce_any(tf.cast(_masks(features)[0], tf.bool), 1)
        fill += int(tf.reduce_sum(tf.cast(~real_rows, tf.int32)))
        shapes.add(tuple(signature))
    dropped = None
    chat_counts = getattr(info, "chat_counts", None)
    if chat_counts is not None and max_batches is None:
        # task="chat": counted per chunk of rendered rows, whole epoch.
        totals = steps.total(chat_counts, np.zeros([2], np.int64))
        truncated, dropped = (int(x) for x in totals)
    result = Stats(
        batches=batches,
        real_tokens=real,
        padded_tokens=total - real,
        padding_efficiency=real / total if total else 0.0,
        targets=_whole(targets),
        fill_rows=fill,
        truncated=truncated,
        skipped=_skipped(info, max_batches),
        shapes=len(shapes),
    )
    if chat_counts is not None:
        result["dropped"] = dropped
    return result


def _whole(value):
    """A sum of 0/1 weights as an int (other weights stay float)."""
    if value is not None and float(value).is_integer():
        return int(value)
    return value


def _skipped(info, max_batches):
    """The examples skipped as empty, for a whole epoch only."""
    if info is None or max_batches is not None:
        return None
    if info.skipped is not None:
        return info.skipped
    if info.skipping is None:
        return None
    return int(steps.total(info.skipping, np.int64(0)))
