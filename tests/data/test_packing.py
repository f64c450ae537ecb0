"""Packing, bucket boundaries, the attention-mask helper, and "nothing lost"
on real corpora."""

import collections
import itertools
import warnings

import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tf_input import WordPieceTokenizer
from tf_input.data import SkippedExamplesWarning
from tf_input.data import make_dataset
from tf_input.data import segment_attention_mask
from tf_input.data import stats
from tf_input.data.bucketing import choose_boundaries
from tf_input.data.packing import _cumulative_max
from tf_input.data.packing import pack_rows

# --- segment_attention_mask ------------------------------------------------


def mask_reference(example_ids, causal):
    example_ids = np.asarray(example_ids)
    n = example_ids.shape[-1]
    out = np.zeros(example_ids.shape + (n,), bool)
    for index in np.ndindex(example_ids.shape[:-1]):
        row = example_ids[index]
        for i in range(n):
            for j in range(n):
                same = row[i] == row[j] and row[j] > 0
                out[index + (i, j)] = same and (j <= i or not causal)
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_segment_attention_mask_matches_reference(causal):
    example_ids = [[1, 1, 2, 2, 2, 3, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]
    got = segment_attention_mask(example_ids, causal=causal)
    assert got.dtype == tf.bool and got.shape == (2, 8, 8)
    np.testing.assert_array_equal(got, mask_reference(example_ids, causal))
    np.testing.assert_array_equal(
        segment_attention_mask(example_ids[0], causal=causal),
        mask_reference(example_ids[0], causal),
    )

    # The keyword is `example_ids`; `segment_ids=`, its old name, still
    # works, with a deprecation warning.
    named = segment_attention_mask(example_ids=example_ids, causal=causal)
    np.testing.assert_array_equal(named, got)
    with pytest.warns(DeprecationWarning, match=r"`example_ids`"):
        old = segment_attention_mask(segment_ids=example_ids, causal=causal)
    np.testing.assert_array_equal(old, got)


def test_segment_attention_mask_bad_input():
    with pytest.raises(TypeError, match=r"causal='yes'"):
        segment_attention_mask([[1]], causal="yes")
    with pytest.raises(TypeError, match=r"dtype float32"):
        segment_attention_mask([[1.0]])
    with pytest.raises(TypeError, match=r"Received both"):
        segment_attention_mask([[1]], segment_ids=[[1]])
    with pytest.raises(TypeError, match=r"needs `example_ids`"):
        segment_attention_mask()
    with pytest.raises(ValueError, match=r"shape \(1, 1, 1\)"):
        segment_attention_mask([[[1]]])


def test_segment_attention_mask_works_in_multi_head_attention():
    import keras

    x = tf.random.normal([1, 4, 8])
    example_ids = tf.constant([[1, 1, 2, 0]])
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    mask = segment_attention_mask(example_ids)
    full = layer(x, x, attention_mask=mask)
    # Segment 1 does not see segment 2: changing token 2 leaves 0-1 alone.
    changed = tf.concat([x[:, :2], x[:, 2:3] + 1.0, x[:, 3:]], axis=1)
    other = layer(changed, changed, attention_mask=mask)
    np.testing.assert_allclose(full[:, :2], other[:, :2], atol=1e-6)


# --- pack_rows ---------------------------------------------------------------


def check_packed(rows, length, packed):
    """Whole examples (pieces of `length` for longer ones), one segment
    each, positions from 0, and every token exactly once."""
    ids = packed["ids"].numpy()
    segments = packed["example_ids"].numpy()
    positions = packed["positions"].numpy()
    assert ids.shape[1:] == (length,)
    pieces = collections.Counter()
    for row in rows:
        for start in range(0, len(row), length):
            pieces[tuple(row[start : start + length])] += 1
    got = collections.Counter()
    for r in range(ids.shape[0]):
        used = segments[r] > 0
        # Segments 1, 2, ... left to right, then padding only.
        assert used.tolist() == sorted(used.tolist(), reverse=True)
        assert used.any()
        k = segments[r][used]
        assert k[0] == 1 and set(np.diff(k).tolist()) <= {0, 1}
        for s in range(1, k.max() + 1):
            where = segments[r] == s
            assert positions[r][where].tolist() == list(range(where.sum()))
            got[tuple(ids[r][where].tolist())] += 1
        assert not ids[r][~used].any() and not positions[r][~used].any()
    assert got == pieces
    return ids.shape[0]


def test_pack_rows_keeps_examples_whole():
    rows = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10, 11], [12, 13]]
    packed = pack_rows(tf.ragged.constant(rows, tf.int32), 4)
    # Pieces 4, 3, 3, 2, 1 (the 7-token example is cut in 4 + 3): 13
    # tokens, 4 rows.
    assert check_packed(rows, 4, packed) == 4
    empty = pack_rows(tf.ragged.constant([], tf.int32, ragged_rank=1), 4)
    assert empty["ids"].shape == (0, 4)


def test_pack_rows_fills_rows_on_random_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=300)
    rows, start = [], 1
    for n in lengths:
        rows.append(list(range(start, start + n)))
        start += n
    packed = pack_rows(tf.ragged.constant(rows, tf.int32), 64)
    count = check_packed(rows, 64, packed)
    # Close to the bound: at most 10% more rows than ceil(tokens / 64)
    # (uniform lengths up to 64 / 1.6 are a hard case; corpora fare better,
    # see benchmarks/bench_pipeline.py).
    assert count <= np.ceil(lengths.sum() / 64) * 1.1


def pack_reference(lengths, length):
    """The packing rule of `pack_rows`, one piece at a time in plain
    Python: returns the rows as sorted lists of piece numbers (pieces
    numbered in input order)."""
    pieces = []
    for n in lengths:
        pieces += [length] * ((n - 1) // length) + [
            n - (n - 1) // length * length
        ]
    # Largest first; equal sizes in input order.
    order = sorted(range(len(pieces)), key=lambda i: (-pieces[i], i))
    free = list(order)
    rows, rooms = [], []
    while free:
        # Every row, roomiest first (ties: older row first), takes the
        # largest free piece that fits it.
        placed = False
        for r in sorted(range(len(rows)), key=lambda r: (-rooms[r], r)):
            fits = [i for i in free if pieces[i] <= rooms[r]]
            if fits:
                rows[r].append(fits[0])
                rooms[r] -= pieces[fits[0]]
                free.remove(fits[0])
                placed = True
        if placed:
            continue
        needed = -(-sum(pieces[i] for i in free) // length)
        if not rows:  # the first rows: one of the largest pieces each
            for i in free[:needed]:
                rows.append([i])
                rooms.append(length - pieces[i])
            free = free[needed:]
            continue
        # Later: the free pieces laid end to end over `needed` new rows;
        # a piece that would cross a row end waits.
        first = len(rows)
        rows += [[] for _ in range(needed)]
        rooms += [length] * needed
        start, waiting = 0, []
        for i in free:
            end = start + pieces[i]
            if start // length == (end - 1) // length:
                rows[first + start // length].append(i)
                rooms[first + start // length] -= pieces[i]
            else:
                waiting.append(i)
            start = end
        free = waiting
    return sorted(sorted(row) for row in rows)


def packed_rows(pieces, packed):
    """The rows of `pack_rows`' output as sorted lists of piece numbers,
    for pieces whose tokens are all distinct."""
    piece_of = {t: number for number, piece in enumerate(pieces) for t in piece}
    ids = packed["ids"].numpy()
    return sorted(
        sorted({piece_of[t] for t in ids[r][ids[r] > 0]})
        for r in range(ids.shape[0])
    )


@pytest.mark.parametrize(
    "seed, high, length",
    [(0, 40, 64), (1, 10, 64), (2, 200, 128), (3, 6, 16)],
)
def test_pack_rows_follows_the_reference_rule(seed, high, length):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, high, size=int(rng.integers(50, 400)))
    rows, start = [], 1
    for n in lengths:
        rows.append(list(range(start, start + n)))
        start += n
    packed = pack_rows(tf.ragged.constant(rows, tf.int32), length)
    check_packed(rows, length, packed)
    # Pieces numbered in input order, as in the reference.
    pieces = [
        row[i : i + length] for row in rows for i in range(0, len(row), length)
    ]
    assert packed_rows(pieces, packed) == pack_reference(lengths, length)


def test_pack_rows_when_a_laid_piece_crosses_a_row_end():
    # Four rows open with a 6 each (room 4 left); the last two 6s are laid
    # over two new rows, the second crosses the first new row's end, waits,
    # and then takes the still empty row: no row is left empty.
    rows = [[10 * i + j + 1 for j in range(6)] for i in range(6)]
    packed = pack_rows(tf.ragged.constant(rows, tf.int32), 10)
    assert check_packed(rows, 10, packed) == 6
    assert packed_rows(rows, packed) == pack_reference([6] * 6, 10)


@pytest.mark.parametrize(
    "values",
    [
        [5],
        [3, 1, 4, 1, 5, 9, 2, 6],
        [-7] * 50_000,  # many ties: the log-sum-exp's largest excess
        list(range(0, -4000, -1)),  # falling by one: the packer's case
        [2**31 - 1, -(2**31), 0, 2**31 - 2],
    ],
)
def test_cumulative_max_is_exact(values):
    got = _cumulative_max(tf.constant(values, tf.int32)).numpy()
    np.testing.assert_array_equal(got, np.maximum.accumulate(values))


def test_cumulative_max_is_exact_on_random_walks():
    rng = np.random.default_rng(1)
    for size in (1, 7, 1000, 30_000):
        values = np.cumsum(rng.integers(-3, 3, size)) + rng.integers(-99, 99)
        got = _cumulative_max(tf.constant(values, tf.int32)).numpy()
        np.testing.assert_array_equal(got, np.maximum.accumulate(values))


# --- choose_boundaries -------------------------------------------------------


def padded_size(lengths, boundaries):
    return sum(min(b for b in boundaries if b >= n) for n in lengths)


def test_choose_boundaries_is_optimal():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 31, size=200)
    assert lengths.max() == 30
    for k in (1, 2, 3, 4):
        got = choose_boundaries(lengths, k, 30)
        assert len(got) <= k and got[-1] == 30
        values = sorted(set(lengths.tolist()) - {30})
        best = min(
            padded_size(lengths, list(c) + [30])
            for c in itertools.combinations(values, k - 1)
        )
        assert padded_size(lengths, got) == best
    # The sample never reaches max_length: one bucket is kept for longer rows.
    got = choose_boundaries(lengths, 3, 64)
    assert got[-1] == 64 and got[-2] == 30 and len(got) == 3
    assert padded_size(lengths, got[:-1]) == min(
        padded_size(lengths, [b, 30]) for b in range(1, 30)
    )


# --- Nothing lost, on a real corpus -----------------------------------------


@pytest.fixture(scope="module")
def bert():
    path = data_path("bert", "bert-base-uncased-vocab.txt")
    return WordPieceTokenizer.from_vocab_file(str(path))


def expected_tokens(tokenizer, lines, batching):
    """`(tokens, empty)`: the multiset of ids the batches must hold, from
    the tokenizer itself ([CLS] ids [SEP] of each non-empty line; with
    `"stream"`, ids [SEP]: the end token separates the texts), and the
    number of empty lines."""
    ids = tokenizer.tokenize(tf.constant(lines)).to_list()
    cls, sep = tokenizer.special_tokens["cls"], tokenizer.special_tokens["sep"]
    start = [] if batching == "stream" else [cls]
    counter = collections.Counter()
    empty = 0
    for row in ids:
        if row:
            counter.update([*start, *row, sep])
        else:
            empty += 1
    return counter, empty


def output_tokens(dataset):
    counter = collections.Counter()
    for features, labels, weights in dataset:
        ids = features["token_ids"].numpy()
        mask = features["padding_mask"].numpy() > 0
        counter.update(ids[mask].tolist())
        # Padding is never data: 0 ids, 0 labels, no target off the mask.
        assert not ids[~mask].any() and not labels.numpy()[~mask].any()
        assert not weights.numpy()[~mask].any()
    return counter


def check_nothing_lost(tokenizer, lines, batching, max_length, **kwargs):
    want, empty = expected_tokens(tokenizer, lines, batching)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SkippedExamplesWarning)
        dataset = make_dataset(
            lines,
            tokenizer,
            batch_size=32,
            max_length=max_length,
            batching=batching,
            **kwargs,
        )
    skips = [str(w.message) for w in caught]
    assert len(skips) == (1 if empty else 0)
    assert all(m.startswith(f"{empty} of the {len(lines)} ") for m in skips)
    got = output_tokens(dataset)
    assert got == want
    result = stats(dataset)
    assert result["truncated"] == 0
    assert result["skipped"] == empty
    assert result["real_tokens"] == sum(want.values())
    return result


@requires_shared_data
@pytest.mark.parametrize("batching", ["bucket", "pack", "stream"])
def test_nothing_lost_on_a_corpus_slice(bert, batching):
    lines = read_lines(data_path("corpora", "wikitext-2-raw-test.txt"))[:300]
    result = check_nothing_lost(
        bert, lines, batching, 512, shuffle=1000, seed=1, chunk_size=128
    )
    if batching == "bucket":
        assert result["shapes"] <= 8


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("batching", ["bucket", "pack", "stream"])
@pytest.mark.parametrize(
    "corpus", ["wikitext-2-raw-test.txt", "tinyshakespeare.txt"]
)
def test_nothing_lost_on_whole_corpora(bert, batching, corpus):
    lines = read_lines(data_path("corpora", corpus))
    result = check_nothing_lost(bert, lines, batching, 1024, shuffle=True)
    if batching == "bucket":
        assert result["shapes"] <= 8
