"""`"pack"` batching: whole examples packed into rows of `max_length`.

* `pack_rows`: a chunk's examples into rows, close to first-fit
  decreasing, in rounds of a `tf.while_loop` (not one step per example);
* `segment_attention_mask`: the block-diagonal attention mask that keeps
  a packed row's examples apart.

Everything here works on whole chunks of rows (`tf.RaggedTensor`
`[N, None]`) at once: no per-line `tf.data` step.
"""

from __future__ import annotations

import functools
import warnings

import keras
import tensorflow as tf
from keras import ops

from tf_input._ragged import row_ids
from tf_input._validation import check_bool


def segment_attention_mask(example_ids=None, causal=False, *, segment_ids=None):
    """Turns packed `example_ids` into a block-diagonal attention mask.

    Position `i` may attend to position `j` when both hold a real token
    (`example_id > 0`) of the same example (and, with `causal=True`, when
    `j <= i`: a decoder's mask, each token sees only itself and the tokens
    before it in its own example). Padding (example 0) attends to nothing
    and is attended by nothing. The result can be passed as
    `attention_mask` to `keras.layers.MultiHeadAttention`.

    Built with `keras.ops`, so it works on tensors, NumPy arrays and on the
    symbolic inputs of a functional model:
    `segment_attention_mask(keras.Input((None,), dtype="int32"))`.

    Args:
        example_ids: int tensor `[batch, seq_len]` (or `[seq_len]`), as
            made by `make_dataset(..., batching="pack")`: 1, 2, ... per
            example of a row, 0 for padding.
        causal: bool. Also hide future positions. Defaults to `False`.
        segment_ids: deprecated name of `example_ids` (`segment_ids` are
            BERT's token types everywhere else).

    Returns:
        bool tensor `[batch, seq_len, seq_len]` (or `[seq_len, seq_len]`).

    Example:

    >>> mask = tf_input.data.segment_attention_mask([[1, 1, 2, 0]])
    >>> np.asarray(mask).astype(int)[0].tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    >>> causal = tf_input.data.segment_attention_mask([[1, 1, 2, 0]], True)
    >>> np.asarray(causal).astype(int)[0].tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    """
    if segment_ids is not None:
        if example_ids is not None:
            raise TypeError(
                "Pass `example_ids` only (`segment_ids` is its deprecated "
                "name). Received both."
            )
        warnings.warn(
            "`segment_attention_mask(segment_ids=...)` is deprecated: the "
            "argument is `example_ids` (the packed example numbers); "
            "`segment_ids` means token types everywhere else.",
            DeprecationWarning,
            stacklevel=2,
        )
        example_ids = segment_ids
    if example_ids is None:
        raise TypeError(
            "`segment_attention_mask` needs `example_ids`, the packed "
            'example numbers of `make_dataset(..., batching="pack")`.'
        )
    causal = check_bool("causal", causal)
    if not isinstance(example_ids, keras.KerasTensor):
        example_ids = tf.convert_to_tensor(example_ids)
    dtype = keras.backend.standardize_dtype(example_ids.dtype)
    if "int" not in dtype:
        raise TypeError(
            "`example_ids` must be integers. "
            f"Received: example_ids with dtype {dtype}."
        )
    if len(example_ids.shape) not in (1, 2):
        raise ValueError(
            "`example_ids` must have shape [seq_len] or [batch, seq_len]. "
            f"Received: example_ids with shape {tuple(example_ids.shape)}."
        )
    query = ops.expand_dims(example_ids, -1)
    key = ops.expand_dims(example_ids, -2)
    mask = ops.logical_and(ops.equal(query, key), ops.greater(key, 0))
    if causal:
        # Positions by a cumulative sum: works on symbolic tensors, whose
        # length is not known.
        position = ops.cumsum(ops.ones_like(example_ids), axis=-1)
        lower = ops.greater_equal(
            ops.expand_dims(position, -1), ops.expand_dims(position, -2)
        )
        mask = ops.logical_and(mask, lower)
    return mask


def _cumulative_max(values):
    """Running maximum of a 1-D int32 tensor, exactly.

    TF has no cumulative max, so this takes the running log-sum-exp of the
    values scaled by 64 (float64): it lies between the running maximum and
    that maximum + ln(count) / 64, so rounding down (after adding 0.25
    against float error) is exact for fewer than e**48 values of magnitude
    below 2**31. Five ops instead of the ~40 of a log-step maximum: the
    packer runs this every round, and tf.data pays for every graph node
    again on every new iterator (the start-up row of
    benchmarks/README.md).
    """
    scaled = tf.cast(values, tf.float64) * 64.0
    running = tf.math.cumulative_logsumexp(scaled) / 64.0
    return tf.cast(tf.floor(running + 0.25), tf.int32)


def argsort(values, descending=False):
    """`tf.argsort(values, direction, stable=True)` of 1-D ints, computed
    as it does (`top_k` of the values, or of their bitwise inverse
    `-values - 1` for ascending order), in 2-3 graph nodes instead of its
    8-11: tf.data sets every node up again for each new iterator."""
    if not descending:
        values = tf.bitwise.invert(values)
    return tf.math.top_k(values, tf.size(values)).indices


def _lower_bound(sorted_values, values):
    """`tf.searchsorted(sorted_values, values, side="left")` of 1-D int32
    tensors: the same `LowerBound` op, without the wrapper's reshapes
    (5 graph nodes instead of 14)."""
    found = tf.raw_ops.LowerBound(
        sorted_inputs=tf.expand_dims(sorted_values, 0),
        values=tf.expand_dims(values, 0),
        out_type=tf.int32,
    )
    return tf.reshape(found, [-1])


def _pack_round(sizes, length, free, row, gaps, num_rows):
    """One round of `pack_rows`: every open row, largest room first,
    takes the largest free piece that fits it (two rows never take the same
    piece); if no piece fits any row, new rows open. Both are in one graph,
    without a `tf.cond`, which would cost a function call per round and
    more nodes for tf.data to set up on every new iterator."""
    free_at = tf.cast(tf.reshape(tf.where(free), [-1]), tf.int32)
    free_sizes = tf.gather(sizes, free_at)
    free_count = tf.size(free_at)
    room = gaps[:num_rows]
    by_room = argsort(room, descending=True)
    # want[r]: the first (largest) free piece that fits row r. Rows
    # with less room want later pieces; a row whose wish is taken by an
    # earlier row takes the next piece: r + cummax(want - r).
    want = _lower_bound(-free_sizes, -tf.gather(room, by_room))
    rank = tf.range(num_rows)
    take = rank + _cumulative_max(want - rank)
    # `take` increases, so the rows whose piece exists are a prefix.
    placed = tf.reduce_sum(tf.cast(take < free_count, tf.int32))
    take = take[:placed]
    filled = by_room[:placed]
    # New rows, used only when nothing was placed: as many as the free
    # tokens need. The free pieces laid end to end over them: piece i
    # goes to the row its first token falls in, unless it would cross
    # that row's end. (A new row left empty by two such pieces takes
    # one of them next round: rows with the most room choose first.)
    end = tf.cumsum(free_sizes)
    start = end - free_sizes
    needed = (end[-1] + length - 1) // length
    first_open = tf.equal(num_rows, 0)
    free_rank = tf.range(free_count)
    new_row = tf.where(first_open, free_rank, start // length)
    opens = tf.logical_and(
        tf.equal(placed, 0),
        tf.where(
            first_open,
            free_rank < needed,  # the largest piece each
            tf.equal((end - 1) // length, new_row),
        ),
    )
    opened = tf.cast(tf.reshape(tf.where(opens), [-1]), tf.int32)
    new = tf.where(tf.equal(placed, 0), needed, 0)
    at = tf.concat([tf.gather(free_at, take), tf.gather(free_at, opened)], 0)[
        :, None
    ]
    rows = tf.concat([filled, num_rows + tf.gather(new_row, opened)], 0)
    free = tf.tensor_scatter_nd_update(free, at, tf.zeros_like(rows, tf.bool))
    row = tf.tensor_scatter_nd_update(row, at, rows)
    gaps = tf.tensor_scatter_nd_sub(
        gaps,
        rows[:, None],
        tf.concat(
            [tf.gather(free_sizes, take), tf.gather(free_sizes, opened)],
            0,
        ),
    )
    return free, row, gaps, num_rows + new


def pack_rows(ids, length, extra=()):
    """Packs whole examples into rows of `length` tokens (first-fit style).

    Every example is kept whole in one row; only an example longer than
    `length` is cut, into pieces of `length` tokens and a last, shorter
    piece, each piece its own example in its row. Pieces are placed
    largest first, in
    rounds (a `tf.while_loop` step per round, not per example):

    * in each round every open row, the roomiest first, takes the largest
      free piece that still fits it, all rows at once (a `searchsorted` and
      a running maximum);
    * when no piece fits any row, as many new rows open as the free tokens
      need at least. The first time, each takes one of the largest pieces
      (the rounds then fill them up); after that, the free pieces are laid
      end to end into the new rows at once, each piece that would cross a
      row end waiting for the next round.

    This is close to first-fit decreasing: on WikiText-2 test, rows of 512,
    0.985 of the positions hold tokens (exact first-fit decreasing:
    0.998). Laying the last pieces in at once, rather than one per row and
    round, takes about a third of the rounds for the same number of rows
    (see benchmarks/README.md).

    Args:
        ids: `tf.RaggedTensor` `[N, None]`, one example per row.
        length: int, the packed row length.
        extra: 1-D int32 tensors, more values per token of `ids` (its
            `flat_values` order), laid out with them.

    Returns:
        A dict of dense int32 tensors `[R, length]`: `ids` (0 = padding),
        `example_ids` (1, 2, ... in each row, the pieces in input order;
        0 = padding) and `positions` (0, 1, ... restarting at each
        piece), and `extra`, the list of the `extra` values laid out.
    """
    flat = ids.flat_values
    lengths = tf.cast(ids.row_lengths(), tf.int32)
    # Pieces: ceil(len / length) per example.
    num_pieces = (lengths + length - 1) // length
    piece_splits = tf.concat([[0], tf.cumsum(num_pieces)], 0)
    piece_example = row_ids(piece_splits)
    piece_index = tf.range(piece_splits[-1]) - tf.gather(
        piece_splits, piece_example
    )
    piece_length = tf.minimum(
        length, tf.gather(lengths, piece_example) - piece_index * length
    )
    # Sorted by length, descending; the loop works on this order.
    order = argsort(piece_length, descending=True)
    sizes = tf.gather(piece_length, order)
    count = tf.size(sizes)
    index = tf.range(count)

    # Every row ends up with a piece, so there are at most `count` rows;
    # rows not yet open have all `length` positions free.
    _, row, _, num_rows = tf.while_loop(
        lambda free, *_: tf.reduce_any(free),
        functools.partial(_pack_round, sizes, length),
        (
            tf.ones([count], tf.bool),
            tf.zeros([count], tf.int32),
            tf.fill([count], length),
            tf.constant(0),
        ),
    )
    # Pieces in the order they lie in the rows: by row, then in input
    # order (each row holds its pieces end to end from position 0).
    row = tf.gather(row, tf.math.invert_permutation(order))
    by_place = argsort(row)
    placed_row = tf.gather(row, by_place)
    # Example number = rank of the piece within its row, 1-based.
    row_first = tf.math.unsorted_segment_min(
        index, placed_row, tf.maximum(num_rows, 1)
    )
    segment = index - tf.gather(row_first, placed_row) + 1
    # The rows as one ragged tensor of the pieces' tokens, laid out by
    # `to_tensor`, not by scattering each token to its place (three
    # `scatter_nd` over every token of a chunk, many times slower). The
    # pieces tile `flat` in order, so a ragged gather puts
    # their tokens in place order with no per-token index.
    pieces = tf.RaggedTensor.from_row_lengths(
        flat, piece_length, validate=False
    )
    placed_length = tf.gather(piece_length, by_place)
    piece_of = row_ids(tf.concat([[0], tf.cumsum(placed_length)], 0))
    row_length = tf.math.unsorted_segment_sum(
        placed_length, placed_row, num_rows
    )

    # The three are laid out together, as the columns of one ragged
    # tensor: one `to_tensor` instead of three (~20 graph nodes fewer).
    columns = [
        tf.gather(pieces, by_place).flat_values,
        tf.gather(segment, piece_of),
        tf.ragged.range(placed_length).flat_values,
    ]
    for values in extra:
        values = tf.RaggedTensor.from_row_lengths(
            values, piece_length, validate=False
        )
        columns.append(tf.gather(values, by_place).flat_values)
    laid = tf.RaggedTensor.from_row_lengths(
        tf.stack(columns, axis=1), row_length, validate=False
    ).to_tensor(0, shape=[num_rows, length, len(columns)])
    ids, example_ids, positions, *more = tf.unstack(laid, axis=2)
    return {
        "ids": ids,
        "example_ids": example_ids,
        "positions": positions,
        "extra": more,
    }
