"""Oniguruma regexes (Hugging Face `tokenizers`, tiktoken) as exact RE2.

The split regexes of byte-level BPE tokenizers are written for Oniguruma
(HF) or fancy-regex (tiktoken): backtracking engines with lookarounds and
their own Unicode tables. TensorFlow's string ops use RE2, which has
neither. `parse` reads a pattern into a small syntax tree whose character
classes are explicit sets of code points built from Oniguruma's own tables
(`_unicode`), so `to_re2` spells exactly the same classes. RE2's
leftmost-first matching gives the same match as a backtracking engine for
every pattern without lookarounds or backreferences.

The one lookaround that real tokenizers use is the `\\s+(?!\\S)|\\s+` pair
at the end of the pattern: a run of whitespace stops before its last
character when a non-space follows. `SplitPlan` removes it exactly: it
cuts such runs before their last character (a separator that no class
matches), then matches with `\\s+` in place of both alternatives. The cut
is proven safe for the rest of the pattern by `_analyse_tail`, or the
pattern is rejected with the reason. Anything else that RE2 cannot do
(other lookarounds, backreferences, possessive or atomic groups, anchors)
is a clear error naming the construct: never a silently different split.
"""

from __future__ import annotations

import dataclasses

from tf_input.tokenizers._unicode import EVERYTHING
from tf_input.tokenizers._unicode import SURROGATES
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._unicode import general_category

NOT_WHITE_SPACE = ~WHITE_SPACE
# Oniguruma's (?i) case folding is Unicode's: each ASCII letter matches its
# other case, and `k`, `s` also the Kelvin sign and the long s. Folding to
# several characters (`ß` matches `ss`, `ﬁ` matches `fi`) cannot be
# spelled as RE2 classes; patterns that would need it are rejected.
_EXTRA_FOLDS = {"k": "\u212a", "s": "\u017f"}
_MULTI_CHAR_FOLDS = ("ss", "st", "ff", "fi", "fl")
_REPEAT_LIMIT = 1000  # RE2's largest counted repetition


class RegexError(ValueError):
    """A pattern that cannot be matched exactly with RE2."""


# --- Syntax tree --------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Chars:
    """One character from `points`."""

    points: CodePoints


@dataclasses.dataclass(frozen=True)
class Cat:
    items: tuple


@dataclasses.dataclass(frozen=True)
class Alt:
    items: tuple


@dataclasses.dataclass(frozen=True)
class Repeat:
    item: object
    min: int
    max: int | None  # None: unbounded
    greedy: bool = True


@dataclasses.dataclass(frozen=True)
class Look:
    """A lookahead (`ahead`) or lookbehind, possibly negative."""

    item: object
    ahead: bool
    negative: bool
    text: str


EMPTY = Cat(())


def concat(items):
    flat = []
    for item in items:
        flat.extend(item.items if isinstance(item, Cat) else [item])
    return flat[0] if len(flat) == 1 else Cat(tuple(flat))


def _alt(items):
    return items[0] if len(items) == 1 else Alt(tuple(items))


# --- Parser -------------------------------------------------------------------
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
                return _alt(branches)
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
        raise TypeError(
            f"A regex pattern must be a string. Received: {pattern!r}."
        )
    return _Parser(pattern).parse()


# --- RE2 ----------------------------------------------------------------------
def to_re2(node, rewrite=None):
    """The RE2 spelling of a lookaround-free tree.

    `rewrite`, if given, maps each character set to the one to spell (see
    `_pretokenizers._ClassAlphabet`).
    """
    if isinstance(node, Chars):
        points = node.points if rewrite is None else rewrite(node.points)
        return points.re2()
    if isinstance(node, Cat):
        return "".join(_group_if(item, (Alt,), rewrite) for item in node.items)
    if isinstance(node, Alt):
        return "|".join(to_re2(item, rewrite) for item in node.items)
    if isinstance(node, Repeat):
        inner = _group_if(node.item, (Alt, Cat, Repeat), rewrite)
        low, high = node.min, node.max
        if (low, high) == (0, None):
            suffix = "*"
        elif (low, high) == (1, None):
            suffix = "+"
        elif (low, high) == (0, 1):
            suffix = "?"
        elif high is None:
            suffix = f"{{{low},}}"
        elif low == high:
            suffix = f"{{{low}}}"
        else:
            suffix = f"{{{low},{high}}}"
        return inner + suffix + ("" if node.greedy else "?")
    if isinstance(node, Look):
        raise RegexError(
            f"The lookaround `{node.text}` cannot be matched by RE2; only "
            "`\\s+(?!\\S)` followed by a last alternative `\\s+` is supported."
        )
    raise TypeError(node)


def _group_if(node, kinds, rewrite):
    text = to_re2(node, rewrite)
    if isinstance(node, kinds) and not (isinstance(node, Cat) and not text):
        return f"(?:{text})"
    return text


def char_sets(node):
    """Every character set in the tree."""
    if isinstance(node, Chars):
        return [node.points]
    if isinstance(node, (Cat, Alt)):
        return [points for item in node.items for points in char_sets(item)]
    if isinstance(node, (Repeat, Look)):
        return char_sets(node.item)
    raise TypeError(node)


def strains_the_dfa(node, large=1000):
    """True if the tree has two adjacent unbounded runs of large classes
    that share many characters (o200k's `[Lu Lt Lm Lo M]*[Ll Lm Lo M]+`).

    RE2's DFA then tracks many positions at once over the UTF-8 byte
    automata of both classes and runs out of memory on text of those
    characters (measured: o200k's regex 739 ms on a batch of Chinese, the
    other families' 2-18 ms). Such patterns run on a class alphabet
    (`_pretokenizers`). Only speed depends on this, never the matches.
    """

    def big_run(item):
        return (
            isinstance(item, Repeat)
            and item.max is None
            and isinstance(item.item, Chars)
            and len(item.item.points) >= large
        )

    if isinstance(node, Cat):
        items = node.items
        for left, right in zip(items, items[1:]):
            if big_run(left) and big_run(right):
                shared = left.item.points & right.item.points
                if len(shared) >= large:
                    return True
        return any(strains_the_dfa(item, large) for item in items)
    if isinstance(node, Alt):
        return any(strains_the_dfa(item, large) for item in node.items)
    if isinstance(node, (Repeat, Look)):
        return strains_the_dfa(node.item, large)
    return False


def nullable(node):
    """True if `node` can match the empty string."""
    if isinstance(node, Chars):
        return False
    if isinstance(node, Cat):
        return all(nullable(item) for item in node.items)
    if isinstance(node, Alt):
        return any(nullable(item) for item in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or nullable(node.item)
    if isinstance(node, Look):
        return True
    raise TypeError(node)


# --- NFA for the analyses ---------------------------------------------------
class _NFA:
    """Thompson automaton: `edges[state]` = [(CodePoints, target)], `eps`."""

    def __init__(self, node):
        self.edges, self.eps = [], []
        self.start = self.new()
        self.accept = self.build(node, self.start)

    def new(self):
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def build(self, node, start):
        if isinstance(node, Chars):
            end = self.new()
            self.edges[start].append((node.points, end))
            return end
        if isinstance(node, Cat):
            for item in node.items:
                start = self.build(item, start)
            return start
        if isinstance(node, Alt):
            end = self.new()
            for item in node.items:
                branch = self.new()
                self.eps[start].append(branch)
                self.eps[self.build(item, branch)].append(end)
            return end
        if isinstance(node, Repeat):
            for _ in range(node.min):
                start = self.build(node.item, start)
            if node.max is None:
                loop = self.new()
                self.eps[start].append(loop)
                self.eps[self.build(node.item, loop)].append(loop)
                return loop
            end = self.new()
            self.eps[start].append(end)
            for _ in range(node.max - node.min):
                start = self.build(node.item, start)
                self.eps[start].append(end)
            return end
        raise TypeError(node)

    def closure(self, states):
        stack, seen = list(states), set(states)
        while stack:
            for nxt in self.eps[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    def step(self, states, code_point):
        return self.closure(
            {
                t
                for s in states
                for points, t in self.edges[s]
                if code_point in points
            }
        )

    def reachable(self):
        seen, stack = {self.start}, [self.start]
        while stack:
            state = stack.pop()
            nexts = list(self.eps[state]) + [t for _, t in self.edges[state]]
            for nxt in nexts:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen


def single_characters(node):
    """The characters `c` for which `node` matches the string `c`."""
    nfa = _NFA(node)
    out = CodePoints()
    for state in nfa.closure({nfa.start}):
        for points, target in nfa.edges[state]:
            if nfa.accept in nfa.closure({target}):
                out = out | points
    return out


# --- Splits -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SplitPlan:
    """How to match an Oniguruma split pattern with RE2.

    Attributes:
        tree: the tree to match, left to right, lookahead-free.
        pattern: its RE2 spelling.
        cut_before_last: None, or the set of whitespace characters `w` such
            that a run of two or more whitespace characters that ends in
            `w` and is followed by a non-space must be cut before `w`
            first (the `\\s+(?!\\S)` alternative).
        covers_all: every character starts a match (so the text between
            matches is always empty).
        single_class: the set, when the pattern is one character class.
    """

    tree: object
    pattern: str
    cut_before_last: CodePoints | None
    covers_all: bool
    single_class: CodePoints | None


def plan_split(pattern):
    """The `SplitPlan` of an Oniguruma pattern (str); `RegexError` if it
    cannot be matched exactly with RE2."""
    tree = parse(pattern)
    alternatives = list(tree.items) if isinstance(tree, Alt) else [tree]
    cut = None
    if len(alternatives) >= 2 and _is_lookahead_tail(alternatives[-2:]):
        if len(alternatives) == 2:
            cut = WHITE_SPACE  # nothing else can match a run
        else:
            cut = _analyse_tail(_alt(alternatives[:-2]), pattern)
        alternatives = alternatives[:-2] + [Repeat(Chars(WHITE_SPACE), 1, None)]
        tree = _alt(alternatives)
    re2 = to_re2(tree)  # raises on any other lookaround
    if nullable(tree):
        raise RegexError(
            f"The pattern {pattern!r} can match the empty string; a split "
            "pattern must match at least one character."
        )
    single = tree.points if isinstance(tree, Chars) else None
    covers = not (EVERYTHING - single_characters(tree) - SURROGATES)
    return SplitPlan(tree, re2, cut, covers, single)


def _is_whitespace_run(node):
    return (
        isinstance(node, Repeat)
        and node.greedy
        and (node.min, node.max) == (1, None)
        and isinstance(node.item, Chars)
        and node.item.points == WHITE_SPACE
    )


def _is_lookahead_tail(nodes):
    """`\\s+(?!\\S)` then `\\s+`."""
    lookahead, run = nodes
    return (
        isinstance(lookahead, Cat)
        and len(lookahead.items) == 2
        and _is_whitespace_run(lookahead.items[0])
        and isinstance(lookahead.items[1], Look)
        and lookahead.items[1].ahead
        and lookahead.items[1].negative
        and isinstance(lookahead.items[1].item, Chars)
        and lookahead.items[1].item.points == NOT_WHITE_SPACE
        and _is_whitespace_run(run)
    )


def _analyse_tail(head, pattern):
    """The whitespace characters before which runs can be cut.

    Let `P` be the alternatives before `\\s+(?!\\S)|\\s+`. Oniguruma takes
    `\\s+(?!\\S)` where `P` fails, at a whitespace run `w1..wn`: all of it
    if nothing or a space follows, else `w1..w(n-1)` (when `n >= 2`).
    Cutting before `wn` (for `n >= 2`, a non-space after) and matching
    `P|\\s+` gives the same matches, provided that

    1. no match of `P` holds two whitespace characters `x wn` with `wn`
       followed by a non-space or ending the match: the cut would split
       it. The `wn` for which some string of `P` allows that are not cut
       (`blocked`); for cl100k's `\\s*[\\r\\n]+` these are `\\r` and `\\n`;
    2. for an uncut run, `P` matches wherever a match could start inside
       it, so that `\\s+(?!\\S)` never applies there: every whitespace
       string of two or more characters ending in a blocked character has
       a prefix that `P` matches.

    Both are checked on `P`'s automaton; a pattern failing 2 is rejected.
    Returns the characters to cut before (White_Space minus `blocked`).
    """
    nfa = _NFA(head)
    blocked = CodePoints()
    for state in nfa.reachable():
        for x_points, after_x in nfa.edges[state]:
            if not x_points & WHITE_SPACE:
                continue
            for state1 in nfa.closure({after_x}):
                for y_points, after_y in nfa.edges[state1]:
                    y_white = y_points & WHITE_SPACE
                    if not y_white:
                        continue
                    rest = nfa.closure({after_y})
                    ends = nfa.accept in rest
                    goes_on = any(
                        points - WHITE_SPACE
                        for s in rest
                        for points, _ in nfa.edges[s]
                    )
                    if ends or goes_on:
                        blocked = blocked | y_white
    if blocked:
        _check_uncut_runs(nfa, blocked, pattern)
    return WHITE_SPACE - blocked


def _check_uncut_runs(nfa, blocked, pattern):
    whites = [
        c for first, last in WHITE_SPACE.ranges for c in range(first, last + 1)
    ]
    start = (nfa.closure({nfa.start}), False, False)
    seen, queue = {start}, [start]
    while queue:
        states, accepted, longer = queue.pop()
        for c in whites:
            nxt = nfa.step(states, c)
            now = accepted or nfa.accept in nxt
            if longer and c in blocked and not now:
                raise RegexError(
                    f"The pattern {pattern!r} ends in `\\s+(?!\\S)|\\s+`, "
                    "but its other alternatives neither keep every "
                    f"whitespace character apart (U+{c:04X} may follow "
                    "another one inside a match) nor match every run that "
                    "ends in such a character, so the lookahead cannot be "
                    "translated exactly for RE2."
                )
            if now:
                continue
            key = (nxt, False, True)
            if key not in seen:
                seen.add(key)
                queue.append(key)
