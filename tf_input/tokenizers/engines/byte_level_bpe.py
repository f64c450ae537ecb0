"""Byte-level BPE of words, in core TensorFlow ops.

Text is Zipfian: most words of a batch (85% of WikiText's for GPT-2) are
one token, found in a static table of all the tokens that BPE leaves
whole (computed at construction by running the merge loop over the
vocabulary; the table comes from the vocabulary and merges only), or of
all tokens with `ignore_merges` (Llama 3, tiktoken: a word that is a
token is taken whole). The other words are deduplicated, cut into chunks
at byte pairs that no merge joins (between CJK characters, mostly), and
the distinct chunks are looked up, or merged by one loop over all of them
at once (`merge.merge_sequences`). Chunks repeat far more than words
(1024 lines of Japanese: 635 kB of unknown words are 28 kB of distinct
chunks). The loop starts from one symbol per multi-byte character where
a proof from the merges says that gives the same result
(`whole_characters`).

Merges are applied by rank: the rank of a merges-list entry (Hugging
Face), or for a rank file the rank of the pair's concatenation
(tiktoken). Ties go to the leftmost pair, as in both references.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers.engines import merge
from tf_input.tokenizers.engines._ops import take
from tf_input.tokenizers.engines.whole_characters import start_from_characters
from tf_input.tokenizers.engines.whole_characters import whole_characters
from tf_input.tokenizers.engines.word_cache import WordCache
from tf_input.tokenizers.engines.word_cache import content_name


class ByteLevelBPE(tf.Module):
    """Tables and graph of one byte-level BPE.

    Args:
        token_bytes: list of bytes, what each id below `num_tokens` stands
            for (`b""` for an id without a token).
        byte_level: list of bool, per id: the token is spelled in GPT-2's
            byte alphabet (a word that may be looked up whole).
        byte_ids: list of 256 ints, the id of each byte's symbol (-1 where
            the vocabulary lacks it: such bytes are dropped, as Hugging
            Face does without an unknown token).
        merge_ids: int64 `[n, 3]`, (left, right, merged) per merge.
        ranks: int64 `[n]`, lower merges first.
        ignore_merges: bool. A word that is a token is taken whole.
        extra_words: `(texts, ids)` looked up whole before anything else
            (the placeholders of added tokens).
    """

    def __init__(
        self,
        token_bytes,
        byte_level,
        byte_ids,
        merge_ids,
        ranks,
        *,
        ignore_merges=False,
        extra_words=((), ()),
    ):
        super().__init__()
        num_tokens = len(token_bytes)
        self.num_tokens = num_tokens
        self.byte_ids = tf.constant(byte_ids, tf.int32)
        self.missing_bytes = min(byte_ids) < 0
        self.merge_table, merge_ids, ranks = merge.merge_table(
            merge_ids, ranks, num_tokens
        )
        self.all_at_once = merge.merges_properly_ordered(
            merge_ids, ranks, num_tokens
        )
        self._junction_tables(token_bytes, merge_ids)
        # Long chunks (a digit run) merge in a few steps (see MergeWindows).
        self._windows = None
        if self.all_at_once:
            self._windows = merge.MergeWindows(
                merge_ids,
                [raw[0] if raw else 0 for raw in token_bytes],
                [raw[-1] if raw else 0 for raw in token_bytes],
                [len(raw) for raw in token_bytes],
                256,
            )
        # Words that are one token: run BPE over every byte-level token and
        # keep those that come out whole (for GPT-2, all 50256 of them).
        # (From bytes: the whole characters below need this result.)
        self.char_tables = None
        candidates = [i for i in range(num_tokens) if byte_level[i]]
        # `left_whole` traces what it is given with `tf.function`, which
        # counts traces by Python code: a bound method has the same code
        # in every tokenizer (the fifth tokenizer built would log
        # TensorFlow's retracing warning), a `partial` is its own key.
        whole = merge.left_whole(
            functools.partial(self._merge_words),
            [token_bytes[i] for i in candidates],
            candidates,
        )
        self._chunk_table = lookup_table(
            [token_bytes[i] for i in whole], whole, -1, key_dtype=tf.string
        )
        if not self.missing_bytes:
            chars, values, left, right = whole_characters(
                token_bytes, whole, merge_ids, ranks, num_tokens
            )
            self.char_tables = (
                lookup_table(chars, values, -1, key_dtype=tf.int64),
                tf.constant(left.reshape(-1)),
                tf.constant(right.reshape(-1)),
            )
        # BPE of a word depends on these alone (extra words are looked up
        # before): every build of the same file shares one word cache.
        self._cache = WordCache(
            content_name(
                "bpe_words",
                token_bytes,
                np.asarray(byte_ids, np.int64),
                np.asarray(merge_ids, np.int64),
                np.asarray(ranks, np.int64),
            )
        )
        words = candidates if ignore_merges else whole
        texts, ids = extra_words
        self._word_table = lookup_table(
            [token_bytes[i] for i in words] + list(texts),
            words + list(ids),
            -1,
            key_dtype=tf.string,
        )

    def _junction_tables(self, token_bytes, merge_ids):
        """Which byte pairs (and character pairs) some merge joins: a
        chunk never starts inside such a pair."""
        first_byte = np.array([raw[0] if raw else 0 for raw in token_bytes])
        last_byte = np.array([raw[-1] if raw else 0 for raw in token_bytes])
        junction = (
            last_byte[merge_ids[:, 0]] * 256 + first_byte[merge_ids[:, 1]]
        )
        joinable = np.zeros(256 * 256, bool)
        joinable[junction] = True
        self._joinable = tf.constant(joinable)
        # Junctions between whole characters, by character pair; the others
        # (a token that starts or ends inside a character) by byte pair.
        last_char = np.array(
            [_edge_char(raw, last=True) for raw in token_bytes]
        )
        first_char = np.array(
            [_edge_char(raw, last=False) for raw in token_bytes]
        )
        left_char = last_char[merge_ids[:, 0]]
        right_char = first_char[merge_ids[:, 1]]
        whole = (left_char >= 0) & (right_char >= 0)
        partial = np.zeros(256 * 256, bool)
        partial[junction[~whole]] = True
        self._partial_joinable = tf.constant(partial)
        char_keys = np.unique(left_char[whole] * 0x110000 + right_char[whole])
        self._char_joinable = lookup_table(
            char_keys, np.ones_like(char_keys), 0, key_dtype=tf.int64
        )

    # --- Graph code ---------------------------------------------------------
    def encode(self, words):
        """`[W]` byte-level words -> ragged `[W, None]` int32 ids."""
        values, splits = merge.lookup_or_merge(
            words, self._word_table, self._kept_or_merged
        )
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    def _kept_or_merged(self, words):
        """BPE of `[M]` distinct words that are not one token: from the
        word cache, merging only the words it does not hold."""
        return self._cache.ids(words, self._merge_chunks)

    def _merge_chunks(self, words):
        """BPE of `[M]` distinct words -> `(ids, row_splits)`, by chunks.

        Words are cut at byte pairs that no merge ever joins (the first
        byte of a token can never follow the last byte of the token before
        it there), so BPE of a word is the BPE of each chunk, and each
        distinct chunk is looked up, or merged, once.
        """
        if self.missing_bytes:
            # Dropped bytes would join their neighbours: no cuts.
            return self._merge_words(words)
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        starts = tf.cumsum(lengths, exclusive=True)
        joined = tf.strings.reduce_join(words)
        byte_values = tf.cast(tf.io.decode_raw(joined, tf.uint8), tf.int32)
        num_bytes = tf.size(byte_values, out_type=tf.int64)
        pair = byte_values[:-1] * 256 + byte_values[1:]
        word_start = marks(starts[1:], num_bytes + 1)[1:num_bytes] > 0
        # Between characters, the two characters decide (a byte pair such
        # as a CJK character's last byte and the next one's first byte is
        # joined by some merge in any vocabulary with CJK words); inside a
        # character, the byte pair does.
        chars, offsets = tf.strings.unicode_decode_with_offsets(joined, "UTF-8")
        offsets = tf.cast(offsets, tf.int64)
        key = tf.cast(chars[:-1], tf.int64) * 0x110000 + tf.cast(
            chars[1:], tf.int64
        )
        at = offsets[1:]
        joins = (self._char_joinable.lookup(key) > 0) | tf.gather(
            self._partial_joinable, tf.gather(pair, tf.maximum(at - 1, 0))
        )
        char_cut = marks(take(at, ~joins), num_bytes + 1)[1:num_bytes] > 0
        inside = (byte_values[1:] >= 0x80) & (byte_values[1:] < 0xC0)
        cut = word_start | tf.where(
            inside, ~tf.gather(self._joinable, pair), char_cut
        )
        # [:size] keeps it empty when there are no bytes at all.
        cut = tf.concat([[True], cut], 0)[:num_bytes]
        chunk_at = tf.where(cut)[:, 0]
        chunk_len = tf.concat([chunk_at[1:], [num_bytes]], 0) - chunk_at
        chunks = tf.strings.substr(joined, chunk_at, chunk_len)
        values, chunk_splits = merge.lookup_or_merge(
            chunks, self._chunk_table, _if_any(self._merge_words)
        )
        first_chunk = tf.searchsorted(chunk_at, starts, out_type=tf.int64)
        word_splits = tf.gather(
            chunk_splits,
            tf.concat(
                [first_chunk, tf.size(chunk_at, out_type=tf.int64)[None]], 0
            ),
        )
        return values, word_splits

    def _merge_words(self, words):
        """BPE of `[M]` strings at once -> `(ids, row_splits)`.

        Each step finds, in every chunk (see below), the lowest-ranked
        adjacent pair and merges its occurrences, left to right (`a a a` ->
        `aa a`), as HF's priority queue and tiktoken's loop do one at a
        time (`merge.merge_sequences`). The loop stops when no chunk has a
        pair left to merge.
        """
        num_words = tf.size(words)
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        byte_values = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
        word_of = tf.cast(
            row_ids(tf.concat([[0], tf.cumsum(lengths)], 0)), tf.int32
        )
        tok = tf.gather(self.byte_ids, tf.cast(byte_values, tf.int32))
        if self.missing_bytes:
            known = tok >= 0
            tok, word_of = take(tok, known), take(word_of, known)
            byte_values = take(byte_values, known)
        # Chunks: cut at byte pairs that no merge joins (as in
        # `_merge_chunks`, whose inputs are single chunks already; this
        # serves the other callers). Chunks are independent, so the loop's
        # "lowest pair" is per chunk: a long CJK word does not need one
        # step per merge of the whole word.
        pair = tf.cast(byte_values[:-1], tf.int32) * 256 + tf.cast(
            byte_values[1:], tf.int32
        )
        joined = (word_of[:-1] == word_of[1:]) & tf.gather(self._joinable, pair)
        # [:size] keeps these empty when there are no bytes at all.
        starts = tf.concat([[True], ~joined], 0)[: tf.size(tok)]
        chunk_word = take(word_of, starts)
        chunk_of = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        num_chunks = tf.size(chunk_word)
        if self.char_tables is not None:
            tok, chunk_of = start_from_characters(
                tok, chunk_of, tf.cast(byte_values, tf.int32), self.char_tables
            )
        tok, chunk_of = merge.merge_sequences(
            tok,
            chunk_of,
            num_chunks,
            merge_table=self.merge_table,
            num_tokens=self.num_tokens,
            all_at_once=self.all_at_once,
            windows=self._windows,
        )
        counts = tf.math.unsorted_segment_sum(
            tf.ones_like(chunk_of, tf.int64),
            tf.gather(chunk_word, chunk_of),
            num_words,
        )
        return tok, tf.concat([[0], tf.cumsum(counts)], 0)


def _if_any(merge_words):
    """`merge_words` (`[M]` strings -> `(int32 ids, int64 row_splits)`),
    skipped when `M` is 0: a request whose words are all whole tokens (a
    short English sentence, mostly) runs no chunking and no merge loop."""

    def merge_if_any(words):
        return tf.cond(
            tf.size(words) > 0,
            lambda: merge_words(words),
            lambda: (tf.zeros([0], tf.int32), tf.zeros([1], tf.int64)),
        )

    return merge_if_any


def _edge_char(raw, last):
    """The code point of the first (last) character of `raw` bytes, or -1
    if the token starts (ends) inside a character."""
    if not raw:
        return -1
    if last:
        start = len(raw) - 1
        while start > 0 and 0x80 <= raw[start] < 0xC0:
            start -= 1
        edge = raw[start:]
    else:
        lead = raw[0]
        size = (
            1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        )
        edge = raw[:size]
    try:
        text = edge.decode("utf-8")
    except UnicodeDecodeError:
        return -1
    return ord(text) if len(text) == 1 else -1
