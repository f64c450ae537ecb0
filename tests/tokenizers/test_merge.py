"""The BPE merge loop on long chunks: exact, and in few steps.

A long chunk of many distinct pairs (1 MB of random digits is one GPT-2
word) used to take one loop step per distinct merge, each over the whole
chunk. With `MergeWindows` a step also merges every pair that no earlier
merge can reach, so the steps stay few; the ids must stay those of
sequential BPE (the lowest-ranked pair first, leftmost on ties).
"""

import random

import numpy as np
import pytest
import tensorflow as tf

from tf_input.tokenizers.engines import merge

DIGITS = "0123456789"


def synthetic_merges(seed, num_merges=600, max_length=5):
    """Digit tokens and merges in random rank order, each token made by
    one merge of two older tokens (so merges outrank their parts, as in
    trained merges files). Returns `(texts, merges)`, `merges` a list of
    `(left, right, merged)` ids in rank order."""
    rng = random.Random(seed)
    texts = list(DIGITS)
    ids = {t: i for i, t in enumerate(texts)}
    merges = []
    while len(merges) < num_merges:
        # Short tokens are more often parts, as in a trained vocabulary.
        left = texts[min(rng.randrange(len(texts)), rng.randrange(len(texts)))]
        right = texts[min(rng.randrange(len(texts)), rng.randrange(len(texts)))]
        text = left + right
        if len(text) > max_length or text in ids:
            continue
        ids[text] = len(texts)
        texts.append(text)
        merges.append((ids[left], ids[right], ids[text]))
    return texts, merges


def sequential_bpe(tokens, merges):
    """Reference: merge the lowest-ranked pair, leftmost first."""
    rank = {(a, b): (r, c) for r, (a, b, c) in enumerate(merges)}
    tokens = list(tokens)
    while True:
        found = [
            (rank[pair][0], i)
            for i, pair in enumerate(zip(tokens, tokens[1:]))
            if pair in rank
        ]
        if not found:
            return tokens
        _, i = min(found)
        tokens[i : i + 2] = [rank[tokens[i], tokens[i + 1]][1]]


class CountingTable:
    """A merge table that counts its lookups: one per loop step (the
    loop runs as Python when eager)."""

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def lookup(self, keys):
        self.calls += 1
        return self.table.lookup(keys)


def run_merges(texts, merges, chunks, *, windows):
    merge_ids = np.array(merges, np.int64)
    ranks = np.arange(len(merges), dtype=np.int64)
    table, merge_ids, ranks = merge.merge_table(merge_ids, ranks, len(texts))
    assert merge.merges_properly_ordered(merge_ids, ranks, len(texts))
    reach = None
    if windows:
        reach = merge.MergeWindows(
            merge_ids,
            [ord(t[0]) for t in texts],
            [ord(t[-1]) for t in texts],
            [len(t) for t in texts],
            256,
        )
    counting = CountingTable(table)
    tok = tf.constant([DIGITS.index(c) for c in "".join(chunks)], tf.int32)
    chunk_of = tf.constant(
        [i for i, chunk in enumerate(chunks) for _ in chunk], tf.int32
    )
    tok, chunk_of = merge.merge_sequences(
        tok,
        chunk_of,
        len(chunks),
        merge_table=counting,
        num_tokens=len(texts),
        all_at_once=True,
        windows=reach,
    )
    tok, chunk_of = tok.numpy(), chunk_of.numpy()
    return [tok[chunk_of == i].tolist() for i in range(len(chunks))], (
        counting.calls
    )


def random_chunks(seed):
    rng = random.Random(seed)
    pools = [DIGITS, "0001", "01", "0", "12", DIGITS + "0000"]
    return [
        "".join(rng.choice(pool) for _ in range(rng.randrange(1, 40)))
        for pool in rng.choices(pools, k=30)
    ] + ["".join(rng.choice(DIGITS) for _ in range(3000))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_chunks_match_sequential_bpe_in_few_steps(seed):
    texts, merges = synthetic_merges(seed)
    chunks = random_chunks(seed)
    got, steps = run_merges(texts, merges, chunks, windows=True)
    ids = {t: i for i, t in enumerate(texts)}
    for chunk, ids_got in zip(chunks, got):
        want = sequential_bpe([ids[c] for c in chunk], merges)
        assert ids_got == want, chunk
    # 7-8 steps (the longest chain of merges that wait for one
    # another); 130 without the windows (one per distinct merge, below).
    assert steps <= 15, steps


def test_without_windows_a_long_chunk_takes_a_step_per_merge():
    texts, merges = synthetic_merges(0)
    chunks = random_chunks(0)
    got, steps = run_merges(texts, merges, chunks, windows=False)
    with_windows, _ = run_merges(texts, merges, chunks, windows=True)
    assert got == with_windows
    assert steps > 100, steps


def test_runs_of_one_pair_start_where_the_run_starts():
    # `0 0 0 ...` after a pair that merges first: the run's parity comes
    # from its start, which may be far from the pairs that a step sees.
    texts = list(DIGITS) + ["10", "00", "000", "0000"]
    ids = {t: i for i, t in enumerate(texts)}
    merges = [
        (ids["1"], ids["0"], ids["10"]),
        (ids["0"], ids["0"], ids["00"]),
        (ids["00"], ids["0"], ids["000"]),
        (ids["00"], ids["00"], ids["0000"]),
    ]
    chunks = ["1" + "0" * n for n in range(1, 80)] + [
        "0" * n for n in range(1, 80)
    ]
    got, _ = run_merges(texts, merges, chunks, windows=True)
    for chunk, ids_got in zip(chunks, got):
        assert ids_got == sequential_bpe([ids[c] for c in chunk], merges)
