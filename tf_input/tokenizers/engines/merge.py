"""The BPE merge loop: the lowest-ranked adjacent pair first, everywhere.

One loop serves every BPE of the package: a merges list (rank = position
in the list), tiktoken ranks (rank = the merged token's id) and
SentencePiece scores (rank = position among the distinct scores). Only
the merge table and the initial tokens say what is merged.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import gather_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers.engines._ops import INF
from tf_input.tokenizers.engines._ops import previous
from tf_input.tokenizers.engines._ops import take


def merges_properly_ordered(merge_ids, ranks, num_tokens):
    """True if every merge outranks the merges that made its two parts.

    Then a merge never creates a pair that ranks below it, so BPE applies
    ranks in increasing order and all occurrences of a word's lowest pair
    can be merged in one step. Trained merges files (GPT-2, RoBERTa, HF
    trainers, and every `tokenizer.json` in ../shared/data/llm) always
    are; tiktoken's rank pairs are not (43,674 of cl100k's 233,378 pairs
    have a part ranked above the whole), and for those each step checks
    the new pairs it makes (`merge_sequences`).
    """
    made_at = np.full(num_tokens, -1, np.int64)
    np.maximum.at(made_at, merge_ids[:, 2], ranks)
    return bool(
        np.all(made_at[merge_ids[:, 0]] < ranks)
        and np.all(made_at[merge_ids[:, 1]] < ranks)
    )


def merge_table(merge_ids, ranks, num_tokens):
    """The merges as `merge_sequences` reads them.

    Args:
        merge_ids: int64 `[n, 3]`, (left, right, merged) ids per merge.
        ranks: int64 `[n]`, lower merges first.
        num_tokens: int, more than any id.

    Returns:
        `(table, merge_ids, ranks)`: an int64 table from `left *
        num_tokens + right` to `rank << 32 | merged` (`INF` for no merge:
        a min over a pair's values picks the best pair), and the merges
        and ranks without duplicate pairs (a later duplicate wins, as in
        Hugging Face's merge map).
    """
    merge_ids = np.asarray(merge_ids, np.int64).reshape([-1, 3])
    ranks = np.asarray(ranks, np.int64)
    keys = merge_ids[:, 0] * num_tokens + merge_ids[:, 1]
    _, last = np.unique(keys[::-1], return_index=True)
    last = len(keys) - 1 - last
    keys, ranks, merge_ids = keys[last], ranks[last], merge_ids[last]
    table = lookup_table(
        keys, (ranks << 32) | merge_ids[:, 2], INF, key_dtype=tf.int64
    )
    return table, merge_ids, ranks


# Reach windows of up to 2 ** _MAX_LEVEL pairs; a pair whose junction
# needs more is left to the chunk's best-pair rule.
_MAX_LEVEL = 5
# Chunks longer than this (symbols) take the loop with the windows.
_LONG_CHUNK = 64


class MergeWindows(tf.Module):
    """How far back (and ahead) of a pair a merge can take its tokens.

    Why: each step of `merge_sequences` merges a chunk's best pair; a long
    chunk of many distinct pairs (1 MB of random digits is one GPT-2 word)
    then takes one step per distinct merge, each over the whole chunk:
    O(length x merges). A pair can be merged at once, anywhere, when no
    merge that BPE makes before it can take one of its tokens. Such a
    merge joins a token `Y` to the pair's left token (or the right token
    to a `Z`), and is made before the pair only if its rank is lower; `Y`
    is the left part of some merge whose junction (last symbol of the
    left part, first of the right) is the pair's left junction, so `Y`
    spans at most the longest such left part, in symbols; and `Y`'s
    first merge joins two of today's tokens inside that span at a lower
    rank than the pair (with merges that outrank their parts, every merge
    made from a lower one ranks lower too). So a pair whose rank is at
    most every rank within that reach on its left, and within the
    longest right part of its right junction on its right, is merged in
    this step (runs of one pair, `a a a`, only from where the run
    starts). Reaches are rounded up to powers of two (levels), and
    computed per step with `_MAX_LEVEL` doublings of a running minimum.

    Args:
        merge_ids: int64 `[n, 3]`, (left, right, merged) ids per merge.
        first: int array, per id below `len(first)`: its first symbol
            (byte, or code point), as a key below `num_symbols`.
        last: int array, the same for its last symbol.
        length: int array, per id: its length in symbols.
        num_symbols: int, 256 for bytes, 0x110000 for code points.

    Ids from `len(first)` on stand for the code point `id - len(first)`
    (character-level BPE's characters without a piece).
    """

    def __init__(self, merge_ids, first, last, length, num_symbols):
        super().__init__()
        merge_ids = np.asarray(merge_ids, np.int64).reshape([-1, 3])
        first, last, length = (
            np.asarray(a, np.int64) for a in (first, last, length)
        )
        num_listed = len(first)

        def edge(ids, listed):
            inside = ids < num_listed
            return np.where(
                inside, listed[np.minimum(ids, num_listed - 1)],
                ids - num_listed,
            )  # fmt: skip

        def size(ids):
            return np.where(
                ids < num_listed, length[np.minimum(ids, num_listed - 1)], 1
            )

        left, right = merge_ids[:, 0], merge_ids[:, 1]
        keys, where = np.unique(
            edge(left, last) * num_symbols + edge(right, first),
            return_inverse=True,
        )
        reach = np.zeros([2, len(keys)], np.int64)
        np.maximum.at(reach[0], where, size(left))
        np.maximum.at(reach[1], where, size(right))
        # ceil(log2(reach)), and _MAX_LEVEL + 1 for "too far".
        levels = np.ceil(np.log2(np.maximum(reach, 1))).astype(np.int64)
        levels = np.minimum(levels, _MAX_LEVEL + 1)
        packed = levels[0] * 16 + levels[1]
        self._num_listed = num_listed
        self._num_symbols = num_symbols
        self._first = tf.constant(first)
        self._last = tf.constant(last)
        self._dense = None
        if num_symbols * num_symbols <= 1 << 16:
            dense = np.zeros(num_symbols * num_symbols, np.int64)
            dense[keys] = packed
            self._dense = tf.constant(dense)
        else:
            self._table = lookup_table(keys, packed, 0, key_dtype=tf.int64)

    def _edge(self, tok, listed):
        if self._dense is not None:
            return tf.gather(listed, tok)
        num = tf.constant(self._num_listed, tf.int64)
        return tf.where(
            tok < num, tf.gather(listed, tf.minimum(tok, num - 1)), tok - num
        )

    def picks(self, tok, key):
        """int64 `tok` `[T]`, `key` `[T - 1]` (per pair: its rank in the
        high bits, all low bits set; `INF` for none) -> bool `[T - 1]`:
        the pairs whose key is at most every key within their reach."""
        junction = self._edge(tok[:-1], self._last) * self._num_symbols + (
            self._edge(tok[1:], self._first)
        )
        if self._dense is not None:
            packed = tf.gather(self._dense, junction)
        else:
            packed = self._table.lookup(junction)
        # Pair i: the left reach of junction i - 1, the right one of i + 1.
        left = previous(tf.bitwise.right_shift(packed, 4), 0)
        right = tf.concat([tf.bitwise.bitwise_and(packed, 15)[1:], [0]], 0)
        pad = 1 << _MAX_LEVEL
        # Running minimums: level k at j is the min of key[j - pad ..
        # j - pad + 2 ** k - 1] (INF beyond the ends).
        level = tf.concat([tf.fill([pad], INF), key, tf.fill([pad], INF)], 0)
        levels = [level]
        for k in range(_MAX_LEVEL):
            shift = 1 << k
            level = tf.minimum(
                level, tf.concat([level[shift:], tf.fill([shift], INF)], 0)
            )
            levels.append(level)
        # One more level that no key passes: reaches beyond _MAX_LEVEL.
        levels.append(tf.fill(tf.shape(level), tf.constant(-1, tf.int64)))
        stacked = tf.concat(levels, 0)
        width = tf.size(level, out_type=tf.int64)
        at = tf.range(tf.size(key, out_type=tf.int64)) + pad
        back = tf.bitwise.left_shift(
            tf.ones_like(left), tf.minimum(left, _MAX_LEVEL)
        )
        left_min = tf.gather(stacked, left * width + at - back)
        right_min = tf.gather(stacked, right * width + at + 1)
        return (key <= left_min) & (key <= right_min)


def left_whole(merge_words, texts, ids):
    """The ids among `ids` whose text BPE leaves as that one token.

    `merge_words`: BPE of `[M]` strings -> `(ids, row_splits)`; `texts`:
    the bytes of each id. Run once, at construction, traced (eagerly the
    loop's many small ops cost more in total): a word or chunk that is
    one of these tokens is then a table lookup, with no merge loop.
    """
    if not len(ids):
        return []
    traced = tf.function(merge_words, autograph=False)
    values, splits = traced(tf.constant(list(texts), tf.string))
    values, splits = values.numpy(), splits.numpy()
    return [
        i
        for i, length, start in zip(ids, splits[1:] - splits[:-1], splits[:-1])
        if length == 1 and values[start] == i
    ]


def lookup_or_merge(pieces, table, merge):
    """`[P]` strings -> `(ids, row_splits)`: BPE of each piece.

    Pieces that are one token come from one hash lookup; the others are
    deduplicated and passed to `merge`. The result is assembled with
    gathers only (on CPU a scatter of the same size costs more).
    """
    num_pieces = tf.size(pieces, out_type=tf.int64)
    single = table.lookup(pieces)
    hit = single >= 0
    miss_at = tf.where(~hit)[:, 0]
    unique, which = tf.unique(tf.gather(pieces, miss_at), tf.int64)
    merged_values, merged_splits = merge(unique)
    # Per piece: its length and where its ids start in
    # [single ids of all pieces, merged ids of unique misses].
    miss_rank = tf.cumsum(tf.cast(~hit, tf.int64), exclusive=True)
    unique_of = tf.gather(
        tf.concat([which, [0]], 0),
        tf.minimum(miss_rank, tf.size(which, out_type=tf.int64)),
    )
    lengths = tf.where(
        hit,
        tf.ones_like(single),
        tf.gather(
            # Padded: `unique_of` is 0 for hits even when nothing missed.
            tf.concat([merged_splits[1:] - merged_splits[:-1], [0]], 0),
            unique_of,
        ),
    )
    first = tf.where(
        hit,
        tf.range(num_pieces),
        num_pieces + tf.gather(merged_splits, unique_of),
    )
    splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    values = gather_rows(
        tf.concat([tf.cast(single, tf.int32), merged_values], 0),
        first,
        splits,
    )
    return values, splits


def merge_sequences(
    tok,
    chunk_of,
    num_chunks,
    *,
    merge_table,
    num_tokens,
    all_at_once,
    tied_ranks=None,
    set_aside=False,
    windows=None,
):
    """The BPE loop on token sequences: `tok` int32 `[T]`, `chunk_of`
    int32 `[T]` (non-decreasing chunk ids, `num_chunks` of them) ->
    the merged `(tok, chunk_of)`, in order.

    `merge_table` is the first value of `merge_table(...)`, for ids below
    `num_tokens`. One step, per chunk: the pairs of the chunk's best
    (rank, merged id) are the picks; runs of one picked pair (`a a a`)
    take every other pick from the left. `tied_ranks`: None, or a bool
    tensor indexed by rank, True for a rank that several merged tokens
    share (SentencePiece pieces of equal score); a step then picks the
    pairs of the chunk's best rank, and for a tied rank only the leftmost,
    as sentencepiece's queue (score, then leftmost) does. `all_at_once`
    False (ranks that need not grow with the merges): a chunk keeps its
    picks only up to the first one whose merged token forms a
    better-ranked pair with a neighbour; the rest wait for the next step.
    `set_aside`: the tokens of a chunk that has no pair left to merge
    leave the loop (each later step then works on the unfinished chunks
    only: most chunks finish in a few steps), and are put back in order
    at the end. `windows`: None, or a `MergeWindows`: with `all_at_once`,
    a step also merges every pair that no merge can reach before it
    (see `MergeWindows`), so a long chunk takes about as many steps as a
    short one. The windows cost ~30% more per step, so they are used
    only when some chunk is longer than `_LONG_CHUNK` symbols (one
    `tf.cond` around two loops; text of words never pays for them).

    Written for few graph nodes (see `engines/__init__.py`): no `tf.cond`
    in the body (the overlap and first-steps rules run on the picked
    positions only, every step), int64 tokens inside the loop, constant
    slice bounds.
    """
    options = dict(
        merge_table=merge_table,
        num_tokens=num_tokens,
        all_at_once=all_at_once,
        tied_ranks=tied_ranks,
        set_aside=set_aside,
    )
    if windows is None or not all_at_once:
        return _merge_loop(tok, chunk_of, num_chunks, windows=None, **options)
    longest = tf.reduce_max(
        tf.math.unsorted_segment_sum(
            tf.ones_like(chunk_of), chunk_of, num_chunks + 1
        )
    )
    return tf.cond(
        longest > _LONG_CHUNK,
        lambda: _merge_loop(
            tok, chunk_of, num_chunks, windows=windows, **options
        ),
        lambda: _merge_loop(tok, chunk_of, num_chunks, windows=None, **options),
    )


def _merge_loop(
    tok,
    chunk_of,
    num_chunks,
    *,
    merge_table,
    num_tokens,
    all_at_once,
    tied_ranks,
    set_aside,
    windows,
):
    """`merge_sequences`, with or without the windows."""
    num_tokens = tf.constant(num_tokens, tf.int64)

    def lookup(left, right):
        return merge_table.lookup(left * num_tokens + right)

    def step(tok, chunk_of, _, *finished):
        pair_chunk = chunk_of[:-1]
        # `best`: rank << 32 | merged id, so the min is the best pair.
        best = tf.where(
            tf.equal(pair_chunk, chunk_of[1:]), lookup(tok[:-1], tok[1:]), INF
        )
        chunk_min = tf.math.unsorted_segment_min(best, pair_chunk, num_chunks)
        reached = None
        if windows is not None and all_at_once:
            # Ranks only (all low bits set): equal ranks compare equal.
            reached = windows.picks(
                tok, tf.bitwise.bitwise_or(best, 0xFFFFFFFF)
            )
        at = _picks(best, chunk_min, pair_chunk, tied_ranks, reached)
        if not all_at_once:
            at = _first_steps_only(at, tok, chunk_of, num_chunks, best, lookup)
        tok = tf.tensor_scatter_nd_update(
            tok,
            at[:, None],
            tf.bitwise.bitwise_and(tf.gather(best, at), 0xFFFFFFFF),
        )
        gone = tf.math.unsorted_segment_sum(
            tf.ones_like(at), at + 1, tf.size(tok, out_type=tf.int64)
        )
        stays = tf.equal(gone, 0)
        if set_aside:
            # A chunk without a pair to merge (none of its tokens merge in
            # this step) is done.
            done = tf.equal(tf.gather(chunk_min, chunk_of), INF)
            stays = stays & ~done
            out = tf.reshape(tf.where(done), [-1])
            finished = (
                tf.concat([finished[0], tf.gather(tok, out)], 0),
                tf.concat([finished[1], tf.gather(chunk_of, out)], 0),
            )
        kept = tf.reshape(tf.where(stays), [-1])
        return (
            tf.gather(tok, kept),
            tf.gather(chunk_of, kept),
            tf.size(at) > 0,
        ) + tuple(finished)

    tok = tf.cast(tok, tf.int64)
    loop_vars = [tok, chunk_of, tf.constant(True)]
    if set_aside:
        loop_vars += [tok[:0], chunk_of[:0]]
    tok, chunk_of, _, *finished = tf.while_loop(
        lambda tok, chunk_of, merged, *_: merged & (tf.size(tok) > 1),
        step,
        loop_vars,
        shape_invariants=[tf.TensorShape([None])] * 2
        + [tf.TensorShape([])]
        + [tf.TensorShape([None])] * (len(loop_vars) - 3),
    )
    if set_aside:
        # Finished chunks left in the order they finished, each whole.
        tok = tf.concat([finished[0], tok], 0)
        chunk_of = tf.concat([finished[1], chunk_of], 0)
        # Sorted by chunk, stable (`top_k` puts equal values in index
        # order): 3 graph nodes, `tf.argsort` 5.
        order = tf.math.top_k(-chunk_of, tf.size(chunk_of)).indices
        tok, chunk_of = tf.gather(tok, order), tf.gather(chunk_of, order)
    return tf.cast(tok, tf.int32), chunk_of


def _picks(best, chunk_min, pair_chunk, tied_ranks, reached=None):
    """The pair positions one step merges: those of each chunk's best
    pair (or best rank), and the `reached` ones (bool per pair, or None;
    see `MergeWindows`), every other one in a run of adjacent picks of
    one rank, and for a tied rank only the chunk's leftmost."""
    chunk_best = tf.gather(chunk_min, pair_chunk)
    rank = tf.bitwise.right_shift(best, 32)
    if tied_ranks is None:
        pick = tf.equal(best, chunk_best)
    else:
        # The chunk's best rank, whichever piece it makes.
        pick = tf.equal(rank, tf.bitwise.right_shift(chunk_best, 32))
    if reached is not None:
        pick = pick | reached
    # From here on, the picked positions only (a few per chunk, or the
    # many that a long chunk's reaches allow).
    at = tf.reshape(tf.where(pick & (best != INF)), [-1])
    index = tf.range(tf.size(at, out_type=tf.int64))
    # Runs of adjacent picks of one rank (`a a a`): every other one from
    # the left. A run never crosses chunks.
    rank_at = tf.gather(rank, at)
    new_run = tf.not_equal(at, previous(at, -2) + 1) | tf.not_equal(
        rank_at, previous(rank_at, -1)
    )
    run_start = tf.gather(
        take(index, new_run), tf.cumsum(tf.cast(new_run, tf.int64)) - 1
    )
    keep = tf.equal((index - run_start) % 2, 0)
    if reached is not None:
        # ... and only from where the run starts: a run whose pair before
        # has its rank is the end of a longer one, whose start decides.
        first = tf.gather(at, run_start)
        before = tf.gather(rank, tf.maximum(first - 1, 0))
        keep = keep & (
            tf.equal(first, 0)
            | tf.not_equal(before, tf.gather(rank_at, run_start))
        )
    if tied_ranks is not None:
        chunk = tf.gather(pair_chunk, at)
        first = tf.not_equal(chunk, previous(chunk, -1))
        tied = tf.gather(
            tied_ranks,
            tf.minimum(tf.gather(rank, at), tf.size(tied_ranks, tf.int64) - 1),
        )
        keep = keep & (first | ~tied)
    return take(at, keep)


def _first_steps_only(at, tok, chunk_of, num_chunks, best, lookup):
    """The picks `at` (pair positions, increasing) up to, per chunk, the
    first one whose merged piece pairs at a better rank than this step's
    with its left neighbour (the previous pick's result if adjacent, else
    the token before) or the token after it."""
    size = tf.size(tok, out_type=tf.int64)
    chunk = tf.gather(chunk_of, at)
    picked = tf.gather(best, at)
    merged = tf.bitwise.bitwise_and(picked, 0xFFFFFFFF)
    rank = tf.bitwise.right_shift(picked, 32)
    before = tf.maximum(at - 1, 0)
    has_left = (at > 0) & tf.equal(tf.gather(chunk_of, before), chunk)
    left = tf.where(
        tf.equal(at, previous(at, -3) + 2),
        previous(merged, 0),
        tf.gather(tok, before),
    )
    after = tf.minimum(at + 2, size - 1)
    has_right = (at + 2 < size) & tf.equal(tf.gather(chunk_of, after), chunk)
    left_rank = tf.bitwise.right_shift(lookup(left, merged), 32)
    right_rank = tf.bitwise.right_shift(
        lookup(merged, tf.gather(tok, after)), 32
    )
    lower = (has_left & (left_rank < rank)) | (has_right & (right_rank < rank))
    index = tf.range(tf.size(at, out_type=tf.int64))
    first_lower = tf.math.unsorted_segment_min(
        tf.where(lower, index, tf.int64.max), chunk, num_chunks
    )
    return take(at, index <= tf.gather(first_lower, chunk))
