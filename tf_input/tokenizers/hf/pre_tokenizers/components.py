"""The one `type` dispatch of a `pre_tokenizer` description.

`parse` reads a description (a `Sequence` flattened) into the components
below, checking every field, with no regex translated yet: each tokenizer
then takes the combinations it runs (`PreTokenizer` the regex splits of
byte-level BPE, the SentencePiece-style tokenizers a `Metaspace`).
"""

from __future__ import annotations

import dataclasses

from tf_input.tokenizers.hf.pre_tokenizers.metaspace import Metaspace
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import check_flag
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import unsupported

BEHAVIORS = (
    "Removed",
    "Isolated",
    "MergedWithPrevious",
    "MergedWithNext",
    "Contiguous",
)
_SUPPORTED = "Split, Sequence, ByteLevel, Digits, WhitespaceSplit and Metaspace"
_UNSUPPORTED = {
    "BertPreTokenizer": "it belongs to WordPiece tokenizers (BERT), which "
    "load as `WordPieceTokenizer`",
}


@dataclasses.dataclass(frozen=True)
class Split:
    """`pattern` (a regex, or a literal string if `literal`) cuts the text;
    `behavior` says what becomes of the matches."""

    pattern: str
    literal: bool
    behavior: str
    invert: bool


@dataclasses.dataclass(frozen=True)
class ByteLevel:
    add_prefix_space: bool
    use_regex: bool


@dataclasses.dataclass(frozen=True)
class Digits:
    individual_digits: bool


@dataclasses.dataclass(frozen=True)
class WhitespaceSplit:
    pass


def parse(spec, where="`pre_tokenizer`"):
    """The components of a `pre_tokenizer` description, in order.

    Args:
        spec: None (no pre-tokenization) or a dict as in a
            `tokenizer.json`.
        where: str, for error messages.

    Raises:
        SpecError: for an unknown type or a bad field, naming it.
    """
    out = []
    for item in flatten(spec, "pre-tokenizer", where):
        kind = item["type"]
        if kind == "Split":
            out.append(_split(item, where))
        elif kind == "ByteLevel":
            out.append(
                ByteLevel(
                    check_flag(item, "add_prefix_space", True, where),
                    check_flag(item, "use_regex", True, where),
                )
            )
        elif kind == "Digits":
            out.append(
                Digits(check_flag(item, "individual_digits", False, where))
            )
        elif kind == "WhitespaceSplit":
            out.append(WhitespaceSplit())
        elif kind == "Metaspace":
            out.append(Metaspace.from_spec(item, where))
        else:
            raise unsupported(
                where, "pre-tokenizer", kind, _SUPPORTED, _UNSUPPORTED
            )
    return out


def _split(spec, where):
    pattern = spec.get("pattern")
    behavior = spec.get("behavior")
    if behavior not in BEHAVIORS:
        raise SpecError(
            f"{where}: a Split's 'behavior' must be one of "
            f"{BEHAVIORS}. Received: behavior={behavior!r}."
        )
    invert = check_flag(spec, "invert", False, where)
    if isinstance(pattern, dict) and set(pattern) == {"Regex"}:
        return Split(pattern["Regex"], False, behavior, invert)
    if isinstance(pattern, dict) and set(pattern) == {"String"}:
        text = pattern["String"]
        if not isinstance(text, str) or not text:
            raise SpecError(
                f"{where}: a Split's String pattern must be a "
                f"non-empty string. Received: {text!r}."
            )
        return Split(text, True, behavior, invert)
    raise SpecError(
        f"{where}: a Split's 'pattern' must be "
        '{"Regex": ...} or {"String": ...}. '
        f"Received: pattern={pattern!r}."
    )
