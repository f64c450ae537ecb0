"""The Viterbi search of `viterbi.Viterbi`, over words or blocks of them.

`search_rows` is the search itself: one loop step per character
position, for all rows at once (a row is a word, from its start). One
word of 400 KB would be 400,000 steps of about 25 µs, so when the longest
word of a batch has more than `LONG_WORD` characters, `search` cuts every
word into blocks of about `sqrt(length)` characters and runs three passes
of `O(sqrt(length))` steps each:

1. each inner block (neither a word's first nor its last), from each of
   the `L` boundaries a path can enter it by (`L` = the longest piece
   found in the batch), alone: the best score of every way through the
   block, an `L x L` matrix (max-plus); and each first block from its
   word's start, whose scores are the true ones;
2. the blocks in order: the best scores of the `L` boundaries that end
   each block, the previous block's times its matrix;
3. every block from its true scores (`search_rows` with the blocks as
   rows), for the last piece of the best path at each character.

With one block a word, passes 1 and 2 do nothing and pass 3 is the plain
search. The path is then walked back by pointer doubling (`O(log
length)` steps).

Pass 2 adds the scores in another order than the one-step loop (a block's
path first, then the score before the block), and a tie between equal
paths depends on the rounding of the sums. So words are cut only where
every sum is exact: when all scores are multiples of one power of two `q`
(SentencePiece's scores are float32, so this holds for every file
converted from a `.model`) and `length * max|score| < 2**53 * q`
(`exact_characters`); pass 3 then reproduces the one-step loop bit for
bit, ties included.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids

# A batch whose longest word is longer than this cuts its words into
# blocks (for shorter ones the three passes gain little).
LONG_WORD = 4096


def exact_characters(scores):
    """The longest word whose path sums are all exact in float64: every
    score (the unknown score and 0 included) a multiple of the smallest
    power of two `q` that divides them all, and every partial sum below
    `2**53 * q`."""
    scores = np.abs(np.asarray(scores, np.float64))
    if not np.isfinite(scores).all():
        return 0
    scores = scores[scores != 0.0]
    if scores.size == 0:
        return 2**62
    # score = whole * 2**(exponent - 53), `whole` a 53-bit integer whose
    # lowest set bit gives the score's own power of two.
    mantissa, exponent = np.frexp(scores)
    whole = (mantissa * 2.0**53).astype(np.int64)
    low = np.log2((whole & -whole).astype(np.float64))
    quantum = float(np.min(np.exp2(exponent - 53 + low)))
    return int(min(2**53 * quantum / float(scores.max()), 2**62))


def block_size(size, width, exact):
    """The characters of a block, for a batch whose longest word has
    `size` and whose longest piece `width`: the whole word, unless it is
    longer than `LONG_WORD` and at most `exact` (`exact_characters`):
    then about `sqrt(size)`, and at least `width`."""
    size = tf.convert_to_tensor(size, tf.int64)
    root = tf.cast(tf.math.ceil(tf.sqrt(tf.cast(size, tf.float64))), tf.int64)
    return tf.where(
        (size > LONG_WORD) & (size <= exact), tf.maximum(root, width), size
    )


def search(splits, scores, exact):
    """`(back, on_path)` for the characters of the batch: `back[j]`, the
    length of the last piece of the best path over j's word up to j, and
    the characters that end a piece of each word's best path. `scores`:
    `[characters, longest]`, the piece of each length ending at each
    character, -inf where there is none or it would start before its
    word (see `search_rows`). Words take one block each, unless the
    longest is longer than `LONG_WORD` and `exact` characters at most:
    then every word is cut into blocks of about `sqrt(longest)`
    characters."""
    longest = tf.shape(scores, out_type=tf.int64)[1]
    lengths = tf.range(1, longest + 1, dtype=tf.int64)
    # L: the longest piece that occurs in this batch (1 if no character).
    width = tf.maximum(
        tf.reduce_max(
            tf.where(
                scores > -np.inf, lengths[None, :], tf.constant(1, tf.int64)
            )
        ),
        1,
    )
    scores = scores[:, :width]
    sizes = splits[1:] - splits[:-1]
    block = block_size(tf.reduce_max(tf.concat([sizes, [1]], 0)), width, exact)
    # Blocks: each word cut every `block` characters.
    per_word = (sizes + block - 1) // block
    block_splits = tf.concat([[0], tf.cumsum(per_word)], 0)
    owner = row_ids(block_splits)
    index = tf.range(block_splits[-1]) - tf.gather(block_splits, owner)
    offset = index * block  # the block's first character in its word
    first = tf.gather(splits[:-1], owner) + offset
    length = tf.minimum(block, tf.gather(sizes, owner) - offset)
    blocks_of = tf.gather(per_word, owner)
    neg = tf.constant(-np.inf, tf.float64)

    # Pass 1: block 0 of the words of several blocks from the word's start
    # (its last scores are the true ones), and each inner block from each
    # of its L entries alone (a window of -inf but one 0).
    opening = tf.where((index == 0) & (blocks_of > 1))[:, 0]
    inner = tf.where((index > 0) & (index < blocks_of - 1))[:, 0]
    inner_rows = tf.repeat(inner, width)
    entry = tf.tile(tf.range(width), [tf.size(inner)])
    unit = tf.where(
        tf.equal(lengths[:width, None] - 1, entry[None, :]),
        tf.constant(0.0, tf.float64),
        neg,
    )
    rows = tf.concat([opening, inner_rows], 0)
    window = tf.concat(
        [tf.zeros([width, tf.size(opening)], tf.float64), unit], 1
    )
    _, last = search_rows(
        tf.gather(first, rows),
        tf.fill(tf.shape(rows), block),
        window,
        scores,
        record=False,
    )
    opened = last[:, : tf.size(opening)]  # [L, words of several blocks]
    # matrices[b, e, r]: the best score at exit boundary r from entry e.
    matrices = tf.reshape(
        tf.transpose(last[:, tf.size(opening) :]), [-1, width, width]
    )

    # Pass 2: the entry scores of every block after the first, in order.
    long_words = tf.gather(owner, opening)
    # Each inner block's matrix; the others point at a last one of -inf
    # (read for the words that have no inner block left, never used).
    matrices = tf.concat([matrices, tf.fill([1, width, width], neg)], 0)
    matrix_at = tf.tensor_scatter_nd_update(
        tf.fill(tf.shape(owner, out_type=tf.int64), tf.size(inner, tf.int64)),
        inner[:, None],
        tf.range(tf.size(inner, tf.int64)),
    )
    rounds = tf.reduce_max(tf.concat([per_word, [1]], 0)) - 1

    def carry(i, entries, found):
        # `entries`: [words, L], the scores entering block i of each word.
        found = found.write(tf.cast(i - 1, tf.int32), tf.reshape(entries, [-1]))
        at = tf.gather(block_splits, long_words) + i
        inside = i < tf.gather(per_word, long_words) - 1
        at = tf.where(inside, at, tf.gather(block_splits, long_words))
        matrix = tf.gather(matrices, tf.gather(matrix_at, at))
        after = tf.reduce_max(entries[:, :, None] + matrix, 1)
        return i + 1, tf.where(inside[:, None], after, entries), found

    _, _, found = tf.while_loop(
        lambda i, entries, found: i <= rounds,
        carry,
        (
            tf.constant(1, tf.int64),
            tf.transpose(opened),
            tf.TensorArray(
                tf.float64,
                size=tf.cast(rounds, tf.int32),
                element_shape=[None],
                infer_shape=False,
            ),
        ),
        parallel_iterations=1,
    )
    # found[i - 1][k]: block i of long word k.
    # (and a last row of zeros, which the first blocks read, then drop)
    entered = tf.reshape(found.concat(), [-1, width])
    entered = tf.concat([entered, tf.zeros([1, width], tf.float64)], 0)
    word_number = tf.scatter_nd(
        long_words[:, None],
        tf.range(tf.size(long_words), dtype=tf.int64),
        tf.shape(sizes, out_type=tf.int64),
    )
    later = (index - 1) * tf.size(long_words, out_type=tf.int64) + tf.gather(
        word_number, owner
    )
    zeros = tf.shape(entered, out_type=tf.int64)[0] - 1
    start_windows = tf.gather(entered, tf.where(index > 0, later, zeros))

    # Pass 3: every block from its true entry scores, longest first.
    rank = tf.argsort(-length, stable=True)
    back, _ = search_rows(
        tf.gather(first, rank),
        tf.gather(length, rank),
        tf.transpose(tf.gather(start_windows, rank)),
        scores,
        record=True,
    )
    return back, _best_path_doubling(splits, back)


def search_rows(first, length, window, scores, record):
    """The Viterbi search, one loop step per position, over rows of
    characters (longest first; a row is a word, or a block of one): row
    `r` covers characters `first[r]` onwards for `length[r]` steps,
    entering with `window[:, r]`, the best scores of the `L` boundaries
    before it, oldest first (0 for a word's start, as the one boundary a
    word's first pieces can start from). `scores[j, l - 1]`: the score of
    the piece of `l` characters that ends at character `j`, -inf where
    there is none or it would start before its word, so a candidate is a
    window score plus a score, nothing to mask.

    A step reads the last `L` steps' scores from the `[L, rows still
    running]` window and writes its own, so the search costs
    `O(characters * L)`. Returns the chosen piece length per character
    (when `record`; of equal candidates the one that starts earliest, as
    HF) and the last window of the rows of the longest length."""
    width = tf.shape(scores, out_type=tf.int64)[1]
    steps = tf.maximum(tf.reduce_max(tf.concat([length, [0]], 0)), 0)

    def step(k, window, found):
        n = tf.reduce_sum(tf.cast(length > k, tf.int32))
        # window row r holds step k - L + r: column l - 1 of `before` is
        # step k - l, the boundary before the piece of l characters.
        before = tf.transpose(tf.reverse(window[:, :n], [0]))
        candidate = before + tf.gather(scores, first[:n] + k)
        top = tf.reduce_max(candidate, 1)
        window = tf.concat([window[1:, :n], top[None, :]], 0)
        if record:
            # Ties: the candidate that starts earliest (the longest) wins.
            ties = tf.equal(candidate, top[:, None])
            chosen = width - tf.argmax(
                tf.cast(tf.reverse(ties, [1]), tf.int32),
                1,
                output_type=tf.int64,
            )
            found = found.write(tf.cast(k, tf.int32), chosen)
        return k + 1, window, found

    _, window, found = tf.while_loop(
        lambda k, window, found: k < steps,
        step,
        (
            tf.constant(0, tf.int64),
            window,
            tf.TensorArray(
                tf.int64,
                size=tf.cast(steps, tf.int32) if record else 0,
                element_shape=[None],
                infer_shape=False,
            ),
        ),
        shape_invariants=(
            tf.TensorShape([]),
            tf.TensorShape([None, None]),
            tf.TensorShape(None),
        ),
        parallel_iterations=1,
    )
    if not record:
        return None, window
    # The values are in step order, each step in row order: per character.
    rows = tf.size(length, out_type=tf.int64)
    row = row_ids(tf.concat([[0], tf.cumsum(length)], 0))
    at = tf.range(tf.reduce_sum(length)) - tf.gather(
        tf.concat([[0], tf.cumsum(length)], 0), row
    )
    character = tf.gather(first, row) + at
    order = tf.argsort(at * rows + row, stable=True)
    back = tf.scatter_nd(
        tf.gather(character, order)[:, None],
        found.concat(),
        [tf.reduce_sum(length)],
    )
    return back, window


def _best_path_doubling(splits, back):
    """bool: the characters that end a piece of each word's best path,
    found by pointer doubling: from each word's last character, the
    characters 1, 2, 4, ... pieces back, then every one between."""
    count = tf.size(back, out_type=tf.int64)
    word = row_ids(splits)
    before = tf.range(count) - back
    sink = count
    jump = tf.concat(
        [
            tf.where(before >= tf.gather(splits[:-1], word), before, sink),
            [sink],
        ],
        0,
    )
    ends = tf.boolean_mask(splits[1:] - 1, splits[1:] > splits[:-1])

    # Tables: jumps of 1, 2, 4, ... pieces, until none leaves a word end.
    def more(tables, jump, levels):
        return tables.write(levels, jump), tf.gather(jump, jump), levels + 1

    tables, _, levels = tf.while_loop(
        lambda tables, jump, levels: (
            tf.reduce_any(tf.gather(jump, ends) < sink) | tf.equal(levels, 0)
        ),
        more,
        (
            tf.TensorArray(tf.int64, size=0, dynamic_size=True),
            jump,
            tf.constant(0),
        ),
    )

    def fill(level, nodes):
        level = level - 1
        nodes = tf.concat([nodes, tf.gather(tables.read(level), nodes)], 0)
        nodes, _ = tf.unique(nodes)
        return level, nodes

    _, nodes = tf.while_loop(
        lambda level, nodes: level > 0,
        fill,
        (levels, ends),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])),
    )
    nodes = tf.boolean_mask(nodes, nodes < sink)
    return tf.tensor_scatter_nd_update(
        tf.zeros([count], tf.bool), nodes[:, None], tf.ones_like(nodes, tf.bool)
    )
