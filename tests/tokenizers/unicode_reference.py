"""Reads the Unicode tables of Hugging Face `tokenizers` off the library.

`tf_input/tokenizers/_unicode_tables.py` was generated with these
functions (`python -m tests.tokenizers.unicode_reference` prints the
tables); `test_unicode_tables.py` runs them again and compares.

* Oniguruma's general categories: each `\\p{Xx}` run as a HF `Replace`
  normalizer over a string of every code point; what it removes is the
  class.
* Normalization: HF's `NFD` / `NFKD` of every code point alone, against
  Python's `unicodedata` and ICU (TF Text): the code points that these
  decompose and HF does not were assigned after HF's Unicode 9.0.
* Combining classes: HF's `NFD` reorders two marks when the second has the
  lower class, which gives each mark's class, to compare with Python's.
"""

import textwrap
import unicodedata

from tokenizers import Regex
from tokenizers import normalizers

CATEGORIES = (
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl "
    "Zp Cc Cf Co Cn"
).split()
ALL = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def onig_set(pattern):
    """The code points that Oniguruma's one-character `pattern` matches."""
    text = "".join(map(chr, ALL))
    rest = set(
        map(ord, normalizers.Replace(Regex(pattern), "").normalize_str(text))
    )
    return {c for c in ALL if c not in rest}


def onig_general_categories():
    """`{code point: category}` as Oniguruma (HF's regex engine) has it."""
    owner = {}
    for name in CATEGORIES:
        for c in onig_set(r"\p{%s}" % name):
            owner[c] = name
    return owner


def category_runs(owner):
    """The `GENERAL_CATEGORY` text: `START` + category per run."""
    runs, previous = [], None
    for c in range(0x110000):
        name = owner.get(c, "Cs")
        if name != previous:
            runs.append(f"{c:X}{name}")
            previous = name
    return " ".join(runs)


def hf_per_character(form):
    """`{code point: HF's form(chr(c))}` where it differs from chr(c)."""
    points = [c for c in ALL if c != 10]
    out = getattr(normalizers, form)().normalize_str(
        "\n".join(map(chr, points))
    )
    return {c: o for c, o in zip(points, out.split("\n")) if o != chr(c)}


def decomposition_unknown_to_hf(icu_decomposed=()):
    """Code points that Python (or ICU, given) decomposes and HF does not."""
    hf = set(hf_per_character("NFKD"))
    python = {c for c in ALL if unicodedata.normalize("NFKD", chr(c)) != chr(c)}
    return sorted((python | set(icu_decomposed)) - hf)


def hf_combining_class_zero():
    """Marks with a nonzero class in Python that HF puts in class 0."""
    nfd = normalizers.NFD()
    marks = [c for c in ALL if unicodedata.combining(chr(c))]

    def swaps(x, y):
        return nfd.normalize_str("a" + chr(x) + chr(y)) == "a" + chr(y) + chr(x)

    # A mark HF knows swaps with U+0334 (class 1) placed after it when its
    # own class is higher, and U+0301 (230) with a lower one.
    zero = []
    for c in marks:
        cls = unicodedata.combining(chr(c))
        if unicodedata.decomposition(chr(c)):
            continue  # a singleton (U+0340 -> U+0300): known to HF
        known = swaps(c, 0x334) if cls > 1 else swaps(0x301, c)
        if not known:
            zero.append(c)
    return zero


def ranges(points):
    points = sorted(points)
    out = []
    for p in points:
        if out and out[-1][1] == p - 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return " ".join(f"{a:X}" if a == b else f"{a:X}-{b:X}" for a, b in out)


if __name__ == "__main__":
    print("GENERAL_CATEGORY")
    print(textwrap.fill(category_runs(onig_general_categories()), 72))
