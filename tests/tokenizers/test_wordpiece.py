"""WordPieceTokenizer: id-for-id parity with Hugging Face `tokenizers`.

The reference is `tokenizers.BertWordPieceTokenizer` (clean_text=True,
handle_chinese_chars=True) with the same vocabulary, or, for a list of
tokens, the same pipeline built by hand (`BertNormalizer`,
`BertPreTokenizer`, `WordPiece`, and the vocabulary's special tokens
registered as added tokens, as `BertWordPieceTokenizer` does). The real
BERT vocabularies and corpora run when ../shared/data is present.

Besides the BERT vocabularies, many checks use a "character vocabulary"
(every character below U+3000 and its `##` form, plus the characters the
tokenizer treats specially): with it almost no word becomes `[UNK]`, so a
difference in normalization shows up as different ids instead of hiding
behind `[UNK]`.
"""

import functools
import json
import pathlib
import time

import numpy as np
import pytest
import tensorflow as tf
import tokenizers as hf_tokenizers
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tests.testing import _ops_outside_core_tensorflow
from tests.testing import run_tokenizer_test
from tf_input.tokenizers import WordPieceTokenizer
from tf_input.tokenizers.engines import bert_tables

UNCASED = data_path("bert", "bert-base-uncased-vocab.txt")
CHINESE = data_path("bert", "bert-base-chinese-vocab.txt")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SMALL = SPECIALS + ["the", "cat", "##s", "sat", "on", "mat", ".", ",", "un"]
SMALL += ["##aff", "##able", "a", "##a", "é", "##é", "e", "##e", "ß", "ς"]


# Characters where the ICU or RE2 inside TensorFlow follows a newer Unicode
# than HF's Rust crates: combining marks that ICU's NFD decomposes or
# reorders and HF's does not, punctuation that only one side splits on
# (and BERT's U+2B820 CJK range, which HF starts at U+2B920).
NEWER_THAN_HF = (
    "07FD 0897-089F 08CA-08D3 09FE 0C3C 0D3B-0D3C 0EBA 1715 1ABF-1ACE "
    "1DF6-1DFA A82C 105C9 105E4 10D24-10D27 10D69-10D6D 10EAB-10EAC "
    "10EFD-10EFF 10F46-10F50 10F82-10F85 11070 1133B 11383 11385 1138E "
    "11391 113C5 113C7-113C8 113CE-113D0 1145E 11839-1183A 11938 "
    "1193D-1193E 11943 119E0 11A34 11A47 11A99 11D42 11D44-11D45 11D97 "
    "11F41-11F42 16121-16128 1612F 16D68-16D6A 16FF0-16FF1 1E08F "
    "1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF "
    "061D 09FD 0A76 0C77 0C84 1B4E-1B4F 1B7D-1B7F 2E43-2E4F 2E52-2E5D "
    "10D6E 10EAD 10F55-10F59 10F86-10F89 113D4-113D5 113D7-113D8 "
    "1144B-1144F 1145A-1145B 1145D 11660-1166C 116B9 1183B 11944-11946 "
    "119E2 11A3F-11A46 11A9A-11A9C 11A9E-11AA2 11B00-11B09 11BE1 "
    "11C41-11C45 11C70-11C71 11EF7-11EF8 11F43-11F4F 11FFF 12FF1-12FF2 "
    "16D6D-16D6F 16E97-16E9A 16FE2 1E5FF 1E95E-1E95F 2B820-2B91F "
    "166D 111C9"
)


def _extra_characters():
    """Characters with special handling, so the fixes get exercised."""
    spec = " ".join(
        [
            NEWER_THAN_HF,
            "105D2 105DA 11382 113C9 1611E-16129 16D63 16D67",  # NFD pieces
            "4E00-4E2F 20000-20010 2B81A-2B930 1F600-1F64F",  # CJK, emoji
            "10570-105BC 10D50-10D85 16EA0-16ED3 AC00-AC40 FF01-FF5E",
        ]
    )
    return sorted(bert_tables.code_points(spec))


def _character_vocabulary():
    chars = [chr(c) for c in range(0x21, 0x3000)]
    chars += [chr(c) for c in _extra_characters() if c >= 0x3000]
    return SPECIALS + chars + ["##" + c for c in chars] + ["##", "ab", "##cd"]


CHARACTERS = _character_vocabulary()

# Strings that broke other in-graph BERT tokenizers, or that sit on an
# edge of one of BERT's rules.
ADVERSARIAL = [
    "",
    " ",
    "   \t\n\r  ",
    "I love deep learning.",
    "Hello, World! It's 3.14 -- isn't it?",
    # Full-width letters and punctuation (no compatibility folding).
    "ＡＢＣ ｆｕｌｌ，ｗｉｄｔｈ．：？！ １２３",
    # Ligatures, sharp s, sigma at word ends, ellipsis, non-breaking hyphen.
    "ﬁne ﬂow ﬀ ß STRASSE Straße",
    "ΟΔΟΣ ΟΔΟΣ. Σίσυφος σοφός ς Σ ΣΣ aΣ ΑΣ1",
    "wait… what‥ a\u2011b x\u2010y",
    # Unicode spaces, and characters that are not spaces in BERT.
    "a\u00a0b\u2000c\u2003d\u3000e\u202ff\u205fg\u1680h\u2028i\u2029j",
    "a\u0085b\u180ec\u200bd\u2060e\ufeff\x1cf\x1dg\x1eh\x1fi\x0bj\x0ck",
    # Control and format characters.
    "ctrl\x00\x01\x07\x1b\x7f\x80\x9f end",
    "zero\u200dwidth\u200cjoiners \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "soft\u00adhyphen bi\u00addi\u200erec\u200ftion\u202a\u202e\u2066\u2069",
    "\ufffd replacement \ufffc object \ue000\uf8ff private \U000f0000",
    # Combining marks, accents, cased and uncased.
    "café cafe\u0301 CAFÉ naïve Ångström résumé e\u0301\u0327\u0316",
    "a\u0301\u0316\u0300 o\u0308\u0304 \u0301 \u0301a x\u20dd",
    "İstanbul ǅungla ﬃ ẞ ŉ ΐ",
    # Hangul, Indic vowel signs, Thai, Arabic, Hebrew.
    "한국어 텍스트 처리 ᄀᄁ ㄱㄴ",
    "আমি বাংলায় গান গাই। হিন্দী में लिखा",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ ครับ",
    "مرحبا بالعالم، كيف حالك؟ שלום עולם!",
    # CJK, including the BERT range HF does not treat as CJK.
    "中文字符测试：你好，世界！\U00020000\U0002a6d6\U0002b820\U0002b920",
    "吾輩は猫である。名前はまだ無い。 カタカナ ｶﾀｶﾅ",
    # Emoji sequences: flags, skin tones, keycaps, variation selectors.
    "\U0001f1fa\U0001f1f8 \U0001f44d\U0001f3fd 1\ufe0f\u20e3 \u2764\ufe0f",
    "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    # Special tokens are matched in the raw text, case-sensitively.
    "Paris is the [MASK] of France.[SEP][CLS]x[UNK]y [mask] [MA\u200bSK]",
    "[[PAD]] [UNK\u0301] [CLS]\u0301a [SEP ] \ufdd0\ufdd1\ufdd2 a\ufdd3b",
    # Punctuation that TF Text and HF split differently.
    "a\u2e43b c\u061dd e\U00011c41f g\u166dh i\U000111c9j k\u2e3bl",
    # Characters newer than TensorFlow's ICU (lowercase and NFD).
    "\ua7cb\ua7dc \U00010570\U00010595 \U00016ea0 \u1c89 \u2c2f",
    "\U00011383 \U000105c9 \U00016121 a\u0301\u07fd\u0316 \U00016ff0\u0334",
    # Words around the 100-character limit (in characters, not bytes).
    "x" * 100,
    "x" * 101,
    "é" * 100 + " " + "é" * 101,
    "ж" * 60 + " " + "ж" * 101,
    "ก" * 40 + " " + "ก" * 101,
    "中" * 150,
    ("unaffable" * 12)[:100] + " " + ("unaffable" * 12)[:101],
    "a" * 99 + "\u0301" * 5 + " b" + "\u200d" * 150 + "c",
    "(" + "y" * 101 + ")" + "y" * 30 + "," + "z" * 101,
    "\U0001f600" * 101 + " " + "\U0001f600" * 100,
]


@functools.lru_cache(maxsize=None)
def ours(vocabulary, **kwargs):
    """A cached tokenizer and its traced `[N]`-strings function."""
    tokenizer = WordPieceTokenizer(
        str(vocabulary) if not isinstance(vocabulary, tuple) else vocabulary,
        **kwargs,
    )
    traced = tf.function(
        tokenizer.tokenize,
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    return tokenizer, traced


@functools.lru_cache(maxsize=None)
def reference(vocabulary, **kwargs):
    """Hugging Face's tokenizer for a vocab.txt path or a tuple of tokens."""
    lowercase = kwargs.get("lowercase", True)
    strip_accents = kwargs.get("strip_accents")
    if not isinstance(vocabulary, tuple):
        return hf_tokenizers.BertWordPieceTokenizer(
            str(vocabulary),
            lowercase=lowercase,
            strip_accents=strip_accents,
            clean_text=True,
            handle_chinese_chars=True,
        )
    hf = hf_tokenizers.Tokenizer(
        hf_tokenizers.models.WordPiece(
            {token: i for i, token in enumerate(vocabulary)},
            unk_token=kwargs.get("unknown_token", "[UNK]"),
            max_input_chars_per_word=kwargs.get("max_word_length", 100),
        )
    )
    hf.normalizer = hf_tokenizers.normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=strip_accents,
        lowercase=lowercase,
    )
    hf.pre_tokenizer = hf_tokenizers.pre_tokenizers.BertPreTokenizer()
    hf.decoder = hf_tokenizers.decoders.WordPiece()
    # As `BertWordPieceTokenizer` does: the special tokens it finds in the
    # vocabulary are cut out of the raw text before normalization.
    unknown = kwargs.get("unknown_token", "[UNK]")
    for token in ["[SEP]", "[CLS]", "[PAD]", "[MASK]", unknown]:
        if token in vocabulary:
            hf.add_special_tokens([token])
    return hf


def our_ids(vocabulary, lines, batch_size=1024, **kwargs):
    _, traced = ours(vocabulary, **kwargs)
    out = []
    for start in range(0, len(lines), batch_size):
        out += traced(tf.constant(lines[start : start + batch_size])).to_list()
    return out


def reference_ids(vocabulary, lines, **kwargs):
    encodings = reference(vocabulary, **kwargs).encode_batch(
        lines, add_special_tokens=False
    )
    return [encoding.ids for encoding in encodings]


def mismatches(vocabulary, lines, **kwargs):
    """`(line, ours, theirs)` for every line where the ids differ."""
    got = our_ids(vocabulary, lines, **kwargs)
    want = reference_ids(vocabulary, lines, **kwargs)
    return [(x, g, w) for x, g, w in zip(lines, got, want) if g != w]


CONFIGS = [
    dict(lowercase=True),
    dict(lowercase=False),
    dict(lowercase=True, strip_accents=False),
    dict(lowercase=False, strip_accents=True),
]


# --- Small vocabularies (no shared data needed) -----------------------------
def test_small_vocabulary():
    tokenizer = WordPieceTokenizer(SMALL)
    assert tokenizer("The cats sat.").numpy().tolist() == [5, 6, 7, 8, 11]
    assert tokenizer("unaffable").numpy().tolist() == [13, 14, 15]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_adversarial_strings_character_vocabulary(config):
    vocabulary = tuple(CHARACTERS)
    bad = mismatches(vocabulary, ADVERSARIAL, **config)
    assert not bad, bad[:3]
    # The character vocabulary really tokenizes: few words are unknown.
    ids = our_ids(vocabulary, ADVERSARIAL, **config)
    assert sum(i.count(1) for i in ids) < sum(map(len, ids)) // 20


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_adversarial_strings_small_vocabulary(config):
    bad = mismatches(tuple(SMALL), ADVERSARIAL, **config)
    assert not bad, bad[:3]


def test_cafe_cased_keeps_the_accent():
    tokenizer = WordPieceTokenizer(SMALL, lowercase=False)
    # "café" -> "caf" + "##é" needs both in the vocabulary; here only "é".
    assert tokenizer("é").numpy().tolist() == [18]
    assert tokenizer("e\u0301").numpy().tolist() == [1]  # no NFC: [UNK]
    assert WordPieceTokenizer(SMALL)("é").numpy().tolist() == [20]  # "e"


@pytest.mark.parametrize("max_word_length", [1, 3, 9, 10])
def test_max_word_length_counts_characters(max_word_length):
    vocabulary = tuple(CHARACTERS)
    lines = ["ab abc abcd", "éé ééé éééé", "中文 ab,cd", "ภาษาไทย ab"]
    lines += ["unaffable" * 2, "жжжжжжжжжж жжжжжжжжжжж"]
    bad = mismatches(vocabulary, lines, max_word_length=max_word_length)
    assert not bad, bad[:3]


def test_tokens_hugging_face_never_matches():
    # Tokens with spaces, control characters, punctuation inside a word,
    # or longer than a word: TF Text must not match them either.
    vocabulary = ("[UNK]", "a", "b", "##b", "a b", "##\xa0", "a\x00", "##")
    vocabulary += ("[CLS]", "a!", "##!", "!", "中", "a中", "x" * 5, "x")
    vocabulary += ("##x", "", "##\u3000b", "b\u2028")
    lines = ["a b", "a\xa0b a\u3000b", "a!b !! a中 中", "xxxxx xxxxxx", "##"]
    for max_word_length in (5, 100):
        bad = mismatches(vocabulary, lines, max_word_length=max_word_length)
        assert not bad, bad
    # Only special tokens: every word is unknown, "[CLS]" is itself.
    only = ("[UNK]", "[CLS]")
    assert our_ids(only, ["a [CLS] b"]) == [[0, 1, 0]]
    assert reference_ids(only, ["a [CLS] b"]) == [[0, 1, 0]]


def test_custom_unknown_token():
    vocabulary = ("<unk>", "hello", "##o", "world", "UNK")
    for lines in (["hello worldo xyz"], ["UNK <unk> hello" + "o" * 120]):
        bad = mismatches(vocabulary, lines, unknown_token="<unk>")
        assert not bad, bad
    tokenizer = WordPieceTokenizer(list(vocabulary), unknown_token="<unk>")
    assert tokenizer.special_tokens == {"unk": 0}
    # Unknown tokens that look like regexes, hold spaces, or are BERT-like.
    lines = ["a (.*) b\t[?]\n(.*)(.*) [NEW] [new] [NEW ] [CLS]", "(.*)" * 30]
    for unknown in ("(.*)", "[?]\n", "a b", "[NEW]", "##x"):
        vocabulary = (unknown, "a", "b", "##b", "[CLS]", "new", "x", "##x")
        vocabulary = tuple(dict.fromkeys(vocabulary))
        bad = mismatches(vocabulary, lines, unknown_token=unknown)
        assert not bad, (unknown, bad)


def test_invalid_utf8_is_replaced_then_dropped():
    # Each bad sequence becomes U+FFFD, which BERT's clean_text drops.
    samples = [
        b"ab\xffcd",
        b"\xe4\xb8 cut",
        b"\xed\xa0\x80surrogate",
        b"\xf4\x90\x80\x80 too big",
        b"\xc0\xaf overlong",
        b"caf\xc3\xa9 \xff\xfe",
    ]
    vocabulary = tuple(CHARACTERS)
    tokenizer, traced = ours(vocabulary)
    got = traced(tf.constant(samples)).to_list()
    text = [s.decode("utf-8", errors="replace") for s in samples]
    assert got == reference_ids(vocabulary, text)
    assert tokenizer(b"ab\xffcd").numpy().tolist() == got[0]


# Long runs of combining marks: canonical reordering must stay linear
# (ICU's insertion sort is quadratic, bench_hostile.py in
# benchmarks/README.md) and exact. U+1B44 and U+1D165/U+1D16D are marks
# step 3 keeps.
MARK_RUNS = [
    "\u0345\u0301\u0316\u0334" * 500,  # descending classes, all dropped
    "x" + "\u0f73" * 1000 + "y",  # decomposes into dropped marks only
    "ab" + "\u1b44\u0301" * 60 + "cd",  # kept marks between dropped ones
    "\u1b44\u0334\x01" * 150,  # ... and a dropped control
    "\U0001d16d\U0001d165" * 300 + " the",  # two classes, descending
    "a\u0301\u1b44" * 3 + " \u07fd\u1b44\u0300 \U0001d16d",
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_long_runs_of_combining_marks(config):
    vocabulary = tuple(CHARACTERS)
    bad = mismatches(vocabulary, MARK_RUNS, **config)
    assert not bad, bad[:1]
    # At the limit: a run of `max_word_length` kept marks is a word the
    # character vocabulary covers, one more is `[UNK]`.
    for limit in (5, 100):
        lines = [
            "\u1b44" * n + tail
            for n in (limit - 1, limit, limit + 1, 3 * limit)
            for tail in ("", "a", " a")
        ]
        bad = mismatches(vocabulary, lines, max_word_length=limit, **config)
        assert not bad, bad[:1]


def test_combining_marks_take_linear_time():
    # A loose check (the speed itself is measured in bench_hostile.py):
    # 4x the marks must take well under 16x the time.
    tokenizer = WordPieceTokenizer(SMALL)

    # Interleaved, the fastest of 5 each, in CPU time (all of this
    # process's threads): a test or job running beside this one (make test
    # runs two workers) then barely moves either size; wall time under a
    # load of 10-15 on 2 cores failed this check.
    texts = {
        n: tf.constant(["\u0345\u0301\u0316\u0334" * (n // 4)])
        for n in (50_000, 200_000)
    }
    times = {n: [] for n in texts}
    for text in texts.values():
        tokenizer(text)
    for _ in range(5):
        for n, text in texts.items():
            start = time.process_time()
            tokenizer(text)
            times[n].append(time.process_time() - start)
    small, large = min(times[50_000]), min(times[200_000])
    assert large < 8 * small, (small, large)


def test_one_megabyte_line():
    line = ("The quick brown fox jumps over the lazy dog. " * 23000)[:1_000_000]
    lines = [line, "a" * 1_000_000, line.replace(" ", "")]
    got = our_ids(tuple(SMALL), lines)
    assert got == reference_ids(tuple(SMALL), lines)
    assert [len(ids) for ids in got] == [222222, 1, 44445]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_fuzz_character_vocabulary(lines):
    bad = mismatches(tuple(CHARACTERS), lines)
    assert not bad, bad


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_fuzz_bytes(samples):
    _, traced = ours(tuple(CHARACTERS))
    got = traced(tf.constant(samples)).to_list()
    text = [s.decode("utf-8", errors="replace") for s in samples]
    assert got == reference_ids(tuple(CHARACTERS), text)


# --- The API --------------------------------------------------------------
def test_scalar_gives_1d_int32_and_batch_gives_ragged():
    tokenizer = WordPieceTokenizer(SMALL)
    scalar = tokenizer("the cat")
    assert isinstance(scalar, tf.Tensor)
    assert scalar.dtype == tf.int32 and scalar.shape.rank == 1
    batch = tokenizer(["the cat", "", "cats sat on the mat."])
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.dtype == tf.int32
    assert batch.to_list() == [[5, 6], [], [6, 7, 8, 9, 5, 10, 11]]
    assert tokenizer([]).shape.as_list() == [0, None]


def test_add_special_tokens():
    tokenizer = WordPieceTokenizer(SMALL, add_special_tokens=True)
    assert tokenizer("the cat").numpy().tolist() == [2, 5, 6, 3]
    assert tokenizer(["", "sat"]).to_list() == [[2, 3], [2, 8, 3]]
    assert tokenizer.special_tokens == {
        "pad": 0,
        "unk": 1,
        "cls": 2,
        "sep": 3,
        "mask": 4,
    }


def test_contract():
    tokenizer = WordPieceTokenizer(list(CHARACTERS), add_special_tokens=True)
    lines = ADVERSARIAL + ["The cat sat.", "", "cats, cats", "un é ß"]
    hf = reference(tuple(CHARACTERS))
    want = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    cls, sep = tokenizer.start_ids, tokenizer.end_ids
    want = [cls + ids + sep for ids in want]
    run_tokenizer_test(
        tokenizer,
        lines,
        expected_ids=want,
        expected_detokenized=hf.decode_batch(want, skip_special_tokens=False),
    )


def test_saved_model_has_core_ops_only(tmp_path):
    # Every op of the SavedModel's graphs (the greedy loop, the NFD and the
    # rare-character branches included) is in `tf.raw_ops`: no TF Text.
    tokenizer = WordPieceTokenizer(SMALL, lowercase=True)
    assert tokenizer.uses_core_ops_only
    module = tf.Module()
    module.tokenizer = tokenizer  # tracks its lookup tables
    module.tokenize = tf.function(
        tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    module.detokenize = tf.function(
        tokenizer.detokenize,
        input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)],
    )
    tf.saved_model.save(module, str(tmp_path))
    assert _ops_outside_core_tensorflow(tmp_path) == []
    loaded = tf.saved_model.load(str(tmp_path))
    lines = ["The cats sat.", "caf\u00e9 unaffable", "[MASK] " + "x" * 101, ""]
    assert loaded.tokenize(tf.constant(lines)).to_list() == (
        tokenizer(lines).to_list()
    )
    # The engine's modules do not import TF Text.
    from tf_input.tokenizers.engines import wordpiece
    from tf_input.tokenizers.engines import wordpiece_match

    for module in (wordpiece, wordpiece_match):
        source = pathlib.Path(module.__file__).read_text(encoding="utf-8")
        assert "tensorflow_text" not in source


def test_config_round_trip_gives_identical_ids():
    tokenizer = WordPieceTokenizer(
        SMALL,
        lowercase=False,
        strip_accents=True,
        unknown_token="[UNK]",
        max_word_length=7,
        add_special_tokens=True,
        name="wp",
    )
    config = tokenizer.get_config()
    assert config["vocabulary"] is None  # An asset (test_assets.py).
    assert json.loads(tokenizer._asset_bytes()) == SMALL
    restored = WordPieceTokenizer.from_config(config)
    assert restored.get_config() == config
    lines = ["The CATS sat.", "unaffable é ß", "x" * 8]
    assert restored(lines).to_list() == tokenizer(lines).to_list()


def test_from_vocab_file_and_trailing_whitespace(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("[UNK]\r\nab \n\tc\t\n\nx\u00a0\nsat\n##s".encode("utf-8"))
    tokenizer = WordPieceTokenizer.from_vocab_file(path)
    # Rust's `trim_end` on each line; the empty line is a token too.
    want = ["[UNK]", "ab", "\tc", "", "x", "sat", "##s"]
    assert tokenizer.get_vocabulary() == want
    assert json.loads(tokenizer._asset_bytes()) == want
    model = hf_tokenizers.models.WordPiece.from_file(str(path))
    hf_vocabulary = hf_tokenizers.Tokenizer(model).get_vocab()
    assert hf_vocabulary == {t: i for i, t in enumerate(want)}
    ids = tokenizer("sats ab x c").numpy().tolist()
    assert ids == [5, 6, 1, 4, 0]
    assert ids == reference(tuple(want)).encode("sats ab x c").ids
    assert WordPieceTokenizer(str(path)).get_vocabulary() == want


def test_detokenize_matches_hugging_face_decode():
    vocabulary = tuple(CHARACTERS)
    lines = ADVERSARIAL[3:12] + ["ab cd##cd abcd", "it's a dog's life."]
    tokenizer = WordPieceTokenizer(list(vocabulary), add_special_tokens=True)
    ids = tokenizer(lines)
    got = [x.decode("utf-8") for x in tokenizer.detokenize(ids).numpy()]
    hf = reference(vocabulary)
    want = [hf.decode(row, skip_special_tokens=False) for row in ids.to_list()]
    assert got == want
    # A dense, padded batch drops the trailing [PAD] ids.
    dense = tokenizer.detokenize(ids.to_tensor(default_value=0))
    assert [x.decode("utf-8") for x in dense.numpy()] == want
    scalar = tokenizer.detokenize(tokenizer("the ca##t, ok"))
    assert scalar.numpy().decode("utf-8") == hf.decode(
        tokenizer("the ca##t, ok").numpy().tolist(), skip_special_tokens=False
    )


def test_token_lookups():
    tokenizer = WordPieceTokenizer(SMALL)
    assert tokenizer.vocabulary_size() == len(SMALL)
    assert tokenizer.token_to_id("##s") == 7
    assert tokenizer.id_to_token(7) == "##s"
    assert tokenizer.get_vocabulary() == SMALL


# --- Errors ---------------------------------------------------------------
def test_missing_vocabulary_file_names_the_path(tmp_path):
    path = tmp_path / "nope" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match="nope/vocab.txt"):
        WordPieceTokenizer(str(path))
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        WordPieceTokenizer.from_vocab_file(path)


def test_corrupt_and_empty_vocabulary_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt.*is empty"):
        WordPieceTokenizer.from_vocab_file(empty)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"[UNK]\nok\n\xff\xfe\x00junk\n")
    with pytest.raises(ValueError, match="binary.txt.*not valid UTF-8"):
        WordPieceTokenizer.from_vocab_file(binary)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(OSError, match="folder"):
        WordPieceTokenizer.from_vocab_file(folder)


def test_bad_vocabularies():
    with pytest.raises(ValueError, match="`vocabulary` is empty"):
        WordPieceTokenizer([])
    with pytest.raises(ValueError, match="'\\[UNK\\]' is not in the vocab"):
        WordPieceTokenizer(["the", "cat"])
    with pytest.raises(ValueError, match="'cat' is at ids 2 and 3"):
        WordPieceTokenizer(["[UNK]", "the", "cat", "cat"])
    with pytest.raises(TypeError, match="holding 3 \\(of type int\\)"):
        WordPieceTokenizer(["[UNK]", 3])
    with pytest.raises(TypeError, match="of type dict"):
        WordPieceTokenizer({"[UNK]": 0})
    with pytest.raises(ValueError, match="'a\\\\ud800' \\(id 1\\)"):
        WordPieceTokenizer(["[UNK]", "a\ud800"])
    with pytest.raises(ValueError, match="no \\['\\[SEP\\]'\\]"):
        WordPieceTokenizer(["[UNK]", "[CLS]", "a"], add_special_tokens=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(unknown_token=""), "unknown_token=''"),
        (dict(max_word_length=0), "max_word_length=0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WordPieceTokenizer(SMALL, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(lowercase="yes"), "`lowercase` must be True or False"),
        (dict(lowercase=1), r"lowercase=1 \(of type int\)"),
        (dict(strip_accents=1), "`strip_accents` must be True, False or None"),
        (dict(unknown_token=None), "unknown_token=None"),
        (dict(max_word_length=True), "max_word_length=True"),
        (dict(add_special_tokens="no"), "add_special_tokens='no'"),
    ],
)
def test_arguments_of_a_wrong_type(kwargs, message):
    with pytest.raises(TypeError, match=message):
        WordPieceTokenizer(SMALL, **kwargs)


def test_numpy_bools_are_bools():
    tokenizer = WordPieceTokenizer(SMALL, lowercase=np.True_)
    assert tokenizer.lowercase is True
    assert tokenizer.get_config()["lowercase"] is True


def test_bad_inputs():
    tokenizer = WordPieceTokenizer(SMALL)
    with pytest.raises(TypeError, match="expects strings.*int32"):
        tokenizer(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="shape \\(2, 1\\)"):
        tokenizer(tf.constant([["a"], ["b"]]))
    with pytest.raises(ValueError, match="outside"):
        tokenizer.detokenize([0, len(SMALL)])


# --- Real vocabularies and corpora (../shared/data) ------------------------
def corpus_report(vocabulary, **config):
    """`{corpus: (identical, total)}` and the first mismatches."""
    report, examples = {}, []
    for name, lines in corpora().items():
        bad = mismatches(vocabulary, lines, **config)
        report[name] = (len(lines) - len(bad), len(lines))
        examples += [(name,) + b for b in bad[:2]]
    return report, examples


def check_corpora(vocabulary, **config):
    report, examples = corpus_report(vocabulary, **config)
    differing = {k: v for k, v in report.items() if v[0] != v[1]}
    assert not differing, (differing, examples[:4])
    assert len(report) >= 43  # 36 Tatoeba files and the 7 other corpora.


@requires_shared_data
def test_corpora_uncased():
    check_corpora(UNCASED, lowercase=True)


@requires_shared_data
def test_corpora_uncased_vocabulary_cased():
    check_corpora(UNCASED, lowercase=False)


@requires_shared_data
def test_corpora_chinese():
    check_corpora(CHINESE, lowercase=True)


@requires_shared_data
def test_squad_questions_golden_ids():
    import json

    questions = json.loads(
        data_path("bert", "squad-dev-v1.1-questions-wordpiece.json").read_text(
            encoding="utf-8"
        )
    )
    golden = json.loads(
        data_path("bert", "squad-dev-v1.1-questions-ids.json").read_text(
            encoding="utf-8"
        )
    )
    lines = [q["original"] for q in questions]
    assert len(lines) == len(golden) == 10570
    got = our_ids(UNCASED, lines)
    bad = [(x, g, w) for x, g, w in zip(lines, got, golden) if g != w]
    assert not bad, bad[:3]


@requires_shared_data
def test_i_love_deep_learning():
    tokenizer = WordPieceTokenizer.from_vocab_file(
        UNCASED, add_special_tokens=True
    )
    ids = tokenizer("I love deep learning.").numpy().tolist()
    assert ids == [101, 1045, 2293, 2784, 4083, 1012, 102]
    assert tokenizer.special_tokens == {
        "pad": 0,
        "unk": 100,
        "cls": 101,
        "sep": 102,
        "mask": 103,
    }
    assert len(read_lines(UNCASED)) == tokenizer.vocabulary_size() == 30522


@requires_shared_data
@pytest.mark.parametrize("vocabulary", ["uncased", "chinese"])
@pytest.mark.parametrize("lowercase", [True, False])
def test_adversarial_strings_bert_vocabularies(vocabulary, lowercase):
    path = UNCASED if vocabulary == "uncased" else CHINESE
    bad = mismatches(path, ADVERSARIAL, lowercase=lowercase)
    assert not bad, bad[:3]


@requires_shared_data
@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_fuzz_uncased(lines):
    bad = mismatches(UNCASED, lines)
    assert not bad, bad


@requires_shared_data
def test_detokenize_corpus_matches_hugging_face():
    lines = corpora()["wikitext-2-raw-test.txt"][:200]
    lines += corpora()["tatoeba.fra-eng.fra"][:200]
    tokenizer = WordPieceTokenizer.from_vocab_file(UNCASED)
    ids = tokenizer(lines)
    got = [x.decode("utf-8") for x in tokenizer.detokenize(ids).numpy()]
    hf = reference(UNCASED)
    rows = ids.to_list()
    assert got == [hf.decode(row, skip_special_tokens=False) for row in rows]


# --- Every code point (slow) ----------------------------------------------
def _every_code_point():
    return [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


@pytest.mark.slow
def test_tables_are_what_hugging_face_does():
    """Re-derives the character tables of `wordpiece` from `tokenizers`."""
    normalizers = hf_tokenizers.normalizers
    clean = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=False,
        strip_accents=False,
        lowercase=False,
    )
    chinese = normalizers.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=True,
        strip_accents=False,
        lowercase=False,
    )
    strip = normalizers.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=False,
        strip_accents=True,
        lowercase=False,
    )
    split = hf_tokenizers.pre_tokenizers.BertPreTokenizer()
    found = {"control": [], "space": [], "cjk": [], "mark": [], "punct": []}
    for c in _every_code_point():
        char = chr(c)
        cleaned = clean.normalize_str(char)
        if cleaned == "":
            found["control"].append(c)
        elif cleaned == " " and c != 0x20:
            found["space"].append(c)
        if chinese.normalize_str(char) != char:
            found["cjk"].append(c)
        if strip.normalize_str(char) == "":
            found["mark"].append(c)
        words = [w for w, _ in split.pre_tokenize_str("a" + char + "a")]
        if words == ["a", char, "a"]:
            found["punct"].append(c)
    code_points = bert_tables.code_points
    assert set(found["control"]) == code_points(bert_tables.CONTROL)
    assert set(found["space"]) == code_points(bert_tables.WHITESPACE)
    assert set(found["cjk"]) == code_points(bert_tables.CJK)
    assert set(found["punct"]) == code_points(bert_tables.PUNCTUATION)
    # Characters that decompose into marks only are dropped as well.
    marks = code_points(bert_tables.NONSPACING_MARKS)
    assert marks <= set(found["mark"])
    for c in set(found["mark"]) - marks:
        assert all(ord(x) in marks for x in strip.normalize_str(chr(c) + "a"))
    check_lowercase_against_tensorflow()


def check_lowercase_against_tensorflow():
    """`tf.strings.lower` (ICU) against Rust's lowercase, one character at
    a time: they differ on `LOWERCASE_ADDITIONS` (and on a final `Σ`)."""
    every = _every_code_point()
    chars = tf.constant([chr(c) for c in every])
    lowercase = hf_tokenizers.normalizers.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=False,
        strip_accents=False,
        lowercase=True,
    )
    lowered = tf.strings.lower(chars, encoding="utf-8").numpy()
    differ = {
        chr(c): lowercase.normalize_str(chr(c))
        for c, x in zip(every, lowered)
        # NUL (which `tf.strings.lower` drops) never reaches this step.
        if c and x.decode("utf-8") != lowercase.normalize_str(chr(c))
    }
    assert differ == bert_tables.lowercase_additions()


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS[:2], ids=str)
def test_every_code_point_in_context(config):
    lines = [f"A{chr(c)}b {chr(c)}Σ {c:c}{c:c}x" for c in _every_code_point()]
    bad = mismatches(tuple(CHARACTERS), lines, batch_size=8192, **config)
    assert not bad, bad[:5]
