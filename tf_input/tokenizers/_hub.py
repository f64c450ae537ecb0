"""Model ids: `load_tokenizer("org/name")` through Hugging Face's cache.

A model id (`"Qwen/Qwen3-8B"`, or keras-hub's `"hf://Qwen/Qwen3-8B"`)
resolves to the snapshot folder of that repository in `huggingface_hub`'s
cache (`HF_HUB_CACHE`, by default `~/.cache/huggingface/hub`), the folder
`transformers` and keras-hub read too. Only the tokenizer's files are
fetched (`TOKENIZER_FILES`), never the weights. With `HF_HUB_OFFLINE=1`,
or without a network, the cached snapshot is used as it is; a repository
that is not cached is an error that gives the command to download it.

`huggingface_hub` is imported here only, and only for a model id.
"""

from __future__ import annotations

import os
import re

# `org/name`: the Hub's repository names (letters, digits, `-`, `_`, `.`).
_MODEL_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_PREFIX = "hf://"
# Every file `load_tokenizer` reads from a folder, and the configs beside.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "*.model",
    "*.tiktoken",
)


def model_id(path):
    """The Hub repository `path` names, or None for a local path.

    `"hf://org/name"` always names one; `"org/name"` does when no such
    local file or folder exists (a local path wins, as in `transformers`).
    """
    if not isinstance(path, str):
        return None
    if path.startswith(_PREFIX):
        name = path[len(_PREFIX) :]
        if not _MODEL_ID.fullmatch(name):
            raise ValueError(
                f"{path!r} is not a Hugging Face model id: expected "
                "'hf://org/name', e.g. 'hf://Qwen/Qwen3-8B'."
            )
        return name
    if _MODEL_ID.fullmatch(path) and not os.path.exists(path):
        return path
    return None


def snapshot_folder(name):
    """The local folder holding `name`'s tokenizer files (cached, or
    downloaded into the cache when the Hub is reachable)."""
    try:
        import huggingface_hub
    except ImportError:
        raise FileNotFoundError(
            f"Tokenizer file not found: {name!r}. It looks like a Hugging "
            "Face model id: install huggingface_hub (pip install "
            '"tf_input[hub]") to load it from the Hub\'s cache, or pass '
            "the path of a local file or folder."
        ) from None
    try:
        return huggingface_hub.snapshot_download(
            name, allow_patterns=list(TOKENIZER_FILES)
        )
    except huggingface_hub.errors.LocalEntryNotFoundError as error:
        patterns = " ".join(f'"{p}"' for p in TOKENIZER_FILES)
        raise FileNotFoundError(
            f"The tokenizer of model {name!r} is not in the Hugging Face "
            f"cache ({huggingface_hub.constants.HF_HUB_CACHE}) and cannot be "
            f"downloaded now ({error}). Download it once, where the Hub "
            f"is reachable, with:\n  hf download {name} --include {patterns}"
            "\nor pass the path of a local file or folder."
        ) from None
    except huggingface_hub.errors.RepositoryNotFoundError:
        raise FileNotFoundError(
            f"No model {name!r} on the Hugging Face Hub (or it is private: "
            "log in with `hf auth login`), and no local file or folder of "
            "that name."
        ) from None
