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
table has (after the first piece, with `##` put before each candidate).
Each distinct word goes through the loop once.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import gather_rows
from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers.engines._ops import take


def _flat_where(mask):
    return tf.reshape(tf.where(mask), [-1])


class WordPieceMatcher(tf.Module):
    """Words -> WordPiece ids, as HF's `WordPiece` model.

    Args:
        tokens: dict, `{token: id}` of the tokens HF can match (the `##`
            ones with their `##`).
        unknown_id: int.
        max_word_length: int, in characters.
    """

    def __init__(self, tokens, *, unknown_id, max_word_length):
        super().__init__()
        self.unknown_id = unknown_id
        self.max_word_length = max_word_length
        self._table = lookup_table(
            list(tokens),
            list(tokens.values()),
            -1,
            key_dtype=tf.string,
            value_dtype=tf.int32,
        )
        first = [len(t) for t in tokens if not t.startswith("##")]
        rest = [len(t) - 2 for t in tokens if t.startswith("##")]
        self._first_length = max(first, default=1)
        self._rest_length = max(rest, default=1)
        # The length in bytes of each id's piece of a word (no `##`).
        piece_bytes = [0] * (max([*tokens.values(), unknown_id]) + 1)
        for token, i in tokens.items():
            piece_bytes[i] = len(token.encode()) - 2 * token.startswith("##")
        self._piece_bytes = tf.constant(piece_bytes, tf.int64)

    def match(self, words):
        """`[W]` words -> (int32 ids `[P]`, int64 pieces per word `[W]`)."""
        ids = self._table.lookup(words)
        missed = ids < 0
        return tf.cond(
            tf.reduce_any(missed),
            lambda: self._match_pieces(words, ids, missed),
            lambda: (ids, tf.ones_like(ids, tf.int64)),
        )

    def match_with_spans(self, words):
        """`match`, and where each piece is: `(ids, counts, words of the
        pieces [P], starts [P], ends [P])`, int64 byte offsets in the word.
        A word of one piece (a token, or the unknown token) is covered
        whole."""
        ids = self._table.lookup(words)
        missed = ids < 0
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        return tf.cond(
            tf.reduce_any(missed),
            lambda: self._match_pieces(words, ids, missed, lengths),
            lambda: (
                ids,
                tf.ones_like(lengths),
                tf.range(tf.size(ids, out_type=tf.int64)),
                tf.zeros_like(lengths),
                lengths,
            ),
        )

    def _match_pieces(self, words, ids, missed, lengths=None):
        """The words not found whole, each distinct one once; with their
        `lengths` in bytes, also the spans of `match_with_spans`."""
        missing = _flat_where(missed)[:, None]  # [M, 1] word index
        distinct, which = tf.unique(take(words, missed), tf.int64)
        pieces, piece_counts = self._greedy(distinct)
        # Word i is row i of `ids` appended to `pieces` (found whole), or
        # the pieces of its distinct word.
        counts = tf.tensor_scatter_nd_update(
            tf.ones_like(ids, tf.int64),
            missing,
            tf.gather(piece_counts, which),
        )
        first = tf.tensor_scatter_nd_update(
            tf.size(pieces, out_type=tf.int64)
            + tf.range(tf.size(ids, out_type=tf.int64)),
            missing,
            tf.gather(tf.cumsum(piece_counts, exclusive=True), which),
        )
        splits = tf.concat([[0], tf.cumsum(counts)], 0)
        if lengths is None:
            out = gather_rows(tf.concat([pieces, ids], 0), first, splits)
            return out, counts
        word = row_ids(splits)
        at = (
            tf.gather(first, word)
            + tf.range(splits[-1])
            - tf.gather(splits, word)
        )
        # The pieces of a distinct word lie end to end in it; one piece
        # alone is the unknown token (a word found is two pieces or more),
        # which covers the word.
        piece_splits = tf.concat([[0], tf.cumsum(piece_counts)], 0)
        piece_word = row_ids(piece_splits)
        piece_lengths = tf.where(
            tf.gather(piece_counts == 1, piece_word),
            tf.gather(
                tf.cast(tf.strings.length(distinct), tf.int64), piece_word
            ),
            tf.gather(self._piece_bytes, pieces),
        )
        piece_starts = starts_in_rows(piece_lengths, piece_splits, piece_word)
        return (
            tf.gather(tf.concat([pieces, ids], 0), at),
            counts,
            word,
            tf.gather(tf.concat([piece_starts, tf.zeros_like(lengths)], 0), at),
            tf.gather(
                tf.concat([piece_starts + piece_lengths, lengths], 0), at
            ),
        )

    def _greedy(self, words):
        """`[D]` words that are no token -> (int32 ids, int64 counts)."""
        size = tf.strings.length(words, unit="UTF8_CHAR")
        fits = size <= self.max_word_length
        active = _flat_where(fits)
        found = (_empty(tf.int64), _empty(tf.int64), _empty(tf.int32))

        def step(k, active, position, found, failed):
            remaining = tf.gather(size, active) - position
            # Piece 0 is shorter than the word (which is no token).
            limit = tf.where(
                k > 0,
                tf.minimum(remaining, self._rest_length),
                tf.minimum(remaining - 1, self._first_length),
            )
            length, piece_id = _longest_prefix(
                self._table,
                tf.where(k > 0, "##", ""),
                tf.gather(words, active),
                position,
                limit,
            )
            hit = length > 0
            word, piece, ids = found
            found = (
                tf.concat([word, take(active, hit)], 0),
                tf.concat([piece, k + tf.zeros_like(take(active, hit))], 0),
                tf.concat([ids, take(piece_id, hit)], 0),
            )
            failed = tf.concat([failed, take(active, tf.logical_not(hit))], 0)
            position += length
            going = hit & (length < remaining)
            return (
                k + 1,
                take(active, going),
                take(position, going),
                found,
                failed,
            )

        _, _, _, (word, piece, piece_id), failed = tf.while_loop(
            lambda k, active, *_: tf.size(active) > 0,
            step,
            (
                tf.constant(0, tf.int64),
                active,
                tf.zeros_like(active, tf.int32),
                found,
                _empty(tf.int64),
            ),
            shape_invariants=(
                tf.TensorShape([]),
                *[tf.TensorShape([None])] * 2,
                (tf.TensorShape([None]),) * 3,
                tf.TensorShape([None]),
            ),
        )
        # Too long, or a piece not found: the unknown token.
        num_words = tf.size(words, out_type=tf.int64)
        unknown = tf.logical_not(fits) | (
            marks(failed, num_words, tf.ones_like(failed)) > 0
        )
        good = tf.logical_not(tf.gather(unknown, word))
        word, piece, piece_id = (take(x, good) for x in (word, piece, piece_id))
        counts = tf.where(
            unknown,
            tf.ones_like(size, tf.int64),
            marks(word, num_words, tf.ones_like(word)),
        )
        starts = tf.cumsum(counts, exclusive=True)
        # An unknown word: one id at its start; the pieces of the others
        # at their start + piece index.
        unknown_at = take(starts, unknown)
        index = tf.concat([unknown_at, tf.gather(starts, word) + piece], 0)
        values = tf.concat(
            [tf.fill(tf.shape(unknown_at), self.unknown_id), piece_id], 0
        )
        out = tf.scatter_nd(index[:, None], values, [tf.reduce_sum(counts)])
        return out, counts


def _longest_prefix(table, prefix, words, position, limit):
    """For each word, the longest token `prefix + piece` in `table`, piece
    at most `limit` characters from character `position`: `(its length,
    or 0 if there is none; its id)`."""
    splits = tf.concat([[0], tf.cumsum(tf.cast(limit, tf.int64))], 0)
    owner = row_ids(splits)  # [C] the word of each candidate
    length = tf.cast(tf.range(splits[-1]) - tf.gather(splits, owner), tf.int32)
    length += 1
    candidates = tf.strings.substr(
        tf.gather(words, owner),
        tf.gather(position, owner),
        length,
        unit="UTF8_CHAR",
    )
    ids = table.lookup(tf.strings.join([prefix, candidates]))
    ids = tf.concat([ids, [-1]], 0)
    score = tf.where(ids[:-1] >= 0, length, 0)
    best = tf.maximum(
        tf.math.unsorted_segment_max(
            score, owner, tf.size(words, out_type=tf.int64)
        ),
        0,
    )
    at = tf.where(
        best > 0, splits[:-1] + tf.cast(best, tf.int64) - 1, splits[-1]
    )
    return best, tf.gather(ids, at)


def _empty(dtype):
    return tf.zeros([0], dtype)
