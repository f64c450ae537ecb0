"""`tokenize_with_offsets` of Unigram `tokenizer.json` files (ALBERT, T5,
XLM-R) against Hugging Face, and the normalizers' alignments it needs.

The reference is HF `tokenizers` on the same file: `encode_batch(lines,
add_special_tokens=False)` gives `.ids`, `.offsets` (code points) and
`.word_ids`, which `unit="char"` and `return_word_ids` must equal. Byte
spans (`unit="byte"`) must touch the characters of the character span.
The files are made from the real `.model`s of shared/data the way
transformers' converters write them (`unigram_json.py`): ALBERT's
normalizer chain, the T5 / XLM-R one, the "first" prepend scheme without
splitting, byte fallback, and the older T5 files' WhitespaceSplit.

A normalizer's alignments are read from HF through a tiny tokenizer
whose pre-tokenizer cuts every character off alone: each one's offsets
are the span of the input character it is aligned with, `(0, 0)` for
none.
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
from tokenizers import Regex
from tokenizers import normalizers

from tests.shared_data import corpora
from tests.shared_data import requires_shared_data
from tests.tokenizers import unigram_json
from tests.tokenizers.offsets_testing import as_rows
from tests.tokenizers.offsets_testing import assert_parity
from tests.tokenizers.offsets_testing import hf_rows
from tests.tokenizers.offsets_testing import reloaded_offsets
from tests.tokenizers.offsets_testing import rows
from tests.tokenizers.offsets_testing import sample
from tests.tokenizers.test_json_unigram import ADVERSARIAL
from tests.tokenizers.test_json_unigram import DEFAULT
from tf_input import load_tokenizer
from tf_input.tokenizers import _offsets
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.normalizers.precompiled import Precompiled

ALL = [(m, k) for m in unigram_json.MODELS for k in unigram_json.KINDS]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("unigram_offsets")


_PAIRS = {}


def pair(folder, name, kind, **options):
    """Ours and HF's tokenizer on the `tokenizer.json` of (name, kind)."""
    key = (name, kind, tuple(sorted(options.items())))
    if key not in _PAIRS:
        path, reference = unigram_json.write(folder, name, kind)
        _PAIRS[key] = (load_tokenizer(path, **options), reference)
    return _PAIRS[key]


SPECIAL_CASES = ADVERSARIAL + [
    "İstanbul ǅ ﬁx  ",
    "\u0301ab \u0301",
    "  a  b ",
    "x<unk>  y",
    "[CLS]",
    " [SEP] ",
    "a[MASK]b<pad>c",
    "Ａ\u0301 ｶ\u3099 ㌀ ①②",
    "\r\n\r\nx\r",
    "☃☃☃x☃ 😀😀",
]


# --- The files, against HF ---------------------------------------------------
@requires_shared_data
@pytest.mark.parametrize("name, kind", DEFAULT)
def test_matches_hf_on_a_sample_of_every_corpus(folder, name, kind):
    assert_parity(*pair(folder, name, kind), sample(20) + SPECIAL_CASES)


@requires_shared_data
def test_a_batch_with_no_text_character(folder):
    # Found by the fuzz: only empty lines and an added token, so no
    # character of text to align.
    assert_parity(*pair(folder, "albert", "albert"), ["", "", "", "[CLS]"])
    assert_parity(*pair(folder, "albert", "albert"), ["", "[SEP]"])
    # A control character the normalizer removes: no character left.
    assert_parity(*pair(folder, "albert", "albert"), ["", "", "", "\x1f"])
    assert_parity(*pair(folder, "albert", "albert"), ["\x1f", "a\x1f"])


@requires_shared_data
@pytest.mark.slow
@pytest.mark.parametrize("name, kind", ALL)
def test_matches_hf_on_every_corpus_line(folder, name, kind):
    lines = [line for _, c in sorted(corpora().items()) for line in c]
    for start in range(0, len(lines), 4096):
        assert_parity(*pair(folder, name, kind), lines[start : start + 4096])


@requires_shared_data
@pytest.mark.parametrize("name, kind", [("botchan", "bytes"), ("ja", "spm")])
def test_a_run_of_unknown_characters_is_one_span(folder, name, kind):
    """HF gives a fused run of unknowns one span: one unknown token, or
    with byte fallback each `<0xXX>` token of the run the whole run."""
    tokenizer, reference = pair(folder, name, kind)
    line = "x ☃😀☃ y"
    assert_parity(tokenizer, reference, [line])
    _, spans, _ = rows(tokenizer, [line])[0]
    run = line.index("☃"), line.index(" y")
    assert run in spans
    if kind == "bytes":
        assert spans.count(run) == len("☃😀☃".encode())


@requires_shared_data
def test_added_tokens_are_words_and_special_tokens_have_no_span(folder):
    tokenizer, reference = pair(folder, "albert", "albert")
    line = "a[MASK] b [SEP]c"
    assert rows(tokenizer, [line]) == hf_rows(reference, [line])
    wrapped, _ = pair(folder, "albert", "albert", add_special_tokens=True)
    ids, starts, ends, words = wrapped.tokenize_with_offsets(
        ["a b"], unit="char", return_word_ids=True
    )
    encoding = reference.encode("a b")
    assert ids.to_list() == [encoding.ids]
    assert list(zip(starts.to_list()[0], ends.to_list()[0])) == [
        tuple(o) for o in encoding.offsets
    ]
    want = [-1 if w is None else w for w in encoding.word_ids]
    assert words.to_list() == [want]
    assert want[0] == want[-1] == -1


@requires_shared_data
def test_invalid_utf8_spans_are_in_the_bytes_given(folder):
    tokenizer, reference = pair(folder, "albert", "spm")
    raw = [b"ok \xff bad", b"\xe2\x82 cut", b"caf\xc3\xa9 \xed\xa0\x80x"]
    repaired = [r.decode("utf-8", "replace") for r in raw]
    assert rows(tokenizer, raw) == hf_rows(reference, repaired)
    _, starts, ends = tokenizer.tokenize_with_offsets(raw)
    # "\xff" is one U+FFFD in characters, one byte here.
    for line, s, e in zip(raw, starts.to_list(), ends.to_list()):
        assert all(0 <= a <= b <= len(line) for a, b in zip(s, e))


# --- Fuzz ---------------------------------------------------------------------
_PIECES = [
    "the", " cat", "  ", "   ", "\n", "\t", "123456", "ÉCOLE", "naïve",
    "e\u0301", "a\u0301\u0323", "\u1100\u1161\u11a8", "ﬁ", "中文",
    "日本語", "한국어", "😀", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "👍🏽",
    "\u0915\u093c", "<unk>", "[CLS]", "[SEP]", "[MASK]", "<pad>", "▁",
    "\u00a0", "\u3000", "``", "''", "İ", "Σ", "ǅ", "\r\n", "①", "ｶ\u3099",
]  # fmt: skip


def _fuzz_text():
    pieces = st.sampled_from(_PIECES) | st.text(max_size=4)
    joined = st.lists(pieces, max_size=8).map("".join)
    forms = st.sampled_from(["", "NFD", "NFKC"])
    return st.tuples(joined, forms).map(
        lambda x: unicodedata.normalize(x[1], x[0]) if x[1] else x[0]
    )


@requires_shared_data
@settings(max_examples=70, deadline=None)
@given(
    st.lists(_fuzz_text(), min_size=4, max_size=12),
    st.sampled_from(DEFAULT),
)
def test_fuzz_against_hf(folder, lines, name_kind):
    """70 batches of 4-12 strings (about 560), one file each."""
    assert_parity(*pair(folder, *name_kind), lines)


@requires_shared_data
@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_fuzz_every_file_against_hf(folder, lines):
    for name, kind in ALL:
        assert_parity(*pair(folder, name, kind), lines)


@requires_shared_data
@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from([p.encode() for p in _PIECES])
            | st.binary(max_size=4),
            max_size=6,
        ).map(b"".join),
        min_size=1,
        max_size=6,
    )
)
def test_fuzz_invalid_utf8_against_hf(folder, raw):
    tokenizer, reference = pair(folder, "botchan", "bytes")
    repaired = [r.decode("utf-8", "replace") for r in raw]
    assert rows(tokenizer, raw) == hf_rows(reference, repaired)
    _, starts, ends = tokenizer.tokenize_with_offsets(raw)
    for line, s, e in zip(raw, starts.to_list(), ends.to_list()):
        assert all(0 <= a <= b <= len(line) for a, b in zip(s, e))


# --- Graphs -------------------------------------------------------------------
@requires_shared_data
def test_in_dataset_map_and_a_saved_model_in_plain_tensorflow(folder, tmp_path):
    tokenizer, reference = pair(folder, "ja", "t5")
    lines = SPECIAL_CASES[:20]
    want = hf_rows(reference, lines)

    def offsets(texts):
        return tokenizer.tokenize_with_offsets(
            texts, unit="char", return_word_ids=True
        )

    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(5).map(offsets)
    assert [row for batch in dataset for row in as_rows(batch)] == want

    got = reloaded_offsets(tokenizer, lines, tmp_path)
    assert got == [(i, [list(x) for x in s], w) for i, s, w in want]


# --- Normalizers' alignments ------------------------------------------------
def hf_alignments(normalizer, lines):
    """HF's normalized text and, per character, the index of the input
    character it is aligned with (-1 for none)."""
    tokenizer = hf_tokenizers.Tokenizer(
        hf_tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = hf_tokenizers.pre_tokenizers.Split(
        Regex("(?m)."), "isolated"
    )
    out = []
    for line, e in zip(lines, tokenizer.encode_batch(lines)):
        sources = [-1 if o == (0, 0) else o[0] for o in e.offsets]
        out.append((normalizer.normalize_str(line), sources))
    return out


def ours_alignments(normalizer, lines):
    spec = json.loads(normalizer.__getstate__())
    texts, sources = Normalizer(spec).with_sources(tf.constant(lines))
    return [
        (t.decode("utf-8"), s)
        for t, s in zip(texts.numpy().tolist(), sources.to_list())
    ]


NORMALIZERS = {
    "strip": lambda: normalizers.Strip(),
    "strip_left": lambda: normalizers.Strip(left=True, right=False),
    "strip_right": lambda: normalizers.Strip(left=False, right=True),
    "lowercase": lambda: normalizers.Lowercase(),
    "strip_accents": lambda: normalizers.StripAccents(),
    "replace_regex": lambda: normalizers.Replace(Regex(" {2,}"), "▁"),
    "replace_regex_longer": lambda: normalizers.Replace(Regex("a+"), "xyz"),
    "replace_regex_empty": lambda: normalizers.Replace(Regex("[éa]"), ""),
    "replace_string": lambda: normalizers.Replace("``", '"'),
    "replace_string_longer": lambda: normalizers.Replace("'", "<q>"),
    "albert_chain": lambda: normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    ),
    # Strips around steps that move characters: the lines no step moves
    # take the strips' shifts alone.
    "strips_chain": lambda: normalizers.Sequence(
        [
            normalizers.Strip(left=False, right=True),
            normalizers.Replace(Regex(" {2,}"), "▁"),
            normalizers.Strip(left=True, right=False),
            normalizers.NFKD(),
            normalizers.Strip(),
            normalizers.Lowercase(),
        ]
    ),
}
_LINES = [
    "",
    " ",
    "  ab  ",
    "\t x \u3000",
    "AİB ΣΑΣ ǅ",
    "e\u0301a\u0301\u0302b \u0301",
    "a   b  c",
    "aaa ba",
    "``x'' ``",
    "Ｈｅｌｌｏ ① ﬁ",
]


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
def test_normalizer_alignments_match_hf(name):
    normalizer = NORMALIZERS[name]()
    assert ours_alignments(normalizer, _LINES) == hf_alignments(
        normalizer, _LINES
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_normalizer_alignments_fuzz(lines):
    for name in (
        "albert_chain",
        "strips_chain",
        "strip",
        "replace_regex_longer",
    ):
        normalizer = NORMALIZERS[name]()
        assert ours_alignments(normalizer, lines) == hf_alignments(
            normalizer, lines
        ), name


@pytest.mark.parametrize("name", ["albert_chain", "strips_chain", "strip"])
def test_the_source_reader_reads_what_with_sources_lists(name):
    """`with_source_reader`'s reader at every character of every line is
    the list `with_sources` gives (which the tests above check against
    HF); the lines no step moves are read from their shift."""
    spec = json.loads(NORMALIZERS[name]().__getstate__())
    normalizer = Normalizer(spec)
    lines = tf.constant(_LINES + ["plain ascii", "ünïcode  x "])
    texts, listed = normalizer.with_sources(lines)
    same, reader = normalizer.with_source_reader(lines)
    assert same.numpy().tolist() == texts.numpy().tolist()
    rows = tf.cast(listed.value_rowids(), tf.int64)
    index = tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(
        listed.row_splits, rows
    )
    assert reader.reader(rows)(index).numpy().tolist() == (
        listed.flat_values.numpy().tolist()
    )


def test_wide_characters_give_each_characters_bytes():
    lines = ["", "abc", "é a", "x😀y", "日本", "a", "\u0301"]
    rows, index, starts, sizes = [], [], [], []
    for row, line in enumerate(lines):
        at = 0
        for k, char in enumerate(line):
            rows.append(row)
            index.append(k)
            starts.append(at)
            sizes.append(len(char.encode()))
            at += sizes[-1]
    characters = _offsets.WideCharacters(tf.constant(lines))
    start, size = characters.reader(tf.constant(rows, tf.int64))(
        tf.constant(index, tf.int64)
    )
    assert start.numpy().tolist() == starts
    assert size.numpy().tolist() == sizes


@functools.cache
def _precompiled(name):
    charsmap = unigram_json.read_proto(name).normalizer_spec
    return normalizers.Precompiled(charsmap.precompiled_charsmap)


@requires_shared_data
@pytest.mark.parametrize("name", sorted(unigram_json.MODELS))
def test_precompiled_alignments_match_hf(name):
    """HF's per-cluster `replace`: a longer value's extra characters are
    inserted, a shorter one's (or an empty one's) missing count goes on
    the last entry so far."""
    lines = _LINES + sample(15) + SPECIAL_CASES
    normalizer = _precompiled(name)
    want = hf_alignments(normalizer, lines)
    got = ours_alignments(normalizer, lines)
    bad = [(x, g, w) for x, g, w in zip(lines, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(lines)} differ, first: {bad[0]!r}"


# One reason each for a text to go through the charsmap's rules: a
# character with a rule of its own, a cluster that starts on an ASCII
# character (an accent, a keycap, a combining overlay, CR LF), a
# non-ASCII first character; and texts with none.
_RULE_CASES = [
    "plain text, 42 words; (ASCII) only!",
    "e\u0301te\u0301",
    "caf\u00e9",
    "a\r\nb",
    "a\rb",
    "x\x01y",
    "tab\there",
    "\uff26ullwidth",
    "1\ufe0f\u20e3",
    "\u1100\u1161\u11a8",
    "<\u0338 =\u0338",
    "A\u030a",
    "\u00a0x",
    "end\n",
    "",
]


@requires_shared_data
@pytest.mark.parametrize("name", sorted(unigram_json.MODELS))
def test_texts_the_rules_skip_are_the_texts_they_leave_alone(name):
    """`Precompiled` rewrites only the texts its `changing` pattern picks
    and keeps the others as they are: the full rewrite must leave every
    one of those unchanged, each character in its place."""
    blob = unigram_json.read_proto(name).normalizer_spec.precompiled_charsmap
    op = Precompiled(blob)
    lines = sample(100) + _RULE_CASES
    texts = tf.constant(lines)
    picked = tf.strings.regex_full_match(texts, op.changing).numpy()
    rewritten, sources = op._with_sources(texts)
    skipped = [
        (line, out.decode("utf-8"), where)
        for line, out, where, p in zip(
            lines, rewritten.numpy(), sources.to_list(), picked
        )
        if not p
    ]
    assert skipped and len(skipped) < len(lines)
    for line, out, where in skipped:
        assert (out, where) == (line, list(range(len(line)))), line
    normalizer = _precompiled(name)
    want = hf_alignments(normalizer, _RULE_CASES)
    assert ours_alignments(normalizer, _RULE_CASES) == want


@requires_shared_data
@settings(max_examples=40, deadline=None)
@given(st.lists(_fuzz_text(), min_size=1, max_size=8))
def test_precompiled_alignments_fuzz(lines):
    normalizer = _precompiled("albert")
    assert ours_alignments(normalizer, lines) == hf_alignments(
        normalizer, lines
    )
