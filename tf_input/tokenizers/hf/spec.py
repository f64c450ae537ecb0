"""Reading the sections of a `tokenizer.json`: errors, fields, `Sequence`.

Every stage of the pipeline (normalizer, pre-tokenizer, decoder,
post-processor) is a dict with a `"type"`; a `Sequence` of a stage holds a
list of them under a key of its own. `flatten` is the one place that turns
a description into the flat list of its parts, and `SpecError` the one
error for a description that is malformed or not supported, so a loader
can tell a fault of the file from a fault of the code that runs it.
"""

from __future__ import annotations

import json

# The key of a `Sequence`'s items, per stage.
_SEQUENCE_ITEMS = {
    "normalizer": "normalizers",
    "pre-tokenizer": "pretokenizers",
    "decoder": "decoders",
    "post-processor": "processors",
}


class SpecError(ValueError):
    """A tokenizer description (a `tokenizer.json` section, its vocabulary
    or merges, or the same given as an argument) that is malformed or not
    supported."""


class SpecTypeError(SpecError, TypeError):
    """A part of a tokenizer description that has the wrong JSON type."""


def excerpt(value, limit=200):
    """`value` as (the start of) its JSON text, for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require(mapping, key, where):
    """`mapping[key]`, or a `SpecError` naming the missing field."""
    if not isinstance(mapping, dict):
        raise SpecTypeError(
            f"{where} must be a JSON object. Received: {excerpt(mapping)}."
        )
    if key not in mapping:
        raise SpecError(f"{where}: a required field is missing: {key}.")
    return mapping[key]


def check_flag(spec, key, default, where):
    """`spec[key]` (or `default`) if it is true or false."""
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise SpecError(
            f"{where}: {key!r} must be true or false. Received: "
            f"{key}={value!r}."
        )
    return value


def flatten(spec, stage, where):
    """The parts of a `stage` description, `Sequence`s expanded in order.

    Args:
        spec: None (no parts), or a dict with a `"type"`.
        stage: `"normalizer"`, `"pre-tokenizer"`, `"decoder"` or
            `"post-processor"`.
        where: str, for error messages.

    Returns:
        A list of dicts, none of type `Sequence`.
    """
    if spec is None:
        return []
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise SpecError(
            f"{where}: a {stage} must be a dict with a 'type'. "
            f"Received: {excerpt(spec)}."
        )
    if spec["type"] != "Sequence":
        return [spec]
    items = spec.get(_SEQUENCE_ITEMS[stage], [])
    if not isinstance(items, list):
        raise SpecTypeError(
            f"{where}: a Sequence's {_SEQUENCE_ITEMS[stage]!r} must be a "
            f"list. Received: {excerpt(items)}."
        )
    return [part for item in items for part in flatten(item, stage, where)]


def unsupported(where, stage, kind, supported, reasons=None):
    """The `SpecError` for a `type` that a stage does not support."""
    reason = (reasons or {}).get(kind, f"supported are {supported}")
    return SpecError(
        f"{where}: the {stage} type {kind!r} is not supported: {reason}."
    )
