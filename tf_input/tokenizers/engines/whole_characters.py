"""Byte-level BPE started from whole characters instead of their bytes.

A CJK character is three bytes; when BPE of the character's bytes always
ends in one token, whatever the text around it, the merge loop may start
from that token: one symbol instead of three, and no loop steps to build
it. `whole_characters` proves for which characters that is exact (and
under which neighbours); `start_from_characters` applies it in the graph.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import marks
from tf_input.tokenizers.engines._ops import INF
from tf_input.tokenizers.engines._ops import take


def whole_characters(token_bytes, whole, merge_ids, ranks, num_tokens):
    """The multi-byte characters that BPE may start from as one symbol.

    `whole`: the ids of the tokens that BPE of their own bytes leaves
    whole; `merge_ids` int64 `[n, 3]` (left, right, merged) and `ranks`,
    without duplicate pairs.

    Starting the merge loop from character `c`'s token `t` instead of its
    bytes gives the same BPE, in any text, if (checked here):

    1. BPE of `c`'s bytes alone is `[t]` (`t` is in `whole`);
    2. every merge with `t` as a part ranks above every merge that can
       occur inside `c` (all merges whose result is a run of `c`'s bytes;
       their highest rank bounds the ranks of `c`'s own BPE);

    and where it stands in the text (checked per occurrence, in
    `start_from_characters`):

    3. no merge can join a proper part of `c` with a neighbour: none has
       a proper prefix of `c` as its right part and, as its left part, a
       token ending in the byte before `c`; none has a proper suffix of
       `c` as its left part and a token starting with the byte after `c`
       as its right part (or the edge is the chunk's).

    Proof. By 3, while `c`'s bytes are not yet one token, no pair across
    its edges is a merge (such a pair's tokens are a proper part of `c`
    and a neighbour): `c`'s bytes merge as they would alone, which by 1
    ends in `t`, and every merge outside `c` in that time is the lowest
    pair of the sequence while `c` still has one of its own, so it ranks
    at most as high as the highest merge inside `c`. Started from `t`,
    the outside sees the same pairs, plus pairs with `t`, which by 2 rank
    above all of those merges: it makes the same merges in the same
    order, and reaches the state that the byte start has once `c`
    becomes `t`. From there both runs are the same. For ordered merges
    (every merge outranks those that made its parts:
    `merge.merges_properly_ordered`) 2 always holds; tiktoken ranks need
    it checked. Characters started whole one at a time: each step is
    exact whatever its neighbours are, so all of them are.

    Returns:
        `(keys, values, left, right)`: per character, its UTF-8 bytes
        packed big-endian into an int (`_pack`), and its token id with its
        left and right edge classes in bits 32-47 and 48-63; and bool
        `[classes, 256]` tables, True where the byte before (after) the
        character can join a proper part of it (3). Class 0 joins none.
    """
    made_at = np.full(num_tokens, -1, np.int64)
    np.maximum.at(made_at, merge_ids[:, 2], ranks)
    part_min = np.full(num_tokens, INF, np.int64)
    np.minimum.at(part_min, merge_ids[:, 0], ranks)
    np.minimum.at(part_min, merge_ids[:, 1], ranks)
    # The highest rank of a merge that makes each byte string (of any of
    # the tokens that spell it).
    made = {}
    for raw, rank in zip(token_bytes, made_at.tolist()):
        if raw:
            made[raw] = max(rank, made.get(raw, -1))
    before, after = _joining_bytes(token_bytes, merge_ids)
    classes = [{}, {}]  # frozenset of bytes -> class, per edge
    keys, values = [], []
    for i in whole:
        raw = token_bytes[i]
        if not _one_character(raw):
            continue
        inside = max(
            made.get(raw[a:b], -1)
            for a in range(len(raw))
            for b in range(a + 2, len(raw) + 1)
        )
        if part_min[i] <= inside:
            continue
        cuts = range(1, len(raw))
        edges = (
            frozenset().union(*(before.get(raw[:j], ()) for j in cuts)),
            frozenset().union(*(after.get(raw[j:], ()) for j in cuts)),
        )
        left, right = (
            table.setdefault(edge, len(table) + 1) if edge else 0
            for table, edge in zip(classes, edges)
        )
        if max(left, right) >= 1 << 15:
            continue  # (the class must fit its 15 bits; never seen)
        keys.append(_pack(raw))
        values.append(i | left << 32 | right << 48)
    tables = []
    for table in classes:
        joins = np.zeros([len(table) + 1, 256], bool)
        for edge, k in table.items():
            if k < 1 << 15:
                joins[k, list(edge)] = True
        tables.append(joins)
    return np.array(keys, np.int64), np.array(values, np.int64), *tables


def _one_character(raw):
    """True if `raw` (2 to 4 bytes) is the UTF-8 of one character."""
    if not 2 <= len(raw) <= 4:
        return False
    try:
        return len(raw.decode("utf-8")) == 1
    except UnicodeDecodeError:
        return False


def _joining_bytes(token_bytes, merge_ids):
    """`(before, after)`: for merges whose right part may be a proper
    prefix of a character (a lead byte, then fewer continuation bytes
    than it announces), or whose left part may be a proper suffix of one
    (continuation bytes), that part's bytes -> the set of bytes next to
    it that such a merge joins."""
    lead = np.array([raw[0] if raw else 0 for raw in token_bytes])
    size = np.array([len(raw) for raw in token_bytes])
    tail = np.array(
        [raw is not None and all(0x80 <= x < 0xC0 for x in raw) for raw in
         token_bytes]
    ) & (size <= 3)  # fmt: skip
    head = (lead >= 0xC0) & (size <= 3)
    before, after = {}, {}
    for left, right, _ in merge_ids[head[merge_ids[:, 1]]]:
        before.setdefault(token_bytes[right], set()).add(token_bytes[left][-1])
    for left, right, _ in merge_ids[tail[merge_ids[:, 0]]]:
        after.setdefault(token_bytes[left], set()).add(token_bytes[right][0])
    return before, after


def _pack(raw):
    """Up to 4 bytes as one int, big-endian: what `start_from_characters`
    computes for the bytes from a lead byte to the end of its character."""
    return int.from_bytes(raw, "big")


def start_from_characters(tok, chunk_of, byte_values, tables):
    """Replaces the bytes of each character that BPE may start from as
    one token (`whole_characters`, which proves it exact) by that token:
    a CJK character is then one symbol of the merge loop instead of
    three, and needs no loop steps to be built.

    `tables`: `(char_table, joins_before, joins_after)`, the lookup table
    of `whole_characters`' keys and values and its two edge tables,
    flattened."""
    char_table, joins_before, joins_after = tables
    size = tf.size(byte_values, out_type=tf.int64)
    lead_at = tf.where(byte_values >= 0xC0)[:, 0]
    lead = tf.gather(byte_values, lead_at)
    length = tf.cast(
        2 + tf.cast(lead >= 0xE0, tf.int32) + tf.cast(lead >= 0xF0, tf.int32),
        tf.int64,
    )
    end = tf.minimum(lead_at + length, size)  # one past the character
    # The character's bytes, packed big-endian (`_pack`); the bytes
    # past its end (or the sequence) shifted out again.
    padded = tf.cast(tf.concat([byte_values, [0, 0, 0]], 0), tf.int64)
    packed = tf.cast(lead, tf.int64)
    for offset in (1, 2, 3):
        packed = packed * 256 + tf.gather(padded, lead_at + offset)
    key = tf.bitwise.right_shift(packed, 8 * (4 - length))
    chunk_pad = tf.concat([[-1], chunk_of, [-1]], 0)
    byte_pad = tf.concat([[0], byte_values, [0]], 0)
    chunk = tf.gather(chunk_pad, lead_at + 1)
    # Edges: the chunk's, or a byte that joins no proper part of it.
    found = char_table.lookup(key)
    classes = tf.maximum(found, 0)  # (-1: not such a character)
    left_class = tf.bitwise.right_shift(classes, 32) & 0xFFFF
    right_class = tf.bitwise.right_shift(classes, 48)
    before = tf.cast(tf.gather(byte_pad, lead_at), tf.int64)
    after = tf.cast(tf.gather(byte_pad, end + 1), tf.int64)
    start = (
        (found >= 0)
        & (tf.gather(chunk_pad, end) == chunk)
        & (
            (tf.gather(chunk_pad, lead_at) != chunk)
            | ~tf.gather(joins_before, left_class * 256 + before)
        )
        & (
            (tf.gather(chunk_pad, end + 1) != chunk)
            | ~tf.gather(joins_after, right_class * 256 + after)
        )
    )
    at = take(lead_at, start)
    tok = tf.tensor_scatter_nd_update(
        tok,
        at[:, None],
        tf.cast(take(found, start) & 0xFFFFFFFF, tf.int32),
    )
    # Drop the character's other bytes: +1 after its lead, -1 past it.
    inside = tf.cumsum(
        marks(
            tf.concat([at + 1, take(end, start)], 0),
            size + 1,
            tf.concat(
                [tf.ones_like(at, tf.int32), -tf.ones_like(at, tf.int32)],
                0,
            ),
        )
    )[:size]
    keep = inside == 0
    return take(tok, keep), take(chunk_of, keep)
