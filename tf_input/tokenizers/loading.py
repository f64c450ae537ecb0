"""`load_tokenizer`: any tokenizer file of today's models, one function.

Reads a Hugging Face `tokenizer.json` (with its `tokenizer_config.json`),
a tiktoken rank file, a `vocab.json` + `merges.txt`, a BERT `vocab.txt` or
a SentencePiece `.model`, or a folder holding one, and returns the
tokenizer configured from the file's own description: the normalizer,
the pre-tokenizer regexes, the BPE merges or ranks, the added tokens, the
post-processor's template and the special-token roles. Nothing is chosen
by model name: any file of these kinds loads the same way.

This module finds the files and dispatches by kind; a `tokenizer.json` is
read by `hf.tokenizer_json`, a rank file by `rank_files`. Each file is
read and parsed once per call.
"""

from __future__ import annotations

import os
import pathlib
import warnings

from tf_input._validation import check_bool
from tf_input._validation import check_type
from tf_input.tokenizers import _hub
from tf_input.tokenizers._files import TokenizerFileError
from tf_input.tokenizers._files import check_options
from tf_input.tokenizers._files import read_json
from tf_input.tokenizers._files import reading
from tf_input.tokenizers.chat import check_template
from tf_input.tokenizers.rank_files import PATTERNS
from tf_input.tokenizers.rank_files import RANK_LINE
from tf_input.tokenizers.rank_files import load_rank_file
from tf_input.tokenizers.rank_files import read_rank_file

__all__ = [
    "PATTERNS",
    "TokenizerFileError",
    "find_tokenizer_files",
    "load_for_command_line",
    "load_tokenizer",
    "read_rank_file",
]

# Folder contents, most specific first: (glob, kind).
_FOLDER_ORDER = (
    ("tokenizer.json", "tokenizer.json"),
    ("vocab.json", "vocab.json"),
    ("vocab.txt", "vocab.txt"),
    ("tokenizer.model", "model"),
    ("spm.model", "model"),
    ("*.tiktoken", "tiktoken"),
    ("*.model", "model"),
    ("*tokenizer.json", "tokenizer.json"),
    ("*vocab.json", "vocab.json"),
    ("*vocab.txt", "vocab.txt"),
)
_UNSET = object()
# How an error names each kind.
_KIND_NAMES = {
    "tokenizer.json": "Hugging Face tokenizer.json",
    "vocab.json": "byte-level BPE vocab.json",
    "vocab.txt": "WordPiece vocab.txt",
    "tiktoken": "tiktoken rank file",
    "sentencepiece": "SentencePiece model",
}


def load_tokenizer(
    path,
    *,
    add_special_tokens=False,
    pattern=None,
    special_token_ids=None,
    special_tokens=_UNSET,
    chat_template=None,
    **options,
):
    """Loads the tokenizer of a model from its files, configured by them.

    `path` may be:

    * a Hugging Face `tokenizer.json` (byte-level BPE: Llama 3, Qwen 2.5 /
      3, DeepSeek, GPT-4-class cl100k / o200k, GPT-2, RoBERTa ->
      `BytePairTokenizer`; WordPiece: BERT -> `WordPieceTokenizer`). A
      `tokenizer_config.json` beside it gives the special-token roles;
    * a tiktoken rank file (`*.tiktoken`, or a `tokenizer.model` of
      `base64 rank` lines, told apart from a SentencePiece model by its
      content): pass `pattern` and `special_token_ids`;
    * a `vocab.json` (with `merges.txt` beside it, or `merges=`), a BERT
      `vocab.txt`, or a SentencePiece `.model`;
    * a folder holding one of these (an error lists them if it holds
      several);
    * a Hugging Face model id, `"org/name"` or `"hf://org/name"`, when no
      local path of that name exists: the tokenizer files of that
      repository in `huggingface_hub`'s cache (downloaded into it when
      the Hub is reachable; the cache alone with `HF_HUB_OFFLINE=1`). Its
      `tokenizer.json` is read when it has one. Needs `huggingface_hub`
      (`pip install "tf_input[hub]"`); a model that is not cached and
      cannot be downloaded is an error giving the download command.

    A SentencePiece-style BPE `tokenizer.json` (`byte_fallback`, a `▁`
    metaspace: Mistral v1, Llama 2) gives `MetaspaceBytePairTokenizer`; a
    `Unigram` one (ALBERT, T5, XLM-R: its `Precompiled` charsmap and other
    normalizers, `Metaspace` pre-tokenizer and decoder, `byte_fallback`)
    gives `UnigramTokenizer`, with HF's ids (HF's grapheme-cluster charsmap
    lookup and f64 Viterbi differ from `sentencepiece` on some inputs: the
    ids follow the file's reference, HF). Parts neither handles (a
    splitting Metaspace for BPE, another pre-tokenizer for Unigram, ...)
    are a clear error naming them. A file's `truncation` and `padding`
    settings are not applied (the pipeline truncates and pads); its
    padding token is the `pad` role.

    Args:
        path: str or path-like.
        add_special_tokens: bool. Add the template's special tokens (the
            post-processor's, e.g. `<|begin_of_text|>` for Llama 3,
            `[CLS]`/`[SEP]` for BERT), as HF's `encode(text,
            add_special_tokens=True)`. Defaults to `False`.
        pattern: str. For rank files only: a name (`"cl100k"`,
            `"llama3"` (the same), `"o200k"`, `"qwen2"`, `"gpt2"`) or the
            pre-tokenization regex itself (Oniguruma syntax).
        special_token_ids: dict from token (str) to id. For rank files
            only: the special tokens, found in the text as tiktoken's
            `encode(text, allowed_special="all")` does (the tokenizer's
            `special_tokens` maps roles to ids: give the roles with
            `roles=`).
        special_tokens: deprecated name of `special_token_ids`.
        chat_template: str, dict from name to str, or None. The chat
            template (Jinja) of `apply_chat_template`. Defaults to the
            file's own: a `chat_template.jinja` beside it, else the
            `chat_template` of its `tokenizer_config.json` (a string, or
            a list of named templates); none if neither has one.
        **options: `merges` (the `merges.txt` of a `vocab.json`),
            `lowercase` (bool, for a `vocab.txt`; default True),
            `split_special_tokens` (bool: special tokens in the text are
            plain text; default from `tokenizer_config.json`, else False),
            `roles` (dict from role to token, for rank files: e.g.
            `{"eos": "<|endoftext|>"}`).

    Returns:
        A `Tokenizer` (`BytePairTokenizer`, `WordPieceTokenizer`,
        `MetaspaceBytePairTokenizer`, `UnigramTokenizer` or
        `SentencePieceTokenizer`).

    Raises:
        FileNotFoundError: no such file, or a folder without a tokenizer.
        TokenizerFileError: (a `ValueError`) a corrupt or unsupported
            file, naming the path and the problem.

    Example (a tiny `tokenizer.json`; Qwen 3's folder gives
    `[151644, 872]` for `"<|im_start|>user"` the same way):

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "tokenizer.json").write_text(json.dumps({
    ...     "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
    ...               "merges": [["a", "b"]]},
    ...     "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
    ...     "decoder": {"type": "ByteLevel"},
    ...     "added_tokens": [{"id": 3, "content": "<s>", "special": True}],
    ... }))
    251
    >>> tokenizer = tf_input.load_tokenizer(folder)
    >>> tokenizer("ab<s>a").numpy().tolist()
    [2, 3, 0]
    >>> tokenizer.detokenize([2, 3, 0], skip_special_tokens=True).numpy()
    b'aba'
    """
    check_type(
        "path",
        path,
        (str, os.PathLike),
        "a file or folder path (str or path-like)",
    )
    add_special_tokens = check_bool("add_special_tokens", add_special_tokens)
    special_token_ids = _renamed(special_token_ids, special_tokens)
    with reading():
        path, kind = _find(_local(path))
        if kind != "tiktoken" and (pattern is not None or special_token_ids):
            raise ValueError(
                "`pattern` and `special_token_ids` are for tiktoken rank "
                f"files, which {str(path)!r} is not (it is a {kind} file); "
                "its own description gives them."
            )
        kwargs = dict(options, add_special_tokens=add_special_tokens)
        if kind == "tiktoken":
            kwargs.update(pattern=pattern, special_token_ids=special_token_ids)
        tokenizer = _LOADERS[kind](path, **kwargs)
        if chat_template is None:
            chat_template = _file_chat_template(path)
        tokenizer.chat_template = chat_template
        return tokenizer


def _file_chat_template(path):
    """The chat template beside a tokenizer file: `chat_template.jinja`,
    else the `chat_template` of `tokenizer_config.json`, else None."""
    jinja = path.with_name("chat_template.jinja")
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config_path = path.with_name("tokenizer_config.json")
    if not config_path.is_file():
        return None
    _, config = read_json(config_path)
    template = config.get("chat_template") if isinstance(config, dict) else None
    try:
        return check_template(template)
    except TypeError as error:
        raise TokenizerFileError(
            f"{str(config_path)!r}: its `chat_template` is not a template "
            f"string nor a list of named templates ({error})"
        ) from None


def _renamed(special_token_ids, special_tokens):
    """`special_token_ids`, or the same dict under its deprecated name."""
    if special_tokens is _UNSET:
        return special_token_ids
    warnings.warn(
        "`load_tokenizer(special_tokens=...)` is deprecated: pass the "
        "same dict as `special_token_ids=` (`special_tokens` names the "
        "role -> id dict of a tokenizer).",
        DeprecationWarning,
        stacklevel=3,  # the caller of `load_tokenizer`
    )
    if special_token_ids is not None:
        raise TypeError(
            "Pass `special_token_ids`, not also its deprecated name "
            "`special_tokens`."
        )
    return special_tokens


def _local(path):
    """`path` as a local path: a model id becomes its cached snapshot's
    `tokenizer.json` (the whole tokenizer, as `transformers` reads it), or
    the snapshot's folder when it has none."""
    name = _hub.model_id(path)
    if name is None:
        return pathlib.Path(path)
    folder = pathlib.Path(_hub.snapshot_folder(name))
    if (folder / "tokenizer.json").is_file():
        return folder / "tokenizer.json"
    return folder


def _find(path):
    """`(file, kind)` of a file or a folder holding one."""
    if path.is_dir():
        candidates = find_tokenizer_files(path)
        if not candidates:
            raise FileNotFoundError(
                f"No tokenizer file in folder {str(path)!r}: looked for "
                "tokenizer.json, vocab.json (+ merges.txt), vocab.txt, "
                "*.model and *.tiktoken."
            )
        if len(candidates) > 1:
            names = ", ".join(
                f"{c.name} ({_KIND_NAMES[kind]})" for c, kind in candidates
            )
            raise ValueError(
                f"Folder {str(path)!r} holds several tokenizer files: "
                f"{names}. Pass the path of the one to load (a "
                "tokenizer.json describes the whole tokenizer: its "
                "normalizer, pre-tokenizer and special tokens)."
            )
        return candidates[0]
    if not path.exists():
        raise FileNotFoundError(f"Tokenizer file not found: {str(path)!r}.")
    return path, _kind_of(path)


def find_tokenizer_files(folder):
    """`[(path, kind)]`: every tokenizer file in `folder` (not in its
    subfolders), most specific kind first (`tokenizer.json`,
    `vocab.json`, `vocab.txt`, `.model` / `.tiktoken`)."""
    folder = pathlib.Path(folder)
    found = []
    for glob, _ in _FOLDER_ORDER:
        for path in sorted(p for p in folder.glob(glob) if p.is_file()):
            if path not in found:
                found.append(path)
    with reading():
        return [(path, _kind_of(path)) for path in found]


def _kind_of(path):
    """The kind of a tokenizer file, from its name and, where the name
    does not tell, its content."""
    name = path.name
    if name.endswith(".json"):
        _, data = read_json(path)
        if isinstance(data, dict) and isinstance(data.get("model"), dict):
            return "tokenizer.json"
        if isinstance(data, dict) and all(
            isinstance(i, int) for i in data.values()
        ):
            return "vocab.json"
        raise TokenizerFileError(
            f"{str(path)!r} is JSON but neither a tokenizer.json (an object "
            "with a 'model') nor a vocab.json (an object from token to id)."
        )
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name.endswith(".txt"):
        if "merges" in name:
            raise TokenizerFileError(
                f"{str(path)!r} looks like a BPE merges file; pass the "
                "vocab.json beside it (or its folder)."
            )
        return "vocab.txt"
    with open(path, "rb") as f:
        head = f.read(4096)
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if RANK_LINE.match(first):
        return "tiktoken"
    return "sentencepiece"


# --- Each kind ---------------------------------------------------------------
def _load_tokenizer_json(path, *, add_special_tokens, **options):
    from tf_input.tokenizers.hf import tokenizer_json

    check_options(path, options, ("split_special_tokens",))
    text, data = read_json(path)
    config = {}
    config_path = path.with_name("tokenizer_config.json")
    if config_path.is_file():
        _, config = read_json(config_path)
        if not isinstance(config, dict):
            raise TokenizerFileError(
                f"{str(config_path)!r} must hold a JSON object."
            )
    split = options.get(
        "split_special_tokens",
        bool(config.get("split_special_tokens", False)),
    )
    return tokenizer_json.load(
        path,
        text,
        data,
        config,
        add_special_tokens=add_special_tokens,
        split=split,
    )


def _load_vocab_json(path, *, add_special_tokens, **options):
    from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer

    check_options(path, options, ("merges",))
    merges = options.get("merges")
    if merges is None:
        beside = sorted(path.parent.glob("*merges.txt"))
        if len(beside) != 1:
            raise FileNotFoundError(
                f"No merges file for {str(path)!r}: put one merges.txt beside "
                "it or pass `merges=`."
            )
        merges = beside[0]
    return BytePairTokenizer.from_files(
        str(path), str(merges), add_special_tokens=add_special_tokens
    )


def _load_vocab_txt(path, *, add_special_tokens, **options):
    from tf_input.tokenizers.word_piece_tokenizer import WordPieceTokenizer

    check_options(path, options, ("lowercase",))
    return WordPieceTokenizer.from_vocab_file(
        str(path),
        lowercase=options.get("lowercase", True),
        add_special_tokens=add_special_tokens,
    )


def _load_sentencepiece(path, *, add_special_tokens, **options):
    from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer

    check_options(path, options, ())
    return SentencePieceTokenizer(
        str(path), add_special_tokens=add_special_tokens
    )


_LOADERS = {
    "tokenizer.json": _load_tokenizer_json,
    "tiktoken": load_rank_file,
    "vocab.json": _load_vocab_json,
    "vocab.txt": _load_vocab_txt,
    "sentencepiece": _load_sentencepiece,
}


def load_for_command_line(
    vocab, merges=None, cased=False, *, pattern=None, special_token_ids=None
):
    """`load_tokenizer` for `tf-input tokenize / trace / plot lengths`.

    `--merges` and `--cased` become the `merges` and `lowercase` options,
    `--pattern` and `--special-tokens` the `pattern` and
    `special_token_ids` of a rank file (each only when given, so that a
    `tokenizer.json` takes its own). A folder holding several tokenizer
    files is an error that lists them, as in `load_tokenizer`.
    """
    options = {}
    if merges:
        options["merges"] = merges
    if cased:
        options["lowercase"] = False
    if pattern is not None:
        options["pattern"] = pattern
    if special_token_ids:
        options["special_token_ids"] = special_token_ids
    return load_tokenizer(vocab, **options)
