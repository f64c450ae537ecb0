"""Packing, bucket boundaries, the attention-mask helper, and "nothing lost"
on real corpora."""

import collections
import itertools

import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tf_input import WordPieceTokenizer
from tf_input.data import make_dataset
from tf_input.data import segment_attention_mask
from tf_input.data import stats
from tf_input.data.packing import _cumulative_max
from tf_input.data.packing import choose_boundaries
from tf_input.data.packing import pack_rows

# --- segment_attention_mask ------------------------------------------------


def mask_reference(segment_ids, causal):
    segment_ids = np.asarray(segment_ids)
    n = segment_ids.shape[-1]
    out = np.zeros(segment_ids.shape + (n,), bool)
    for index in np.ndindex(segment_ids.shape[:-1]):
        row = segment_ids[index]
        for i in range(n):
            for j in range(n):
                same = row[i] == row[j] and row[j] > 0
                out[index + (i, j)] = same and (j <= i or not causal)
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_segment_attention_mask_matches_reference(causal):
    segment_ids = [[1, 1, 2, 2, 2, 3, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]
    got = segment_attention_mask(segment_ids, causal=causal)
    assert got.dtype == tf.bool and got.shape == (2, 8, 8)
    np.testing.assert_array_equal(got, mask_reference(segment_ids, causal))
    np.testing.assert_array_equal(
        segment_attention_mask(segment_ids[0], causal=causal),
        mask_reference(segment_ids[0], causal),
    )


def test_segment_attention_mask_bad_input():
    with pytest.raises(ValueError, match=r"causal='yes'"):
        segment_attention_mask([[1]], causal="yes")
    with pytest.raises(ValueError, match=r"dtype float32"):
        segment_attention_mask([[1.0]])
    with pytest.raises(ValueError, match=r"shape \(1, 1, 1\)"):
        segment_attention_mask([[[1]]])


def test_segment_attention_mask_works_in_multi_head_attention():
    import keras

    x = tf.random.normal([1, 4, 8])
    segment_ids = tf.constant([[1, 1, 2, 0]])
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    mask = segment_attention_mask(segment_ids)
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
    segments = packed["segment_ids"].numpy()
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


def expected_tokens(tokenizer, lines):
    """[CLS] ids [SEP] of each non-empty line, from the tokenizer itself."""
    ids = tokenizer.tokenize(tf.constant(lines)).to_list()
    cls, sep = tokenizer.special_tokens["cls"], tokenizer.special_tokens["sep"]
    counter = collections.Counter()
    rows = 0
    for row in ids:
        if row:
            counter.update([cls, *row, sep])
            rows += 1
    return counter, rows


def output_tokens(dataset):
    counter = collections.Counter()
    for features, labels in dataset:
        ids = features["token_ids"].numpy()
        mask = features["padding_mask"].numpy()
        counter.update(ids[mask].tolist())
        # Padding is never data: 0 ids and 0 labels off the mask.
        assert not ids[~mask].any() and not labels.numpy()[~mask].any()
    return counter


def check_nothing_lost(tokenizer, lines, batching, max_length, **kwargs):
    dataset = make_dataset(
        lines,
        tokenizer,
        batch_size=32,
        max_length=max_length,
        batching=batching,
        **kwargs,
    )
    want, _ = expected_tokens(tokenizer, lines)
    got = output_tokens(dataset)
    assert got == want
    result = stats(dataset)
    assert result["truncated"] == 0
    assert result["real_tokens"] == sum(want.values())
    return result


@requires_shared_data
@pytest.mark.parametrize("batching", ["bucket", "pack"])
def test_nothing_lost_on_a_corpus_slice(bert, batching):
    lines = read_lines(data_path("corpora", "wikitext-2-raw-test.txt"))[:300]
    result = check_nothing_lost(
        bert, lines, batching, 512, shuffle=1000, seed=1, chunk_size=128
    )
    if batching == "bucket":
        assert result["shapes"] <= 8


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("batching", ["bucket", "pack"])
@pytest.mark.parametrize(
    "corpus", ["wikitext-2-raw-test.txt", "tinyshakespeare.txt"]
)
def test_nothing_lost_on_whole_corpora(bert, batching, corpus):
    lines = read_lines(data_path("corpora", corpus))
    result = check_nothing_lost(bert, lines, batching, 1024, shuffle=True)
    if batching == "bucket":
        assert result["shapes"] <= 8
