"""tiktoken rank files (`*.tiktoken`, Llama 3's `tokenizer.model`).

A rank file is `base64 rank` lines: the byte string of every token and
its rank, which is its id and its merge priority. It holds no
pre-tokenization regex and no special tokens: `load_rank_file` takes them
as arguments (a regex by name from `PATTERNS`) and builds a
`BytePairTokenizer` that merges by rank, as tiktoken does.
"""

from __future__ import annotations

import base64
import binascii
import re

from tf_input._validation import check_type
from tf_input.tokenizers._byte_level import byte_level
from tf_input.tokenizers._files import TokenizerFileError
from tf_input.tokenizers._files import check_options
from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from tf_input.tokenizers.hf import processors
from tf_input.tokenizers.hf.pre_tokenizers import GPT2_PATTERN

# Pre-tokenization regexes of the tiktoken encodings (tiktoken's own
# patterns use possessive quantifiers, which RE2 lacks; these are the
# equivalent forms of the models' `tokenizer.json` files, checked against
# tiktoken id for id).
_CL100K = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_O200K = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PATTERNS = {
    "cl100k": _CL100K,
    "llama3": _CL100K,
    "o200k": _O200K,
    "qwen2": _QWEN2,
    "gpt2": GPT2_PATTERN,
}
RANK_LINE = re.compile(rb"^([A-Za-z0-9+/]+={0,2}) (\d+)$")


def read_rank_file(path):
    """`{token bytes: rank}` of a tiktoken file; errors name the line."""
    ranks = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            match = RANK_LINE.match(line)
            if match is None:
                raise TokenizerFileError(
                    f"{str(path)!r}, line {number}: a rank file line is "
                    f"`base64 rank`. Received: {line[:80]!r}."
                )
            try:
                token = base64.b64decode(match.group(1), validate=True)
            except binascii.Error:
                raise TokenizerFileError(
                    f"{str(path)!r}, line {number}: {match.group(1)[:40]!r} is "
                    "not valid base64."
                ) from None
            if token in ranks:
                raise TokenizerFileError(
                    f"{str(path)!r}, line {number}: the token {token!r} is "
                    "listed twice."
                )
            ranks[token] = int(match.group(2))
    if not ranks:
        raise TokenizerFileError(f"{str(path)!r} holds no ranks.")
    order = sorted(ranks.values())
    if order != list(range(len(order))):
        raise TokenizerFileError(
            f"{str(path)!r}: the ranks must be 0..{len(order) - 1}, each once."
        )
    return ranks


def load_rank_file(
    path, *, add_special_tokens, pattern, special_token_ids, **options
):
    """The `BytePairTokenizer` of a rank file (see `load_tokenizer`)."""
    check_options(path, options, ("roles", "split_special_tokens"))
    if pattern is None:
        raise ValueError(
            f"{str(path)!r} is a tiktoken rank file, which holds no "
            "pre-tokenization regex: pass `pattern=`, one of "
            f"{sorted(PATTERNS)} or the regex itself."
        )
    check_type("pattern", pattern, str, "a name or a regex (str)")
    ranks = read_rank_file(path)
    vocabulary = {byte_level(token): rank for token, rank in ranks.items()}
    added = _added_tokens(special_token_ids, len(ranks), path)
    pretokenizer = {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": PATTERNS.get(pattern, pattern)},
                # tiktoken encodes the matches only.
                "behavior": "Removed",
                "invert": True,
            },
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "use_regex": False,
            },
        ],
    }
    return BytePairTokenizer(
        vocabulary,
        None,
        pretokenizer=pretokenizer,
        added_tokens=added,
        ignore_merges=True,
        split_special_tokens=options.get("split_special_tokens", False),
        templates=processors.plain(),
        roles=options.get("roles") or {},
        add_special_tokens=add_special_tokens,
    )


def _added_tokens(special_token_ids, num_ranks, path):
    """`special_token_ids` (token -> id) as `added_tokens` entries."""
    if special_token_ids is None:
        return []
    expected = "a dict from token (str) to id (int)"
    check_type("special_token_ids", special_token_ids, dict, expected)
    added = []
    for token, token_id in special_token_ids.items():
        if not isinstance(token, str):
            raise TypeError(
                f"`special_token_ids` must be {expected}. Received the key "
                f"{token!r} (of type {type(token).__name__})."
            )
        check_type(f"special_token_ids[{token!r}]", token_id, int, "an id")
        if token_id < num_ranks:
            raise ValueError(
                f"`special_token_ids`: id {token_id} of {token!r} is a rank "
                f"of {str(path)!r}; special ids come after its {num_ranks} "
                "ranks."
            )
        added.append(
            {"id": token_id, "content": token, "special": True,
             "normalized": False}
        )  # fmt: skip
    return added
