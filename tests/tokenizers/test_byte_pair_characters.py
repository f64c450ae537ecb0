"""Whole characters at the start of the merge loop (`whole_characters`).

BytePairTokenizer starts BPE from one token per multi-byte character where
that is proven exact, instead of from its bytes. These tests build the
cases where it would not be exact (a merge joining part of a character
with its neighbour; a tiktoken rank order where a token holding the
character ranks below the character), and fuzz small trained vocabularies
full of partial-character tokens against HF `tokenizers` and tiktoken.
The real vocabularies are covered by test_loading.py (every line of every
corpus with `-m slow`).
"""

import json
import random

import numpy as np
import pytest
import tiktoken
import tokenizers as hf_tokenizers
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.tokenizers.test_byte_pair import assert_parity
from tests.tokenizers.test_byte_pair import hf_reference
from tests.tokenizers.test_byte_pair import ours_ids
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers._byte_level import ALPHABET
from tf_input.tokenizers._byte_level import byte_level

ZHONG = "中".encode()  # e4 b8 ad


def _byte_vocab():
    return {c: i for i, c in enumerate(ALPHABET)}


def _whole(tokenizer):
    """The characters that start whole, as {str: (left, right)} classes."""
    keys, values = tokenizer._engine.char_tables[0].export()
    out = {}
    for key, value in zip(keys.numpy(), values.numpy()):
        if key < 0:
            continue
        raw = int(key).to_bytes(4, "big").lstrip(b"\0")
        out[raw.decode()] = (int(value) >> 32 & 0xFFFF, int(value) >> 48)
    return out


def _joins(tokenizer, edge, klass):
    _, before, after = tokenizer._engine.char_tables
    table = before if edge == "before" else after
    row = table.numpy().reshape(-1, 256)[klass]
    return set(np.flatnonzero(row).tolist())


def _zhong_vocab(extra_merges):
    vocab = _byte_vocab()
    merges = []
    for left, right in [
        *extra_merges,
        (ZHONG[:1], ZHONG[1:2]),
        (ZHONG[:2], ZHONG[2:]),
    ]:
        merged = byte_level(left + right)
        vocab.setdefault(merged, len(vocab))
        merges.append(f"{byte_level(left)} {byte_level(right)}")
    return vocab, merges


TEXTS = ["中", " 中", "a中", "中a", "中中", " 中a", "x 中 中a", "中 a中"]


def test_a_merge_with_a_lead_byte_keeps_the_bytes_after_that_byte():
    # " " + the lead byte of 中 merges first: " 中" must stay " \xe4" +
    # the rest, which starting from 中 would miss.
    vocab, merges = _zhong_vocab([(b" ", ZHONG[:1])])
    tokenizer = BytePairTokenizer(vocab, merges, special_tokens=[])
    left, right = _whole(tokenizer)["中"]
    assert _joins(tokenizer, "before", left) == {ord(" ")}
    assert right == 0
    assert_parity(tokenizer, hf_reference(vocab, merges), TEXTS)
    assert ours_ids(tokenizer, [" 中", "a中"]) == [
        [
            vocab[byte_level(b" " + ZHONG[:1])],
            vocab[byte_level(ZHONG[1:2])],
            vocab[byte_level(ZHONG[2:])],
        ],
        [vocab["a"], vocab[byte_level(ZHONG)]],
    ]


def test_a_merge_with_a_continuation_byte_keeps_the_bytes_before():
    vocab, merges = _zhong_vocab([(ZHONG[2:], b"a")])
    tokenizer = BytePairTokenizer(vocab, merges, special_tokens=[])
    left, right = _whole(tokenizer)["中"]
    assert left == 0
    assert _joins(tokenizer, "after", right) == {ord("a")}
    assert_parity(tokenizer, hf_reference(vocab, merges), TEXTS)
    assert ours_ids(tokenizer, ["中a", "中 "]) == [
        [vocab[byte_level(ZHONG[:2])], vocab[byte_level(ZHONG[2:] + b"a")]],
        [vocab[byte_level(ZHONG)], vocab["Ġ"]],
    ]


def _rank_tokenizer(tokens):
    """ours and tiktoken for the 256 bytes, then `tokens` (bytes) ranked in
    that order; no pre-tokenization (tiktoken: one piece per text)."""
    ranks = {bytes([b]): b for b in range(256)}
    for raw in tokens:
        ranks.setdefault(raw, len(ranks))
    reference = tiktoken.Encoding(
        "test", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={}
    )
    vocabulary = {byte_level(raw): i for raw, i in ranks.items()}
    ours = BytePairTokenizer(
        vocabulary,
        None,
        special_tokens=[],
        pretokenizer=None,
        ignore_merges=True,
    )
    return ours, reference


def test_a_rank_order_that_merges_the_character_with_a_neighbour_first():
    # From bytes, tiktoken makes "ab" (rank 258) before 中 (259); started
    # from 中, "中a" (257) would come first.
    ours, reference = _rank_tokenizer([ZHONG[:2], ZHONG + b"a", b"ab", ZHONG])
    assert "中" not in _whole(ours)
    assert reference.encode_ordinary("中ab") == [259, 258]
    texts = ["中ab", "中a", "a中ab", "中中ab"]
    assert ours_ids(ours, texts) == reference.encode_ordinary_batch(texts)
    # Ranked after the character, the same tokens let it start whole.
    ours, reference = _rank_tokenizer([ZHONG[:2], ZHONG, ZHONG + b"a", b"ab"])
    assert "中" in _whole(ours)
    assert ours_ids(ours, texts) == reference.encode_ordinary_batch(texts)


# --- Fuzz on trained vocabularies --------------------------------------------
_CHARS = list(
    "中文字的一是不了人我在有他这为之大来以个们到说国和地也子时道出而要于"
    "éèàüöñçßøåœ"  # 2-byte
    "ΑΒΓαβγδЖжЯя"  # 2-byte, other scripts
    "。，、！？「」《》…—"  # 3-byte punctuation
    "😀🎉👍🏽❤️‍🔥"  # 4-byte, ZWJ
    "abcxyz019 .,'-\n\t"
)


def _trained(seed, size):
    rng = random.Random(seed)
    lines = [
        "".join(rng.choice(_CHARS) for _ in range(rng.randint(5, 40)))
        for _ in range(400)
    ]
    reference = hf_tokenizers.Tokenizer(hf_tokenizers.models.BPE())
    reference.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False
    )
    trainer = hf_tokenizers.trainers.BpeTrainer(
        vocab_size=size,
        initial_alphabet=hf_tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    reference.train_from_iterator(lines, trainer)
    model = json.loads(reference.to_str())["model"]
    merges = [
        " ".join(m) if isinstance(m, list) else m for m in model["merges"]
    ]
    return model["vocab"], merges


def _random_merges(seed):
    """Merges of random runs of text (many join parts of characters
    with their neighbours), in a random order."""
    rng = random.Random(seed)
    text = "".join(rng.choice(_CHARS) for _ in range(3000)).encode()
    vocab = _byte_vocab()
    merges = []
    while len(merges) < 400:
        start = rng.randrange(len(text) - 8)
        run = text[start : start + rng.randint(2, 7)]
        cut = rng.randrange(1, len(run))
        left, right = byte_level(run[:cut]), byte_level(run[cut:])
        if left in vocab and right in vocab and left + right not in vocab:
            vocab[left + right] = len(vocab)
            merges.append(f"{left} {right}")
    rng.shuffle(merges)
    return vocab, merges


@pytest.fixture(scope="module", params=["trained", "random"])
def trained(request):
    if request.param == "trained":
        vocab, merges = _trained(0, 800)
    else:
        vocab, merges = _random_merges(0)
    ours = BytePairTokenizer(vocab, merges, special_tokens=[])
    return ours, hf_reference(vocab, merges)


def test_trained_vocabularies_start_some_characters_whole_and_not_others(
    trained,
):
    ours, _ = trained
    whole = _whole(ours)
    # Meaningful only if both kinds of character occur: some start whole,
    # some have an edge that joins a part of them with a neighbour.
    assert len(whole) >= 10
    assert any(left or right for left, right in whole.values())


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(
        st.text(st.sampled_from(_CHARS), max_size=30), min_size=1, max_size=8
    )
)
def test_fuzz_trained_vocabularies_against_hf(trained, texts):
    ours, reference = trained
    assert_parity(ours, reference, texts)


def _random_ranks(seed):
    """Tokens cut at random from text (many are parts of characters), in a
    random rank order: tiktoken-like ranks that are not ordered."""
    rng = random.Random(seed)
    text = "".join(rng.choice(_CHARS) for _ in range(3000)).encode()
    tokens = set()
    while len(tokens) < 600:
        start = rng.randrange(len(text) - 8)
        tokens.add(text[start : start + rng.randint(2, 7)])
    # Every character's bytes too, so that some can start whole.
    tokens = sorted(tokens | {c.encode() for c in _CHARS if ord(c) > 127})
    rng.shuffle(tokens)
    return tokens


@pytest.fixture(scope="module", params=[0, 1])
def ranked(request):
    return _rank_tokenizer(_random_ranks(request.param))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(
        st.text(st.sampled_from(_CHARS), max_size=30), min_size=1, max_size=8
    )
)
def test_fuzz_random_rank_orders_against_tiktoken(ranked, texts):
    # (Characters of both kinds, as for the trained vocabularies.)
    whole = _whole(ranked[0])
    assert len(whole) >= 5
    assert any(left or right for left, right in whole.values())
    ours, reference = ranked
    assert not ours._engine.all_at_once
    assert ours_ids(ours, texts) == reference.encode_ordinary_batch(texts)
