"""The pieces of the character BPE engine (`engines/char_bpe.py`) against
independent Python references: the merge loop and the byte-by-byte
repair of invalid UTF-8."""

import random

import numpy as np
import pytest
import tensorflow as tf

from tf_input.tokenizers._utf8 import replace_invalid_bytes
from tf_input.tokenizers.engines.merge import merge_sequences


def per_byte_replace(raw):
    """sentencepiece's rule, written directly: at each position the valid
    UTF-8 character that starts there (1 to 4 bytes, strict), else one
    U+FFFD for the byte."""
    out, i = [], 0
    while i < len(raw):
        for size in (1, 2, 3, 4):
            try:
                char = raw[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(char)
            i += size
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out).encode()


def test_invalid_bytes_become_one_replacement_each():
    raw = [b"", b"\xff", b"a\xe2\x82b", b"\xed\xa0\x80", b"\xc0\xaf"]
    raw += [b"ok\x80", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf"]
    raw += ["\ufffd ok".encode(), "héllo 中文 😀".encode(), b"\xef\xbf"]
    rng = random.Random(7)
    alphabet = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED]
    alphabet += [0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0, 0x9F, 0x90, 0x8F, 0xBD]
    for _ in range(20_000):
        size = rng.randrange(16)
        if rng.random() < 0.5:
            raw.append(bytes(rng.choice(alphabet) for _ in range(size)))
        else:
            raw.append(bytes(rng.randrange(256) for _ in range(size)))
    raw.append(bytes(rng.randrange(256) for _ in range(100_000)))
    got = replace_invalid_bytes(tf.constant(raw)).numpy().tolist()
    want = [per_byte_replace(r) for r in raw]
    assert sum(g != w for g, w in zip(got, want)) == 0
    # Valid lines come back as they were.
    assert all(g == r for g, r, w in zip(got, raw, want) if r == w)
    assert sum(r != w for r, w in zip(raw, want)) > 10_000


def _random_merges(rng, num_base, num_merged, tied, ordered):
    """Merges over base tokens 0..num_base-1 making num_base.. ; several
    merged ids share a rank when `tied`; `ordered`: every merge ranks
    after the merges that made its parts (else any order)."""
    rows, ranks, seen = [], [], set()
    for merged in range(num_base, num_base + num_merged):
        while True:
            left, right = rng.randrange(merged), rng.randrange(merged)
            if (left, right) not in seen:
                break
        seen.add((left, right))
        rows.append((left, right, merged))
        ranks.append(rng.randrange(num_merged // 3) if tied else len(ranks))
    if not ordered:
        rng.shuffle(ranks)
    return np.array(rows, np.int64), np.array(ranks, np.int64)


def reference_bpe(sequence, merges):
    """BPE as written in the papers: while some adjacent pair has a merge,
    merge the pair of the lowest rank, the leftmost of equal ranks.
    `merges`: `(left, right)` -> `(rank, merged)`."""
    sequence = list(sequence)
    while True:
        best = None
        for i in range(len(sequence) - 1):
            found = merges.get((sequence[i], sequence[i + 1]))
            if found and (best is None or found[0] < best[0]):
                best = (found[0], i, found[1])
        if best is None:
            return sequence
        _, i, merged = best
        sequence[i : i + 2] = [merged]


@pytest.mark.parametrize(
    "tied, all_at_once",
    # `all_at_once` is used only for untied, properly ordered merges.
    [(False, False), (True, False), (False, True)],
)
@pytest.mark.parametrize("num_base, num_merged", [(6, 60), (4, 80)])
@pytest.mark.parametrize("set_aside", [False, True])
def test_merge_loop_is_bpe(tied, all_at_once, num_base, num_merged, set_aside):
    rng = random.Random(11 + tied + 2 * all_at_once + num_base)
    rows, ranks = _random_merges(
        rng, num_base, num_merged, tied, ordered=all_at_once
    )
    num_tokens = num_base + num_merged
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(rows[:, 0] * num_tokens + rows[:, 1]),
            tf.constant((ranks << 32) | rows[:, 2]),
        ),
        default_value=tf.constant(np.iinfo(np.int64).max),
    )
    tied_ranks = None
    if tied:
        counts = np.bincount(ranks)
        tied_ranks = tf.constant(counts > 1)
    merges = {
        (int(left), int(right)): (int(rank), int(merged))
        for (left, right, merged), rank in zip(rows, ranks)
    }
    for _ in range(40):
        lengths = [rng.randrange(0, 30) for _ in range(40)]
        tokens = [rng.randrange(num_base) for _ in range(sum(lengths))]
        chunk_of = np.repeat(np.arange(40), lengths)
        got_tok, got_chunk = merge_sequences(
            tf.constant(tokens, tf.int32),
            tf.constant(chunk_of, tf.int32),
            40,
            merge_table=table,
            num_tokens=num_tokens,
            all_at_once=all_at_once,
            tied_ranks=tied_ranks,
            set_aside=set_aside,
        )
        # In order: chunk by chunk (finished chunks are put back).
        assert np.all(np.diff(got_chunk.numpy()) >= 0)
        got = [[] for _ in lengths]
        for token, chunk in zip(got_tok.numpy(), got_chunk.numpy()):
            got[chunk].append(int(token))
        starts = np.cumsum([0] + lengths)
        want = [
            reference_bpe(tokens[a:b], merges)
            for a, b in zip(starts, starts[1:])
        ]
        assert got == want
