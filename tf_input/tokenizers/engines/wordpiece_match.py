"""WordPiece's greedy longest-match-first, in core TensorFlow ops.

Hugging Face's `WordPiece` model, for each word: a word of more than
`max_word_length` characters is the unknown token; otherwise, from the
start of the word, take the longest prefix that is a token (after the
first piece, the longest that is a token once `##` is put before it),
and go on after it; if at some point no prefix is a token, the whole
word is the unknown token.

Most words are one token, so each word is first looked up whole. Only
the others go through the greedy loop: a `tf.while_loop` over pieces, all
remaining words at once, that cuts every prefix of 1 to K characters (K:
the longest token, in characters) at once and keeps the longest one the
table has. Continuation tokens sit in their own table, keyed without
`##`, so no candidate is ever joined to a prefix.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import gather_rows
from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers._tables import lookup_table


def _length(tokens):
    return max((len(t) for t in tokens), default=1)


class WordPieceMatcher(tf.Module):
    """Words -> WordPiece ids, as HF's `WordPiece` model.

    Args:
        words: dict, `{token: id}` of the tokens a word can start with.
        continuations: dict, `{token without "##": id}` of the `##` tokens.
        unknown_id: int.
        max_word_length: int, in characters.
    """

    def __init__(self, words, continuations, *, unknown_id, max_word_length):
        super().__init__()
        self.unknown_id = unknown_id
        self.max_word_length = max_word_length
        self._words = lookup_table(
            list(words),
            list(words.values()),
            -1,
            key_dtype=tf.string,
            value_dtype=tf.int32,
        )
        self._continuations = lookup_table(
            list(continuations),
            list(continuations.values()),
            -1,
            key_dtype=tf.string,
            value_dtype=tf.int32,
        )
        self._word_length = _length(words)
        self._continuation_length = _length(continuations)

    def match(self, words):
        """`[W]` words -> (int32 ids `[P]`, int64 pieces per word `[W]`)."""
        ids = self._words.lookup(words)
        missed = ids < 0
        return tf.cond(
            tf.reduce_any(missed),
            lambda: self._match_pieces(words, ids, missed),
            lambda: (ids, tf.ones_like(ids, tf.int64)),
        )

    def _match_pieces(self, words, ids, missed):
        """The words not found whole, each distinct one once."""
        missing = tf.where(missed)[:, 0]  # [M] word index
        distinct, which = tf.unique(tf.gather(words, missing), tf.int64)
        pieces, piece_counts = self._greedy(distinct)
        piece_starts = tf.cumsum(piece_counts, exclusive=True)
        # Word i is row i of `ids` appended to `pieces` (found whole), or
        # the pieces of its distinct word.
        counts = tf.tensor_scatter_nd_update(
            tf.ones_like(ids, tf.int64),
            missing[:, None],
            tf.gather(piece_counts, which),
        )
        first = tf.tensor_scatter_nd_update(
            tf.size(pieces, out_type=tf.int64)
            + tf.range(tf.size(ids, out_type=tf.int64)),
            missing[:, None],
            tf.gather(piece_starts, which),
        )
        splits = tf.concat([[0], tf.cumsum(counts)], 0)
        out = gather_rows(tf.concat([pieces, ids], 0), first, splits)
        return out, counts

    def _greedy(self, words):
        """`[D]` words that are no token -> (int32 ids, int64 counts)."""
        size = tf.strings.length(words, unit="UTF8_CHAR")
        num_words = tf.size(words, out_type=tf.int64)
        # Piece 0 with the word table (shorter than the word, which is no
        # token), then the `##` pieces in the loop.
        active = tf.where(size <= self.max_word_length)[:, 0]
        state = self._step(
            self._words,
            self._word_length,
            words,
            size,
            step=tf.constant(0, tf.int64),
            active=active,
            position=tf.zeros_like(active, tf.int32),
            found=(_empty(tf.int64), _empty(tf.int64), _empty(tf.int32)),
            failed=_empty(tf.int64),
        )

        def body(step, active, position, found, failed):
            return self._step(
                self._continuations,
                self._continuation_length,
                words,
                size,
                step,
                active,
                position,
                found,
                failed,
            )

        _, _, _, (word, piece, piece_id), failed = tf.while_loop(
            lambda step, active, *_: tf.size(active) > 0,
            body,
            state,
        )
        # Too long, or a piece not found: the unknown token.
        unknown = tf.logical_or(
            size > self.max_word_length,
            marks(failed, num_words, tf.ones_like(failed, tf.int32)) > 0,
        )
        good = tf.logical_not(tf.gather(unknown, word))
        word, piece, piece_id = (
            tf.boolean_mask(x, good) for x in (word, piece, piece_id)
        )
        counts = tf.where(
            unknown,
            tf.ones_like(size, tf.int64),
            marks(word, num_words, tf.ones_like(word)),
        )
        starts = tf.cumsum(counts, exclusive=True)
        # An unknown word: one id at its start; the pieces of the others
        # at their start + piece index.
        unknown_at = tf.where(unknown)[:, 0]
        index = tf.concat(
            [tf.gather(starts, unknown_at), tf.gather(starts, word) + piece], 0
        )
        values = tf.concat(
            [tf.fill(tf.shape(unknown_at), self.unknown_id), piece_id], 0
        )
        out = tf.scatter_nd(index[:, None], values, [tf.reduce_sum(counts)])
        return out, counts

    def _step(
        self,
        table,
        max_length,
        words,
        size,
        step,
        active,
        position,
        found,
        failed,
    ):
        """One piece of every active word: its longest prefix in `table`
        (at step 0, shorter than the whole word)."""
        remaining = tf.gather(size, active) - position
        longest = tf.where(step > 0, remaining, remaining - 1)
        length, piece_id = _longest_prefix(
            table,
            tf.minimum(longest, max_length),
            tf.gather(words, active),
            position,
        )
        hit = length > 0
        word, piece, ids = found
        found = (
            tf.concat([word, tf.boolean_mask(active, hit)], 0),
            tf.concat(
                [piece, tf.fill([tf.reduce_sum(tf.cast(hit, tf.int32))], step)],
                0,
            ),
            tf.concat([ids, tf.boolean_mask(piece_id, hit)], 0),
        )
        failed = tf.concat(
            [failed, tf.boolean_mask(active, tf.logical_not(hit))], 0
        )
        position += length
        going = hit & (length < remaining)
        return (
            step + 1,
            tf.boolean_mask(active, going),
            tf.boolean_mask(position, going),
            found,
            failed,
        )


def _longest_prefix(table, count, words, position):
    """For each word, the longest token in `table` of at most `count`
    characters that starts at character `position`: `(its length, or 0
    if there is none; its id)`."""
    count = tf.cast(count, tf.int64)
    splits = tf.concat([[0], tf.cumsum(count)], 0)
    owner = row_ids(splits)  # [C] the word of each candidate
    length = tf.range(splits[-1]) - tf.gather(splits, owner) + 1
    length = tf.cast(length, tf.int32)
    candidates = tf.strings.substr(
        tf.gather(words, owner),
        tf.gather(position, owner),
        length,
        unit="UTF8_CHAR",
    )
    ids = tf.concat([table.lookup(candidates), [-1]], 0)
    score = tf.where(ids[:-1] >= 0, length, 0)
    best = tf.maximum(
        tf.math.unsorted_segment_max(
            score, owner, tf.size(words, out_type=tf.int64)
        ),
        0,
    )
    at = tf.where(best > 0, splits[:-1] + tf.cast(best, tf.int64) - 1, -1)
    return best, tf.gather(ids, tf.where(at < 0, splits[-1], at))


def _empty(dtype):
    return tf.zeros([0], dtype)
