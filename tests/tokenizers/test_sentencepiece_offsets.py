"""`tokenize_with_offsets` of SentencePiece `.model`s against the library.

The reference is `sentencepiece` itself: `encode(line, return_type=
"proto")` gives every piece's id and its byte span `begin`/`end` in the
input, which `unit="byte"` must equal on every line. `unit="char"` is the
same span in code points of the Python `str` (the characters its bytes
touch), and a word starts at every piece that starts with "▁". BPE models
(Mistral) take their spans from TF Text's op around the library; unigram
models (ALBERT, sp-test-ja, botchan) from the core-ops graph.
"""

import functools
import random
import sys
import unicodedata

import pytest
import sentencepiece as spm
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.tokenizers.offsets_testing import as_rows
from tests.tokenizers.offsets_testing import byte_fallback_unigram_model
from tests.tokenizers.offsets_testing import reloaded_offsets
from tf_input.tokenizers import SentencePieceTokenizer

pytestmark = requires_shared_data

MISTRAL = "mistral-7b-v0.3-tokenizer.model"  # BPE, byte fallback
# botchan's model with the 256 byte pieces and byte fallback: a character
# without a piece is its UTF-8 bytes' pieces, the last spanning it.
BYTES = "botchan + byte fallback"
UNIGRAM = (
    "albert-base-v2-spiece.model",  # nmt_nfkc
    "sp-test-ja.model",  # nmt_nfkc, a Japanese vocabulary
    "sp-test-botchan-unigram-1000.model",  # 1000 pieces
    BYTES,
)


@functools.cache
def ours(name):
    if name == BYTES:
        return SentencePieceTokenizer(byte_fallback_unigram_model())
    return SentencePieceTokenizer(data_path("sentencepiece", name))


@functools.cache
def reference(name):
    if name == BYTES:
        return spm.SentencePieceProcessor(
            model_proto=byte_fallback_unigram_model()
        )
    path = str(data_path("sentencepiece", name))
    return spm.SentencePieceProcessor(model_file=path)


def char_span(raw, start, end):
    """The characters of valid UTF-8 `raw` that bytes `[start, end)`
    touch (an empty span: the character it starts in)."""
    leads = [i for i, b in enumerate(raw) if b & 0xC0 != 0x80]

    def char_at(position):
        return sum(1 for i in leads if i <= position) - 1

    first = len(leads) if start >= len(raw) else char_at(start)
    return (first, char_at(end - 1) + 1 if end > start else first)


def reference_rows(name, lines, unit="byte"):
    sp = reference(name)
    rows = []
    for line in lines:
        raw = line if isinstance(line, bytes) else line.encode("utf-8")
        pieces = sp.encode(raw, return_type="proto").pieces
        spans = [(p.begin, p.end) for p in pieces]
        if unit == "char":
            spans = [char_span(raw, s, e) for s, e in spans]
        words, count = [], -1
        for i, p in enumerate(pieces):
            count += p.piece.startswith("\u2581") or i == 0
            words.append(count)
        rows.append(([p.id for p in pieces], spans, words))
    return rows


def our_rows(name, lines, unit="byte"):
    return as_rows(
        ours(name).tokenize_with_offsets(
            tf.constant(lines, tf.string), unit=unit, return_word_ids=True
        )
    )


def assert_parity(name, lines, units=("byte", "char")):
    for unit in units:
        got = our_rows(name, lines, unit)
        want = reference_rows(name, lines, unit)
        bad = [(t, g, w) for t, g, w in zip(lines, got, want) if g != w]
        assert not bad, (
            f"{name} ({unit}): {len(bad)}/{len(lines)} lines differ, first: "
            f"{bad[0]!r}"
        )


def every_line():
    return [line for _, lines in sorted(corpora().items()) for line in lines]


# --- Corpora ----------------------------------------------------------------
def test_matches_sentencepiece_on_a_sample_of_every_corpus(name=MISTRAL):
    rng = random.Random(0)
    lines = [
        line
        for _, corpus in sorted(corpora().items())
        for line in rng.sample(corpus, min(40, len(corpus)))
    ]
    assert_parity(name, lines)


@pytest.mark.parametrize("name", UNIGRAM)
def test_unigram_matches_sentencepiece_on_a_sample_of_every_corpus(name):
    rng = random.Random(1)
    lines = [
        line
        for _, corpus in sorted(corpora().items())
        for line in rng.sample(corpus, min(10, len(corpus)))
    ]
    assert_parity(name, lines + SPECIAL_CASES)
    assert_parity(name, INVALID, units=("byte",))


@pytest.mark.slow
@pytest.mark.parametrize("name", (MISTRAL, *UNIGRAM))
def test_matches_sentencepiece_on_every_corpus_line(name):
    lines = every_line()
    for start in range(0, len(lines), 4096):
        assert_parity(name, lines[start : start + 4096])


SPECIAL_CASES = [
    "",
    " ",
    "   leading and  inner   spaces   ",
    "Hello world",
    "ｈｅｌｌｏ　ｗｏｒｌｄ",  # NFKC rules that shorten the text
    "ﬁnance ＡＢＣ ①",
    "e\u0301 a\u0301\u0323 x\u0301",  # combining marks
    "👨\u200d👩\u200d👧 🏳️\u200d🌈 😀",  # emoji ZWJ sequences
    "中文字符 日本語のテキスト 한국어",
    "\u1100\u1161\u11a8",
    "tab\there\nnewline",
    "\u00a0no-break\u3000ideographic",
]


def test_matches_sentencepiece_on_special_cases(name=MISTRAL):
    assert_parity(name, SPECIAL_CASES)


INVALID = [
    b"ok \xff bad",
    b"\xe2\x82 cut \xf0\x9f\x98",
    b"\x80\x80\x80x",
    b"caf\xc3\xa9 \xed\xa0\x80 surrogate",
    b"\xc3",
]


def test_invalid_utf8_spans_are_the_librarys(name=MISTRAL):
    """Byte spans are in the bytes given, as the library gives them; in
    characters, every byte span covers the characters of
    `decode("utf-8", "replace")` its bytes fall in."""
    assert_parity(name, INVALID, units=("byte",))
    _, starts, ends = ours(name).tokenize_with_offsets(INVALID, unit="char")
    _, byte_starts, byte_ends = ours(name).tokenize_with_offsets(INVALID)
    for raw, s, e, bs, be in zip(
        INVALID,
        starts.to_list(),
        ends.to_list(),
        byte_starts.to_list(),
        byte_ends.to_list(),
    ):
        text = raw.decode("utf-8", "replace")
        for cs, ce, b0, b1 in zip(s, e, bs, be):
            assert 0 <= cs <= ce <= len(text)
            if b1 > b0:
                # The bytes of the span decode within its characters.
                assert raw[b0:b1].decode("utf-8", "replace") in text[cs:ce] + (
                    "\ufffd" * (b1 - b0)
                )


# --- Fuzz -------------------------------------------------------------------
_PIECES = [
    "the", " cat", "  ", "\n", "\t", "'s", "123456", "ÉCOLE", "naïve",
    "e\u0301", "a\u0301\u0323", "\u0344", "\u1100\u1161\u11a8", "ﬁ", "Å",
    "中文", "字符", "日本語", "한국어", "😀", "👨\u200d👩\u200d👧", "🏳️\u200d🌈",
    "\u0915\u093c", "\u0f73", "<s>", "</s>", "<unk>", "▁", "\u00a0", "\u3000",
    "ｈｅｌｌｏ", "①",
]  # fmt: skip


def _fuzz_text():
    pieces = st.sampled_from(_PIECES) | st.text(max_size=4)
    joined = st.lists(pieces, max_size=8).map("".join)
    forms = st.sampled_from(["", "NFD", "NFKC", "NFKD"])
    return st.tuples(joined, forms).map(
        lambda x: unicodedata.normalize(x[1], x[0]) if x[1] else x[0]
    )


def _fuzz_bytes():
    """Text with invalid UTF-8 cut into it, as bytes."""
    bad = st.sampled_from([b"\xff", b"\x80", b"\xe2\x82", b"\xed\xa0\x80"])
    return st.tuples(_fuzz_text(), bad, st.integers(0, 40)).map(
        lambda x: x[0].encode()[: x[2]] + x[1] + x[0].encode()[x[2] :]
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_against_sentencepiece(lines):
    assert_parity(MISTRAL, lines)
    assert_parity(UNIGRAM[0], lines)


def _no_literal_replacement(raw):
    # Known limit shared with the ids: a U+FFFD written in a line that
    # also has invalid bytes is read as one invalid byte.
    return b"\xef\xbf\xbd" not in raw


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(
    lines=st.lists(_fuzz_text(), min_size=1, max_size=8),
    raw=st.lists(
        _fuzz_bytes().filter(_no_literal_replacement), min_size=1, max_size=4
    ),
)
def test_fuzz_against_sentencepiece_long(lines, raw):
    for name in (MISTRAL, *UNIGRAM):
        assert_parity(name, lines)
        assert_parity(name, raw, units=("byte",))


# --- API --------------------------------------------------------------------
def test_ids_equal_tokenize():
    lines = SPECIAL_CASES + ["Hello there, general Kenobi."]
    ids = ours(MISTRAL).tokenize_with_offsets(lines)[0]
    assert ids.to_list() == ours(MISTRAL)(lines).to_list()


@pytest.mark.parametrize("tf_text", [True, False])
def test_unigram_ids_equal_tokenize_on_either_engine(tf_text):
    tokenizer = SentencePieceTokenizer(
        data_path("sentencepiece", UNIGRAM[0]), tf_text_unigram=tf_text
    )
    assert tokenizer.uses_core_ops_only == (not tf_text)
    lines = SPECIAL_CASES + ["Hello there, general Kenobi."]
    ids = tokenizer.tokenize_with_offsets(lines)[0]
    assert ids.to_list() == tokenizer(lines).to_list()


def test_byte_fallback_pieces_span_as_sentencepiece_gives_them():
    # The bytes of a character before its last: empty spans at its start.
    lines = [
        "a中b",
        "中文x",
        "héllo 😀 ok",
        "ｈｅ①中",
        "中 文  ",
        "\u0915\u093c",
    ]
    assert_parity(BYTES, lines)
    ids, starts, ends = ours(BYTES).tokenize_with_offsets("a中b")
    assert list(zip(starts.numpy(), ends.numpy()))[1:4] == [
        (1, 1),
        (1, 1),
        (1, 4),
    ]


@pytest.mark.parametrize("name", [UNIGRAM[1], BYTES])
def test_unigram_saved_model_loads_with_tensorflow_alone(name, tmp_path):
    """The unigram offsets graph is core ops only, whichever engine the
    layer tokenizes with, byte pieces included."""
    got = reloaded_offsets(ours(name), SPECIAL_CASES, tmp_path, unit="byte")
    want = reference_rows(name, SPECIAL_CASES)
    assert got == [(i, [list(x) for x in s], w) for i, s, w in want]


def test_scalar_and_empty_batch():
    tokenizer = ours(MISTRAL)
    ids, starts, ends = tokenizer.tokenize_with_offsets("Hello world")
    assert ids.shape.rank == 1 and starts.shape == ends.shape == ids.shape
    assert starts.numpy().tolist() == [0, 5]
    ids, starts, ends = tokenizer.tokenize_with_offsets(
        tf.constant([], tf.string)
    )
    assert ids.shape[0] == 0 and starts.shape[0] == 0 and ends.dtype == tf.int64


@pytest.mark.parametrize("name", [MISTRAL, UNIGRAM[2]])
def test_add_special_tokens_wraps_with_empty_spans(name):
    tokenizer = SentencePieceTokenizer(
        data_path("sentencepiece", name), add_special_tokens=True
    )
    sp = reference(name)
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        ["a b"], unit="char", return_word_ids=True
    )
    assert ids.to_list() == [sp.encode(["a b"], add_bos=True, add_eos=True)[0]]
    ((_, spans, plain_words),) = reference_rows(name, ["a b"], "char")
    assert starts.to_list() == [[0] + [s for s, _ in spans] + [0]]
    assert ends.to_list() == [[0] + [e for _, e in spans] + [0]]
    assert words.to_list() == [[-1] + plain_words + [-1]]
    if name == MISTRAL:
        assert spans == [(0, 1), (1, 3)]


@pytest.mark.parametrize("name", [MISTRAL, UNIGRAM[0]])
def test_in_tf_function_and_dataset_map(name):
    tokenizer = ours(name)

    @tf.function
    def offsets(texts):
        return tokenizer.tokenize_with_offsets(
            texts, unit="char", return_word_ids=True
        )

    lines = SPECIAL_CASES
    want = reference_rows(name, lines, "char")
    assert as_rows(offsets(tf.constant(lines))) == want
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(5).map(offsets)
    got = [row for batch in dataset for row in as_rows(batch)]
    assert got == want


def test_saved_model_gives_the_librarys_spans(tmp_path):
    """A SavedModel holds TF Text's op: it loads after `import
    tensorflow_text`, without tf_input."""
    got = reloaded_offsets(
        ours(MISTRAL), SPECIAL_CASES, tmp_path, unit="byte", tf_text=True
    )
    want = reference_rows(MISTRAL, SPECIAL_CASES)
    assert got == [(i, [list(x) for x in s], w) for i, s, w in want]


def test_without_tf_text_offsets_say_what_to_install(monkeypatch):
    tokenizer = SentencePieceTokenizer(data_path("sentencepiece", MISTRAL))
    monkeypatch.setitem(sys.modules, "tensorflow_text", None)
    with pytest.raises(ImportError, match=r"tf_input\[text\]"):
        tokenizer.tokenize_with_offsets("a")
