"""Sets of code points, and the Unicode data of Hugging Face `tokenizers`.

`CodePoints` is an immutable set of code points kept as sorted, disjoint
inclusive ranges, with the set algebra that regex translation needs and an
RE2 character-class spelling. The tables come from `_unicode_tables`
(read off `tokenizers` itself), so that a class means exactly what it
means to HF's regex engine (Oniguruma) and normalizers, whatever Unicode
versions RE2, ICU and Python's `unicodedata` follow.
"""

from __future__ import annotations

import bisect
import functools
import unicodedata

from tf_input.tokenizers import _unicode_tables

MAX_CODE_POINT = 0x10FFFF
# UTF-8 cannot hold surrogates: no text ever contains one, and RE2 rejects
# them in a class.
_SURROGATES = (0xD800, 0xDFFF)


class CodePoints:
    """An immutable set of code points (sorted disjoint `(first, last)`)."""

    __slots__ = ("ranges", "_starts")

    def __init__(self, ranges=()):
        merged = []
        for first, last in sorted(ranges):
            if first > last:
                continue
            if merged and first <= merged[-1][1] + 1:
                if last > merged[-1][1]:
                    merged[-1] = (merged[-1][0], last)
            else:
                merged.append((first, last))
        self.ranges = tuple(merged)
        self._starts = [first for first, _ in merged]

    @classmethod
    def of(cls, *chars):
        return cls((ord(c), ord(c)) for c in chars)

    @classmethod
    def parse(cls, spec):
        """`"41-5A 61"` -> the set {0x41..0x5A, 0x61}."""
        out = []
        for item in spec.split():
            first, _, last = item.partition("-")
            out.append((int(first, 16), int(last or first, 16)))
        return cls(out)

    def __contains__(self, code_point):
        i = bisect.bisect_right(self._starts, code_point) - 1
        return i >= 0 and code_point <= self.ranges[i][1]

    def __bool__(self):
        return bool(self.ranges)

    def __eq__(self, other):
        return isinstance(other, CodePoints) and self.ranges == other.ranges

    def __hash__(self):
        return hash(self.ranges)

    def __repr__(self):
        return f"CodePoints({self.spec()!r})"

    def __len__(self):
        return sum(last - first + 1 for first, last in self.ranges)

    def __or__(self, other):
        return CodePoints(self.ranges + other.ranges)

    def __and__(self, other):
        return ~(~self | ~other)

    def __sub__(self, other):
        return self & ~other

    def __invert__(self):
        out, start = [], 0
        for first, last in self.ranges:
            if first > start:
                out.append((start, first - 1))
            start = last + 1
        if start <= MAX_CODE_POINT:
            out.append((start, MAX_CODE_POINT))
        return CodePoints(out)

    def spec(self):
        return " ".join(
            f"{a:X}" if a == b else f"{a:X}-{b:X}" for a, b in self.ranges
        )

    def sample(self):
        """Some code point of the set (the smallest)."""
        return self.ranges[0][0]

    def re2(self):
        """An RE2 pattern matching one character of the set.

        Surrogates are left out (no UTF-8 text holds them). An empty set
        gives a class that matches nothing, `[^\\x{0}-\\x{10FFFF}]`.
        """
        ranges = (self - SURROGATES).ranges
        if not ranges:
            return r"[^\x{0}-\x{10FFFF}]"
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return _re2_char(ranges[0][0])
        body = "".join(
            _re2_char(a) if a == b else f"{_re2_char(a)}-{_re2_char(b)}"
            for a, b in ranges
        )
        return f"[{body}]"


def _re2_char(code_point):
    char = chr(code_point)
    if char.isascii() and char.isalnum():
        return char
    return f"\\x{{{code_point:X}}}"


SURROGATES = CodePoints([_SURROGATES])
EVERYTHING = CodePoints([(0, MAX_CODE_POINT)])
# `\s` of Oniguruma and of Rust (`char::is_whitespace`, regex `\s`): the
# White_Space property.
WHITE_SPACE = CodePoints.parse(
    "9-D 20 85 A0 1680 2000-200A 2028 2029 202F 205F 3000"
)
# Rust's `char::is_numeric` (HF's `Digits` pre-tokenizer) knows these
# digits, which Oniguruma's `\p{N}` does not (newer Unicode).
_RUST_EXTRA_NUMERIC = CodePoints.parse("11DE0-11DE9 16FF4-16FF6")


@functools.cache
def _category_table():
    starts, names = [], []
    for item in _unicode_tables.GENERAL_CATEGORY.split():
        starts.append(int(item[:-2], 16))
        names.append(item[-2:])
    ends = [*starts[1:], MAX_CODE_POINT + 1]
    table = {}
    for start, end, name in zip(starts, ends, names):
        table.setdefault(name, []).append((start, end - 1))
    return {name: CodePoints(ranges) for name, ranges in table.items()}


@functools.cache
def general_category(name):
    """Oniguruma's `\\p{name}`: a category (`Lu`) or major class (`L`).

    Also `LC` / `L&` (cased letters) and `Any`. Raises `KeyError` for other
    names.
    """
    table = _category_table()
    if name in table:
        return table[name]
    if name in ("LC", "L&"):
        return table["Lu"] | table["Ll"] | table["Lt"]
    if name == "Any":
        return EVERYTHING
    members = [cats for key, cats in table.items() if key[0] == name]
    if len(name) != 1 or not members:
        raise KeyError(name)
    return functools.reduce(CodePoints.__or__, members)


# Rust's regex `\w` (HF's `single_word` test for added tokens) beyond the
# categories L, Nl, M, Nd, Pc: Join_Control and the Other_Alphabetic
# symbols (circled and squared letters). Measured on every code point.
_RUST_EXTRA_WORD = CodePoints.parse(
    "200C-200D 24B6-24E9 1F130-1F149 1F150-1F169 1F170-1F189"
)


def rust_word():
    """Rust regex's `\\w`: what makes an added token not a `single_word`."""
    return (
        general_category("L")
        | general_category("Nl")
        | general_category("M")
        | general_category("Nd")
        | general_category("Pc")
        | _RUST_EXTRA_WORD
    )


def rust_numeric():
    """Rust's `char::is_numeric`, HF's `Digits` pre-tokenizer class."""
    return general_category("N") | _RUST_EXTRA_NUMERIC


# --- Normalization data (NFC, NFD, NFKC, NFKD) -------------------------------
# HF's normalizers are Unicode 9.0; Python's `unicodedata` is newer (13.0
# to 15.0 on the Pythons this package supports) and agrees with HF on every
# code point that Unicode 9.0 has. Decompositions and combining classes are
# stable for assigned code points, so HF's tables are `unicodedata`'s minus
# the code points assigned later, which the generated tables list.
_HANGUL_S, _HANGUL_L, _HANGUL_V, _HANGUL_T = 0xAC00, 0x1100, 0x1161, 0x11A7
_HANGUL_L_COUNT, _HANGUL_V_COUNT, _HANGUL_T_COUNT = 19, 21, 28
_HANGUL_COUNT = _HANGUL_L_COUNT * _HANGUL_V_COUNT * _HANGUL_T_COUNT


@functools.cache
def assigned():
    """Code points with a character (not unassigned, private or surrogate),
    the only ones with normalization data."""
    table = _category_table()
    return ~(table["Cn"] | table["Co"] | table["Cs"])


@functools.cache
def _unknown_to_hf():
    return (
        CodePoints.parse(_unicode_tables.DECOMPOSITION_UNKNOWN),
        CodePoints.parse(_unicode_tables.COMBINING_CLASS_UNKNOWN),
    )


def combining_class(code_point):
    """HF's canonical combining class of `code_point`."""
    if code_point in _unknown_to_hf()[1]:
        return 0
    return unicodedata.combining(chr(code_point))


def _one_step(code_point, compatibility):
    """The decomposition mapping of `code_point` (one step), or None."""
    if _HANGUL_S <= code_point < _HANGUL_S + _HANGUL_COUNT:
        index = code_point - _HANGUL_S
        t = index % _HANGUL_T_COUNT
        if t:
            return [code_point - t, _HANGUL_T + t]
        l_index, v_index = divmod(index, _HANGUL_V_COUNT * _HANGUL_T_COUNT)
        v_index //= _HANGUL_T_COUNT
        return [_HANGUL_L + l_index, _HANGUL_V + v_index]
    mapping = unicodedata.decomposition(chr(code_point))
    if not mapping or code_point in _unknown_to_hf()[0]:
        return None
    if mapping.startswith("<"):
        if not compatibility:
            return None
        mapping = mapping.split(">", 1)[1]
    return [int(part, 16) for part in mapping.split()]


@functools.cache
def decomposition_table(compatibility):
    """`{code point: full decomposition}` (a list of code points), HF's."""
    table = {}

    def full(code_point):
        step = _one_step(code_point, compatibility)
        if step is None:
            return [code_point]
        return [c for part in step for c in full(part)]

    for code_point in _maybe_decomposed():
        if _one_step(code_point, compatibility) is not None:
            table[code_point] = full(code_point)
    return table


@functools.cache
def _maybe_decomposed():
    """Assigned code points, less whole blocks of 256 that NFKD leaves
    alone (none of their characters decomposes), plus Hangul syllables."""
    out = []
    for first, last in assigned().ranges:
        for start in range(first, last + 1, 256):
            block = range(start, min(start + 256, last + 1))
            text = "".join(map(chr, block))
            in_hangul = _HANGUL_S <= start < _HANGUL_S + _HANGUL_COUNT
            if in_hangul or not unicodedata.is_normalized("NFKD", text):
                out.extend(block)
    return out


@functools.cache
def composition_table():
    """`{(first, second): composite}`, HF's primary composites.

    A character composes from its canonical pair unless it is a
    composition exclusion; `unicodedata`'s own NFC tells which are.
    """
    table = {}
    for code_point, pair in _canonical_pairs().items():
        if unicodedata.normalize("NFC", chr(pair[0]) + chr(pair[1])) == chr(
            code_point
        ):
            table[pair] = code_point
    return table


def _canonical_pairs():
    out = {}
    for code_point in _maybe_decomposed():
        step = _one_step(code_point, compatibility=False)
        if step is not None and len(step) == 2:
            out[code_point] = tuple(step)
    return out
