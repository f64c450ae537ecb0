"""`tokenize_with_offsets` of byte-level BPE against Hugging Face.

The reference is HF `tokenizers` on the same files: `encode_batch(lines,
add_special_tokens=False)` gives `.ids`, `.offsets` (code points of the
Python `str`) and `.word_ids`, which `unit="char"` and `return_word_ids`
must equal for every line. Byte offsets (`unit="byte"`) have no HF
counterpart; they are checked against the text itself: the bytes of a
token are the input's bytes at its span (or, where the normalizer
rewrote the text, the span's characters normalize to text holding the
token), and the characters they cover are the `unit="char"` span.

GPT-2's `vocab.json` + `merges.txt` are compared with HF's `BPE` and
`ByteLevel` pre-tokenizer (no post-processor: no trimming); o200k's
tiktoken rank file with HF on o200k's `tokenizer.json`.
"""

import functools
import json
import random
import unicodedata

import numpy as np
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
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import load_tokenizer
from tf_input.tokenizers._byte_level import token_to_bytes
from tf_input.tokenizers.hf.normalizers import reference_normalize

pytestmark = requires_shared_data

JSON_FILES = ("qwen3", "o200k", "cl100k", "deepseek_v4")
ALL = ("gpt2", *JSON_FILES, "o200k_tiktoken")
# The fast tests build two tokenizers (a large one takes ~10 s to build on
# a slow machine); the others run under `slow`.
FAST = ("gpt2", "qwen3")
EVERY = [
    name if name in FAST else pytest.param(name, marks=pytest.mark.slow)
    for name in ALL
]


# --- Tokenizers and references ---------------------------------------------
@functools.cache
def ours(name):
    if name == "gpt2":
        return BytePairTokenizer.from_files(
            data_path("gpt2", "vocab.json"), data_path("gpt2", "merges.txt")
        )
    if name == "o200k_tiktoken":
        return load_tokenizer(
            data_path("llm", "o200k", "o200k_base.tiktoken"),
            pattern="o200k",
            special_token_ids={
                "<|endoftext|>": 199999,
                "<|endofprompt|>": 200018,
            },
        )
    return load_tokenizer(data_path("llm", name, "tokenizer.json"))


@functools.cache
def reference(name):
    if name == "gpt2":
        model = hf_tokenizers.models.BPE.from_file(
            str(data_path("gpt2", "vocab.json")),
            str(data_path("gpt2", "merges.txt")),
        )
        tokenizer = hf_tokenizers.Tokenizer(model)
        tokenizer.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
            add_prefix_space=False
        )
        tokenizer.decoder = hf_tokenizers.decoders.ByteLevel()
        tokenizer.add_special_tokens(["<|endoftext|>"])
        return tokenizer
    if name == "o200k_tiktoken":
        name = "o200k"
    path = data_path("llm", name, "tokenizer.json")
    return hf_tokenizers.Tokenizer.from_file(str(path))


@functools.cache
def sample_lines(per_corpus=12, seed=0):
    """`per_corpus` random lines of every shared corpus (long lines too)."""
    rng = random.Random(seed)
    lines = []
    for _, corpus in sorted(corpora().items()):
        lines.extend(rng.sample(corpus, min(per_corpus, len(corpus))))
    return lines


# --- Checks -----------------------------------------------------------------
def hf_rows(name, lines):
    return encodings(reference(name), lines)


def our_rows(tokenizer, lines, unit="char"):
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        tf.constant(lines, tf.string), unit=unit, return_word_ids=True
    )
    return [
        (i, [[s, e] for s, e in zip(ss, ee)], w)
        for i, ss, ee, w in zip(
            ids.to_list(), starts.to_list(), ends.to_list(), words.to_list()
        )
    ]


@functools.cache
def _vocabulary(tokenizer):
    return tokenizer.get_vocabulary()


def token_bytes(tokenizer, token_id):
    return token_to_bytes(_vocabulary(tokenizer)[token_id])[0]


def assert_byte_spans(tokenizer, lines, byte_rows, char_rows):
    """Each token's bytes are the input's bytes at its byte span (where the
    normalizer left the line alone), and its byte span covers the same
    characters as its character span."""
    normalizes = bool(getattr(tokenizer, "_normalizer", None))
    bad = []
    for line, (ids, spans, _), (_, char_spans, _) in zip(
        lines, byte_rows, char_rows
    ):
        raw = line.encode("utf-8")
        starts = np.cumsum([0] + [len(c.encode("utf-8")) for c in line])
        plain = not normalizes or reference_normalize(line, "NFC") == line
        for token_id, (s, e), (cs, ce) in zip(ids, spans, char_spans):
            # The characters the byte span touches.
            first = int(np.searchsorted(starts, s, side="right")) - 1
            last = int(np.searchsorted(starts, e, side="left"))
            if (first, last) != (cs, ce) and e > s:
                bad.append((line, token_id, (s, e), (cs, ce)))
            if plain and raw[s:e] != token_bytes(tokenizer, token_id):
                bad.append((line, token_id, raw[s:e]))
    assert not bad, f"{len(bad)} bad spans, first: {bad[0]!r}"


def assert_parity(name, lines, *, bytes_too=True):
    tokenizer = ours(name)
    got = our_rows(tokenizer, lines)
    want = hf_rows(name, lines)
    bad = [(t, g, w) for t, g, w in zip(lines, got, want) if g != w]
    assert not bad, f"{name}: {len(bad)}/{len(lines)} lines differ: {bad[0]!r}"
    if bytes_too:
        assert_byte_spans(
            tokenizer, lines, our_rows(tokenizer, lines, "byte"), got
        )


# --- Corpora ----------------------------------------------------------------
@pytest.mark.parametrize("name", EVERY)
def test_matches_hf_on_a_sample_of_every_corpus(name):
    assert_parity(name, sample_lines())


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_matches_hf_on_every_corpus_line(name):
    for corpus, lines in sorted(corpora().items()):
        for n in range(0, len(lines), 2048):
            assert_parity(name, lines[n : n + 2048])


# --- Cases HF treats specially ----------------------------------------------
SPECIAL_CASES = [
    "",
    " ",
    "Hello  world  ",
    "😀👨\u200d👩\u200d👧 🏳️\u200d🌈 emoji",
    "中文字符 日本語のテキスト 한국어",
    "e\u0301x a\u0301\u0323b \u212b \u1100\u1161\u11a8 ﬁ",  # NFC rewrites
    "\u0344\u0323 x\u0f73",  # decompositions reordered
    "text<|endoftext|>more <|im_start|>x",
    "<｜User｜>hi<｜Assistant｜>",  # DeepSeek's normalized added tokens
    "tabs\tand\nnew\r\nlines \u3000 \u00a0",
]


@pytest.mark.parametrize("name", EVERY)
def test_matches_hf_on_special_cases(name):
    assert_parity(name, SPECIAL_CASES)


def test_scalar_and_batch_agree():
    tokenizer = ours("qwen3")
    text = SPECIAL_CASES[5]
    ids, starts, ends = tokenizer.tokenize_with_offsets(text, unit="char")
    assert ids.shape.rank == 1 and starts.dtype == tf.int64
    batch = tokenizer.tokenize_with_offsets([text, "x"], unit="char")
    for single, rows in zip((ids, starts, ends), batch):
        assert single.numpy().tolist() == rows[0].numpy().tolist()
    assert ids.numpy().tolist() == tokenizer.tokenize(text).numpy().tolist()


def test_ids_equal_tokenize():
    tokenizer = ours("qwen3")
    lines = sample_lines()[:300]
    ids, _, _ = tokenizer.tokenize_with_offsets(lines)
    assert ids.to_list() == tokenizer.tokenize(lines).to_list()


# --- Added tokens, templates, trimming --------------------------------------
def encodings(hf, lines, add_special_tokens=False):
    return [
        (
            e.ids,
            [list(o) for o in e.offsets],
            [-1 if w is None else w for w in e.word_ids],
        )
        for e in hf.encode_batch(
            list(lines), add_special_tokens=add_special_tokens
        )
    ]


@pytest.fixture(scope="module")
def stripping(tmp_path_factory):
    """GPT-2 with an NFC normalizer, added tokens that strip whitespace
    (one matched in the raw text, one in the normalized text) and a
    template: `(hf, path)`."""
    hf = hf_tokenizers.Tokenizer.from_str(reference("gpt2").to_str())
    hf.normalizer = hf_tokenizers.normalizers.NFC()
    hf.add_tokens(
        [
            hf_tokenizers.AddedToken(
                "<mask>", lstrip=True, rstrip=True, normalized=False
            ),
            hf_tokenizers.AddedToken("[X]", lstrip=True, normalized=True),
            hf_tokenizers.AddedToken("é!", normalized=True),
        ]
    )
    hf.post_processor = hf_tokenizers.processors.TemplateProcessing(
        single="<|endoftext|> $A <|endoftext|>",
        special_tokens=[("<|endoftext|>", 50256)],
    )
    path = tmp_path_factory.mktemp("stripping") / "tokenizer.json"
    path.write_text(hf.to_str(), encoding="utf-8")
    return hf, path


STRIPPING_LINES = [
    "hello   <mask>  x",
    "<mask> y [X]",
    " <mask>",
    "a [X]<mask>  [X]",
    "e\u0301 <mask>e\u0301! e\u0301!",  # `é!` found after NFC
    "",
]


@pytest.mark.parametrize("add_special_tokens", [False, True])
def test_added_tokens_strips_and_templates(stripping, add_special_tokens):
    """A stripped added token covers the whitespace it took; the
    template's special tokens get `(0, 0)` and word -1."""
    hf, path = stripping
    tokenizer = load_tokenizer(path, add_special_tokens=add_special_tokens)
    want = encodings(hf, STRIPPING_LINES, add_special_tokens)
    assert our_rows(tokenizer, STRIPPING_LINES) == want


@pytest.mark.parametrize(
    "prefix", [pytest.param(False, marks=pytest.mark.slow), True]
)
def test_trim_offsets_as_hf(tmp_path, prefix):
    data = json.loads(reference("gpt2").to_str())
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": prefix,
        "trim_offsets": True,
        "use_regex": True,
    }
    data["pre_tokenizer"] = byte_level
    data["post_processor"] = byte_level
    data["decoder"] = byte_level
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    hf = hf_tokenizers.Tokenizer.from_file(str(path))
    tokenizer = load_tokenizer(path)
    assert tokenizer.trim_offsets
    lines = ["hello  world  ", " x", "a", "  two spaces", "\u3000wide", ""]
    lines += sample_lines()[:100]
    want = encodings(hf, lines)
    got = our_rows(tokenizer, lines)
    bad = [(t, g, w) for t, g, w in zip(lines, got, want) if g != w]
    assert not bad, bad[0]


# --- Fuzz -------------------------------------------------------------------
_PIECES = [
    "the", " cat", "  ", "\n", "\t", "'s", "123456", "ÉCOLE", "naïve",
    "e\u0301", "a\u0301\u0323", "\u0344", "\u1100\u1161\u11a8", "ﬁ", "Å",
    "中文", "字符", "日本語", "한국어", "😀", "👨\u200d👩\u200d👧", "🏳️\u200d🌈",
    "\u0915\u093c", "\u0f73", "<|endoftext|>", "<|im_start|>", "<｜User｜>",
    "<think>", "\u00a0", "\u3000",
]  # fmt: skip


def _fuzz_text():
    pieces = st.sampled_from(_PIECES) | st.text(max_size=4)
    joined = st.lists(pieces, max_size=8).map("".join)
    forms = st.sampled_from(["", "NFD", "NFKC", "NFKD"])
    return st.tuples(joined, forms).map(
        lambda x: unicodedata.normalize(x[1], x[0]) if x[1] else x[0]
    )


def _fuzz(name, lines):
    assert_parity(name, lines)


@settings(max_examples=40, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_against_hf(lines):
    _fuzz("qwen3", lines)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_against_hf_long(lines):
    for name in ALL:
        _fuzz(name, lines)


# --- Invalid UTF-8 ----------------------------------------------------------
INVALID = [
    b"ok \xff bad",
    b"\xe2\x82 cut \xf0\x9f\x98",
    b"\x80\x80\x80x",
    b"caf\xc3\xa9 \xed\xa0\x80 surrogate",
    b"\xc3",
]


@pytest.mark.parametrize("name", ["gpt2", "qwen3"])
def test_invalid_utf8_spans_are_in_the_bytes_given(name):
    """Invalid UTF-8 is read as `decode("utf-8", "replace")`: characters
    are those of the repaired text (HF on it), and a byte span covers the
    invalid bytes that a U+FFFD stands for."""
    tokenizer = ours(name)
    repaired = [b.decode("utf-8", "replace") for b in INVALID]
    got = our_rows(tokenizer, INVALID)
    assert got == hf_rows(name, repaired)
    for raw, text, (ids, spans, _), (_, char_spans, _) in zip(
        INVALID, repaired, our_rows(tokenizer, INVALID, "byte"), got
    ):
        assert spans[-1][1] == len(raw) and spans[0][0] == 0
        for (s, e), (cs, ce) in zip(spans, char_spans):
            assert raw[s:e].decode("utf-8", "replace") == text[cs:ce] or (
                # A token holding part of a character: its whole character.
                text[cs:ce] in raw[s:e].decode("utf-8", "replace")
                or raw[s:e].decode("utf-8", "replace") in text[cs:ce]
            )


@pytest.mark.parametrize("name", ["gpt2", "qwen3"])
def test_invalid_bytes_in_a_batch_of_no_multibyte_character(name):
    """Lone invalid bytes and no continuation byte in the whole batch: a
    character per byte (the rows `to_characters` takes as they are)."""
    narrow = [b"ok \xff bad", b"\xc3", b"x\xe2 y\xf8", b"plain"]
    repaired = [b.decode("utf-8", "replace") for b in narrow]
    assert [len(t) for t in repaired] == [len(b) for b in narrow]
    assert our_rows(ours(name), narrow) == hf_rows(name, repaired)


# --- Graph contexts ---------------------------------------------------------
def test_in_tf_function_and_dataset_map():
    tokenizer = ours("qwen3")
    lines = SPECIAL_CASES + sample_lines()[:60]
    want = our_rows(tokenizer, lines)

    @tf.function
    def offsets(texts):
        return tokenizer.tokenize_with_offsets(
            texts, unit="char", return_word_ids=True
        )

    def rows(out):
        ids, starts, ends, words = out
        return [
            (i, [[s, e] for s, e in zip(ss, ee)], w)
            for i, ss, ee, w in zip(
                ids.to_list(), starts.to_list(), ends.to_list(), words.to_list()
            )
        ]

    assert rows(offsets(tf.constant(lines))) == want
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(7).map(offsets)
    got = []
    for batch in dataset:
        got.extend(rows(batch))
    assert got == want


def test_saved_model_loads_with_tensorflow_alone(tmp_path):
    got = reloaded_offsets(ours("qwen3"), SPECIAL_CASES, tmp_path)
    assert got == hf_rows("qwen3", SPECIAL_CASES)


# --- API --------------------------------------------------------------------
def test_bad_unit_is_a_value_error():
    with pytest.raises(ValueError, match=r"`unit` must be one of .*'bytes'"):
        ours("gpt2").tokenize_with_offsets("x", unit="bytes")


def test_a_unigram_tokenizer_json_gives_hf_offsets():
    """The Unigram family gives offsets too (its full tests:
    test_unigram_offsets.py)."""
    from tests.tokenizers.test_assets import UNIGRAM_JSON
    from tf_input.tokenizers import UnigramTokenizer

    spec = dict(UNIGRAM_JSON)
    spec["added_tokens"] = [
        {**t, "single_word": False, "lstrip": False, "rstrip": False}
        for t in spec["added_tokens"]
    ]
    text = json.dumps(spec)
    tokenizer = UnigramTokenizer(text)
    reference = hf_tokenizers.Tokenizer.from_str(text)
    lines = ["the cats sat.", "abc  abc<unk>", "", "zz the"]
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        lines, unit="char", return_word_ids=True
    )
    for n, e in enumerate(reference.encode_batch(lines)):
        assert ids.to_list()[n] == e.ids
        spans = list(zip(starts.to_list()[n], ends.to_list()[n]))
        assert spans == [tuple(o) for o in e.offsets]
        assert words.to_list()[n] == e.word_ids


def test_dropped_bytes_as_hf():
    """A vocabulary without some byte symbols drops those bytes (HF, no
    unknown token); HF then places tokens by the lengths of the tokens
    before them alone, as if the dropped bytes were not there."""
    vocab = {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "abc": 6}
    vocab["<|endoftext|>"] = 7
    merges = ["a b", "Ġ ab", "ab c"]
    tokenizer = BytePairTokenizer(vocab, merges)
    hf = hf_tokenizers.Tokenizer(
        hf_tokenizers.models.BPE(
            vocab=vocab, merges=[tuple(m.split()) for m in merges]
        )
    )
    hf.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False
    )
    hf.add_special_tokens(["<|endoftext|>"])
    lines = ["abc abc", "é ab", "xabx ab<|endoftext|>zz c", "ééa", "ḍab"]
    assert our_rows(tokenizer, lines) == encodings(hf, lines)


def test_empty_batch():
    ids, starts, ends = ours("gpt2").tokenize_with_offsets(
        tf.constant([], tf.string)
    )
    assert ids.shape[0] == 0 and starts.shape[0] == 0 and ends.dtype == tf.int64


def test_gpt2_add_special_tokens_wraps_with_empty_spans():
    tokenizer = BytePairTokenizer.from_files(
        data_path("gpt2", "vocab.json"),
        data_path("gpt2", "merges.txt"),
        add_special_tokens=True,
    )
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        ["a b"], return_word_ids=True
    )
    assert ids.to_list() == [[50256, 64, 275, 50256]]
    assert starts.to_list() == [[0, 0, 1, 0]]
    assert ends.to_list() == [[0, 1, 3, 0]]
    assert words.to_list() == [[-1, 0, 1, -1]]


def test_valid_char_spans_equal_char_spans():
    """The lead-byte count gives what decoding gives, on valid UTF-8 with
    empty rows, emoji, combining marks and CJK."""
    from tf_input.tokenizers import _offsets

    texts = tf.constant(["", "a", "é😀x", "", "中文 e\u0301", "\u3000", ""])
    for got, want in zip(
        _offsets.valid_char_spans(texts), _offsets.char_spans(texts)
    ):
        assert got.numpy().tolist() == want.numpy().tolist()
