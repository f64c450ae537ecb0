"""`"bucket"` batching: rows grouped by length, each batch padded to its
bucket's boundary.

* `choose_boundaries`: the boundaries that minimise padding on a sample
  of row lengths (an exact dynamic programme); `sample_lengths` reads the
  sample.
* `regroup`: a `scan` over chunks that regroups rows into batches of one
  bucket each; rows wait across chunks until their batch is full.
* `bucket_batches`: per chunk, all the rows of the batches it completes
  are padded by one `finalize` (`pad_groups`, a parallel map), and each
  bucket's batches are cut out in one piece and handed out by
  `from_tensor_slices`: no function runs once per batch.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from tf_input._feature_names import FILL_VALUES
from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.data.masking import epoch_values
from tf_input.data.packing import argsort
from tf_input.data.steps import AUTOTUNE
from tf_input.data.steps import batch_lines
from tf_input.data.steps import plain
from tf_input.data.steps import scan
from tf_input.data.steps import with_end


def bucket_batches(
    chunks,
    plan,
    *,
    boundaries,
    batch_sizes,
    drop_remainder,
    deterministic,
    strip,
):
    """`(dataset, counted)`: the `"bucket"` batches of `chunks` (rows
    tokenized already), and their counting twin (see `batching.batches`).
    """
    limits = tf.constant(boundaries, tf.int64)

    def key_fn(rows):
        return tf.searchsorted(limits, plan.lengths(rows), side="left")

    lengths = tf.constant(boundaries, tf.int32)
    sizes = tf.constant(batch_sizes, tf.int32)
    grouped = regroup(chunks, key_fn, batch_sizes, drop_remainder)

    def hand_out(count_truncated):
        def pad(rows, keys, epoch=None):
            return pad_groups(
                rows, keys, plan, lengths, sizes, count_truncated, epoch
            )

        source = grouped
        if plan.masking is not None:
            # Each dataset its own epoch keys (see `batching.batches`).
            source = tf.data.Dataset.zip(grouped, epoch_values())

            def keyed(element, epoch):
                return pad(*element, epoch)

        padded = source.map(
            plain(pad if plan.masking is None else keyed),
            num_parallel_calls=AUTOTUNE,
            deterministic=deterministic,
        )

        def batches_of(groups, features, labels, weights, *truncated):
            return cut_groups(
                groups, features, (labels, weights), truncated, strip
            )

        return padded.flat_map(plain(batches_of))

    return hand_out(False), hand_out(True)


# --- Regrouping rows into batches ---
# `tf.data.Dataset.scan` cannot carry a `tf.RaggedTensor` as state, so the
# leftover rows travel as (flat values, row lengths) pairs.


def _to_parts(rows):
    parts = {}
    for name, value in rows.items():
        if isinstance(value, tf.RaggedTensor):
            parts[name] = (value.flat_values, value.row_lengths())
        else:
            parts[name] = value
    return parts


def _from_parts(parts):
    rows = {}
    for name, value in parts.items():
        if isinstance(value, tuple):
            rows[name] = tf.RaggedTensor.from_row_lengths(
                value[0], value[1], validate=False
            )
        else:
            rows[name] = value
    return rows


def _join(parts, rows):
    """The rows of `parts` (see `_to_parts`) followed by `rows`: flat
    values and row lengths concatenated, ~10 graph nodes fewer than a
    ragged `concat` of the rebuilt rows."""
    joined = {}
    for name, value in rows.items():
        old = parts[name]
        if isinstance(value, tf.RaggedTensor):
            joined[name] = tf.RaggedTensor.from_row_lengths(
                tf.concat([old[0], value.flat_values], 0),
                tf.concat([old[1], value.row_lengths()], 0),
                validate=False,
            )
        else:
            joined[name] = tf.concat([old, value], 0)
    return joined


def _empty_rows(spec):
    rows = {}
    for name, value in spec.items():
        if isinstance(value, tf.RaggedTensorSpec):
            rows[name] = tf.RaggedTensor.from_row_lengths(
                tf.zeros([0], value.dtype), tf.zeros([0], tf.int64)
            )
        else:
            shape = [0] + value.shape[1:].as_list()
            rows[name] = tf.zeros(shape, value.dtype)
    return rows


def regroup(chunks, key_fn, batch_sizes, drop_remainder):
    """Regroups chunks of rows into batches of rows with equal keys.

    Args:
        chunks: dataset of dicts of `[N, ...]` rows (ragged `[N, None]` or
            dense `[N]`), N varying.
        key_fn: rows dict -> int32 `[N]` keys in `[0, len(batch_sizes))`.
        batch_sizes: list of int, the batch size of each key.
        drop_remainder: bool. Drop the last partial batch of each key
            instead of emitting it. If False and there are several keys,
            the rows left at the end in key k (too few for a batch) join
            key k + 1 (keys are buckets by increasing length, so a row fits
            any later bucket): only the last key can end with a partial
            batch.

    Returns:
        A dataset with one element per chunk, `(rows, keys)`: the batches
        this chunk completes, `rows` a dict of `[K, (b), ...]` ragged
        tensors (batch k holds `b == batch_sizes[keys[k]]` rows, except for
        the last batch of a key) and `keys` `[K]`. Within a key, rows keep
        their input order. Rows wait across chunks until their batch is
        full, so no row is lost.
    """
    num_keys = len(batch_sizes)
    if num_keys == 1:
        step = functools.partial(
            _step_one_key, size=batch_sizes[0], drop_remainder=drop_remainder
        )
    else:
        step = functools.partial(
            _step,
            key_fn=key_fn,
            sizes=tf.constant(batch_sizes, tf.int32),
            drop_remainder=drop_remainder,
        )
    empty = _empty_rows(chunks.element_spec)
    return scan(with_end(chunks, empty), _to_parts(empty), plain(step))


def _promote(keys, flush, sizes):
    """At the end of an epoch: the rows left over in key k (fewer than a
    batch) move up to key k + 1, whose rows are at least as long, so that
    only the last key is left with a partial batch. A loop over the keys
    that runs only on the end element: the same steps unrolled per key,
    in every chunk, would add graph nodes that tf.data sets up again for
    every new iterator."""
    num_keys = sizes.shape[0]

    def promote_one(k, keys):
        mine = tf.cast(tf.equal(keys, k), tf.int32)
        count = tf.reduce_sum(mine)
        left = count % tf.gather(sizes, k)
        rank = tf.cumsum(mine) - 1
        move = tf.logical_and(mine > 0, rank >= count - left)
        return k + 1, tf.where(move, k + 1, keys)

    _, keys = tf.while_loop(
        lambda k, _: tf.logical_and(flush, k < num_keys - 1),
        promote_one,
        (tf.constant(0), keys),
    )
    return keys


def _step_one_key(state, inputs, size, drop_remainder):
    """`regroup`'s step with one key: rows stay in order, so slices
    replace the sort."""
    chunk, flush = inputs
    old = _from_parts(state)
    rows = {k: tf.concat([old[k], chunk[k]], axis=0) for k in chunk}
    count = tf.shape(rows["truncated"])[0]
    emit = (count // size) * size
    if not drop_remainder:
        emit = tf.where(flush, count, emit)
    batches = (emit + size - 1) // size
    lengths = tf.minimum(size, emit - tf.range(batches) * size)
    lengths = tf.cast(lengths, tf.int64)
    output = {
        k: tf.RaggedTensor.from_row_lengths(v[:emit], lengths, validate=False)
        for k, v in rows.items()
    }
    keep = tf.where(flush, count, emit)
    new_state = _to_parts({k: v[keep:] for k, v in rows.items()})
    return new_state, (output, tf.zeros([batches], tf.int32))


def _step(state, inputs, key_fn, sizes, drop_remainder):
    """`regroup`'s step: the chunk's rows joined to those waiting, sorted
    by key, and every key's full batches cut out (at the end, every row)."""
    chunk, flush = inputs
    num_keys = sizes.shape[0]
    rows = _join(state, chunk)
    keys = tf.cast(key_fn(rows), tf.int32)
    if not drop_remainder:
        keys = _promote(keys, flush, sizes)
    count = tf.size(keys)
    # Keys are in [0, num_keys): a segment sum counts them in fewer graph
    # nodes than `bincount`.
    counts = marks(keys, num_keys)
    emit = (counts // sizes) * sizes
    if not drop_remainder:
        emit = tf.where(flush, counts, emit)
    order = argsort(keys)
    sorted_keys = tf.gather(keys, order)
    rank = tf.range(count) - tf.gather(
        tf.cumsum(counts, exclusive=True), sorted_keys
    )
    out = rank < tf.gather(emit, sorted_keys)
    out_index = tf.gather(order, tf.reshape(tf.where(out), [-1]))
    keep_index = tf.gather(order, tf.reshape(tf.where(~out), [-1]))
    keep_index = keep_index[: tf.where(flush, 0, tf.size(keep_index))]
    batch_key, lengths = _batch_lengths(emit, sizes)
    output = {
        k: tf.RaggedTensor.from_row_lengths(
            tf.gather(v, out_index), lengths, validate=False
        )
        for k, v in rows.items()
    }
    new_state = _to_parts(
        {k: tf.gather(v, keep_index) for k, v in rows.items()}
    )
    return new_state, (output, batch_key)


def _batch_lengths(emit, sizes):
    """`(batch_key, lengths)`: the key and the number of rows of each batch
    when key k emits `emit[k]` rows in batches of `sizes[k]`."""
    batches = (emit + sizes - 1) // sizes
    # The key of each batch: `tf.repeat(range(num_keys), batches)`, in
    # fewer graph nodes than `repeat`.
    batch_key = row_ids(tf.concat([[0], tf.cumsum(batches)], 0))
    within = tf.range(tf.reduce_sum(batches)) - tf.gather(
        tf.cumsum(batches, exclusive=True), batch_key
    )
    batch_size = tf.gather(sizes, batch_key)
    lengths = tf.minimum(
        batch_size, tf.gather(emit, batch_key) - within * batch_size
    )
    return batch_key, tf.cast(lengths, tf.int64)


# --- Padding and handing out a chunk's batches ---


def pad_groups(rows, keys, plan, lengths, sizes, count_truncated, epoch=None):
    """The batches one chunk of the bucket regrouping completes, padded at
    once: `rows` `[K, (b), ...]` and `keys` `[K]` (ascending) from
    `packing.regroup`; `lengths` and `sizes`, each bucket's boundary and
    batch size.

    All the rows are finalized together, at the longest boundary among
    them. Each row is finalized alone, and the rows of bucket `k` are no
    longer than its boundary, so cutting a bucket's rows to it
    (`cut_groups`) gives exactly what a `finalize` of each batch at
    that boundary gives. A bucket's batches are consecutive, and only the
    last one can be partial.

    Returns `(groups, features, labels, weights[, truncated])`: per bucket
    present, `groups` holds its first row, number of rows, number of
    batches, boundary, batch size and first batch; `features`, `labels`
    and `weights` `[R, width]` (labels and weights `[R]` for
    classification); `truncated`, the number of truncated rows of each
    batch `[K]`. `epoch`: the key of the epoch's masks (`task="mlm"`).
    """
    splits = rows["truncated"].row_splits
    flat = {name: value.values for name, value in rows.items()}
    width = tf.reduce_max(tf.concat([tf.gather(lengths, keys), [1]], 0))
    features, labels, weights, _ = plan.finalize(flat, width, epoch=epoch)
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


def cut_groups(groups, features, targets_, truncated, strip):
    """The batches of one chunk of `pad_groups`, as a dataset.

    Each bucket's batches are cut from the padded rows in one piece: its
    rows, cut to its boundary, a partial last batch completed with
    all-padding rows (every feature 0, or its `FILL_VALUES`, as `finalize`
    fills), reshaped to
    `[n, b, length]` and handed out by `from_tensor_slices`. No function
    runs once per batch (a per-batch `finalize` costs more than the
    tokenizer's share of a batch of short lines; see benchmarks/README.md).
    `targets_` is `(labels, weights)`. The elements are `strip(features,
    labels, weights)`, or `(features, labels, weights, truncated)` with
    `truncated` (a 1-tuple).
    """

    def one_bucket(start, real, count, length, size, first):
        fill = tf.cast(count * size, tf.int64) - real
        zero = tf.constant(0, tf.int64)
        begin = tf.stack([start, zero])
        extent = tf.stack([real, tf.cast(length, tf.int64)])
        padding = tf.stack([tf.stack([zero, fill]), [0, 0]])
        shape = tf.stack([count, size, length])

        def cut(value, fill=0):
            if value is None:
                return None
            if isinstance(value, dict):  # labels of several outputs
                return {name: cut(v) for name, v in value.items()}
            if value.shape.rank == 1:  # per-row labels and features
                value = tf.slice(value, begin[:1], extent[:1])
                value = tf.pad(value, padding[:1], constant_values=fill)
                return tf.reshape(value, shape[:2])
            # Trailing dimensions (the offsets' 2) are taken whole.
            more = value.shape.rank - 2
            value = tf.pad(
                tf.slice(
                    value,
                    tf.concat([begin, tf.zeros([more], tf.int64)], 0),
                    tf.concat([extent, tf.fill([more], np.int64(-1))], 0),
                ),
                tf.concat([padding, tf.zeros([more, 2], tf.int64)], 0),
                constant_values=fill,
            )
            trailing = tf.shape(value, out_type=tf.int64)[2:]
            return tf.reshape(
                value, tf.concat([tf.cast(shape, tf.int64), trailing], 0)
            )

        mine = (
            {
                name: cut(v, FILL_VALUES.get(name, 0))
                for name, v in features.items()
            },
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


# --- Boundaries ---


def sample_lengths(lines, plan, sample_size, chunk_size):
    """Padded lengths of the first `sample_size` non-empty examples."""
    lengths = []
    for chunk in batch_lines(
        lines.take(sample_size), min(sample_size, chunk_size)
    ):
        chunk = chunk if isinstance(chunk, tuple) else (chunk,)
        lengths.append(plan.lengths(plan.tokenize(*chunk)).numpy())
    return np.concatenate(lengths) if lengths else np.zeros([0], np.int64)


def choose_boundaries(lengths, num_buckets: int, max_length: int) -> list[int]:
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
