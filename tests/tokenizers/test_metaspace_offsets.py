"""`tokenize_with_offsets` of SentencePiece-style BPE `tokenizer.json`
files (Mistral, Llama 2) against Hugging Face.

The reference is HF `tokenizers` on the same file: `encode_batch(lines,
add_special_tokens=False)` gives `.ids`, `.offsets` (code points) and
`.word_ids`, which `unit="char"` and `return_word_ids` must equal. Byte
spans (`unit="byte"`) must touch the characters of the character span.
The shared files are Mistral v0.1's (`Prepend` + `Replace` normalizer)
and v0.3's (`Metaspace` pre-tokenizer, `prepend_scheme="first"`); the
trained files of test_metaspace_byte_pair.py give the other layouts.
"""

import functools
import json
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
from tests.tokenizers.offsets_testing import as_rows
from tests.tokenizers.offsets_testing import assert_parity
from tests.tokenizers.offsets_testing import hf_rows
from tests.tokenizers.offsets_testing import reloaded_offsets
from tests.tokenizers.offsets_testing import rows
from tests.tokenizers.offsets_testing import sample
from tests.tokenizers.test_metaspace_byte_pair import TRICKY
from tests.tokenizers.test_metaspace_byte_pair import _pair
from tests.tokenizers.test_metaspace_byte_pair import section
from tests.tokenizers.test_metaspace_byte_pair import trained
from tests.tokenizers.test_metaspace_byte_pair import trained_file
from tests.tokenizers.test_metaspace_byte_pair import with_layout
from tf_input.tokenizers import load_tokenizer

pytestmark = requires_shared_data

FILES = {
    "v1": ("llm", "mistral_v1", "tokenizer.json"),
    "v0.3": ("sentencepiece", "mistral-7b-v0.3-tokenizer.json"),
}


@functools.cache
def pair(name):
    path = data_path(*FILES[name])
    return (
        load_tokenizer(path),
        hf_tokenizers.Tokenizer.from_file(str(path)),
    )


SPECIAL_CASES = [
    "",
    " ",
    "  a",
    "Hello  world ",
    "x<s>y z</s>",
    "<s>",
    "<unk>x",
    "a😀é\u0301 中文",
    "👨\u200d👩\u200d👧 🏳️\u200d🌈",
    "tab\there\nnewline",
    "\u00a0no-break\u3000ideographic",
    "ｈｅｌｌｏ ①",
    # A "▁" in the text: the lines that hold one take the alignments, the
    # others their tokens' lengths (Mistral v0.1's normalizer).
    "a▁b ▁ x▁",
    "▁",
    " 中 x",
    "中",
]


# --- The shared files ---------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FILES))
def test_matches_hf_on_a_sample_of_every_corpus(name):
    assert_parity(*pair(name), sample(30) + SPECIAL_CASES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FILES))
def test_matches_hf_on_every_corpus_line(name):
    lines = [line for _, c in sorted(corpora().items()) for line in c]
    for start in range(0, len(lines), 4096):
        assert_parity(*pair(name), lines[start : start + 4096])


# --- Other layouts --------------------------------------------------------
# Runs of characters the trained vocabulary lacks: without byte fallback
# each run of a word is one `<unk>` spanning the run.
UNKNOWN_RUNS = [
    "中文日本語 한국어",
    "a中b文c",
    "中 文  😀😀x😀",
    "<unk>中<unk>",
    "the 中<s>文 cat",
    "\u0915\u093c\u0915",
]


@pytest.mark.parametrize("layout", ["llama_legacy", "llama", "gemma3", "spm"])
def test_trained_layouts_match_hf(layout):
    # gemma3: words cut by a `Split(" ", MergedWithPrevious)`; spm: no
    # byte fallback (unknown runs), a Strip and a Replace normalizer.
    lines = (
        SPECIAL_CASES + TRICKY + ["the cat sat on it", "a  b   c ", " x\n y"]
    )
    assert_parity(*trained(layout), lines + UNKNOWN_RUNS + sample(10))


@pytest.mark.parametrize("scheme", ["always", "first"])
def test_a_splitting_metaspace_matches_hf(scheme):
    # The generic converter's layout: a Metaspace that cuts before each
    # "▁", no normalizer.
    data = json.loads(json.dumps(trained_file()))  # a copy
    data["normalizer"] = None
    data["pre_tokenizer"] = section(
        "pre_tokenizer",
        hf_tokenizers.pre_tokenizers.Metaspace(
            prepend_scheme=scheme, split=True
        ),
    )
    lines = SPECIAL_CASES + TRICKY + ["the cat  sat ", " x\n y"]
    assert_parity(*_pair(json.dumps(data)), lines + sample(5))


def test_an_unknown_token_that_text_can_make_is_refused():
    # The unknown id also stands for a character of the vocabulary: which
    # of its ids replaced unknown characters is not known from the ids.
    data = with_layout(trained_file(), "spm")
    data["model"]["unk_token"] = "e"
    tokenizer, reference = _pair(json.dumps(data))
    assert (
        tokenizer("e中").numpy().tolist()
        == reference.encode("e中", add_special_tokens=False).ids
    )
    with pytest.raises(NotImplementedError, match="unknown token 'e'"):
        tokenizer.tokenize_with_offsets("a")


# --- Fuzz -------------------------------------------------------------------
_PIECES = [
    "the", " cat", "  ", "\n", "\t", "123456", "ÉCOLE", "naïve", "e\u0301",
    "a\u0301\u0323", "\u1100\u1161\u11a8", "ﬁ", "中文", "日本語", "한국어",
    "😀", "👨\u200d👩\u200d👧", "\u0915\u093c", "<s>", "</s>", "<unk>",
    "[INST]", "▁", "\u00a0", "\u3000",
]  # fmt: skip


def _fuzz_text():
    pieces = st.sampled_from(_PIECES) | st.text(max_size=4)
    joined = st.lists(pieces, max_size=8).map("".join)
    forms = st.sampled_from(["", "NFD", "NFKC"])
    return st.tuples(joined, forms).map(
        lambda x: unicodedata.normalize(x[1], x[0]) if x[1] else x[0]
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_against_hf(lines):
    assert_parity(*pair("v1"), lines)
    assert_parity(*trained("spm"), lines)  # unknown runs


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_against_hf_long(lines):
    for name in sorted(FILES):
        assert_parity(*pair(name), lines)
    assert_parity(*trained("spm"), lines)


# --- Invalid UTF-8, special tokens, graphs ---------------------------------
def test_invalid_utf8_spans_are_in_the_bytes_given():
    """As HF reads `decode("utf-8", "replace")`: in characters the spans
    are HF's on the repaired text; in bytes, a U+FFFD covers the bytes it
    replaced."""
    tokenizer, reference = pair("v1")
    raw = [b"ok \xff bad", b"\xe2\x82 cut", b"caf\xc3\xa9 \xed\xa0\x80"]
    repaired = [r.decode("utf-8", "replace") for r in raw]
    assert rows(tokenizer, raw) == hf_rows(reference, repaired)
    ids, starts, ends = tokenizer.tokenize_with_offsets(raw)
    assert starts.to_list()[0][:3] == [0, 2, 3]  # "▁ok", "▁", "\xff"
    assert ends.to_list()[0][2] == 4


def test_add_special_tokens_wraps_with_empty_spans():
    path = data_path(*FILES["v1"])
    tokenizer = load_tokenizer(path, add_special_tokens=True)
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        ["a b"], unit="char", return_word_ids=True
    )
    reference = hf_tokenizers.Tokenizer.from_file(str(path))
    encoding = reference.encode("a b")
    assert ids.to_list() == [encoding.ids]
    assert list(zip(starts.to_list()[0], ends.to_list()[0])) == [
        tuple(o) for o in encoding.offsets
    ]
    assert words.to_list() == [[-1, 0, 0]]


def test_in_dataset_map_and_a_saved_model_in_plain_tensorflow(tmp_path):
    tokenizer, reference = pair("v0.3")
    lines = SPECIAL_CASES
    want = hf_rows(reference, lines)

    def offsets(texts):
        return tokenizer.tokenize_with_offsets(
            texts, unit="char", return_word_ids=True
        )

    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(5).map(offsets)
    assert [row for batch in dataset for row in as_rows(batch)] == want

    got = reloaded_offsets(tokenizer, lines, tmp_path)
    assert got == [(i, [list(x) for x in s], w) for i, s, w in want]
