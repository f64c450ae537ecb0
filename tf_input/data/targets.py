"""Training targets: the labels, and the sample weights that mark them.

Keras's convention is a batch `(features, labels, sample_weight)`: `fit`
and `evaluate` multiply each position's loss by its weight. Here the
weight is 1 exactly where the label is a real target and 0 everywhere
else: padding, the all-padding rows that fill a last partial batch, and
an example's last token, which has no next token to predict. The label
under a weight of 0 is 0, but nothing relies on it: in many vocabularies
id 0 is a real token (`"!"` in GPT-2, Qwen and Llama 3), so only the
weight says what is a target.

* `lm_targets`: the next token of the same example (padded, bucketed or
  packed rows).
* `stream_batches`: texts joined into one stream and cut into full rows,
  the labels the next token of the stream (`batching="stream"`).
"""

from __future__ import annotations

import tensorflow as tf

from tf_input import _feature_names as names
from tf_input.data.steps import plain
from tf_input.data.steps import scan
from tf_input.data.steps import with_end


def _shift_left(values):
    """`values[:, 1:]` with a 0 column appended: each position's next."""
    return tf.pad(values[:, 1:], [[0, 0], [0, 1]])


def weights_of(real):
    return tf.cast(real, names.WEIGHT_DTYPE)


def lm_targets(token_ids, lengths=None, example_ids=None):
    """`(labels, weights)` of language-model rows.

    A position is a target when the next position holds a token of the
    same example: in rows of one example each (`lengths`, the tokens of
    each row), every position before the row's last token; in packed rows
    (`example_ids`, 0 on padding), every position whose next position has
    the same example number.
    """
    if example_ids is not None:
        real = tf.logical_and(
            tf.equal(_shift_left(example_ids), example_ids), example_ids > 0
        )
    else:
        width = tf.shape(token_ids, out_type=tf.int64)[1]
        real = tf.sequence_mask(tf.cast(lengths, tf.int64) - 1, width)
    labels = tf.where(real, _shift_left(token_ids), tf.zeros_like(token_ids))
    return labels, weights_of(real)


def stream_batches(tokens, batch_size, length, drop_remainder):
    """One token stream -> batches of full rows, with next-token targets.

    `tokens`: a dataset of 1-D int32 pieces of the stream (one per chunk
    of texts, each text followed or preceded by its separator already).
    The pieces are joined, in order, and cut into rows of exactly `length`
    tokens, `batch_size` rows a batch: what Hugging Face's `run_clm` calls
    `group_texts`. A position's label is the next token of the stream,
    across text boundaries and across rows (the last position of a row
    predicts the first token of the next row), so every token but the
    stream's last is a target, and every token is in exactly one row.

    A `scan` carries the tokens not yet cut (at most one batch's worth)
    from piece to piece; a batch is cut only once the token after it has
    arrived. At the end, the rest becomes a last batch: its last row
    filled with padding, and all-padding rows completing the batch
    (weights 0), or, with `drop_remainder`, it is dropped unless it is a
    whole batch.

    Returns a dataset of `(features, labels, weights)`, with features
    `token_ids` and `padding_mask`, each `[batch_size, length]`.
    """
    per_batch = batch_size * length
    empty = tf.zeros([0], tf.int32)

    def cut(carry, piece):
        tokens, flush = piece
        stream = tf.concat([carry, tokens], 0)
        count = tf.size(stream)
        # Batches whose every label is known: one token must follow them.
        full = tf.maximum(count - 1, 0) // per_batch
        if drop_remainder:
            rest = tf.cast(tf.equal(count, per_batch), tf.int32)
        else:
            rest = (count + per_batch - 1) // per_batch
        batches = tf.where(flush, rest, full)
        size = batches * per_batch
        padded = tf.pad(stream, [[0, tf.maximum(size + 1 - count, 0)]])
        index = tf.range(size)
        shape = tf.stack([batches, batch_size, length])
        mask = tf.cast(index < count, names.MASK_DTYPE)
        features = {
            names.TOKEN_IDS: tf.reshape(padded[:size], shape),
            names.PADDING_MASK: tf.reshape(mask, shape),
        }
        labels = tf.reshape(padded[1 : size + 1], shape)
        weights = tf.reshape(weights_of(index < count - 1), shape)
        # Nothing is carried past the end of the stream.
        carry = stream[tf.where(flush, count, tf.minimum(size, count)) :]
        return carry, (features, labels, weights)

    return scan(with_end(tokens, empty), empty, plain(cut)).unbatch()
