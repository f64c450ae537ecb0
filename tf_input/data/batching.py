"""Chunks of rows -> batches, in each batching mode of `make_dataset`.

* `"max_length"`, `"pack"`, `"longest"`: every row of a chunk is padded at
  once (to `max_length`) and `Dataset.rebatch`, one C++ step that copies
  rows, cuts the stream into batches. Nothing runs once per row, no state
  goes from chunk to chunk, and the static modes run no function once per
  batch either (a tf.data step per element costs more than a short line's
  tokens; see benchmarks/README.md). `"longest"` then cuts each batch to
  its longest row, the one per-batch step, run inline (`map_inline`).
* `"bucket"`: rows regrouped by bucket and handed out without a function
  per batch (`bucketing`).
* `"stream"`: each chunk's texts, joined by their separators, become one
  1-D piece of a token stream, and `targets.stream_batches` cuts the
  stream into batches of full rows (a `scan` over chunks).

The batches are handed out with no `prefetch` after them (see
`make_dataset`): the chunk maps run ahead on their own threads. Each mode
builds two datasets from the same chunks: the batches (features, labels
and sample weights only, what `fit` takes) and a counting twin whose
elements also carry the number of truncated rows (what `stats` reports).
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._feature_names import FILL_VALUES
from tf_input.data import bucketing
from tf_input.data import targets
from tf_input.data.masking import epoch_values
from tf_input.data.rows import cut_to_longest
from tf_input.data.steps import apply
from tf_input.data.steps import map_inline
from tf_input.data.steps import plain
from tf_input.data.steps import with_epochs


def batches(
    chunks,
    pending,
    plan,
    *,
    batch_size,
    drop_remainder,
    fill,
    deterministic,
    boundaries,
    batch_sizes,
    strip,
):
    """`(dataset, counted)`: the batches, and their counting twin.

    `chunks`: a dataset of chunks, with the chunk functions `pending`
    still to apply (they run in the same map as the padding: a ragged
    chunk handed from one map to the next costs a large share of the
    tokenizer's time, see benchmarks/README.md). `strip(features, labels,
    weights)` gives a batch's element. `fill`: complete a last partial
    batch with all-padding rows (`"max_length"`, `"pack"`) unless
    `drop_remainder`; False leaves it partial (one row per input). The
    counting twin's elements are `(features, labels, weights, truncated)`.
    """
    if plan.batching == "stream":
        return stream(
            chunks,
            pending,
            plan,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            deterministic=deterministic,
            strip=strip,
        )
    if plan.batching == "bucket":
        return bucketing.bucket_batches(
            apply(chunks, pending, deterministic) if pending else chunks,
            plan,
            boundaries=boundaries,
            batch_sizes=batch_sizes,
            drop_remainder=drop_remainder,
            deterministic=deterministic,
            strip=strip,
        )
    longest = plan.batching == "longest"

    def pad_chunk(rows, count_truncated, epoch=None):
        features, labels, weights, _ = plan.finalize(
            rows, plan.max_length, epoch=epoch
        )
        if count_truncated:
            cut = tf.cast(rows["truncated"], tf.int32)
            return features, labels, weights, cut
        if longest:  # `strip` after the cut, below
            return features, labels, weights
        return strip(features, labels, weights)

    def batch(count_truncated):
        if plan.masking is None:
            padded = apply(
                chunks,
                [*pending, lambda rows: pad_chunk(rows, count_truncated)],
                deterministic,
            )
        else:
            # Each dataset its own epoch keys: iterating the counting twin
            # must not move the batches' epochs on.
            keyed, step = with_epochs(
                chunks,
                pending,
                lambda rows, epoch: pad_chunk(rows, count_truncated, epoch),
                epoch_values(),
            )
            padded = apply(keyed, [step], deterministic)
        if longest or not (fill or drop_remainder):
            return padded.rebatch(batch_size, drop_remainder)
        if not drop_remainder:
            # `batch_size - 1` all-padding rows after the last chunk
            # complete the last partial batch; the batch they would start
            # on their own is dropped by `drop_remainder=True` below, so
            # no batch is ever all padding.
            rows = _fill_rows(padded.element_spec, batch_size - 1)
            padded = padded.concatenate(tf.data.Dataset.from_tensors(rows))
        return padded.rebatch(batch_size, drop_remainder=True)

    def count(features, labels, weights, truncated):
        return features, labels, weights, tf.reduce_sum(truncated)

    counted = batch(True).map(plain(count))
    dataset = batch(False)
    if longest:
        counted = counted.map(plain(cut_to_longest))
        dataset = map_inline(
            dataset,
            lambda *element: strip(*cut_to_longest(*element)[:3]),
        )
    return dataset, counted


def _fill_rows(spec, count):
    """`count` all-padding rows of elements of `spec`: 0, or the feature's
    `FILL_VALUES` (None for absent labels or weights)."""

    def fill(spec, value=0):
        if not isinstance(spec, tf.TensorSpec):
            return None
        return tf.fill([count, *spec.shape[1:]], tf.constant(value, spec.dtype))

    features, *targets = spec if isinstance(spec, tuple) else (spec,)
    rows = {
        name: fill(feature, FILL_VALUES.get(name, 0))
        for name, feature in features.items()
    }
    if not targets:
        return rows
    return (rows, *tf.nest.map_structure(fill, tuple(targets)))


def stream(
    chunks, pending, plan, *, batch_size, drop_remainder, deterministic, strip
):
    """`(dataset, counted)` of `"stream"` batches (see `batches`).

    Each chunk's rows (texts with their separators, in order) become one
    1-D piece of the stream in the chunk map; `targets.stream_batches`
    cuts the pieces into batches. Nothing is truncated.
    """
    pieces = apply(
        chunks,
        [*pending, lambda rows: rows["ids"].flat_values],
        deterministic,
    )

    def cut():
        return targets.stream_batches(
            pieces, batch_size, plan.max_length, drop_remainder
        )

    def count(features, labels, weights):
        return features, labels, weights, tf.constant(0, tf.int32)

    return cut().map(plain(strip)), cut().map(plain(count))
