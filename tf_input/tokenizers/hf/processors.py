"""Hugging Face post-processors as special-token templates.

A template is what a post-processor adds around one text (`single`) or a
pair (`pair`): a list of `[piece, type_id]` items, where `piece` is a
token id or `"$A"` / `"$B"` (the first / second text).
`from_post_processor` reads a `post_processor` description
(`TemplateProcessing`, `BertProcessing`, `RobertaProcessing`, `ByteLevel`,
`Sequence` of these: the one `type` dispatch of this stage) into that
form; `parse_templates` checks the form (it is also a tokenizer argument)
and gives the ids around one text.
"""

from __future__ import annotations

from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import require
from tf_input.tokenizers.hf.spec import unsupported

_SUPPORTED = (
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel and "
    "Sequence"
)
_WHERE = "`post_processor`"


def plain():
    """The templates of a tokenizer that adds nothing."""
    return {"single": [["$A", 0]], "pair": [["$A", 0], ["$B", 1]]}


def from_post_processor(spec, token_ids):
    """A `post_processor` description as `{"single": [...], "pair": [...]}`.

    Args:
        spec: None or a dict as in a `tokenizer.json`.
        token_ids: dict from token to id (the vocabulary and the added
            tokens), for the tokens the description names by text.

    Raises:
        SpecError: for an unsupported type or a malformed description.
    """
    found = []
    for part in flatten(spec, "post-processor", _WHERE):
        kind = part["type"]
        if kind == "ByteLevel":  # offsets only
            continue
        if kind == "TemplateProcessing":
            found.append(_template_processing(part, token_ids))
        elif kind in ("BertProcessing", "RobertaProcessing"):
            found.append(_bert_processing(part, kind))
        else:
            raise unsupported(_WHERE, "post-processor", kind, _SUPPORTED)
    if len(found) > 1:
        raise SpecError(
            f"{_WHERE}: a Sequence post-processor with more than one "
            "processor that adds tokens is not supported."
        )
    return found[0] if found else plain()


def _template_processing(spec, token_ids):
    specials = spec.get("special_tokens", {})
    if not isinstance(specials, dict):
        raise SpecError(
            f"{_WHERE}: 'special_tokens' must be an object. Received: "
            f"{excerpt(specials)}."
        )

    def expand(key):
        out = []
        for item in require(spec, key, _WHERE):
            if isinstance(item, dict) and "Sequence" in item:
                sequence = item["Sequence"]
                where = f"{_WHERE} {key!r} Sequence"
                out.append(
                    [
                        f"${require(sequence, 'id', where)}",
                        require(sequence, "type_id", where),
                    ]
                )
                continue
            special = require(item, "SpecialToken", f"{_WHERE} {key!r} item")
            where = f"{_WHERE} {key!r} SpecialToken"
            name = require(special, "id", where)
            entry = specials.get(name)
            if entry is not None:
                ids = require(
                    entry, "ids", f"{_WHERE} special_tokens[{name!r}]"
                )
            elif name in token_ids:
                ids = [token_ids[name]]
            else:
                raise SpecError(
                    f"{where}: {name!r} is neither in 'special_tokens' nor a "
                    "token of the vocabulary."
                )
            out.extend([i, require(special, "type_id", where)] for i in ids)
        return out

    return {"single": expand("single"), "pair": expand("pair")}


def _bert_processing(spec, kind):
    cls = require(spec, "cls", _WHERE)
    sep = require(spec, "sep", _WHERE)
    for name, value in (("cls", cls), ("sep", sep)):
        if not isinstance(value, list) or len(value) != 2:
            raise SpecError(
                f"{_WHERE}: {kind}'s {name!r} must be [token, id]. Received: "
                f"{excerpt(value)}."
            )
    cls, sep = cls[1], sep[1]
    if kind == "BertProcessing":
        pair = [[cls, 0], ["$A", 0], [sep, 0], ["$B", 1], [sep, 1]]
    else:
        pair = [[cls, 0], ["$A", 0], [sep, 0], [sep, 0], ["$B", 0], [sep, 0]]
    return {"single": [[cls, 0], ["$A", 0], [sep, 0]], "pair": pair}


def parse_templates(templates, vocabulary_size):
    """Checks `templates` -> `(templates, start_ids, end_ids)`.

    `templates` is `{"single": [...], "pair": [...]}` with `[piece,
    type_id]` items; `start_ids` / `end_ids` are the ids before and after
    `"$A"` in the single template.
    """
    if not isinstance(templates, dict) or set(templates) != {"single", "pair"}:
        raise SpecError(
            "`templates` must be None or a dict with keys 'single' and "
            f"'pair'. Received: templates={templates!r}."
        )
    out = {}
    for key, items in templates.items():
        if not isinstance(items, (list, tuple)):
            raise SpecError(
                f"`templates[{key!r}]` must be a list of [piece, type_id] "
                f"items. Received: {items!r}."
            )
        parsed = []
        for item in items:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise SpecError(
                    f"`templates[{key!r}]` items must be [piece, type_id] "
                    f"pairs. Received: {item!r}."
                )
            piece, type_id = item
            piece_ok = piece in ("$A", "$B") or (
                isinstance(piece, int)
                and not isinstance(piece, bool)
                and 0 <= piece < vocabulary_size
            )
            type_ok = isinstance(type_id, int) and not isinstance(type_id, bool)
            if not (piece_ok and type_ok):
                raise SpecError(
                    f"`templates[{key!r}]`: a piece must be '$A', '$B' or a "
                    f"token id below {vocabulary_size}, and a type id an "
                    f"integer. Received: {item!r}."
                )
            parsed.append((piece, type_id))
        out[key] = parsed
    single = [piece for piece, _ in out["single"]]
    if single.count("$A") != 1 or "$B" in single:
        raise SpecError(
            "`templates['single']` must hold '$A' once and no '$B'. "
            f"Received: {out['single']!r}."
        )
    pair = [piece for piece, _ in out["pair"]]
    if pair.count("$A") != 1 or pair.count("$B") != 1:
        raise SpecError(
            "`templates['pair']` must hold '$A' and '$B' once each. "
            f"Received: {out['pair']!r}."
        )
    where = single.index("$A")
    return out, list(single[:where]), list(single[where + 1 :])
