"""A lookaround-free syntax tree spelled as an RE2 pattern.

RE2's leftmost-first matching gives the same match as a backtracking
engine (Oniguruma, fancy-regex) for every pattern without lookarounds or
backreferences, so the spelling is exact.
"""

from __future__ import annotations

from tf_input.tokenizers.hf.regex.syntax import Alt
from tf_input.tokenizers.hf.regex.syntax import Cat
from tf_input.tokenizers.hf.regex.syntax import Chars
from tf_input.tokenizers.hf.regex.syntax import Look
from tf_input.tokenizers.hf.regex.syntax import RegexError
from tf_input.tokenizers.hf.regex.syntax import Repeat


def to_re2(node, rewrite=None):
    """The RE2 spelling of a lookaround-free tree.

    `rewrite`, if given, maps each character set to the one to spell (see
    `hf.pre_tokenizers.class_alphabet`).
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


def strains_the_dfa(node, large=1000):
    """True if the tree has two adjacent unbounded runs of large classes
    that share many characters (o200k's `[Lu Lt Lm Lo M]*[Ll Lm Lo M]+`).

    RE2's DFA then tracks many positions at once over the UTF-8 byte
    automata of both classes and runs out of memory on text of those
    characters, many times slower than the other families' regexes (see
    `benchmarks/README.md`). Such patterns run on a class alphabet
    (`hf.pre_tokenizers.class_alphabet`). Only speed depends on this,
    never the matches.
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
