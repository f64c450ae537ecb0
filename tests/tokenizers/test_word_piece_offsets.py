"""`tokenize_with_offsets` of WordPiece (BERT) against Hugging Face.

The reference is HF `tokenizers` with `add_special_tokens=False`:
`.offsets` (code points of the Python `str`) and `.word_ids` must equal
`unit="char"` and `return_word_ids` for every line, and `.ids` the ids.
Byte offsets (`unit="byte"`) have no HF counterpart: a byte span must
touch the characters of the token's character span.

The tokenizers: bert-base-uncased's `tokenizer.json` (lowercase, accents
stripped) loaded by `load_tokenizer`; its `vocab.txt` lowercased with
accents kept (so "İ" lowercases to two characters); bert-base-chinese
cased; and the character vocabulary of test_wordpiece.py, where almost
every word is several pieces. Each is compared with HF built as
test_wordpiece.py builds it (`BertWordPieceTokenizer`, or the same
pipeline by hand for a list of tokens).
"""

import functools
import unicodedata

import pytest
import tensorflow as tf
import tokenizers as hf_tokenizers
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.tokenizers.offsets_testing import reloaded_offsets
from tests.tokenizers.test_offsets import encodings
from tests.tokenizers.test_offsets import our_rows
from tests.tokenizers.test_wordpiece import ADVERSARIAL
from tests.tokenizers.test_wordpiece import CHARACTERS
from tests.tokenizers.test_wordpiece import CHINESE
from tests.tokenizers.test_wordpiece import UNCASED
from tests.tokenizers.test_wordpiece import reference as wordpiece_reference
from tf_input.tokenizers import WordPieceTokenizer
from tf_input.tokenizers import load_tokenizer

pytestmark = requires_shared_data

UNCASED_JSON = data_path("llm", "bert_uncased", "tokenizer.json")
# name -> (vocabulary: a path or a tuple of tokens, WordPieceTokenizer
# arguments); "uncased" is the tokenizer.json.
CONFIGS = {
    "uncased": (None, {}),
    "uncased_accents": (UNCASED, {"lowercase": True, "strip_accents": False}),
    "chinese_cased": (CHINESE, {"lowercase": False}),
    "characters": (tuple(CHARACTERS), {"lowercase": True}),
    "characters_cased": (tuple(CHARACTERS), {"lowercase": False}),
}


@functools.cache
def ours(name):
    vocabulary, kwargs = CONFIGS[name]
    if vocabulary is None:
        return load_tokenizer(UNCASED_JSON)
    if not isinstance(vocabulary, tuple):
        vocabulary = str(vocabulary)
    return WordPieceTokenizer(vocabulary, **kwargs)


@functools.cache
def reference(name):
    vocabulary, kwargs = CONFIGS[name]
    if vocabulary is None:
        return hf_tokenizers.Tokenizer.from_file(str(UNCASED_JSON))
    return wordpiece_reference(vocabulary, **kwargs)


def differences(name, lines):
    """`(line, ours, HF's)` for the lines whose ids, character offsets or
    word ids differ from HF's (on `bytes.decode("utf-8", "replace")` of
    a bytes line), and where a byte span is not where its characters
    are."""
    tokenizer = ours(name)
    texts = [
        x.decode("utf-8", "replace") if isinstance(x, bytes) else x
        for x in lines
    ]
    got = our_rows(tokenizer, lines)
    want = encodings(reference(name), texts)
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    byte_rows = our_rows(tokenizer, lines, "byte")
    for line, text, (_, spans, _), (_, char_spans, _) in zip(
        lines, texts, byte_rows, got
    ):
        raw = line if isinstance(line, bytes) else line.encode("utf-8")
        for byte_span, char_span in zip(spans, char_spans):
            # The characters of the (repaired) bytes before and inside.
            before = raw[: byte_span[0]].decode("utf-8", "replace")
            inside = raw[byte_span[0] : byte_span[1]].decode("utf-8", "replace")
            if [len(before), len(before) + len(inside)] != char_span:
                bad.append((text, "byte span", byte_span, char_span))
    return bad


def assert_parity(name, lines):
    bad = differences(name, lines)
    assert not bad, f"{name}: {len(bad)}/{len(lines)} lines differ: {bad[0]!r}"


# --- Hand-picked cases ------------------------------------------------------
SPECIAL_CASES = [
    "",
    " ",
    "Hello, World! It's 3.14 -- isn't it?",
    # Lowercasing that lengthens ("İ" -> "i" + U+0307), accents stripped.
    "İstanbul İİ xİy café CAFÉ naïve e\u0301\u0327\u0316 Ångström",
    "ΟΔΟΣ Σίσυφος ﬁne Straße ẞ \u212a\u212b",
    # Non-ASCII text no step moves, and capitals lowercased to another
    # length in UTF-8 ("Ⱥ" -> "ⱥ", "ẞ" -> "ß") next to ones that keep it.
    "£5 – 10€ «Ⅻ» Ⓐ Ωmega ЖУК ȺȾ Ɐx ẞa \u2126 \u1c90 \u2c2f \U0001e900",
    # Control and format characters dropped by clean text.
    "ctrl\x00\x01\x07\x1b\x7f\x80\x9f end a\u200db soft\u00adhyphen \ufeffx",
    "\ufffd replacement \ue000 private \U000f0000",
    # Chinese characters are words of their own; Hangul, Indic, emoji.
    "中文字符测试：你好，世界！ 吾輩は猫である。 한국어 텍스트",
    "হিন্দী में 😀👨\u200d👩\u200d👧 \U0001f1fa\U0001f1f8 1\ufe0f\u20e3",
    # Unknown words: too long, or with a piece the vocabulary lacks.
    "x" * 100 + " " + "y" * 101 + " " + "é" * 101 + " unaffable ☃☃",
    # Special tokens written in the text.
    "Paris is the [MASK] of France.[SEP][CLS]x[UNK]y [mask] [[PAD]]",
    "[MASK]\u0301a \u0301[UNK] [MA\u200bSK]",
    # The stand-in noncharacters.
    "\ufdd0 a\ufdd1b \ufdd2[MASK]\ufdd1",
    "tabs\tand\nnew\r\nlines \u3000 \u00a0x\u2028y  ",
    "a\u0301\u0316\u0300 o\u0308\u0304 \u0301 \u0301a x\u20dd \u0344\u0323",
    # Long lines where a few words move (each part between spaces is
    # aligned on its own), marks after spaces, runs of spaces.
    "  " + "word " * 50 + "Café\u00ad  x\u0301 " + "end " * 30 + "É",
    "É" + " a" * 40 + "  \u0301  \u0301\u0301 İ  Z \u200d ",
]


@pytest.mark.parametrize("name", CONFIGS)
def test_matches_hf_on_special_cases(name):
    assert_parity(name, SPECIAL_CASES)


@pytest.mark.parametrize("name", ["uncased", "characters"])
def test_matches_hf_on_adversarial_strings(name):
    assert_parity(name, ADVERSARIAL)


INVALID = [
    b"ok \xff bad",
    b"\xe2\x82 cut \xf0\x9f\x98",
    b"\x80\x80\x80x",
    b"caf\xc3\xa9 \xed\xa0\x80 surrogate [MASK]\xff\xc3\x89",
    b"\xc3",
]


@pytest.mark.parametrize("name", ["uncased", "characters"])
def test_invalid_utf8_spans_are_in_the_bytes_given(name):
    """Invalid UTF-8 is read as `decode("utf-8", "replace")`: HF on the
    repaired text gives the characters; byte spans are in the bytes."""
    assert_parity(name, INVALID)


def test_ids_equal_tokenize():
    tokenizer = ours("uncased")
    lines = SPECIAL_CASES + ADVERSARIAL
    ids = tokenizer.tokenize_with_offsets(lines)[0]
    assert ids.to_list() == tokenizer.tokenize(lines).to_list()


@pytest.mark.parametrize("name", ["uncased", "characters"])
def test_matched_pieces_tile_their_words(name):
    """`match_with_spans`: the ids and counts of `match`; each word's
    pieces lie end to end from its start to its end, each spanning its
    token's text (without `##`), and the unknown token spans its word."""
    engine = ours(name)._engine
    words = [
        "unaffable", "the", "playing", "x" * 101, "☃☃", "naïve",
        "ǅungla", "a", "zzzqqq", "ab" * 20,
    ]  # fmt: skip
    ids, counts = engine._matcher.match(tf.constant(words))
    got_ids, got_counts, word, starts, ends = (
        x.numpy().tolist()
        for x in engine._matcher.match_with_spans(tf.constant(words))
    )
    assert got_ids == ids.numpy().tolist()
    assert got_counts == counts.numpy().tolist()
    at = 0
    for w, (text, count) in enumerate(zip(words, got_counts)):
        assert word[at : at + count] == [w] * count
        size = len(text.encode())
        pieces = list(zip(starts[at : at + count], ends[at : at + count]))
        assert pieces[0][0] == 0 and pieces[-1][1] == size
        for (_, end), (start, _) in zip(pieces, pieces[1:]):
            assert end == start
        for token_id, (start, end) in zip(got_ids[at : at + count], pieces):
            if token_id == engine._unknown_id:
                assert (count, start, end) == (1, 0, size)
            else:
                piece = engine.vocabulary[token_id].removeprefix("##")
                assert text.encode()[start:end] == piece.encode()
        at += count
    assert at == len(got_ids)


def test_scalar_and_special_tokens_around():
    """`add_special_tokens=True`: [CLS] and [SEP] get `(0, 0)` and word
    -1, as HF's template gives them."""
    tokenizer = load_tokenizer(UNCASED_JSON, add_special_tokens=True)
    text = "Hello, İstanbul!"
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        text, unit="char", return_word_ids=True
    )
    (want,) = encodings(reference("uncased"), [text], True)
    assert ids.shape.rank == 1 and starts.dtype == tf.int64
    got = (
        ids.numpy().tolist(),
        [[s, e] for s, e in zip(starts.numpy(), ends.numpy())],
        words.numpy().tolist(),
    )
    assert got == want


def test_empty_batch():
    ids, starts, ends = ours("uncased").tokenize_with_offsets(
        tf.constant([], tf.string)
    )
    assert ids.shape[0] == 0 and starts.shape[0] == 0 and ends.dtype == tf.int64


# --- Corpora ----------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["uncased", "chinese_cased"])
def test_matches_hf_on_every_corpus_line(name):
    bad, total = [], 0
    for _, lines in sorted(corpora().items()):
        total += len(lines)
        for n in range(0, len(lines), 2048):
            bad += differences(name, lines[n : n + 2048])
    assert not bad, f"{name}: {len(bad)}/{total} lines differ: {bad[0]!r}"


# --- Fuzz -------------------------------------------------------------------
_PIECES = [
    "the", " Cat", "  ", "\n", "\t", "'s", "123456", "ÉCOLE", "naïve", "İ",
    "e\u0301", "a\u0301\u0323", "\u0344", "\u1100\u1161\u11a8", "ﬁ", "Å",
    "中文", "字符", "日本語", "한국어", "😀", "👨\u200d👩\u200d👧", "🏳️\u200d🌈",
    "\u0915\u093c", "\u0f73", "[MASK]", "[SEP]", "[UNK]", "\x00", "\x7f",
    "\u00ad", "\ufdd0", "\ufdd1", "\u00a0", "\u3000", "Σ", ".,!", "x" * 101,
    "unaffable",
]  # fmt: skip


def _fuzz_text():
    pieces = st.sampled_from(_PIECES) | st.text(max_size=4)
    joined = st.lists(pieces, max_size=8).map("".join)
    forms = st.sampled_from(["", "NFC", "NFD", "NFKC", "NFKD"])
    return st.tuples(joined, forms).map(
        lambda x: unicodedata.normalize(x[1], x[0]) if x[1] else x[0]
    )


def _fuzz_bytes():
    """UTF-8 text with random bytes put in (invalid UTF-8, mostly)."""
    return st.tuples(_fuzz_text(), st.binary(max_size=3), st.integers(0, 40))


def _lines(texts, broken):
    lines = list(texts)
    for text, junk, at in broken:
        raw = text.encode("utf-8")
        at = min(at, len(raw))
        lines.append(raw[:at] + junk + raw[at:])
    return lines


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_fuzz_text(), min_size=1, max_size=8),
    st.lists(_fuzz_bytes(), max_size=2),
)
def test_fuzz_against_hf(texts, broken):
    lines = _lines(texts, broken)
    for name in ("uncased", "characters"):
        assert_parity(name, lines)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(
    st.lists(_fuzz_text(), min_size=1, max_size=8),
    st.lists(_fuzz_bytes(), max_size=2),
)
def test_fuzz_against_hf_long(texts, broken):
    lines = _lines(texts, broken)
    for name in CONFIGS:
        assert_parity(name, lines)


# --- Graph contexts ---------------------------------------------------------
def _rows(out):
    ids, starts, ends, words = out
    return [
        (i, [[s, e] for s, e in zip(ss, ee)], w)
        for i, ss, ee, w in zip(
            ids.to_list(), starts.to_list(), ends.to_list(), words.to_list()
        )
    ]


def test_in_tf_function_and_dataset_map():
    tokenizer = ours("uncased")
    lines = SPECIAL_CASES + ADVERSARIAL
    want = encodings(reference("uncased"), lines)

    @tf.function
    def offsets(texts):
        return tokenizer.tokenize_with_offsets(
            texts, unit="char", return_word_ids=True
        )

    assert _rows(offsets(tf.constant(lines))) == want
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(7).map(offsets)
    got = []
    for batch in dataset:
        got.extend(_rows(batch))
    assert got == want


def test_saved_model_loads_with_tensorflow_alone(tmp_path):
    tokenizer = ours("uncased")
    assert tokenizer.uses_core_ops_only
    got = reloaded_offsets(tokenizer, SPECIAL_CASES, tmp_path)
    assert got == encodings(reference("uncased"), SPECIAL_CASES)
