"""Split patterns: the lookahead tail removed by a proven cut.

The one lookaround that real tokenizers use is the `\\s+(?!\\S)|\\s+` pair
at the end of the pattern: a run of whitespace stops before its last
character when a non-space follows. `plan_split` removes it exactly: it
cuts such runs before their last character (a separator that no class
matches), then matches with `\\s+` in place of both alternatives. The cut
is proven safe for the rest of the pattern on its automaton
(`_analyse_tail`), or the pattern is rejected with the reason.
"""

from __future__ import annotations

import dataclasses

from tf_input.tokenizers._unicode import EVERYTHING
from tf_input.tokenizers._unicode import SURROGATES
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers.hf.regex.parser import NOT_WHITE_SPACE
from tf_input.tokenizers.hf.regex.parser import parse
from tf_input.tokenizers.hf.regex.re2 import to_re2
from tf_input.tokenizers.hf.regex.syntax import Alt
from tf_input.tokenizers.hf.regex.syntax import Cat
from tf_input.tokenizers.hf.regex.syntax import Chars
from tf_input.tokenizers.hf.regex.syntax import Look
from tf_input.tokenizers.hf.regex.syntax import RegexError
from tf_input.tokenizers.hf.regex.syntax import Repeat
from tf_input.tokenizers.hf.regex.syntax import alt
from tf_input.tokenizers.hf.regex.syntax import nullable


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
            cut = _analyse_tail(alt(alternatives[:-2]), pattern)
        alternatives = alternatives[:-2] + [Repeat(Chars(WHITE_SPACE), 1, None)]
        tree = alt(alternatives)
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
