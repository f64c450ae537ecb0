"""Reading and checking `BytePairTokenizer`'s arguments: a `vocab.json` and
a `merges.txt` (or their dict and list forms; errors name the file and
line), its vocabulary asset, its unsplittable tokens, roles and options.

A fault in the contents of the vocabulary or the merges is a `SpecError`
(`SpecTypeError` for a wrong JSON type): `load_tokenizer` reports it as a
fault of the `tokenizer.json` they came from, and nothing else raised
while the tokenizer is built.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from tf_input._validation import check_type
from tf_input.tokenizers._assets import json_asset
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError

# Tokens kept whole by default (`unsplittable_tokens=None`), and the
# roles they play (GPT-2 uses one token for both ends; RoBERTa uses BART's).
_KNOWN_SPECIALS = {
    "<|endoftext|>": ("bos", "eos"),
    "<s>": ("bos", "cls"),
    "</s>": ("eos", "sep"),
    "<pad>": ("pad",),
    "<unk>": ("unk",),
    "<mask>": ("mask",),
}
_ROLES = ("bos", "eos", "pad", "unk", "cls", "sep", "mask")


def load_vocabulary(vocabulary, allow_gaps=False):
    """Reads and checks `vocabulary` (dict or path) -> `{token: id}`.

    Ids must be `0..n-1`, each once; with `allow_gaps`, any distinct ids
    >= 0.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        where = f"Vocabulary file {path!r}"
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"Vocabulary file {path!r} not found. Pass the path of a "
                "`vocab.json` (a JSON object from token to id) or a dict."
            ) from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{where} is not UTF-8 text: {e}.") from None
        try:
            vocabulary = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{where} is not valid JSON: {e.msg} at line {e.lineno}, "
                f"column {e.colno}."
            ) from None
    elif isinstance(vocabulary, dict):
        where = "`vocabulary`"
    else:
        raise TypeError(
            "`vocabulary` must be a dict from token to id or the path of a "
            f"`vocab.json`. Received: vocabulary of type "
            f"{type(vocabulary).__name__}."
        )
    if not isinstance(vocabulary, dict) or not vocabulary:
        error = SpecError if isinstance(vocabulary, dict) else SpecTypeError
        raise error(
            f"{where} must be a non-empty JSON object from token to id. "
            f"Received: a {type(vocabulary).__name__} of length "
            f"{len(vocabulary) if hasattr(vocabulary, '__len__') else '?'}."
        )
    for token, i in vocabulary.items():
        if not isinstance(token, str) or not token:
            error = SpecError if isinstance(token, str) else SpecTypeError
            raise error(
                f"{where}: every token must be a non-empty string. "
                f"Received: token {token!r} (id {i!r})."
            )
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise SpecTypeError(
                f"{where}: every id must be an integer. Received: "
                f"{token!r}: {i!r}."
            )
    ids = sorted(int(i) for i in vocabulary.values())
    if allow_gaps and ids[0] >= 0 and len(set(ids)) == len(ids):
        pass
    elif ids != list(range(len(ids))):
        seen = set()
        duplicate = next((i for i in ids if i in seen or seen.add(i)), None)
        if duplicate is not None:
            tokens = [t for t, i in vocabulary.items() if i == duplicate]
            problem = f"id {duplicate} is used by {tokens[:3]}"
        else:
            missing = next(i for i in range(len(ids)) if i not in seen)
            problem = f"id {missing} is missing (largest id: {ids[-1]})"
        raise SpecError(
            f"{where}: ids must be 0..{len(ids) - 1}, each once; {problem}."
        )
    return {token: int(i) for token, i in vocabulary.items()}


def load_merges(merges, vocabulary):
    """Reads and checks `merges` (list or path).

    Returns:
        `(merges, ids)`: the list of `"a b"` strings and an int64 array
        `[n, 3]` of (left id, right id, merged id).
    """
    if isinstance(merges, (str, os.PathLike)):
        path = os.fspath(merges)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"Merges file {path!r} not found. Pass the path of a "
                "`merges.txt` (one `a b` merge per line) or a list."
            ) from None
        except UnicodeDecodeError as e:
            raise ValueError(f"Merges file {path!r} is not UTF-8 text: {e}.")
        numbered = [(n, line.rstrip("\r")) for n, line in enumerate(lines, 1)]
        numbered = [
            (n, line)
            for n, line in numbered
            if line and not line.startswith("#version")
        ]

        def where(n):
            return f"Merges file {path!r}, line {n}"

    elif isinstance(merges, (list, tuple)):
        numbered = []
        for n, merge in enumerate(merges):
            pair = (
                isinstance(merge, (list, tuple))
                and len(merge) == 2
                and all(isinstance(part, str) for part in merge)
            )
            if not (pair or isinstance(merge, str)):
                raise SpecTypeError(
                    f"`merges[{n}]` must be a string 'a b' or a pair of "
                    f"strings. Received: {merge!r}."
                )
            if pair:
                numbered.append((n, list(merge)))
            elif not merge.startswith("#version"):
                numbered.append((n, merge))

        def where(n):
            return f"`merges[{n}]`"

    else:
        raise TypeError(
            "`merges` must be a list of 'a b' strings or the path of a "
            f"`merges.txt`. Received: merges of type {type(merges).__name__}."
        )
    out = [merge for _, merge in numbered]
    parts = [
        merge if isinstance(merge, list) else merge.split(" ") for merge in out
    ]
    get = vocabulary.get
    rows = [
        (get(pair[0]), get(pair[-1]), get(pair[0] + pair[-1])) for pair in parts
    ]
    for (n, merge), pair, row in zip(numbered, parts, rows):
        if None in row or len(pair) != 2 or not pair[0] or not pair[1]:
            if isinstance(merge, list):
                # A pair (Qwen's tokenizer.json): tokens may hold spaces.
                left, right = merge
            else:
                left, _, right = merge.partition(" ")
                if " " in right:
                    right = ""
            row = (get(left), get(right), get(left + right))
            _bad_merge(where(n), merge, left, right, row)
    ids = np.array(rows, np.int64).reshape(-1, 3)
    return out, ids


def _bad_merge(where, merge, left, right, row):
    if not left or not right:
        raise SpecError(
            f"{where}: a merge is two tokens separated by one space, "
            f"like 'Ġ t'. Received: {merge!r}."
        )
    missing = (left, right, left + right)[row.index(None)]
    raise SpecError(
        f"{where}: token {missing!r} of merge {merge!r} is not in "
        "the vocabulary. Use the vocab.json that came with these "
        "merges."
    )


def read_asset(data, source):
    """The `{"vocabulary": ..., "merges": ..., "added_tokens": ...}` of an
    asset's bytes (without `added_tokens` for an asset written when they
    were in the config)."""
    content = json_asset(data, source, "BytePairTokenizer")
    lists = (list, type(None))
    if not (
        isinstance(content, dict)
        and isinstance(content.get("vocabulary"), dict)
        and isinstance(content.get("merges"), lists)
        and isinstance(content.get("added_tokens"), lists)
    ):
        raise ValueError(
            f"BytePairTokenizer could not read {source}: expected a JSON "
            "object with a `vocabulary` object, and `merges` and "
            "`added_tokens` lists (or null)."
        )
    out = {"vocabulary": content["vocabulary"], "merges": content.get("merges")}
    if "added_tokens" in content:
        out["added_tokens"] = content["added_tokens"]
    return out


def check_pretokenizer(pretokenizer):
    """`pretokenizer` if it is `"gpt2"`, None or a dict (a `tokenizer.json`
    `pre_tokenizer`, checked when it is compiled)."""
    expected = (
        "'gpt2', None or a Hugging Face pre_tokenizer description (a dict)"
    )
    check_type("pretokenizer", pretokenizer, (str, dict, type(None)), expected)
    if isinstance(pretokenizer, str) and pretokenizer != "gpt2":
        raise ValueError(
            f"`pretokenizer` must be {expected}. "
            f"Received: pretokenizer={pretokenizer!r}."
        )
    return pretokenizer


def renamed_special_tokens(kwargs, unsplittable_tokens):
    """`unsplittable_tokens`, or the value of its old name `special_tokens`
    (taken out of `kwargs`, with a `DeprecationWarning`)."""
    if "special_tokens" not in kwargs:
        return unsplittable_tokens
    old = kwargs.pop("special_tokens")
    if unsplittable_tokens is not None:
        raise ValueError(
            "`special_tokens` is the old name of `unsplittable_tokens`: "
            "pass only `unsplittable_tokens`."
        )
    warnings.warn(
        "`BytePairTokenizer(special_tokens=...)` is deprecated: the "
        "argument is now `unsplittable_tokens` (`special_tokens` is every "
        "tokenizer's role -> id dict). Rename the keyword.",
        DeprecationWarning,
        stacklevel=3,
    )
    return old


def check_unsplittable(tokens, vocabulary):
    if tokens is None:
        return [token for token in _KNOWN_SPECIALS if token in vocabulary]
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise TypeError(
            "`unsplittable_tokens` must be None or a list of strings. "
            f"Received: unsplittable_tokens={tokens!r}."
        )
    out = []
    for i, token in enumerate(tokens):
        check_type(
            f"unsplittable_tokens[{i}]", token, str, "a non-empty string"
        )
        if not token:
            raise ValueError(
                "`unsplittable_tokens` must contain non-empty strings. "
                f"Received: {token!r} in unsplittable_tokens={tokens!r}."
            )
        if token not in vocabulary:
            raise ValueError(
                f"Unsplittable token {token!r} is not in the vocabulary. Add "
                "it to vocab.json, or leave it out of `unsplittable_tokens`."
            )
        if token not in out:
            out.append(token)
    return out


def role_ids(roles, unsplittable, index):
    """`{role: id}`: of `roles` (role -> token, checked), or for None the
    roles of the `unsplittable` tokens known by name."""
    if roles is None:
        out = {}
        for token in unsplittable or []:
            for role in _KNOWN_SPECIALS.get(token, ()):
                out.setdefault(role, index[token])
        return out
    if not isinstance(roles, dict):
        raise TypeError(
            "`roles` must be None or a dict from role to token. "
            f"Received: roles={roles!r}."
        )
    for role, token in roles.items():
        if role not in _ROLES:
            raise ValueError(
                f"`roles` keys must be among {_ROLES}. Received: {role!r}."
            )
        check_type(f"roles[{role!r}]", token, str, "a token (str)")
        if token not in index:
            raise ValueError(
                f"`roles`: the {role} token {token!r} is not a token of "
                "this tokenizer."
            )
    return {role: index[token] for role, token in roles.items()}


def token_tables(vocabulary, added):
    """Token strings by id: `(model_tokens, tokens, index)`.

    `model_tokens`: the vocabulary's tokens by id (None for a gap);
    `tokens`: those, then the added tokens' (which win, as in HF), with
    `""` for ids without a token; `index`: token -> id of both.
    """
    size = max([*vocabulary.values()] + [t["id"] for t in added]) + 1
    model_tokens = [None] * (max(vocabulary.values()) + 1)
    for token, i in vocabulary.items():
        model_tokens[i] = token
    tokens = [t or "" for t in model_tokens]
    tokens += [""] * (size - len(tokens))
    index = dict(vocabulary)
    for t in added:
        tokens[t["id"]] = t["content"]
        index[t["content"]] = t["id"]
    return model_tokens, tokens, index
