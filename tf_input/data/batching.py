"""Chunks of rows -> batches, in each batching mode of `make_dataset`.

* `"max_length"`, `"pack"`, `"longest"`: every row of a chunk is padded at
  once (to `max_length`) and `Dataset.rebatch`, one C++ step that copies
  rows, cuts the stream into batches. Nothing runs once per row, no state
  goes from chunk to chunk, and the static modes run no function once per
  batch either (a tf.data step costs ~50 us an element, and batches of 32
  short lines are ~1,000 elements an epoch of tinyshakespeare; the `scan`
  regrouping and per-batch padding this replaced cost ~0.13 s an epoch
  there, 65% of the tokenizer's own time). `"longest"` then cuts each
  batch to its longest row, the one per-batch step.
* `"bucket"`: rows regrouped by bucket (a `scan` over chunks,
  `packing.regroup`), then padded batch by batch to the bucket's length.
  (Padding all the batches of a chunk at once and slicing each out
  measured no faster: on tinyshakespeare the `scan` costs ~10 ms a chunk
  and any per-batch step ~0.1 ms, whatever it does.)

Each mode builds two datasets from the same chunks: the batches (features
and labels only, what `fit` takes) and a counting twin whose elements also
carry the number of truncated rows (what `stats` reports).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input.data import packing
from tf_input.data.packing import plain
from tf_input.data.rows import cut_to_longest

AUTOTUNE = tf.data.AUTOTUNE


def chain(steps):
    """One function running `steps` in turn; the first takes the element's
    components, each next one the previous result."""

    def chained(*element):
        result = steps[0](*element)
        for step in steps[1:]:
            result = step(result)
        return result

    return chained


def apply(chunks, steps, deterministic):
    return chunks.map(
        plain(chain(steps)),
        num_parallel_calls=AUTOTUNE,
        deterministic=deterministic,
    )


def shuffle_chunks(rows, buffer, seed):
    """Shuffles the order of chunks, then the rows within each chunk."""
    rows = rows.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

    def permute(rows, random):
        count = tf.shape(rows["truncated"])[0]
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count), seed=tf.stack([random, tf.constant(0, tf.int64)])
        )
        return {k: tf.gather(v, order) for k, v in rows.items()}

    return tf.data.Dataset.zip(rows, seeds).map(
        plain(permute), num_parallel_calls=AUTOTUNE
    )


def batches(
    chunks,
    pending,
    plan,
    *,
    batch_size,
    drop_remainder,
    deterministic,
    boundaries,
    batch_sizes,
    strip,
):
    """`(dataset, counted)`: the batches, and their counting twin.

    `chunks`: a dataset of chunks, with the chunk functions `pending`
    still to apply (they run in the same map as the padding: a ragged
    chunk handed from one map to the next costs ~30% of the tokenizer's
    time on WikiText). `strip(features, labels)` gives a batch's element.
    The counting twin's elements are `(features, labels, truncated)`.
    """
    if plan.batching == "bucket":
        limits = tf.constant(boundaries, tf.int64)

        def key_fn(rows):
            return tf.searchsorted(limits, plan.lengths(rows), side="left")

        grouped = packing.regroup(
            chunks, key_fn, batch_sizes, drop_remainder
        ).unbatch()
        lengths = tf.constant(boundaries, tf.int32)
        sizes = tf.constant(batch_sizes, tf.int32)

        def finalize(rows, key):
            return plan.finalize(rows, lengths[key], sizes[key])

        counted = grouped.map(
            plain(finalize),
            num_parallel_calls=AUTOTUNE,
            deterministic=deterministic,
        )
        dataset = grouped.map(
            plain(lambda rows, key: strip(*finalize(rows, key)[:2])),
            num_parallel_calls=AUTOTUNE,
            deterministic=deterministic,
        )
        return dataset, counted

    longest = plan.batching == "longest"

    def pad_chunk(rows, count_truncated):
        features, labels, _ = plan.finalize(rows, plan.max_length)
        if count_truncated:
            return features, labels, tf.cast(rows["truncated"], tf.int32)
        if longest:  # `strip` after the cut, below
            return features, labels
        return strip(features, labels)

    def batch(count_truncated):
        padded = apply(
            chunks,
            [*pending, lambda rows: pad_chunk(rows, count_truncated)],
            deterministic,
        )
        if longest:
            return padded.rebatch(batch_size, drop_remainder)
        if not drop_remainder:
            # `batch_size - 1` all-padding rows after the last chunk
            # complete the last partial batch; the batch they would start
            # on their own is dropped by `drop_remainder=True` below, so
            # no batch is ever all padding.
            fill = tf.nest.map_structure(
                lambda spec: (
                    tf.zeros([batch_size - 1, *spec.shape[1:]], spec.dtype)
                    if isinstance(spec, tf.TensorSpec)
                    else None
                ),  # no labels
                padded.element_spec,
            )
            padded = padded.concatenate(tf.data.Dataset.from_tensors(fill))
        return padded.rebatch(batch_size, drop_remainder=True)

    def count(features, labels, truncated):
        return features, labels, tf.reduce_sum(truncated)

    counted = batch(True).map(plain(count))
    dataset = batch(False)
    if longest:
        counted = counted.map(plain(cut_to_longest))
        dataset = dataset.map(
            plain(
                lambda features, labels=None: strip(
                    *cut_to_longest(features, labels, None)[:2]
                )
            ),
            num_parallel_calls=AUTOTUNE,
            deterministic=deterministic,
        )
    return dataset, counted


def sample_lengths(lines, plan, sample_size, chunk_size):
    """Padded lengths of the first `sample_size` non-empty examples."""
    lengths = []
    for chunk in lines.take(sample_size).batch(min(sample_size, chunk_size)):
        chunk = chunk if isinstance(chunk, tuple) else (chunk,)
        lengths.append(plan.lengths(plan.tokenize(*chunk)).numpy())
    return np.concatenate(lengths) if lengths else np.zeros([0], np.int64)
