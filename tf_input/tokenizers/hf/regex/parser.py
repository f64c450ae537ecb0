"""Oniguruma's Ruby syntax (what HF and tiktoken patterns use) to a tree.

Character classes become explicit sets of code points built from
Oniguruma's own tables (`_unicode`), so the RE2 spelling of the tree
matches exactly the same characters. Constructs RE2 cannot match
(backreferences, possessive quantifiers, atomic groups, anchors, case
folding to several characters) are a `RegexError` naming them.
"""

from __future__ import annotations

from tf_input.tokenizers._unicode import EVERYTHING
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._unicode import general_category
from tf_input.tokenizers.hf.regex.syntax import Chars
from tf_input.tokenizers.hf.regex.syntax import Look
from tf_input.tokenizers.hf.regex.syntax import RegexError
from tf_input.tokenizers.hf.regex.syntax import Repeat
from tf_input.tokenizers.hf.regex.syntax import alt
from tf_input.tokenizers.hf.regex.syntax import concat
from tf_input.tokenizers.hf.spec import SpecTypeError

NOT_WHITE_SPACE = ~WHITE_SPACE
# Oniguruma's (?i) case folding is Unicode's: each ASCII letter matches its
# other case, and `k`, `s` also the Kelvin sign and the long s. Folding to
# several characters (`ß` matches `ss`, `ﬁ` matches `fi`) cannot be
# spelled as RE2 classes; patterns that would need it are rejected.
_EXTRA_FOLDS = {"k": "\u212a", "s": "\u017f"}
_MULTI_CHAR_FOLDS = ("ss", "st", "ff", "fi", "fl")
_REPEAT_LIMIT = 1000  # RE2's largest counted repetition


class _Parser:
    """Oniguruma's Ruby syntax (what HF and tiktoken patterns use)."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.i = 0

    def error(self, what, at=None):
        at = self.i if at is None else at
        return RegexError(
            f"{what} (at offset {at} of the pattern {self.pattern!r})."
        )

    def peek(self, n=1):
        return self.pattern[self.i : self.i + n]

    def take(self):
        char = self.pattern[self.i]
        self.i += 1
        return char

    def parse(self):
        node = self.alternation(ignore_case=False, dot_all=False)
        if self.i < len(self.pattern):
            raise self.error("Unbalanced `)`")
        return node

    def alternation(self, ignore_case, dot_all):
        branches = []
        flags = {"ignore_case": ignore_case, "dot_all": dot_all}
        while True:
            branches.append(self.sequence(flags))
            if self.peek() != "|":
                return alt(branches)
            self.i += 1

    def sequence(self, flags):
        items = []
        while self.i < len(self.pattern) and self.peek() not in "|)":
            start = self.i
            atom = self.atom(flags)
            if atom is None:  # an inline flag group like `(?i)`
                continue
            atom = self.quantified(atom, start)
            items.append(atom)
        if flags["ignore_case"]:
            _check_multi_char_folds(items, self)
        return concat(items)

    def quantified(self, atom, start):
        while self.i < len(self.pattern):
            char = self.peek()
            if char in "*+?":
                self.i += 1
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            elif char == "{":
                interval = self.interval()
                if interval is None:
                    return atom
                low, high = interval
            else:
                return atom
            greedy = True
            if self.peek() == "?":
                self.i += 1
                greedy = False
            elif self.peek() == "+":
                if char == "{":
                    raise self.error(
                        "A `+` after an interval (`{n,m}+`) is not supported"
                    )
                raise self.error(
                    f"The possessive quantifier `{char}+` cannot be matched "
                    "by RE2 (it has no atomic groups); write it without the "
                    "`+` if it does not change the matches"
                )
            if isinstance(atom, Look):
                raise self.error("A quantified lookaround is not supported")
            for bound in (low, high):
                if bound is not None and bound > _REPEAT_LIMIT:
                    raise self.error(
                        f"A counted repetition above {_REPEAT_LIMIT} is not "
                        "supported by RE2",
                        start,
                    )
            atom = Repeat(atom, low, high, greedy)
        return atom

    def interval(self):
        """`{n}`, `{n,}`, `{,m}`, `{n,m}` -> (low, high); else None (then
        `{` is a literal, as in Oniguruma)."""
        end = self.pattern.find("}", self.i)
        if end < 0:
            return None
        body = self.pattern[self.i + 1 : end]
        low, comma, high = body.partition(",")
        if not (low.isdigit() or (comma and high.isdigit())):
            return None
        if (low and not low.isdigit()) or (high and not high.isdigit()):
            return None
        self.i = end + 1
        low = int(low) if low else 0
        if not comma:
            return low, low
        high = int(high) if high else None
        if high is not None and high < low:
            raise self.error(f"The interval {{{body}}} is empty")
        return low, high

    def atom(self, flags):
        char = self.take()
        if char == "(":
            return self.group(flags)
        if char == "[":
            if flags["ignore_case"] and self.peek() == "^":
                raise self.error(
                    "A negated class under case-insensitive matching is not "
                    "supported"
                )
            return Chars(self.fold(self.char_class(), flags))
        if char == ".":
            points = EVERYTHING if flags["dot_all"] else ~CodePoints.of("\n")
            return Chars(points)
        if char == "\\":
            return self.escape(flags, in_class=False)
        if char in "^$":
            raise self.error(
                f"The anchor `{char}` is not supported (Oniguruma's matches "
                "it at every line break)",
                self.i - 1,
            )
        if char in "*+?":
            raise self.error(f"Nothing to repeat before `{char}`", self.i - 1)
        return Chars(self.fold(CodePoints.of(char), flags))

    def group(self, flags):
        start = self.i - 1
        if self.peek() != "?":
            return self.group_body(flags, start)
        self.i += 1
        kind = self.peek()
        if kind == ":":
            self.i += 1
            return self.group_body(flags, start)
        if kind == "#":
            end = self.pattern.find(")", self.i)
            if end < 0:
                raise self.error("Unterminated comment group", start)
            self.i = end + 1
            return None
        for opener, ahead, negative in (
            ("=", True, False),
            ("!", True, True),
            ("<=", False, False),
            ("<!", False, True),
        ):
            if self.peek(len(opener)) == opener:
                self.i += len(opener)
                inner = self.alternation(**flags)
                self.expect_close(start)
                text = self.pattern[start : self.i]
                return Look(inner, ahead, negative, text)
        if kind == ">":
            raise self.error(
                "The atomic group `(?>...)` cannot be matched by RE2", start
            )
        if kind in ("<", "P", "'"):
            raise self.error("Named groups are not supported", start)
        # Inline flags: (?imx-imx) or (?imx-imx:...).
        on, off, seen_minus = "", "", False
        while self.i < len(self.pattern) and self.peek() in "imx-":
            char = self.take()
            if char == "-":
                seen_minus = True
            elif seen_minus:
                off += char
            else:
                on += char
        if "x" in on + off:
            raise self.error("The extended flag `x` is not supported", start)
        new_flags = dict(flags)
        for letter, value in [(c, True) for c in on] + [
            (c, False) for c in off
        ]:
            key = "ignore_case" if letter == "i" else "dot_all"
            new_flags[key] = value
        if self.peek() == ":":
            self.i += 1
            return self.group_body(new_flags, start)
        if self.peek() == ")":
            self.i += 1
            if not self.at_group_start(start):
                raise self.error(
                    "Inline flags like `(?i)` are only supported at the start "
                    "of the pattern or of a group",
                    start,
                )
            flags.update(new_flags)  # applies to the whole group
            return None
        raise self.error("Unknown group syntax", start)

    def at_group_start(self, start):
        before = self.pattern[:start]
        return before == "" or before.endswith("(") or before.endswith("(?:")

    def group_body(self, flags, start):
        inner = self.alternation(**flags)
        self.expect_close(start)
        return inner

    def expect_close(self, start):
        if self.peek() != ")":
            raise self.error("Missing `)` for the group", start)
        self.i += 1

    def fold(self, points, flags):
        if not flags["ignore_case"]:
            return points
        out = points
        for first, last in points.ranges:
            for code_point in range(first, min(last, 0x7F) + 1):
                char = chr(code_point)
                if char.isalpha():
                    out = out | CodePoints.of(char.lower(), char.upper())
                    if char.lower() in _EXTRA_FOLDS:
                        out = out | CodePoints.of(_EXTRA_FOLDS[char.lower()])
        non_ascii = points - CodePoints([(0, 0x7F)])
        if len(non_ascii) > 5000 or any(
            _has_case(chr(c))
            for first, last in non_ascii.ranges
            for c in range(first, last + 1)
        ):
            raise self.error(
                "Case-insensitive matching of non-ASCII characters that have "
                "other cases is not supported"
            )
        return out

    def escape(self, flags, in_class):
        if self.i >= len(self.pattern):
            raise self.error("The pattern ends with `\\`")
        start = self.i - 1
        char = self.take()
        simple = {
            "t": "\t",
            "n": "\n",
            "r": "\r",
            "f": "\f",
            "v": "\v",
            "a": "\a",
            "e": "\x1b",
        }
        if char in simple:
            return self.wrap(CodePoints.of(simple[char]), flags, in_class)
        if char == "s":
            return self.wrap(WHITE_SPACE, flags, in_class)
        if char == "S":
            return self.wrap(NOT_WHITE_SPACE, flags, in_class)
        if char == "d":
            return self.wrap(general_category("Nd"), flags, in_class)
        if char == "D":
            return self.wrap(~general_category("Nd"), flags, in_class)
        if char == "h":
            return self.wrap(_HEX_DIGITS, flags, in_class)
        if char == "H":
            return self.wrap(~_HEX_DIGITS, flags, in_class)
        if char in "pP":
            return self.wrap(self.property(char == "P"), flags, in_class)
        if char == "x":
            return self.wrap(self.hex_escape(), flags, in_class)
        if char == "u":
            digits = self.pattern[self.i : self.i + 4]
            if len(digits) != 4 or not _is_hex(digits):
                raise self.error("`\\u` needs four hexadecimal digits", start)
            self.i += 4
            return self.wrap(
                CodePoints.of(chr(int(digits, 16))), flags, in_class
            )
        if char == "0":
            digits = ""
            while len(digits) < 2 and self.peek() in "01234567":
                digits += self.take()
            value = int(digits, 8) if digits else 0
            return self.wrap(CodePoints.of(chr(value)), flags, in_class)
        if char.isdigit():
            raise self.error(
                f"The backreference `\\{char}` cannot be matched by RE2", start
            )
        if char.isalnum():
            raise self.error(f"The escape `\\{char}` is not supported", start)
        return self.wrap(CodePoints.of(char), flags, in_class)

    def wrap(self, points, flags, in_class):
        if in_class:
            return points
        return Chars(self.fold(points, flags))

    def hex_escape(self):
        start = self.i - 2
        if self.peek() == "{":
            end = self.pattern.find("}", self.i)
            digits = self.pattern[self.i + 1 : end] if end > 0 else ""
            if not digits or not _is_hex(digits) or int(digits, 16) > 0x10FFFF:
                raise self.error("Bad `\\x{...}` escape", start)
            self.i = end + 1
            return CodePoints.of(chr(int(digits, 16)))
        digits = ""
        while len(digits) < 2 and _is_hex(self.peek()):
            digits += self.take()
        if not digits:
            raise self.error("`\\x` needs hexadecimal digits", start)
        return CodePoints.of(chr(int(digits, 16)))

    def property(self, negated):
        start = self.i - 2
        if self.peek() != "{":
            raise self.error("`\\p` needs a name in braces", start)
        end = self.pattern.find("}", self.i)
        if end < 0:
            raise self.error("Unterminated `\\p{`", start)
        name = self.pattern[self.i + 1 : end]
        self.i = end + 1
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        try:
            points = general_category(name)
        except KeyError:
            raise self.error(
                f"The property `\\p{{{name}}}` is not supported: only "
                "general categories (L, Lu, Ll, Lt, Lm, Lo, M, N, P, S, Z, "
                "C and their subcategories)",
                start,
            ) from None
        return ~points if negated else points

    def char_class(self):
        """After `[`: the class up to its `]`, as a set."""
        start = self.i - 1
        negated = False
        if self.peek() == "^":
            negated = True
            self.i += 1
        points = CodePoints()
        first = True
        while True:
            if self.i >= len(self.pattern):
                raise self.error("Unterminated character class", start)
            if self.peek() == "]" and not first:
                self.i += 1
                break
            if self.peek(2) == "&&":
                self.i += 2
                rest = self.class_rest(start)
                points = points & rest
                break
            if self.peek(2) == "[:":
                raise self.error("POSIX bracket classes are not supported")
            item = self.class_atom()
            first = False
            if (
                isinstance(item, str)
                and self.peek() == "-"
                and self.pattern[self.i + 1 : self.i + 2] not in ("]", "")
            ):
                self.i += 1
                high = self.class_atom()
                if not isinstance(high, str):
                    raise self.error("Bad range in a character class")
                if ord(high) < ord(item):
                    raise self.error(f"Range {item!r}-{high!r} is out of order")
                points = points | CodePoints([(ord(item), ord(high))])
            elif isinstance(item, str):
                points = points | CodePoints.of(item)
            else:
                points = points | item
        return ~points if negated else points

    def class_rest(self, start):
        """After `&&`: the rest of the class, up to `]`, as a set."""
        inner = "[" + self.pattern[self.i :]
        sub = _Parser(inner)
        sub.i = 1
        points = sub.char_class()
        self.i += sub.i - 1
        return points

    def class_atom(self):
        """One member: a character (str) or a set (nested class, escape)."""
        char = self.take()
        if char == "[":
            return self.char_class()
        if char == "\\":
            escaped = self.escape({"ignore_case": False}, in_class=True)
            if isinstance(escaped, CodePoints) and len(escaped) == 1:
                return chr(escaped.sample())
            return escaped
        return char


_HEX_DIGITS = CodePoints.parse("30-39 41-46 61-66")


def _has_case(char):
    return (
        char.lower() != char
        or char.upper() != char
        or (char.casefold() != char)
    )


def _is_hex(text):
    return bool(text) and all(c in "0123456789abcdefABCDEF" for c in text)


def _check_multi_char_folds(items, parser):
    """Rejects case-insensitive `ss`, `st`, `ff`, `fi`, `fl`, which
    Oniguruma also matches as one character (`ß`, `ﬆ`, ...)."""
    for left, right in zip(items, items[1:]):
        if not (isinstance(left, Chars) and isinstance(right, Chars)):
            continue
        for pair in _MULTI_CHAR_FOLDS:
            if ord(pair[0]) in left.points and ord(pair[1]) in right.points:
                raise parser.error(
                    f"Case-insensitive {pair!r} also matches one character "
                    f"(such as {_fold_example(pair)!r}) in Oniguruma, which "
                    "RE2 cannot do"
                )


def _fold_example(pair):
    return {
        "ss": "ß",
        "st": "\ufb06",
        "ff": "\ufb00",
        "fi": "\ufb01",
        "fl": "\ufb02",
    }[pair]


def parse(pattern):
    """The syntax tree of an Oniguruma `pattern` (str)."""
    if not isinstance(pattern, str):
        raise SpecTypeError(
            f"A regex pattern must be a string. Received: {pattern!r}."
        )
    return _Parser(pattern).parse()
