"""Vectorised row regrouping, sequence packing and bucket boundaries.

Everything here works on whole chunks of rows (`tf.RaggedTensor` `[N, None]`)
at once: no per-line `tf.data` step, no `unbatch` of single rows.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def plain(function):
    """`function` for `tf.data`, without AutoGraph: faster to trace, and
    the graph functions here have no Python control flow on tensors."""
    return tf.autograph.experimental.do_not_convert(function)


def segment_attention_mask(segment_ids, causal=False):
    """Turns packed `segment_ids` into a block-diagonal attention mask.

    Position `i` may attend to position `j` when both hold a real token
    (`segment_id > 0`) of the same segment (and, with `causal=True`, when
    `j <= i`). Padding (segment 0) attends to nothing and is attended by
    nothing. The result can be passed as `attention_mask` to
    `keras.layers.MultiHeadAttention`.

    Args:
        segment_ids: int tensor `[batch, seq_len]` (or `[seq_len]`), as made
            by `make_dataset(..., batching="pack")`: 1, 2, ... per segment,
            0 for padding.
        causal: bool. Also hide future positions. Defaults to `False`.

    Returns:
        bool tensor `[batch, seq_len, seq_len]` (or `[seq_len, seq_len]`).

    Example:

    >>> mask = tf_input.data.segment_attention_mask([[1, 1, 2, 0]])
    >>> mask.numpy().astype(int)[0].tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    """
    if not isinstance(causal, bool):
        raise ValueError(
            f"`causal` must be True or False. Received: causal={causal!r}."
        )
    segment_ids = tf.convert_to_tensor(segment_ids)
    if not segment_ids.dtype.is_integer:
        raise ValueError(
            "`segment_ids` must be integers. "
            f"Received: segment_ids with dtype {segment_ids.dtype.name}."
        )
    if segment_ids.shape.rank not in (1, 2):
        raise ValueError(
            "`segment_ids` must have shape [seq_len] or [batch, seq_len]. "
            f"Received: segment_ids with shape {segment_ids.shape}."
        )
    query = segment_ids[..., :, None]
    key = segment_ids[..., None, :]
    mask = tf.logical_and(tf.equal(query, key), key > 0)
    if causal:
        length = tf.shape(segment_ids)[-1]
        lower = tf.linalg.band_part(tf.ones([length, length], tf.bool), -1, 0)
        mask = tf.logical_and(mask, lower)
    return mask


def pack_rows(ids, length):
    """Lays the rows of `ids` end to end and cuts them every `length` tokens.

    Args:
        ids: `tf.RaggedTensor` `[N, None]`, one example per row.
        length: int, the packed row length.

    Returns:
        A dict of `tf.RaggedTensor` `[R, None]` (every row `length` long but
        the last): `ids`, `segment_ids` (1, 2, ... within each packed row:
        an example cut by a row end continues as segment 1 of the next row)
        and `positions` (0, 1, ... restarting at each segment).
    """
    flat = ids.flat_values
    total = tf.size(flat, out_type=tf.int64)
    example = ids.value_rowids()
    index = tf.range(total)
    row_start = (index // length) * length
    # Segment k of a packed row: examples counted from the row's first one.
    first_example = tf.gather(example, row_start)
    segment_ids = tf.cast(example - first_example + 1, tf.int32)
    segment_start = tf.maximum(tf.gather(ids.row_starts(), example), row_start)
    positions = tf.cast(index - segment_start, tf.int32)
    splits = tf.concat([tf.range(0, total, length), [total]], axis=0)

    def rows(values):
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    return {
        "ids": rows(flat),
        "segment_ids": rows(segment_ids),
        "positions": rows(positions),
    }


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


def _empty_rows(spec):
    rows = {}
    for name, value in spec.items():
        if isinstance(value, tf.RaggedTensorSpec):
            rows[name] = tf.RaggedTensor.from_row_lengths(
                tf.zeros([0], value.dtype), tf.zeros([0], tf.int64)
            )
        else:
            rows[name] = tf.zeros([0], value.dtype)
    return rows


def regroup(chunks, key_fn, batch_sizes, drop_remainder):
    """Regroups chunks of rows into batches of rows with equal keys.

    Args:
        chunks: dataset of dicts of `[N, ...]` rows (ragged `[N, None]` or
            dense `[N]`), N varying.
        key_fn: rows dict -> int32 `[N]` keys in `[0, len(batch_sizes))`.
        batch_sizes: list of int, the batch size of each key.
        drop_remainder: bool. Drop the last partial batch of each key
            instead of emitting it.

    Returns:
        A dataset of `(rows, key)`: `rows` a dict of `[b, ...]` rows, with
        `b == batch_sizes[key]` except for the last batch of a key. Within a
        key, rows keep their input order. Rows wait across chunks until
        their batch is full, so no row is lost.
    """
    num_keys = len(batch_sizes)
    sizes = tf.constant(batch_sizes, tf.int32)

    def step(state, inputs):
        chunk, flush = inputs
        old = _from_parts(state)
        rows = {k: tf.concat([old[k], chunk[k]], axis=0) for k in chunk}
        keys = tf.cast(key_fn(rows), tf.int32)
        count = tf.size(keys)
        counts = tf.math.bincount(
            keys, minlength=num_keys, maxlength=num_keys, dtype=tf.int32
        )
        full = (counts // sizes) * sizes
        if drop_remainder:
            emit = full
        else:
            emit = tf.where(flush, counts, full)
        order = tf.argsort(keys, stable=True)
        sorted_keys = tf.gather(keys, order)
        rank = tf.range(count) - tf.gather(
            tf.cumsum(counts, exclusive=True), sorted_keys
        )
        out = rank < tf.gather(emit, sorted_keys)
        out_index = tf.gather(order, tf.reshape(tf.where(out), [-1]))
        keep_index = tf.gather(order, tf.reshape(tf.where(~out), [-1]))
        keep_index = keep_index[: tf.where(flush, 0, tf.size(keep_index))]
        batches = (emit + sizes - 1) // sizes
        batch_key = tf.repeat(tf.range(num_keys), batches)
        within = tf.range(tf.reduce_sum(batches)) - tf.gather(
            tf.cumsum(batches, exclusive=True), batch_key
        )
        batch_size = tf.gather(sizes, batch_key)
        lengths = tf.minimum(
            batch_size, tf.gather(emit, batch_key) - within * batch_size
        )
        lengths = tf.cast(lengths, tf.int64)
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

    empty = _empty_rows(chunks.element_spec)
    flagged = chunks.map(plain(lambda rows: (rows, False))).concatenate(
        tf.data.Dataset.from_tensors((empty, True))
    )
    return flagged.scan(_to_parts(empty), plain(step)).unbatch()


# --- Bucket boundaries ---


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
