"""The Unicode tables, regex translation and normalizers against HF itself.

The default suite checks samples (random combining-mark sequences, code
points spread over the whole range); `-m slow` checks every code point:
the general-category table against Oniguruma, each normalization form and
`Lowercase` against HF's normalizers, and each family's split regex on a
probe string per code point against HF's pre-tokenizer.
"""

import json
import random
import unicodedata

import pytest
import tensorflow as tf
import tokenizers as hf
from tokenizers import Regex
from tokenizers import normalizers
from tokenizers import pre_tokenizers

from tests.shared_data import data_path
from tests.tokenizers import unicode_reference
from tf_input.tokenizers import _unicode
from tf_input.tokenizers import _unicode_tables
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers.hf import regex as _regex
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.normalizers import reference_normalize
from tf_input.tokenizers.hf.pre_tokenizers import PreTokenizer

FORMS = ("NFC", "NFD", "NFKC", "NFKD")


# --- Sets and the table ----------------------------------------------------
def test_code_point_sets():
    a = CodePoints.parse("41-5A 61")
    assert 0x41 in a and 0x5A in a and 0x61 in a and 0x60 not in a
    assert len(a) == 27 and (~~a) == a and not (a & ~a)
    assert (a | CodePoints.of("b")).spec() == "41-5A 61-62"
    assert (a - CodePoints.of("A")).spec() == "42-5A 61"
    assert CodePoints.of("x").re2() == "x"
    assert CodePoints.parse("D7FF-E000").re2() == r"[\x{D7FF}\x{E000}]"


def test_general_categories_spot_checks():
    letters = _unicode.general_category("L")
    assert (
        ord("a") in letters and ord("日") in letters and ord("1") not in letters
    )
    # Unicode 16 letters Oniguruma has and RE2 2.21 lacks.
    assert 0x1C89 in letters and 0x2EBF0 in letters
    assert 0x10D40 in _unicode.general_category("N")
    assert _unicode.general_category("LC") == (
        _unicode.general_category("Lu")
        | _unicode.general_category("Ll")
        | _unicode.general_category("Lt")
    )
    with pytest.raises(KeyError):
        _unicode.general_category("Han")


@pytest.mark.slow
def test_general_category_table_is_oniguruma_s():
    owner = unicode_reference.onig_general_categories()
    runs = unicode_reference.category_runs(owner)
    assert runs.split() == _unicode_tables.GENERAL_CATEGORY.split()


@pytest.mark.slow
def test_unknown_to_hf_tables_cover_python():
    decomposition = CodePoints.parse(_unicode_tables.DECOMPOSITION_UNKNOWN)
    for c in unicode_reference.decomposition_unknown_to_hf():
        assert c in decomposition, hex(c)
    combining = CodePoints.parse(_unicode_tables.COMBINING_CLASS_UNKNOWN)
    for c in unicode_reference.hf_combining_class_zero():
        assert c in combining, hex(c)


# --- Regex translation -----------------------------------------------------
def _hf_pieces(pattern, texts):
    splitter = pre_tokenizers.Split(Regex(pattern), "isolated")
    return [[p for p, _ in splitter.pre_tokenize_str(t)] for t in texts]


def _our_pieces(pattern, texts):
    pre = PreTokenizer(
        {
            "type": "Split",
            "pattern": {"Regex": pattern},
            "behavior": "Isolated",
        }
    )
    segments = tf.constant(texts)
    words = pre(segments, tf.zeros(tf.shape(segments), tf.bool))
    return [[w.decode("utf-8") for w in row] for row in words.to_list()]


def _probes(code_points):
    """Each code point where the classes and the lookahead matter."""
    out = []
    for c in code_points:
        ch = chr(c)
        out.append(
            f"a{ch}1{ch}!{ch}{ch}a {ch}a{ch} {ch}{ch}  '{ch}{ch}\n{ch} \r\n "
            f"{ch}'s{ch}"
        )
    return out


def _family_patterns():
    out = {}
    for name in ("qwen3", "cl100k", "o200k", "deepseek_v4"):
        path = data_path("llm", name, "tokenizer.json")
        if not path.exists():
            continue
        data = json.loads(path.read_text("utf-8"))
        for n, item in enumerate(data["pre_tokenizer"]["pretokenizers"]):
            if item["type"] == "Split":
                out[f"{name}-{n}"] = item["pattern"]["Regex"]
    return out


PATTERNS = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
    r"|\s+(?!\S)|\s+",
    **_family_patterns(),
}


def _sampled_code_points(step):
    points = set(range(0, 0x110000, step))
    points.update(_unicode.WHITE_SPACE.ranges[i][0] for i in range(8))
    points.update(c for first, last in _unicode.WHITE_SPACE.ranges
                  for c in range(first, last + 1))  # fmt: skip
    points.update(ord(c) for c in "'sStT/\u017f\u212a\r\n")
    return sorted(c for c in points if not 0xD800 <= c < 0xE000)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_family_regexes_split_like_oniguruma_sampled(name):
    texts = _probes(_sampled_code_points(step=251))
    assert _our_pieces(PATTERNS[name], texts) == _hf_pieces(
        PATTERNS[name], texts
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_family_regexes_split_like_oniguruma_everywhere(name):
    points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(points), 50000):
        texts = _probes(points[start : start + 50000])
        assert _our_pieces(PATTERNS[name], texts) == _hf_pieces(
            PATTERNS[name], texts
        ), f"code points from U+{points[start]:04X}"


def test_case_insensitive_groups_fold_like_oniguruma():
    tree = _regex.parse("(?i:'s|k)")
    sets = [points for points in _regex.char_sets(tree)]
    assert any(0x17F in s for s in sets)  # long s
    assert any(0x212A in s for s in sets)  # Kelvin sign


@pytest.mark.parametrize(
    "pattern, message",
    [
        (r"a(?=b)", "lookaround"),
        (r"(?<!a)b", "lookaround"),
        (r"(a)\1", "backreference"),
        (r"a++", "possessive"),
        (r"a*+b", "possessive"),
        (r"(?>a)", "atomic"),
        (r"^a", "anchor"),
        (r"a$", "anchor"),
        (r"(?i:ss)", "one character"),
        (r"(?i:\u00e9)", "non-ASCII"),
        (r"\p{Han}", "not supported"),
        (r"a{2000}", "above 1000"),
        (r"(?<name>a)", "Named groups"),
        (r"[[:alpha:]]", "POSIX"),
        (r"\w+", "not supported"),
        (r"(a", "Missing `\\)`"),
        (r"a)", "Unbalanced"),
        (r"a*", "empty string"),
        (r"\s+(?!\S)", "lookaround"),
    ],
)
def test_untranslatable_patterns_are_clear_errors(pattern, message):
    with pytest.raises(_regex.RegexError, match=message):
        _regex.plan_split(pattern)


def test_the_lookahead_tail_alone():
    texts = _probes(_sampled_code_points(step=4001))
    pattern = r"\s+(?!\S)|\s+"
    assert _our_pieces(pattern, texts) == _hf_pieces(pattern, texts)


def test_the_lookahead_cut_is_chosen_from_the_pattern():
    gpt2 = _regex.plan_split(PATTERNS["gpt2"])
    assert gpt2.cut_before_last == _unicode.WHITE_SPACE  # every run
    cl100k = _regex.plan_split(
        r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    # Runs ending in \r or \n are matched by `\s*[\r\n]+`: never cut.
    assert cl100k.cut_before_last == _unicode.WHITE_SPACE - CodePoints.of(
        "\r", "\n"
    )


# --- Normalizers -------------------------------------------------------------
def _mark_sequences(count, seed=0):
    rng = random.Random(seed)
    marks = [
        c
        for c in range(0x110000)
        if not 0xD800 <= c < 0xE000 and _unicode.combining_class(c)
    ]
    starters = [ord(x) for x in "aeiouAEIOUnNcCsSzZ"] + [
        0x1100, 0x1161, 0x11A8, 0xAC00, 0x0B47, 0x0B3E, 0x0915, 0x093C,
        0x3099, 0x304B, 0x212B, 0x1E9B, 0x0DD9, 0x0DCF, 0xFB01, 0x2460,
    ]  # fmt: skip
    out = []
    for _ in range(count):
        n = rng.randint(1, 8)
        out.append(
            "".join(
                chr(
                    rng.choice(starters)
                    if rng.random() < 0.4
                    else rng.choice(marks)
                )
                for _ in range(n)
            )
        )
    return out


@pytest.mark.parametrize("form", FORMS)
def test_normalization_of_mark_sequences_equals_hf(form):
    texts = _mark_sequences(2000) + [
        "",
        "abc",
        "e\u0301\u0323",
        "\u1100\u1161\u11a8",
    ]
    reference = getattr(normalizers, form)()
    want = [reference.normalize_str(t) for t in texts]
    got = [
        t.decode("utf-8")
        for t in Normalizer({"type": form})(tf.constant(texts)).numpy()
    ]
    assert got == want
    assert [reference_normalize(t, form) for t in texts] == want


def _every_code_point():
    return [
        chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and c != 10
    ]


@pytest.mark.slow
@pytest.mark.parametrize("form", [*FORMS, "Lowercase"])
def test_normalizers_on_every_code_point_equal_hf(form):
    texts = _every_code_point()
    reference = getattr(normalizers, form)()
    want = reference.normalize_str("\n".join(texts)).split("\n")
    ours = Normalizer({"type": form})
    got = []
    for start in range(0, len(texts), 100000):
        batch = tf.constant(texts[start : start + 100000])
        got += [t.decode("utf-8") for t in ours(batch).numpy()]
    bad = [(hex(ord(t)), g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)} differ, first {bad[:5]}"


def test_lowercase_equals_hf_on_its_differences_with_icu():
    texts = ["ΣΑΣ ΑΣ", "a\x00B\x00", "\x00", "Ⱟ 𐖔 Ꟑ ꟊ", "İI ẞ Ω", "AbC", ""]
    reference = normalizers.Lowercase()
    got = Normalizer({"type": "Lowercase"})(tf.constant(texts)).numpy()
    assert [t.decode("utf-8") for t in got] == [
        reference.normalize_str(t) for t in texts
    ]


def test_normalizer_errors():
    for spec, message in [
        (
            {"type": "Precompiled", "precompiled_charsmap": "not base64!"},
            "precompiled_charsmap is not valid base64",
        ),
        ({"type": "BertNormalizer"}, "WordPiece"),
        ({"type": "Nope"}, "'Nope' is not supported"),
        (
            {"type": "Replace", "pattern": {"Regex": "a(?=b)"}, "content": ""},
            "lookaround",
        ),
        (
            {"type": "Replace", "pattern": {"Regex": "a*"}, "content": ""},
            "empty string",
        ),
        ({"type": "Prepend", "prepend": 3}, "Prepend needs a string"),
        ("NFC", "must be a dict"),
    ]:
        with pytest.raises(ValueError, match=message):
            Normalizer(spec)


def test_hf_reference_tokenizer_is_the_library():
    # The tests compare with the installed `tokenizers`, whose tables these
    # are: a different major version may need the tables regenerated.
    assert hf.__version__.startswith("0.2")
    assert unicodedata.unidata_version >= "13.0"
