"""A bounded cache of each word's result, kept across batches.

A BPE merge loop or a unigram search runs over every distinct word of a
batch that is not one token, though most words of a corpus come back in
every batch. `WordCache` keeps, per word, its ids and one float64 (a
unigram search's margin, where it has one) in a `MutableHashTable`: a
batch searches only the words it has not seen before, and a batch of
known words runs no search at all. HF's BPE keeps such a word cache too.

* Results are the same with and without it: a word's result depends on
  the word alone, so a kept result is the result (tested on the corpora
  for every engine that uses it).
* Memory is bounded: only words of at most `max_bytes` bytes are kept,
  and only while the table holds fewer than `capacity` words (a batch may
  take it past by its own new words, no further). Nothing is evicted; an
  entry is replaced only by a word with the same fingerprint (see
  `WordCache`).
* Concurrent calls (`tf.data`'s parallel map, a served model's threads)
  may search the same new word at once and insert the same value: the
  table locks each insert, and equal values make the order irrelevant.
* The table is named after its owner's content, as `_tables` names the
  static tables: every build of the same tokenizer in a process shares
  one cache (no growth per build), a `tf.data` graph sent to a tf.data
  service worker refers to it by name, and a SavedModel recreates it empty
  (its contents are not saved: `checkpoint=False`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import tensorflow as tf

from tf_input._ragged import gather_rows
from tf_input._ragged import row_ids

_NUMBER_BYTES = 8  # the float64
_SIZE_BYTES = 4  # the word's size in bytes, int32
_HEAD = _NUMBER_BYTES + _SIZE_BYTES  # where the word starts
_ID_BYTES = 4  # int32 ids
# What a lookup of a word not kept gives: a head whose size is -1.
_MISSING = bytes(_NUMBER_BYTES) + b"\xff" * _SIZE_BYTES


def content_name(kind, *parts):
    """A cache's shared name from what its search reads: `parts` are
    sequences of str / bytes, or numpy arrays (a 128-bit digest)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(f"{part.dtype.str}{part.shape}".encode())
            digest.update(np.ascontiguousarray(part).tobytes())
            continue
        raw = [x.encode() if isinstance(x, str) else bytes(x) for x in part]
        digest.update(np.array([len(x) for x in raw], np.int64).tobytes())
        digest.update(b"".join(raw))
    return f"tf_input_{kind}_{digest.hexdigest()}"


class _NamedMutableHashTable(tf.lookup.experimental.MutableHashTable):
    """A `MutableHashTable` from int64 to strings under a given name."""

    def __init__(self, shared_name):
        self._given_name = shared_name
        super().__init__(tf.int64, tf.string, _MISSING, checkpoint=False)

    def _create_resource(self):
        self._shared_name = self._given_name
        return super()._create_resource()

    # Out of checkpoints and SavedModels: `MutableHashTable` saves its
    # contents whatever `checkpoint` says (TensorFlow 2.21), so an export
    # would carry the words its process happened to see.
    def _serialize_to_tensors(self):
        return {}

    def _restore_from_tensors(self, restored_tensors):
        return tf.no_op()


class WordCache(tf.Module):
    """Each word's ids (and one float64) from `search`, kept across calls.

    TensorFlow has no string-to-string hash table: the table's key is the
    word's 64-bit fingerprint, and its value holds the word itself, which
    a lookup compares, so two words with one fingerprint cannot mix up
    their ids (the second is searched, and may replace the first).

    Args:
        name: the shared name of the table: unique to the owner's content
            (a digest), so equal owners share it.
        capacity: int, the words kept before it stops taking new ones.
        max_bytes: int, the longest word (in UTF-8 bytes) that is kept.
    """

    def __init__(self, name, capacity=1 << 16, max_bytes=64):
        super().__init__()
        self.capacity = int(capacity)
        self.max_bytes = int(max_bytes)
        with tf.init_scope():
            self._table = _NamedMutableHashTable(name)
            # Each byte value as a one-byte string, to build values from.
            self._bytes = tf.constant([bytes([b]) for b in range(256)])

    def size(self):
        return self._table.size()

    def __call__(self, words, search):
        """`search`'s result for `[W]` distinct words, searching only the
        words not kept yet.

        `search(words)` -> `(int32 values, [n + 1] int64 splits, [n]
        float64)`: each word's ids and one number (zeros where the
        caller has none). Returns the same for all `words`; `search` runs
        only when some word is not kept, and nothing runs for no words.
        """
        return tf.cond(
            tf.size(words) > 0,
            lambda: self._kept_or_searched(words, search),
            _empty,
        )

    def ids(self, words, search):
        """`__call__` for a search with no number: `search(words)` ->
        `(int32 values, [n + 1] int64 splits)`, and the same returned."""

        def numbered(words):
            values, splits = search(words)
            return values, splits, tf.zeros(tf.shape(words), tf.float64)

        values, splits, _ = self(words, numbered)
        return values, splits

    def _kept_or_searched(self, words, search):
        keys = tf.bitcast(tf.fingerprint(words), tf.int64)
        found = self._table.lookup(keys)
        size = tf.strings.length(words)
        stored = tf.strings.substr(found, tf.fill(tf.shape(size), _HEAD), size)
        hit = tf.reshape(
            tf.equal(_stored_size(found), size) & tf.equal(stored, words), [-1]
        )
        hit_at = tf.where(hit)[:, 0]
        miss_at = tf.where(~hit)[:, 0]
        kept = _decode(tf.gather(found, hit_at), tf.gather(size, hit_at))
        new = tf.gather(words, miss_at)
        # A batch whose words are all kept runs no search at all.
        searched = tf.cond(
            tf.size(new) > 0,
            lambda: search(new),
            _empty,
        )
        # Only words short enough are kept, and only while there is room
        # (the values are built only then).
        small = tf.gather(size, miss_at) <= self.max_bytes
        insert = tf.cond(
            (self._table.size() < self.capacity) & tf.reduce_any(small),
            lambda: self._insert(
                tf.boolean_mask(tf.gather(keys, miss_at), small),
                tf.boolean_mask(new, small),
                small,
                *searched,
            ),
            tf.no_op,
        )
        with tf.control_dependencies([insert]):
            # Each word's row: from the kept rows, or after them from the
            # searched ones.
            rank = tf.cumsum(tf.cast(hit, tf.int64), exclusive=True)
            miss_rank = tf.cumsum(tf.cast(~hit, tf.int64), exclusive=True)
        splits_k, splits_s = kept[1], searched[1]
        count_k, count_s = tf.size(splits_k) - 1, tf.size(splits_s) - 1
        rank = tf.minimum(rank, tf.cast(count_k, tf.int64))
        miss_rank = tf.minimum(miss_rank, tf.cast(count_s, tf.int64))
        lengths_k = tf.concat([splits_k[1:] - splits_k[:-1], [0]], 0)
        lengths_s = tf.concat([splits_s[1:] - splits_s[:-1], [0]], 0)
        lengths = tf.where(
            hit, tf.gather(lengths_k, rank), tf.gather(lengths_s, miss_rank)
        )
        first = tf.where(
            hit,
            tf.gather(splits_k, rank),
            splits_k[-1] + tf.gather(splits_s, miss_rank),
        )
        splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        values = gather_rows(
            tf.concat([kept[0], searched[0]], 0), first, splits
        )
        numbers = tf.where(
            hit,
            tf.gather(tf.concat([kept[2], [0.0]], 0), rank),
            tf.gather(tf.concat([searched[2], [0.0]], 0), miss_rank),
        )
        return values, splits, numbers

    def _insert(self, keys, words, chosen, values, splits, numbers):
        """Keep the `chosen` rows of a search's result under `keys`: one
        string per word, its float64, its size (int32), the word, then
        its int32 ids."""
        row = row_ids(splits)
        values = tf.boolean_mask(values, tf.gather(chosen, row))
        row = tf.boolean_mask(row, tf.gather(chosen, row))
        # The chosen rows' ids, one byte string each, joined per row.
        raw = tf.reshape(tf.bitcast(values, tf.uint8), [-1])
        rank = tf.cumsum(tf.cast(chosen, tf.int64), exclusive=True)
        byte_row = tf.repeat(tf.gather(rank, row), _ID_BYTES)
        ids = tf.strings.unsorted_segment_join(
            tf.gather(self._bytes, tf.cast(raw, tf.int32)),
            byte_row,
            tf.size(words, out_type=tf.int64),
        )
        head = tf.concat(
            [
                tf.reshape(
                    tf.bitcast(tf.boolean_mask(numbers, chosen), tf.uint8),
                    [-1, _NUMBER_BYTES],
                ),
                tf.reshape(
                    tf.bitcast(tf.strings.length(words), tf.uint8),
                    [-1, _SIZE_BYTES],
                ),
            ],
            1,
        )
        head = tf.strings.reduce_join(
            tf.gather(self._bytes, tf.cast(head, tf.int32)), axis=1
        )
        return self._table.insert(keys, tf.strings.join([head, words, ids]))


def _empty():
    """The result for no words."""
    return (
        tf.zeros([0], tf.int32),
        tf.zeros([1], tf.int64),
        tf.zeros([0], tf.float64),
    )


def _stored_size(found):
    """The word size a value holds (-1: none)."""
    raw = tf.io.decode_raw(
        tf.strings.substr(found, _NUMBER_BYTES, _SIZE_BYTES),
        tf.uint8,
        fixed_length=_SIZE_BYTES,
    )
    return tf.bitcast(tf.reshape(raw, [-1, _SIZE_BYTES]), tf.int32)


def _decode(encoded, size):
    """`WordCache._insert`'s strings of words of `size` bytes -> (int32
    values, int64 splits, float64)."""
    numbers = tf.io.decode_raw(
        tf.strings.substr(encoded, 0, _NUMBER_BYTES),
        tf.uint8,
        fixed_length=_NUMBER_BYTES,
    )
    numbers = tf.bitcast(tf.reshape(numbers, [-1, _NUMBER_BYTES]), tf.float64)
    start = _HEAD + size
    body = tf.strings.substr(encoded, start, tf.strings.length(encoded) - start)
    raw = tf.io.decode_raw(tf.strings.reduce_join(body), tf.uint8)
    values = tf.bitcast(tf.reshape(raw, [-1, _ID_BYTES]), tf.int32)
    counts = tf.cast(tf.strings.length(body) // _ID_BYTES, tf.int64)
    splits = tf.concat([[0], tf.cumsum(counts)], 0)
    return values, splits, numbers
