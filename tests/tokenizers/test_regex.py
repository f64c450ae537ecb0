"""The regex translation (`tf_input.tokenizers.hf.regex`) against `regex`.

Every split pattern of the shared tokenizer files (and of the rank-file
encodings) must translate; then, on a spread of corpus lines and crafted
edge cases, the translated RE2 pattern, run by TensorFlow, must split
exactly as Python's `regex` module (a backtracking engine with
lookarounds and possessive quantifiers, like Oniguruma and fancy-regex)
splits with the original pattern. The rank-file patterns are compared
with tiktoken's own spellings (possessive quantifiers, `\\s++$`), which
the translation never sees. `test_unicode_tables.py` compares the same
patterns with HF's pre-tokenizer code point by code point; here the
reference is an independent engine on real text.

`regex` follows a newer Unicode than Oniguruma's tables; lines holding a
character whose class differs between the two are left out (the test
says how many, and there must be few).
"""

import json

import pytest
import regex
import tensorflow as tf

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.tiktoken_patterns import TIKTOKEN_PATTERNS
from tf_input.tokenizers import _unicode
from tf_input.tokenizers.hf import regex as translation
from tf_input.tokenizers.hf.pre_tokenizers import GPT2_PATTERN
from tf_input.tokenizers.hf.pre_tokenizers import PreTokenizer
from tf_input.tokenizers.rank_files import PATTERNS

FAMILIES = ("qwen3", "cl100k", "o200k", "deepseek_v4")
# Where whitespace runs, contractions, digits, marks and scripts meet.
CRAFTED = [
    "",
    " ",
    "   ",
    "a  b   c    d",
    " \n\n  x",
    "a \r\n  b",
    "x\t\t\n y",
    "  \n",
    "z  ",
    "\r\n\r\n\r\n",
    "line one\r\nline two\r\n\r\n  indented\r\n\t\ttabbed",
    "DON'T I'M YOU'RE WE'VE THEY'LL HE'D IT'S don't i'm 'S 'll'd",
    "it\u2019s 'sss ''s x's' Kelvin \u212a and long \u017f: '\u017f '\u212a",
    "2000 20000 1234567 3.14159 1,000,000 \u0661\u0662\u0663 \uff11\uff12",
    "\u00b2\u00b3 12ab34 a1b2c3 x-1 --5",
    "e\u0301cole cafe\u0301 A\u030a \u03a9 \u212b \u1e9b\u0323 \u0958",
    "Zalgo: Z\u0336\u0321\u0322a\u0300\u0301l\u0303g\u0304o",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587\uff0c!",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 \uff46\uff55\uff4c\uff4c",
    "CamelCaseWord HTTPServer iPhone \u0130stanbul \u01c5ungla",
    "path/to/file.py:12 https://x.org/a?b=c&d=e#f",
    "!!! ... ??? --- \u2014\u2014 \u00bf\u00a1 \u00ab\u00bb",
    "\u00a0\u00a0nbsp \u2003em\u2003space \u3000ideographic",
    "\u0085next line\u2028line sep\u2029para sep\u000bvt\u000cff",
    "tab\tend\t",
    "trailing newlines\n\n\n",
    "<|im_start|>user\nHello<|im_end|>",
    "a/b\r\n/c  /d\n\n/",
]


def _shared_patterns():
    """`{name: pattern}`: every regex of the shared tokenizer files."""
    out = {"gpt2-byte-level": GPT2_PATTERN}
    for family in FAMILIES:
        path = data_path("llm", family, "tokenizer.json")
        data = json.loads(path.read_text("utf-8"))
        parts = data["pre_tokenizer"]["pretokenizers"]
        for n, part in enumerate(parts):
            if part["type"] == "Split" and "Regex" in part["pattern"]:
                out[f"{family}-{n}"] = part["pattern"]["Regex"]
    return out


def _ours(pattern, texts, matches_only=False):
    """The pieces of each text: the translated pattern, in TensorFlow."""
    spec = {
        "type": "Split",
        "pattern": {"Regex": pattern},
        "behavior": "Removed" if matches_only else "Isolated",
        "invert": matches_only,
    }
    words = PreTokenizer(spec)(tf.constant(texts), tf.zeros([len(texts)], bool))
    return [[w.decode("utf-8") for w in row] for row in words.to_list()]


def _reference(pattern, texts, matches_only=False, flags=0):
    """The pieces of each text: `regex` with the original pattern (the
    matches, and unless `matches_only` the text between them)."""
    compiled = regex.compile(pattern, flags)
    out = []
    for text in texts:
        pieces, at = [], 0
        for match in compiled.finditer(text):
            if match.start() > at and not matches_only:
                pieces.append(text[at : match.start()])
            pieces.append(match.group())
            at = match.end()
        if at < len(text) and not matches_only:
            pieces.append(text[at:])
        out.append(pieces)
    return out


_CLASSES = (
    r"\s",
    r"\p{L}",
    r"\p{Lu}",
    r"\p{Ll}",
    r"\p{Lt}",
    r"\p{Lm}",
    r"\p{Lo}",
    r"\p{M}",
    r"\p{N}",
    r"\p{P}",
    r"\p{S}",
)


def _disputed(text, cache={}):  # noqa: B006 - a per-character memo
    """True if a character of `text` is in one of the classes for one
    engine and not for the other (their Unicode versions differ)."""
    for char in set(text):
        if char not in cache:
            ours = [ord(char) in translation.parse(c).points for c in _CLASSES]
            theirs = [bool(regex.fullmatch(c, char)) for c in _CLASSES]
            cache[char] = ours != theirs
        if cache[char]:
            return True
    return False


def _lines(per_corpus):
    out = []
    for lines in corpora().values():
        step = max(1, len(lines) // per_corpus)
        out.extend(lines[::step][:per_corpus])
    return out


def _agreed(texts):
    kept = [t for t in texts if not _disputed(t)]
    # A handful of lines with characters newer than Oniguruma's tables.
    assert len(texts) - len(kept) <= len(texts) // 50, len(texts) - len(kept)
    return kept


def _assert_same(got, want, texts):
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(texts)} differ; first {bad[0]!r}"


# --- The shared files' patterns ----------------------------------------------
@requires_shared_data
def test_every_pattern_of_the_shared_files_translates():
    patterns = {**_shared_patterns(), **PATTERNS}
    assert len(patterns) >= 9
    for name, pattern in patterns.items():
        plan = translation.plan_split(pattern)
        # RE2 (TensorFlow's) accepts the spelling.
        tf.strings.regex_replace("probe", plan.pattern, "x")
        assert plan.pattern, name


@requires_shared_data
@pytest.mark.parametrize("name", sorted(_shared_patterns()))
def test_shared_patterns_split_like_regex(name):
    pattern = _shared_patterns()[name]
    texts = _agreed(_lines(per_corpus=12) + CRAFTED)
    _assert_same(_ours(pattern, texts), _reference(pattern, texts), texts)


@requires_shared_data
@pytest.mark.parametrize("name", sorted(TIKTOKEN_PATTERNS))
def test_rank_file_patterns_match_like_tiktoken_s_own_spelling(name):
    # Ours (no possessives, the lookahead tail) against tiktoken's
    # pattern, matches only (tiktoken encodes nothing between them).
    texts = _agreed(_lines(per_corpus=12) + CRAFTED)
    got = _ours(PATTERNS[name], texts, matches_only=True)
    want = _reference(TIKTOKEN_PATTERNS[name], texts, matches_only=True)
    _assert_same(got, want, texts)


# --- Constructs, one by one ------------------------------------------------
# (pattern, texts, the same pattern in `regex`'s syntax where it differs).
CONSTRUCTS = [
    (r"(?i:'s|'t)|\p{L}+", ["'S 's 'T '\u017f '\u212a", "It'S x'T"], None),
    (r"(?i)ab|K+", ["AB aB Ab ab kKK\u212a"], None),
    (r"\p{N}{1,3}|\p{L}+", ["1234567 12 1", "\u0661\u0662\u0663\u0664"], None),
    (
        r"[\x{263A}-\x{263C}]+|[\u00e9\x41]+|\x{1F600}",
        ["\u263a\u263b\u263c \u00e9A\u00e9 \U0001f600"],
        r"[\u263A-\u263C]+|[\u00e9\x41]+|\U0001F600",
    ),
    (r"\d+|\D", ["12\u0663 x\U0001d7d8"], None),
    (r"\h+|\H", ["deadBEEF xyz"], r"[0-9a-fA-F]+|[^0-9a-fA-F]"),
    (r"a{2}|a{,1}b|a{2,}|x{", ["aaaaab ab b x{ aa"], None),
    (r"[^\s\p{L}\p{N}]+[\r\n/]*|\s+", ["!!/\n ?? //x .\r\n"], None),
    (r"(?:ab)+?c|.", ["ababc abc ac"], None),
    (
        r"\t|\n|\r|\f|\v|\a|\e|\0|\x7f",
        ["\t\n\r\f\v\a\x1b\x00\x7f"],
        r"\t|\n|\r|\f|\v|\a|\x1b|\x00|\x7f",
    ),
    (r"[\]\-\\]+|[^]x]+", ["]-\\ ab]x"], None),
    (r"\p{^L}+|\P{N}+", ["abc 123 !?"], None),
    (
        r"[a-z&&[^aeiou]]+|.",
        ["strengths rhythm aeiou"],
        r"[b-df-hj-np-tv-z]+|.",
    ),
    (r"(?#a comment)x|.", ["xyz"], None),
    (r".", ["a\nb"], None),
    (r"(?m:.)", ["a\nb"], r"(?s:.)"),  # Ruby's `m` is dot-all
]


@pytest.mark.parametrize("pattern, texts, reference", CONSTRUCTS)
def test_constructs_split_like_regex(pattern, texts, reference):
    want = _reference(reference or pattern, texts)
    _assert_same(_ours(pattern, texts), want, texts)


@pytest.mark.parametrize(
    "pattern, message",
    [
        (r"\bword", r"escape `\\b`"),
        (r"(?x) a", "extended flag"),
        (r"a(?i)b", "only supported at the start"),
        (r"[b-a]", "out of order"),
        (r"a{3,2}", "is empty"),
        (r"\p{L", "Unterminated"),
        (r"[abc", "Unterminated character class"),
        (r"*a", "Nothing to repeat"),
        (r"(?i:[^a])", "negated class"),
        (r"(?=a)+", "quantified lookaround"),
        (r"a{2}+", "after an interval"),
        (r"\x", "hexadecimal digits"),
        (r"\u12", "four hexadecimal"),
        (r"(?P<n>a)", "Named groups"),
        ("a\\", "ends with"),
    ],
)
def test_what_cannot_be_translated_is_an_error_naming_it(pattern, message):
    with pytest.raises(translation.RegexError, match=message):
        translation.plan_split(pattern)


def test_a_pattern_is_a_string():
    with pytest.raises(TypeError, match="must be a string"):
        translation.parse(3)


def test_the_lookahead_tail_becomes_a_cut_and_a_run():
    plan = translation.plan_split(r"\p{L}+|\s+(?!\S)|\s+")
    assert plan.cut_before_last == _unicode.WHITE_SPACE
    assert "(?!" not in plan.pattern
    texts = ["a  b", "  ", "a \n b", "x\t \ty "]
    got = _ours(r"\p{L}+|\s+(?!\S)|\s+", texts)
    assert got == _reference(r"\p{L}+|\s+(?!\S)|\s+", texts)
    assert got[0] == ["a", " ", " ", "b"]
