"""Special-token templates (`Tokenizer.templates()`) from a description.

A template is what Hugging Face's post-processors add around one text
(`single`) or a pair (`pair`): a list of `[piece, type_id]` items, where
`piece` is a token id or `"$A"` / `"$B"` (the first / second text).
"""

from __future__ import annotations


def parse_templates(templates, vocabulary_size):
    """Checks `templates` -> `(templates, start_ids, end_ids)`.

    `templates` is `{"single": [...], "pair": [...]}` with `[piece,
    type_id]` items; `start_ids` / `end_ids` are the ids before and after
    `"$A"` in the single template.
    """
    if not isinstance(templates, dict) or set(templates) != {"single", "pair"}:
        raise ValueError(
            "`templates` must be None or a dict with keys 'single' and "
            f"'pair'. Received: templates={templates!r}."
        )
    out = {}
    for key, items in templates.items():
        if not isinstance(items, (list, tuple)):
            raise ValueError(
                f"`templates[{key!r}]` must be a list of [piece, type_id] "
                f"items. Received: {items!r}."
            )
        parsed = []
        for item in items:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ValueError(
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
                raise ValueError(
                    f"`templates[{key!r}]`: a piece must be '$A', '$B' or a "
                    f"token id below {vocabulary_size}, and a type id an "
                    f"integer. Received: {item!r}."
                )
            parsed.append((piece, type_id))
        out[key] = parsed
    single = [piece for piece, _ in out["single"]]
    if single.count("$A") != 1 or "$B" in single:
        raise ValueError(
            "`templates['single']` must hold '$A' once and no '$B'. "
            f"Received: {out['single']!r}."
        )
    pair = [piece for piece, _ in out["pair"]]
    if pair.count("$A") != 1 or pair.count("$B") != 1:
        raise ValueError(
            "`templates['pair']` must hold '$A' and '$B' once each. "
            f"Received: {out['pair']!r}."
        )
    where = single.index("$A")
    return out, list(single[:where]), list(single[where + 1 :])
