"""The unigram path of `SentencePieceTokenizer`: its routes mixed in one
batch, its flat ragged helpers, and its graph size, which sets what every
`tf.data` iterator pays to start (see benchmarks/README.md)."""

import functools
import random

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import sentencepiece_model
from tests.testing import text_lines
from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
from tf_input.tokenizers.sentencepiece import _unigram_graph as sp_module

TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Il était une fois un petit prince qui habitait une planète.",
    "吾輩は猫である。名前はまだ無い。凤姐儿笑道：“亲戚们不大走动。”",
    "Numbers 1234 and 56.78 -- ﬁne ligatures, ½ and Ⅳ, ＡＢＣ.",
] * 10
MODELS = {
    "bytes": dict(byte_fallback=True, user_defined_symbols=["<sep>"]),
    "unknown": dict(),
}
# Lines for each route and sub-route (`_sub_routes` checks which): the
# fast op as it is (plain text; a tab, which the rules make a space), and
# the second route (a rare character above the BMP) with the whitespace
# rules only (no character a rule starts with: most letters start one),
# with the library's normalizer, or with the byte-level normalizer (and a
# long space-free run).
ROUTES = [
    "the quick brown fox",
    "吾輩は猫" * 20,
    "the\tquick",
    "12 \U00020000  34 ",
    " 凤 \U00020000 凤",
    "ﬁne \U00020000 ½ Ⅳ ＡＢＣ",
    "ﬁ\U00020000" + "吾輩は猫" * 20,
    "½ \U00020000" + "凤姐儿" * 30 + " the " + "x" * 50,
    "a\U00020000b \x00 c",
    "",
    "   ",
    "<sep> the <sep>",
    # The trivial route: no piece spans two neighbouring characters.
    "  吾輩は猫である。",
    "凤 姐",
]


@functools.lru_cache(maxsize=None)
def proto(name):
    return sentencepiece_model(
        TRAINING_TEXT,
        model_type="unigram",
        vocab_size=500,
        character_coverage=0.98,
        hard_vocab_limit=False,
        **MODELS[name],
    )


def as_lists(ids):
    return [list(map(int, row)) for row in ids.to_list()]


@pytest.fixture
def short_long_runs(monkeypatch):
    """Space-free runs of 12 bytes or more take the byte-level normalizer
    (4096 in use), so short lines reach every sub-route."""
    monkeypatch.setattr(sp_module, "_LONG_RUN", 12)


def _sub_routes(tokenizer, lines):
    """The route each line takes, as `UnigramGraph.tokenize` and
    `_normalize` choose it (`_LONG_RUN` as patched)."""
    graph = tokenizer._engine
    texts = tf.constant(lines)
    trivial = tf.strings.regex_full_match(texts, graph._trivial_pattern)
    first = tf.strings.regex_full_match(texts, graph._safe_pattern)
    if graph._user_pattern is not None:
        first &= ~tf.strings.regex_full_match(texts, graph._user_pattern)
    plain = tf.strings.regex_full_match(texts, graph._plain_pattern)
    spaced = texts
    if graph._run_break_pattern is not None:
        spaced = tf.strings.regex_replace(texts, graph._run_break_pattern, " ")
    longest = [max(map(len, t.split(b" "))) for t in spaced.numpy()]
    return [
        "trivial"
        if t
        else "first"
        if f
        else "plain"
        if p
        else "bytes"
        if n >= sp_module._LONG_RUN
        else "library"
        for t, f, p, n in zip(
            trivial.numpy(), first.numpy(), plain.numpy(), longest
        )
    ]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_routes_mixed_in_one_batch_match_sentencepiece(name, short_long_runs):
    tokenizer = SentencePieceTokenizer(proto(name))
    reference = spm.SentencePieceProcessor(model_proto=proto(name))
    routes = _sub_routes(tokenizer, ROUTES)
    expected = {"trivial", "first", "plain", "library", "bytes"}
    assert set(routes) == expected, routes
    rng = random.Random(0)
    for size in (1, 2, 5, 30):
        batch = [rng.choice(ROUTES) for _ in range(size)]
        assert as_lists(tokenizer(batch)) == reference.encode(batch), batch
    # Batches where some routes have no line at all.
    for batch in ([ROUTES[0]] * 3, [ROUTES[6]] * 2, [ROUTES[3], ROUTES[5]]):
        assert as_lists(tokenizer(batch)) == reference.encode(batch), batch


_line = text_lines(
    ROUTES + [" ", "\t", "  ", "ﬁ", "\u3000", "<sep>"], max_pieces=5, max_size=8
)


@settings(max_examples=500, deadline=None)
@given(batch=st.lists(_line, min_size=1, max_size=6))
def test_fuzz_mixed_routes_match_sentencepiece(batch):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sp_module, "_LONG_RUN", 12)
        tokenizer, reference = _fuzz_pair()
        assert as_lists(tokenizer(batch)) == reference.encode(batch)


@functools.lru_cache(maxsize=None)
def _fuzz_pair():
    # Traced on its first call, which the test makes with _LONG_RUN = 12.
    return (
        SentencePieceTokenizer(proto("bytes")),
        spm.SentencePieceProcessor(model_proto=proto("bytes")),
    )


def _ragged_strings(rng, rows):
    return [
        [
            rng.choice(["", "a", "bc", "é", "凤"])
            for _ in range(rng.randrange(4))
        ]
        for _ in range(rows)
    ]


def test_join_rows_joins_each_row_in_order():
    rng = random.Random(1)
    for rows in (0, 1, 7, 50):
        data = _ragged_strings(rng, rows)
        ragged = tf.ragged.constant(data, tf.string, row_splits_dtype=tf.int64)
        if rows == 0:
            ragged = tf.RaggedTensor.from_row_splits(
                tf.zeros([0], tf.string), tf.zeros([1], tf.int64)
            )
        got = sp_module._join_rows(ragged.values, ragged.row_splits)
        want = ["".join(row).encode() for row in data]
        assert got.numpy().tolist() == want


def test_concat_rows_keeps_the_rows_of_both():
    rng = random.Random(2)
    for left, right in ((0, 0), (0, 3), (3, 0), (5, 8)):
        a = [
            [rng.randrange(9) for _ in range(rng.randrange(4))]
            for _ in range(left)
        ]
        b = [
            [rng.randrange(9) for _ in range(rng.randrange(4))]
            for _ in range(right)
        ]

        def ragged(rows):
            lengths = [len(r) for r in rows]
            return tf.RaggedTensor.from_row_splits(
                tf.constant([x for r in rows for x in r], tf.int32),
                tf.constant(
                    np.concatenate([[0], np.cumsum(lengths)]), tf.int64
                ),
            )

        got = sp_module._concat_rows(ragged(a), ragged(b))
        assert got.to_list() == a + b
        assert got.row_splits.dtype == tf.int64


# The trivial route (`_UnigramPlan._plan_trivial_route`) for ALBERT:
# lines it takes, and lines just outside it, which must not take it.
ALBERT_TRIVIAL = [
    "    原来女娲氏炼石补天之时，于大荒山无稽崖",
    "“亲戚们不大走动。”",
    "中 文 字",
    "中a中b",
    "(中)-“文”",
    "中\u4e00\u9fa5",
]
ALBERT_NOT_TRIVIAL = [
    "",
    "a中",  # "▁a" is a piece.
    "   ",
    "ab中",
    "中ab",
    "中  文",
    "中文 ",
    "中\u3000文",
    "中\u0301文",
    "中\U00020000",
    "中\t文",
    "中\u2581文",
    "the cat",
]


@pytest.fixture(scope="module")
def albert():
    path = str(data_path("sentencepiece", "albert-base-v2-spiece.model"))
    return (
        SentencePieceTokenizer(path),
        spm.SentencePieceProcessor(model_file=path),
    )


def _takes_trivial_route(tokenizer, lines):
    return (
        tf.strings.regex_full_match(
            tf.constant(lines), tokenizer._engine._trivial_pattern
        )
        .numpy()
        .tolist()
    )


@requires_shared_data
def test_albert_trivial_route_matches_sentencepiece(albert):
    tokenizer, reference = albert
    lines = ALBERT_TRIVIAL + ALBERT_NOT_TRIVIAL
    routes = _takes_trivial_route(tokenizer, lines)
    assert routes == [True] * len(ALBERT_TRIVIAL) + [False] * len(
        ALBERT_NOT_TRIVIAL
    )
    assert as_lists(tokenizer(lines)) == reference.encode(lines)
    for line in lines:  # Alone too: a batch of one route.
        assert as_lists(tokenizer([line])) == reference.encode([line]), line


# Characters around the trivial route's edges for ALBERT: isolated CJK
# characters (known and unknown), characters in longer pieces, user-
# defined pieces of one character, spaces, rules that map to a longer
# piece's character or to a space, a combining mark, a rare character.
_albert_line = text_lines(
    list("中文的了不是我你他好凤姐儿亲戚们")
    + list('ab1,.:?!*-()"–£€é')
    + [" ", "  ", "，", "。", "“", "”", "：", "！", "\u3000", "\u0301"]
    + ["\t", "\u2581", "\U00020000", "\u4e00\u9fa5", "\uff21"],
    max_pieces=8,
    max_size=3,
)


@requires_shared_data
@settings(max_examples=500, deadline=None)
@given(batch=st.lists(_albert_line, min_size=1, max_size=5))
def test_fuzz_albert_trivial_route_matches_sentencepiece(albert, batch):
    tokenizer, reference = albert
    assert as_lists(tokenizer(batch)) == reference.encode(batch)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trivial_route_is_taken_and_exact(name):
    """Both test models (unknown pieces; byte fallback) on lines of the
    trivial route, which `_sub_routes` must see take it."""
    tokenizer = SentencePieceTokenizer(proto(name))
    reference = spm.SentencePieceProcessor(model_proto=proto(name))
    lines = [
        "  吾輩は猫である。",
        "凤 姐",
        "“亲戚们不大走动。”",
        "凤  姐",
        "凤姐 ",
    ]
    assert _sub_routes(tokenizer, lines)[:3] == ["trivial"] * 3
    assert "trivial" not in _sub_routes(tokenizer, lines)[3:]
    assert as_lists(tokenizer(lines)) == reference.encode(lines)


def _graph_nodes(tokenizer):
    function = tf.function(tokenizer._tokenize_graph)
    graph = function.get_concrete_function(
        tf.TensorSpec([None], tf.string)
    ).graph
    return len(graph.get_operations())


# Every node of the map function costs each `tf.data` iterator Grappler
# time (the start-up of every epoch). ALBERT's graph was 452 nodes and
# started ~56 ms slower than a trivial map; at 209 nodes, ~27 ms (minima
# of 15 epochs of one line, benchmarks/README.md); the trivial route and
# the cheaper unknown merging made it 235. With byte fallback: 486 -> 287
# -> 301. A guard, with room for small changes, against ragged helpers
# creeping back.
@pytest.mark.parametrize("name", sorted(MODELS))
def test_unigram_graph_stays_small(name):
    assert _graph_nodes(SentencePieceTokenizer(proto(name))) <= 315


@requires_shared_data
def test_albert_graph_stays_small():
    path = data_path("sentencepiece", "albert-base-v2-spiece.model")
    assert _graph_nodes(SentencePieceTokenizer(path)) <= 250
