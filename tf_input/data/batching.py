"""Chunks of rows -> batches, in each batching mode of `make_dataset`.

* `"max_length"`, `"pack"`, `"longest"`: every row of a chunk is padded at
  once (to `max_length`) and `Dataset.rebatch`, one C++ step that copies
  rows, cuts the stream into batches. Nothing runs once per row, no state
  goes from chunk to chunk, and the static modes run no function once per
  batch either (a tf.data step costs ~50 us an element, and batches of 32
  short lines are ~1,000 elements an epoch of tinyshakespeare; the `scan`
  regrouping and per-batch padding this replaced cost ~0.13 s an epoch
  there, 65% of the tokenizer's own time). `"longest"` then cuts each
  batch to its longest row, the one per-batch step, run inline
  (`map_inline`: ~30 us a batch instead of ~90 us in a parallel `map`).
* `"bucket"`: rows regrouped by bucket (a `scan` over chunks,
  `packing.regroup`); then, per chunk, all the rows of the batches it
  completes are padded by one `finalize` (`pad_groups`, a parallel map)
  and each bucket's batches are cut out in one piece and handed out by
  `from_tensor_slices` (`bucket_batches`): no function once per batch.

The batches are handed out with no `prefetch` after them (see
`make_dataset`): the chunk maps run ahead on their own threads.

* `"stream"`: each chunk's texts, joined by their separators, become one
  1-D piece of a token stream, and `targets.stream_batches` cuts the
  stream into batches of full rows (a `scan` over chunks).

Each mode builds two datasets from the same chunks: the batches (features,
labels and sample weights only, what `fit` takes) and a counting twin whose
elements also carry the number of truncated rows (what `stats` reports).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input.data import packing
from tf_input.data import targets
from tf_input.data.packing import plain
from tf_input.data.rows import cut_to_longest

try:  # tf.data's map datasets, for `use_inter_op_parallelism=False`
    from tensorflow.python.data.ops import map_op as _map_op
except ImportError:  # pragma: no cover - a TF without the module
    _map_op = None

AUTOTUNE = tf.data.AUTOTUNE


def map_inline(dataset, function):
    """`dataset.map(function)`, the function's ops run on the calling thread.

    `Dataset.map` runs a function's ops on tf.data's inter-op thread pool,
    one hand-over per op; with `use_inter_op_parallelism=False` (an
    argument of tf.data's map op that `Dataset.map` does not expose) they
    run in turn, on the thread that asks for the element, with TF's
    single-threaded executor. The elements are the same; the cost is not.
    Measured on 2 cores (4,032 batches of 32 rows of 128, CPU per batch):
    cutting a batch to its longest row in a sequential `map` ~120-160 us,
    in a parallel one ~90 us, inline ~30 us. Only for small functions
    without control flow (that executor has no `Switch`); it falls back to
    `Dataset.map` if TF moves the class.
    """
    function = plain(function)
    if _map_op is not None:
        try:
            return _map_op._MapDataset(
                dataset,
                function,
                use_inter_op_parallelism=False,
                preserve_cardinality=True,
            )
        except (AttributeError, TypeError):  # pragma: no cover
            pass
    return dataset.map(function)


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
        limits = tf.constant(boundaries, tf.int64)

        def key_fn(rows):
            return tf.searchsorted(limits, plan.lengths(rows), side="left")

        lengths = tf.constant(boundaries, tf.int32)
        sizes = tf.constant(batch_sizes, tf.int32)
        grouped = packing.regroup(chunks, key_fn, batch_sizes, drop_remainder)

        def hand_out(count_truncated):
            def pad(rows, keys):
                return pad_groups(
                    rows, keys, plan, lengths, sizes, count_truncated
                )

            padded = grouped.map(
                plain(pad),
                num_parallel_calls=AUTOTUNE,
                deterministic=deterministic,
            )

            def batches_of(groups, features, labels, weights, *truncated):
                return bucket_batches(
                    groups, features, (labels, weights), truncated, strip
                )

            return padded.flat_map(plain(batches_of))

        return hand_out(False), hand_out(True)

    longest = plan.batching == "longest"

    def pad_chunk(rows, count_truncated):
        features, labels, weights, _ = plan.finalize(rows, plan.max_length)
        if count_truncated:
            cut = tf.cast(rows["truncated"], tf.int32)
            return features, labels, weights, cut
        if longest:  # `strip` after the cut, below
            return features, labels, weights
        return strip(features, labels, weights)

    def batch(count_truncated):
        padded = apply(
            chunks,
            [*pending, lambda rows: pad_chunk(rows, count_truncated)],
            deterministic,
        )
        if longest or not (fill or drop_remainder):
            return padded.rebatch(batch_size, drop_remainder)
        if not drop_remainder:
            # `batch_size - 1` all-padding rows after the last chunk
            # complete the last partial batch; the batch they would start
            # on their own is dropped by `drop_remainder=True` below, so
            # no batch is ever all padding.
            rows = tf.nest.map_structure(
                lambda spec: (
                    tf.zeros([batch_size - 1, *spec.shape[1:]], spec.dtype)
                    if isinstance(spec, tf.TensorSpec)
                    else None
                ),  # no labels or weights
                padded.element_spec,
            )
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


def pad_groups(rows, keys, plan, lengths, sizes, count_truncated):
    """The batches one chunk of the bucket regrouping completes, padded at
    once: `rows` `[K, (b), ...]` and `keys` `[K]` (ascending) from
    `packing.regroup`; `lengths` and `sizes`, each bucket's boundary and
    batch size.

    All the rows are finalized together, at the longest boundary among
    them. Each row is finalized alone, and the rows of bucket `k` are no
    longer than its boundary, so cutting a bucket's rows to it
    (`bucket_batches`) gives exactly what a `finalize` of each batch at
    that boundary gives. A bucket's batches are consecutive, and only the
    last one can be partial.

    Returns `(groups, features, labels, weights[, truncated])`: per bucket
    present, `groups` holds its first row, number of rows, number of
    batches, boundary, batch size and first batch; `features`, `labels`
    and `weights` `[R, width]` (labels and weights `[R]` for
    classification); `truncated`, the number of truncated rows of each
    batch `[K]`.
    """
    splits = rows["truncated"].row_splits
    flat = {name: value.values for name, value in rows.items()}
    width = tf.reduce_max(tf.concat([tf.gather(lengths, keys), [1]], 0))
    features, labels, weights, _ = plan.finalize(flat, width)
    present, _, count = tf.unique_with_counts(keys)
    first = tf.cumsum(count, exclusive=True)
    start = tf.gather(splits, first)
    groups = (
        start,
        tf.gather(splits, first + count) - start,
        count,
        tf.gather(lengths, present),
        tf.gather(sizes, present),
        first,
    )
    out = (groups, features, labels, weights)
    if count_truncated:
        total = tf.concat(
            [[0], tf.cumsum(tf.cast(flat["truncated"], tf.int32))], 0
        )
        out += (tf.gather(total, splits[1:]) - tf.gather(total, splits[:-1]),)
    return out


def bucket_batches(groups, features, targets_, truncated, strip):
    """The batches of one chunk of `pad_groups`, as a dataset.

    Each bucket's batches are cut from the padded rows in one piece: its
    rows, cut to its boundary, a partial last batch completed with
    all-padding rows (every feature 0, as `finalize` fills), reshaped to
    `[n, b, length]` and handed out by `from_tensor_slices`. No function
    runs once per batch: the `unbatch` of ragged batches and the
    `finalize` per batch this replaced cost ~0.1 ms a batch on 2 cores,
    where tinyshakespeare makes 1,024 batches an epoch. The elements are
    `strip(features, labels)`, or `(features, labels, truncated)` with
    `truncated` (a 1-tuple).
    """

    def one_bucket(start, real, count, length, size, first):
        fill = tf.cast(count * size, tf.int64) - real
        zero = tf.constant(0, tf.int64)
        begin = tf.stack([start, zero])
        extent = tf.stack([real, tf.cast(length, tf.int64)])
        padding = tf.stack([tf.stack([zero, fill]), [0, 0]])
        shape = tf.stack([count, size, length])

        def cut(value):
            if value is None:
                return None
            if value.shape.rank == 1:  # classification labels
                value = tf.slice(value, begin[:1], extent[:1])
                value = tf.pad(value, padding[:1])
                return tf.reshape(value, shape[:2])
            value = tf.pad(tf.slice(value, begin, extent), padding)
            return tf.reshape(value, shape)

        mine = (
            {name: cut(v) for name, v in features.items()},
            *(cut(v) for v in targets_),
        )
        if truncated:
            element = (*mine, tf.slice(truncated[0], first[None], count[None]))
        else:
            element = strip(*mine)
        return tf.data.Dataset.from_tensor_slices(element)

    return tf.data.Dataset.from_tensor_slices(groups).flat_map(
        plain(one_bucket)
    )


def sample_lengths(lines, plan, sample_size, chunk_size):
    """Padded lengths of the first `sample_size` non-empty examples."""
    lengths = []
    for chunk in lines.take(sample_size).batch(min(sample_size, chunk_size)):
        chunk = chunk if isinstance(chunk, tuple) else (chunk,)
        lengths.append(plan.lengths(plan.tokenize(*chunk)).numpy())
    return np.concatenate(lengths) if lengths else np.zeros([0], np.int64)
