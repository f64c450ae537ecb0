"""SentencePiece unigram models on core ops (`tf_text_unigram=False`):
the same ids as `sentencepiece`, with no TF Text op in the graph."""

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import SHARED_DATA
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.tokenizers.test_sentencepiece import lines as fuzz_lines
from tests.tokenizers.test_sentencepiece import tokenizer_and_reference
from tf_input.tokenizers import SentencePieceTokenizer

_TRICKY = [
    "",
    " ",
    "  a  b ",
    "\u3000x\u3000\u3000y",
    "ﬁ x",
    "\t\tq",
    "a\x00b",
    "▁x▁",
    "*****",
    "**",
    "<sep>@@ﬁ x@@",
    "Hello world. 凤姐儿 😀 Ａ\u0301",
    "x" * 300,
    "a\ufffdb \ufffd",
]


@pytest.mark.parametrize("name", ["unigram", "unigram_suffix"])
def test_core_ops_match_sentencepiece_on_tricky_texts(name):
    tokenizer, reference = tokenizer_and_reference(name)
    core = SentencePieceTokenizer(tokenizer.proto, tf_text_unigram=False)
    assert core.uses_core_ops_only
    got = core(tf.constant(_TRICKY)).to_list()
    assert got == reference.encode(_TRICKY)
    raw = [b"\xff", b"a\xe2\x82b", b"\xed\xa0\x80", b"ok\x80"]
    got = core(tf.constant(raw)).to_list()
    assert got == [reference.encode(r) for r in raw]


@requires_shared_data
@pytest.mark.parametrize(
    "model",
    [
        "albert-base-v2-spiece.model",
        "sp-test-botchan-unigram-1000.model",
        "sp-test-ja.model",
    ],
)
def test_core_ops_match_sentencepiece_on_corpora(model):
    shared_data = SHARED_DATA
    data = (shared_data / "sentencepiece" / model).read_bytes()
    reference = spm.SentencePieceProcessor(model_proto=data)
    core = SentencePieceTokenizer(data, tf_text_unigram=False)
    assert core.uses_core_ops_only
    for corpus in ("wikitext-2-raw-test.txt", "hongloumeng.txt"):
        text = (shared_data / "corpora" / corpus).read_text("utf-8")
        lines = text.split("\n")[:40]
        assert core(tf.constant(lines)).to_list() == reference.encode(lines)


@pytest.mark.slow
def test_core_ops_contract_loads_without_tensorflow_text():
    # The SavedModel, moved, loads in a fresh process that imports only
    # tensorflow, and gives the library's ids; the `.keras` file keeps the
    # choice of ops (`tf_text_unigram`). About 2 minutes; the fast sibling
    # is test_core_ops_match_sentencepiece_on_tricky_texts (same graph).
    tokenizer, reference = tokenizer_and_reference("unigram")
    core = SentencePieceTokenizer(tokenizer.proto, tf_text_unigram=False)
    assert core.uses_core_ops_only
    assert core.get_config()["tf_text_unigram"] is False
    texts = ["Hello world. ﬁ x", "<sep>@@ **", ""]
    run_tokenizer_test(core, texts, expected_ids=reference.encode(texts))


def test_tf_text_unigram_must_be_a_bool():
    tokenizer, _ = tokenizer_and_reference("unigram")
    with pytest.raises(TypeError, match="tf_text_unigram='no'"):
        SentencePieceTokenizer(tokenizer.proto, tf_text_unigram="no")


@requires_shared_data
def test_core_ops_break_exact_ties_as_the_library():
    # Runs of "*" in the Chinese novel: "*" "**" and "**" "*" score the
    # same, and float32 sums from the line's score before them decide
    # (`_core_unigram._resolve`); a float64 search would differ on 50 lines.
    data = (
        SHARED_DATA / "sentencepiece/albert-base-v2-spiece.model"
    ).read_bytes()
    reference = spm.SentencePieceProcessor(model_proto=data)
    core = SentencePieceTokenizer(data, tf_text_unigram=False)
    text = (SHARED_DATA / "corpora/hongloumeng.txt").read_text("utf-8")
    lines = sorted(
        (line for line in text.split("\n") if "***" in line), key=len
    )[:12]
    lines += ["a b c *** ** **** x ***", "***** " * 20]
    assert core(tf.constant(lines)).to_list() == reference.encode(lines)


def test_cumsum_adds_a_row_in_order():
    # `_resolve` takes each word's float32 base from `tf.cumsum` along a
    # row: it must add left to right, as the library's loop does.
    rng = np.random.default_rng(0)
    scores = (-20 * rng.random((7, 3000))).astype(np.float32)
    want = np.zeros_like(scores)
    total = np.zeros(7, np.float32)
    for j in range(scores.shape[1]):
        total = (total + scores[:, j]).astype(np.float32)
        want[:, j] = total
    assert (tf.cumsum(tf.constant(scores), axis=1).numpy() == want).all()


_CORE = {}


@settings(max_examples=150, deadline=None)
@given(batch=st.lists(fuzz_lines, min_size=1, max_size=8))
def test_fuzz_core_ops_match_sentencepiece(batch):
    if not _CORE:
        tokenizer, _CORE["reference"] = tokenizer_and_reference("unigram")
        _CORE["core"] = SentencePieceTokenizer(
            tokenizer.proto, tf_text_unigram=False
        )
    got = _CORE["core"](tf.constant(batch)).to_list()
    assert got == _CORE["reference"].encode(batch)
