"""`VocabularyTokenizer.tokenize_with_offsets` against Python.

The reference splits the text as `str.split()` does (runs of characters
that are not `str.isspace()`), splits the numbers `"whitespace_digits"`
splits (ASCII digits, not in the vocabulary), and counts the spans in
UTF-8 bytes or in code points.
"""

import itertools
import re

import pytest

from tests.shared_data import corpora
from tests.shared_data import requires_shared_data
from tests.tokenizers.offsets_testing import as_rows
from tests.tokenizers.offsets_testing import reloaded_offsets
from tf_input import VocabularyTokenizer

TRICKY = [
    "",
    "   ",
    "The  cat\tsat 30 on 1984 mats.",
    "İstanbul ẞ ΣΑΣ naïve e\u0301 東京 🤷🏽‍♀️",
    "a\u3000b\u00a0c\u2028d\x1fe\x85f\x0bg",
    "x" * 40 + " 0123456789 42",
    "\n\nline\r\nbreaks\r",
    "tab\tand 7",
]


def reference(tokenizer, text, unit):
    """Per piece `(start, end)` and its word index, from Python."""
    vocabulary = set(tokenizer.get_vocabulary())

    def at(i):
        return len(text[:i].encode()) if unit == "byte" else i

    spans, words = [], []
    if tokenizer.split == "character":
        kept = [i for i, c in enumerate(text) if not c.isspace()]
        for word, i in enumerate(kept):
            piece = text[i].lower() if tokenizer.lowercase else text[i]
            for _ in piece:  # "İ".lower() is two characters
                spans.append((at(i), at(i + 1)))
                words.append(word)
        return spans, words
    runs = [m.span() for m in re.finditer(r"[^\s\x1c-\x1f\x85]+", text)]
    assert [text[a:b] for a, b in runs] == text.split()
    for word, (a, b) in enumerate(runs):
        piece = text[a:b].lower() if tokenizer.lowercase else text[a:b]
        digits = tokenizer.split == "whitespace_digits" and bool(
            re.fullmatch("[0-9]+", piece) and piece not in vocabulary
        )
        for start, end in (
            [(i, i + 1) for i in range(a, b)] if digits else [(a, b)]
        ):
            spans.append((at(start), at(end)))
            words.append(word)
    return spans, words


@pytest.fixture(scope="module")
def lines():
    return TRICKY + list(itertools.islice(_corpus_lines(), 400))


def _corpus_lines():
    for name, file_lines in sorted(corpora().items()):
        yield from file_lines[:40]


@requires_shared_data
@pytest.mark.parametrize(
    "split, lowercase",
    [
        ("whitespace", False),
        ("whitespace_digits", True),
        ("character", True),
    ],
)
@pytest.mark.parametrize("unit", ["byte", "char"])
def test_offsets_equal_python_splitting(lines, split, lowercase, unit):
    tokenizer = VocabularyTokenizer(split=split, lowercase=lowercase)
    tokenizer.adapt(lines[len(TRICKY) :][::2])  # leaves words unknown
    got = as_rows(
        tokenizer.tokenize_with_offsets(lines, unit=unit, return_word_ids=True)
    )
    ids = tokenizer(lines).to_list()
    for line, row_ids, (got_ids, spans, words) in zip(lines, ids, got):
        assert got_ids == row_ids
        assert (spans, words) == reference(tokenizer, line, unit), line


def test_special_tokens_and_a_saved_model(tmp_path):
    tokenizer = VocabularyTokenizer(
        split="whitespace_digits", add_special_tokens=True
    )
    tokenizer.adapt(["the cat sat", "7 dogs"])
    lines = ["the cat 30", "", "İ x"]
    ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        lines, unit="char", return_word_ids=True
    )
    assert ids.to_list() == tokenizer(lines).to_list()
    assert ids.to_list()[1] == [1, 2]  # the start and end tokens
    assert starts.to_list() == [[0, 0, 4, 8, 9, 0], [0, 0], [0, 0, 2, 0]]
    assert ends.to_list() == [[0, 3, 7, 9, 10, 0], [0, 0], [0, 1, 3, 0]]
    assert words.to_list() == [[-1, 0, 1, 2, 2, -1], [-1, -1], [-1, 0, 1, -1]]
    want = as_rows((ids, starts, ends, words))
    got = reloaded_offsets(tokenizer, lines, tmp_path)
    assert [(i, [tuple(s) for s in spans], w) for i, spans, w in got] == want


def test_a_text_without_vocabulary_is_the_usual_error():
    with pytest.raises(ValueError, match="has no vocabulary yet"):
        VocabularyTokenizer().tokenize_with_offsets(["a b"])
