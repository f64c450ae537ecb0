"""Bucket boundaries and the padding efficiency of each batching mode.

The model behind `make_dataset`'s bucket boundaries and behind the
padding-efficiency pictures of `tf_input.viz`, in NumPy:

* `choose_boundaries`: the boundaries that minimise padding on a sample of
  row lengths (exact dynamic programme), as `make_dataset` picks them;
* `quantile_boundaries`: boundaries at the length quantiles;
* `padding_efficiencies`: real tokens / all positions of each batching
  mode, modelled from the row lengths;
* `check_bucket_boundaries`: validates explicit boundaries.
"""

from __future__ import annotations

import numbers

import numpy as np

from tf_input._validation import check_positive_int

BATCHINGS = ("longest", "max_length", "bucket", "pack")


def describe(value):
    """A short repr for error messages (long arrays are abbreviated)."""
    array = np.asarray(value) if not isinstance(value, str) else None
    if array is not None and array.dtype != object and array.size > 8:
        head = ", ".join(str(x) for x in array.reshape(-1)[:4])
        return f"array of shape {array.shape} [{head}, ...]"
    return repr(value)


def check_bucket_boundaries(boundaries, max_length):
    """`boundaries` as a list ending at `max_length`; None stays None."""
    if boundaries is None:
        return None
    values = list(boundaries)
    if (
        not values
        or any(
            isinstance(b, bool) or not isinstance(b, numbers.Integral)
            for b in values
        )
        or any(b < 1 or b > max_length for b in values)
        or values != sorted(set(values))
    ):
        raise ValueError(
            "`bucket_boundaries` must be increasing integers in "
            f"[1, max_length={max_length}]. "
            f"Received: bucket_boundaries={boundaries!r}."
        )
    values = [int(b) for b in values]
    if values[-1] != max_length:
        values.append(max_length)
    return values


def choose_boundaries(lengths, num_buckets, max_length):
    """Bucket boundaries that minimise padding on a sample of row lengths.

    An exact dynamic programme over the distinct lengths of the sample: the
    sum over rows of (boundary of its bucket), with at most `num_buckets`
    boundaries. The last boundary is always `max_length`, so every row
    (truncated to `max_length`) has a bucket: if the sample's longest row
    is shorter, one bucket is kept for rows longer than any in the sample.

    Args:
        lengths: 1-D array of row lengths (specials included).
        num_buckets: int >= 1.
        max_length: int, the truncation length.

    Returns:
        A sorted list of at most `num_buckets` ints, the last `max_length`.
    """
    lengths = np.minimum(np.asarray(lengths, np.int64), max_length)
    lengths = lengths[lengths > 0]
    if lengths.size == 0 or num_buckets == 1:
        return [int(max_length)]
    values, counts = np.unique(lengths, return_counts=True)
    reserve = 0 if values[-1] == max_length else 1
    k = max(1, min(num_buckets - reserve, values.size))
    # cost[b]: least padded size of the rows <= values[b] in j+1 buckets,
    # the last one ending at values[b]; cumulative[b] counts those rows.
    cumulative = np.cumsum(counts).astype(np.float64)
    cost = values * cumulative
    choices = []
    upper = np.triu(np.ones((values.size, values.size), bool), k=1)
    for _ in range(1, k):
        # candidate[a, b]: buckets up to values[a], then one (a, b].
        candidate = cost[:, None] + values[None, :] * (
            cumulative[None, :] - cumulative[:, None]
        )
        candidate = np.where(upper, candidate, np.inf)
        best = np.argmin(candidate, axis=0)
        choices.append(best)
        cost = candidate[best, np.arange(values.size)]
    boundaries = [int(values[-1])]
    b = values.size - 1
    for best in reversed(choices):
        b = int(best[b])
        boundaries.append(int(values[b]))
    boundaries = sorted(boundaries)
    if boundaries[-1] != max_length:
        boundaries.append(int(max_length))
    return boundaries


def check_lengths(lengths):
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
            f"Received: lengths={describe(lengths)}."
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

    >>> from tf_input.data.efficiency import quantile_boundaries
    >>> quantile_boundaries([1, 2, 3, 4, 5, 6, 7, 8], 4, 10)
    [2, 4, 6, 10]
    """
    lengths = check_lengths(lengths)
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

    >>> efficiencies = tf_input.data.efficiency.padding_efficiencies(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> {mode: round(value, 4) for mode, value in efficiencies.items()}
    {'longest': 0.875, 'max_length': 0.4375, 'bucket': 0.875, 'pack': 0.6562}
    """
    lengths = check_lengths(lengths)
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
