"""The syntax tree of a regex: character sets, sequences, alternatives,
repetitions and lookarounds, with the questions the translation asks of
it (can it match the empty string, which sets does it use).
"""

from __future__ import annotations

import dataclasses

from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers.hf.spec import SpecError


class RegexError(SpecError):
    """A pattern that cannot be matched exactly with RE2."""


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


def alt(items):
    return items[0] if len(items) == 1 else Alt(tuple(items))


def char_sets(node):
    """Every character set in the tree."""
    if isinstance(node, Chars):
        return [node.points]
    if isinstance(node, (Cat, Alt)):
        return [points for item in node.items for points in char_sets(item)]
    if isinstance(node, (Repeat, Look)):
        return char_sets(node.item)
    raise TypeError(node)


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
