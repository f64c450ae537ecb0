"""`load_tokenizer`: any tokenizer file of today's models, one function.

Reads a Hugging Face `tokenizer.json` (with its `tokenizer_config.json`),
a tiktoken rank file, a `vocab.json` + `merges.txt`, a BERT `vocab.txt` or
a SentencePiece `.model`, or a folder holding one, and returns the
tokenizer configured from the file's own description: the normalizer,
the pre-tokenizer regexes, the BPE merges or ranks, the added tokens, the
post-processor's template and the special-token roles. Nothing is chosen
by model name: any file of these kinds loads the same way.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import pathlib
import re

from tf_input.tokenizers._pretokenizers import PreTokenizer
from tf_input.tokenizers.byte_pair import BytePairTokenizer
from tf_input.tokenizers.byte_pair import byte_level

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
_GPT2 = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
    r"|\s+(?!\S)|\s+"
)
PATTERNS = {
    "cl100k": _CL100K,
    "llama3": _CL100K,
    "o200k": _O200K,
    "qwen2": _QWEN2,
    "gpt2": _GPT2,
}
_ROLE_KEYS = {
    "bos": "bos_token",
    "eos": "eos_token",
    "unk": "unk_token",
    "pad": "pad_token",
    "cls": "cls_token",
    "sep": "sep_token",
    "mask": "mask_token",
}
_RANK_LINE = re.compile(rb"^([A-Za-z0-9+/]+={0,2}) (\d+)$")
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


class TokenizerFileError(ValueError):
    """A tokenizer file that cannot be read or is not supported."""


def load_tokenizer(
    path,
    *,
    add_special_tokens=False,
    pattern=None,
    special_tokens=None,
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
      content): pass `pattern` and `special_tokens`;
    * a `vocab.json` (with `merges.txt` beside it, or `merges=`), a BERT
      `vocab.txt`, or a SentencePiece `.model`;
    * a folder holding one of these (an error lists them if it holds
      several).

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
        special_tokens: dict from token (str) to id. For rank files only:
            the special tokens, found in the text as tiktoken's
            `encode(text, allowed_special="all")` does.
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
        ValueError: a corrupt or unsupported file, naming the path and the
            problem.

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
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            "`path` must be a file or folder path (str or path-like). "
            f"Received: path={path!r} (of type {type(path).__name__})."
        )
    if not isinstance(add_special_tokens, bool):
        raise ValueError(
            "`add_special_tokens` must be True or False. Received: "
            f"add_special_tokens={add_special_tokens!r}."
        )
    path = pathlib.Path(path)
    try:
        return _load(path, add_special_tokens, pattern, special_tokens, options)
    finally:
        _JSON_CACHE.clear()


def _load(path, add_special_tokens, pattern, special_tokens, options):
    if path.is_dir():
        candidates = find_tokenizer_files(path)
        if not candidates:
            raise FileNotFoundError(
                f"No tokenizer file in folder {str(path)!r}: looked for "
                "tokenizer.json, vocab.json (+ merges.txt), vocab.txt, "
                "*.model and *.tiktoken."
            )
        if len(candidates) > 1:
            names = ", ".join(c.name for c, _ in candidates)
            raise ValueError(
                f"Folder {str(path)!r} holds several tokenizer files "
                f"({names}). Pass the path of the one to load."
            )
        path, kind = candidates[0]
    elif not path.exists():
        raise FileNotFoundError(f"Tokenizer file not found: {str(path)!r}.")
    else:
        kind = _kind_of(path)
    if kind != "tiktoken" and (pattern is not None or special_tokens):
        raise ValueError(
            "`pattern` and `special_tokens` are for tiktoken rank files, "
            f"which {str(path)!r} is not (it is a {kind} file); its own "
            "description gives them."
        )
    loaders = {
        "tokenizer.json": _load_tokenizer_json,
        "tiktoken": _load_rank_file,
        "vocab.json": _load_vocab_json,
        "vocab.txt": _load_vocab_txt,
        "sentencepiece": _load_sentencepiece,
    }
    kwargs = dict(options, add_special_tokens=add_special_tokens)
    if kind == "tiktoken":
        kwargs.update(pattern=pattern, special_tokens=special_tokens)
    return loaders[kind](path, **kwargs)


def find_tokenizer_files(folder):
    """`[(path, kind)]`: the tokenizer files in `folder`, most specific
    kind first (`tokenizer.json`, `vocab.json`, `vocab.txt`, `.model`,
    `.tiktoken`); the first group that matches anything."""
    folder = pathlib.Path(folder)
    for glob, _ in _FOLDER_ORDER:
        found = sorted(p for p in folder.glob(glob) if p.is_file())
        if found:
            return [(p, _kind_of(p)) for p in found]
    return []


def _kind_of(path):
    """The kind of a tokenizer file, from its name and, where the name
    does not tell, its content."""
    name = path.name
    if name.endswith(".json"):
        data = _read_json(path)
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
    if _RANK_LINE.match(first):
        return "tiktoken"
    return "sentencepiece"


def _read_text(path):
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise TokenizerFileError(
            f"{str(path)!r} is not UTF-8 text: {error}."
        ) from None


_JSON_CACHE = {}


def _read_json(path):
    """The parsed JSON of `path` (cached during one `load_tokenizer` call:
    telling the kind of a file and loading it parse it once)."""
    key = os.fspath(path)
    data = _JSON_CACHE.get(key)
    if data is None:
        text = _read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise TokenizerFileError(
                f"{str(path)!r} is not valid JSON (truncated or corrupt?): "
                f"{error.msg} at line {error.lineno}, column {error.colno}."
            ) from None
        _JSON_CACHE[key] = data
    return data


def _check_options(path, options, allowed):
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(
            f"Unknown option(s) {unknown} for {str(path)!r}; this kind of "
            f"file takes {sorted(allowed) or 'none'}."
        )


# --- tokenizer.json ----------------------------------------------------------
def _load_tokenizer_json(path, *, add_special_tokens, **options):
    _check_options(path, options, ("split_special_tokens",))
    data = _read_json(path)
    where = repr(str(path))
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise TokenizerFileError(
            f"{where} is not a tokenizer.json: no 'model' object."
        )
    config = {}
    config_path = path.with_name("tokenizer_config.json")
    if config_path.is_file():
        config = _read_json(config_path)
        if not isinstance(config, dict):
            raise TokenizerFileError(
                f"{str(config_path)!r} must hold a JSON object."
            )
    model = data["model"]
    kind = model.get("type") or _guess_model_type(model)
    try:
        if kind == "WordPiece":
            return _wordpiece_from_json(data, config, add_special_tokens)
        if kind == "BPE":
            split = options.get(
                "split_special_tokens",
                bool(config.get("split_special_tokens", False)),
            )
            if data["model"].get("byte_fallback"):
                return _metaspace_bpe_from_json(
                    path, data, config, add_special_tokens, split
                )
            return _bpe_from_json(data, config, add_special_tokens, split)
        if kind == "Unigram":
            split = options.get(
                "split_special_tokens",
                bool(config.get("split_special_tokens", False)),
            )
            return _unigram_from_json(
                path, data, config, add_special_tokens, split
            )
    except (KeyError, TypeError, ValueError) as error:
        message = str(error).strip("'\"")
        if isinstance(error, KeyError):
            message = f"a required field is missing: {message}"
        if str(path) in message:
            raise
        raise TokenizerFileError(f"{where}: {message}") from None
    if kind == "WordLevel":
        raise TokenizerFileError(
            f"{where}: the model type {kind!r} is not supported yet."
        )
    raise TokenizerFileError(
        f"{where}: unknown model type {kind!r}; supported are BPE "
        "(byte-level or SentencePiece-style), Unigram and WordPiece."
    )


def _guess_model_type(model):
    if "merges" in model:
        return "BPE"
    if isinstance(model.get("vocab"), list):
        return "Unigram"
    if "max_input_chars_per_word" in model:
        return "WordPiece"
    return None


def _pre_tokenizers(spec):
    if spec is None:
        return []
    if spec.get("type") == "Sequence":
        return [
            p for item in spec["pretokenizers"] for p in _pre_tokenizers(item)
        ]
    return [spec]


def _metaspace_bpe_from_json(path, data, config, add_special_tokens, split):
    """A SentencePiece-style BPE (`byte_fallback`, a "▁" metaspace)."""
    from tf_input.tokenizers.sentencepiece._json_bpe import (
        MetaspaceBytePairTokenizer,
    )
    from tf_input.tokenizers.sentencepiece._json_bpe import check_supported

    check_supported(data)
    added = data.get("added_tokens") or []
    token_ids = {t["content"]: t["id"] for t in added}
    token_ids = {**data["model"]["vocab"], **token_ids}
    return MetaspaceBytePairTokenizer(
        _read_text(path),
        add_special_tokens=add_special_tokens,
        roles=_roles(data, config, token_ids),
        split_special_tokens=split,
        templates=_templates(data.get("post_processor"), token_ids),
    )


def _unigram_from_json(path, data, config, add_special_tokens, split):
    """A Unigram model (ALBERT, T5, XLM-R: SentencePiece unigram)."""
    from tf_input.tokenizers.sentencepiece import _json_unigram

    _json_unigram.check_supported(data)
    token_ids = {}
    for i, item in enumerate(data["model"]["vocab"]):
        token_ids[item[0]] = i
    for t in data.get("added_tokens") or []:
        token_ids[t["content"]] = t["id"]
    roles = _roles(data, config, token_ids)
    unk = data["model"]["vocab"][data["model"]["unk_id"]][0]
    roles.setdefault("unk", unk)
    return _json_unigram.UnigramTokenizer(
        _read_text(path),
        add_special_tokens=add_special_tokens,
        roles=roles,
        split_special_tokens=split,
        templates=_templates(data.get("post_processor"), token_ids),
    )


def _bpe_from_json(data, config, add_special_tokens, split_special_tokens):
    model = data["model"]
    pre = _pre_tokenizers(data.get("pre_tokenizer"))
    metaspace = any(p.get("type") == "Metaspace" for p in pre)
    if model.get("byte_fallback") or metaspace:
        raise TokenizerFileError(
            "this is a SentencePiece-style BPE (model type 'BPE' with "
            f"byte_fallback={model.get('byte_fallback')}"
            f"{', a Metaspace pre-tokenizer' if metaspace else ''}), which is "
            "not supported yet; load its SentencePiece `.model` instead"
        )
    # Unknown pre-tokenizer types first: they are the clearer error.
    PreTokenizer(data.get("pre_tokenizer"), where="pre_tokenizer")
    if not any(p.get("type") == "ByteLevel" for p in pre):
        raise TokenizerFileError(
            "the model type 'BPE' without a ByteLevel pre-tokenizer (not a "
            "byte-level BPE) is not supported"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise TokenizerFileError(
                f"a BPE {key} ({model[key]!r}) is not supported"
            )
    if model.get("dropout"):
        raise TokenizerFileError(
            f"BPE dropout ({model['dropout']}) is random; it is not supported"
        )
    decoder = data.get("decoder")
    decoders = (
        decoder.get("decoders", [])
        if isinstance(decoder, dict) and decoder.get("type") == "Sequence"
        else [decoder]
    )
    if not decoders or any(
        not isinstance(d, dict) or d.get("type") != "ByteLevel"
        for d in decoders
    ):
        raise TokenizerFileError(
            f"the decoder {decoder!r} is not supported for a byte-level BPE "
            "(only ByteLevel)"
        )
    vocabulary = model["vocab"]
    if not isinstance(vocabulary, dict):
        raise TokenizerFileError("a BPE 'vocab' must be an object")
    added = data.get("added_tokens") or []
    missing = [c for c in _ALPHABET_CHARS if c not in vocabulary]
    if missing and model.get("unk_token"):
        raise TokenizerFileError(
            "a byte-level BPE whose vocabulary lacks byte symbols "
            f"({missing[:3]}...) and has an unk_token is not supported"
        )
    token_ids = {t["content"]: t["id"] for t in added}
    token_ids = {**vocabulary, **token_ids}
    templates = _templates(data.get("post_processor"), token_ids)
    roles = _roles(data, config, token_ids)
    return BytePairTokenizer(
        vocabulary,
        model["merges"],
        pretokenizer=data.get("pre_tokenizer"),
        normalizer=data.get("normalizer"),
        added_tokens=added,
        ignore_merges=bool(model.get("ignore_merges", False)),
        split_special_tokens=split_special_tokens,
        templates=templates,
        roles=roles,
        add_special_tokens=add_special_tokens,
    )


_ALPHABET_CHARS = [byte_level(bytes([b])) for b in range(256)]


def _templates(post, token_ids):
    """HF's post-processor as `{"single": [...], "pair": [...]}`."""
    plain = {"single": [["$A", 0]], "pair": [["$A", 0], ["$B", 1]]}
    if post is None:
        return plain
    kind = post.get("type")
    if kind == "ByteLevel":
        return plain
    if kind == "TemplateProcessing":
        specials = post.get("special_tokens", {})

        def expand(items):
            out = []
            for item in items:
                if "Sequence" in item:
                    sequence = item["Sequence"]
                    out.append([f"${sequence['id']}", sequence["type_id"]])
                else:
                    special = item["SpecialToken"]
                    entry = specials.get(special["id"])
                    ids = entry["ids"] if entry else [token_ids[special["id"]]]
                    out.extend([i, special["type_id"]] for i in ids)
            return out

        return {"single": expand(post["single"]), "pair": expand(post["pair"])}
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls, sep = post["cls"][1], post["sep"][1]
        if kind == "BertProcessing":
            pair = [[cls, 0], ["$A", 0], [sep, 0], ["$B", 1], [sep, 1]]
        else:
            pair = [
                [cls, 0],
                ["$A", 0],
                [sep, 0],
                [sep, 0],
                ["$B", 0],
                [sep, 0],
            ]
        return {"single": [[cls, 0], ["$A", 0], [sep, 0]], "pair": pair}
    if kind == "Sequence":
        found = [
            _templates(p, token_ids)
            for p in post.get("processors", [])
            if p.get("type") != "ByteLevel"
        ]
        if len(found) > 1:
            raise TokenizerFileError(
                "a Sequence post-processor with more than one processor that "
                "adds tokens is not supported"
            )
        return found[0] if found else plain
    raise TokenizerFileError(
        f"the post-processor type {kind!r} is not supported"
    )


def _content(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def _roles(data, config, token_ids):
    """Special-token roles from tokenizer_config.json and the file itself."""
    roles = {}
    for role, key in _ROLE_KEYS.items():
        token = _content(config.get(key))
        if token is None:
            continue
        if token not in token_ids:
            raise TokenizerFileError(
                f"tokenizer_config.json names {token!r} as {key}, but it is "
                "not a token of tokenizer.json"
            )
        roles[role] = token
    padding = data.get("padding")
    if "pad" not in roles and isinstance(padding, dict):
        token = padding.get("pad_token")
        if token in token_ids:
            roles["pad"] = token
    unk = data["model"].get("unk_token")
    if "unk" not in roles and unk in token_ids:
        roles["unk"] = unk
    return roles


def _wordpiece_from_json(data, config, add_special_tokens):
    from tf_input.tokenizers.wordpiece import WordPieceTokenizer

    model = data["model"]
    normalizer = data.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        raise TokenizerFileError(
            f"a WordPiece file needs a BertNormalizer; received {normalizer!r}"
        )
    for key in ("clean_text", "handle_chinese_chars"):
        if normalizer.get(key, True) is not True:
            raise TokenizerFileError(
                f"BertNormalizer with {key}=false is not supported"
            )
    pre = data.get("pre_tokenizer") or {}
    if pre.get("type") != "BertPreTokenizer":
        raise TokenizerFileError(
            f"a WordPiece file needs the BertPreTokenizer; received {pre!r}"
        )
    if model.get("continuing_subword_prefix", "##") != "##":
        raise TokenizerFileError(
            "a WordPiece continuing_subword_prefix other than '##' is not "
            "supported"
        )
    decoder = data.get("decoder")
    if decoder is not None and (
        decoder.get("type") != "WordPiece"
        or decoder.get("prefix", "##") != "##"
        or not decoder.get("cleanup", True)
    ):
        raise TokenizerFileError(
            f"the decoder {decoder!r} is not supported for WordPiece"
        )
    vocabulary = model["vocab"]
    tokens = sorted(vocabulary, key=vocabulary.get)
    if [vocabulary[t] for t in tokens] != list(range(len(tokens))):
        raise TokenizerFileError("WordPiece ids must be 0..n-1, each once")
    unknown = model.get("unk_token", "[UNK]")
    handled = {unknown, "[SEP]", "[CLS]", "[PAD]", "[MASK]"}
    for token in data.get("added_tokens") or []:
        plain = not any(
            token.get(k) for k in ("lstrip", "rstrip", "single_word")
        )
        if (
            token["content"] not in handled
            or not plain
            or vocabulary.get(token["content"]) != token["id"]
        ):
            raise TokenizerFileError(
                f"the added token {token!r} is not supported for WordPiece "
                "(only the vocabulary's [UNK], [SEP], [CLS], [PAD], [MASK])"
            )
    lowercase = bool(normalizer.get("lowercase", True))
    strip = normalizer.get("strip_accents")
    return WordPieceTokenizer(
        tokens,
        lowercase=lowercase,
        strip_accents=None if strip is None else bool(strip),
        unknown_token=unknown,
        max_word_length=model.get("max_input_chars_per_word", 100),
        add_special_tokens=add_special_tokens,
        templates=_templates(data.get("post_processor"), vocabulary),
    )


# --- tiktoken rank files -----------------------------------------------------
def read_rank_file(path):
    """`{token bytes: rank}` of a tiktoken file; errors name the line."""
    ranks = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            match = _RANK_LINE.match(line)
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


def _load_rank_file(
    path, *, add_special_tokens, pattern, special_tokens, **options
):
    _check_options(path, options, ("roles", "split_special_tokens"))
    if pattern is None:
        raise ValueError(
            f"{str(path)!r} is a tiktoken rank file, which holds no "
            "pre-tokenization regex: pass `pattern=`, one of "
            f"{sorted(PATTERNS)} or the regex itself."
        )
    if not isinstance(pattern, str):
        raise TypeError(
            f"`pattern` must be a name or a regex (str). Received: {pattern!r}."
        )
    regex = PATTERNS.get(pattern, pattern)
    ranks = read_rank_file(path)
    vocabulary = {byte_level(token): rank for token, rank in ranks.items()}
    added = []
    if special_tokens is not None:
        if not isinstance(special_tokens, dict):
            raise TypeError(
                "`special_tokens` must be a dict from token to id. Received: "
                f"{special_tokens!r}."
            )
        for token, token_id in special_tokens.items():
            if (
                not isinstance(token, str)
                or isinstance(token_id, bool)
                or (not isinstance(token_id, int))
            ):
                raise ValueError(
                    "`special_tokens` must map strings to integer ids. "
                    f"Received: {token!r}: {token_id!r}."
                )
            if token_id < len(ranks):
                raise ValueError(
                    f"`special_tokens`: id {token_id} of {token!r} is a rank "
                    f"of {str(path)!r}; special ids come after its "
                    f"{len(ranks)} ranks."
                )
            added.append(
                {"id": token_id, "content": token, "special": True,
                 "normalized": False}
            )  # fmt: skip
    pretokenizer = {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": regex},
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
        split_special_tokens=bool(options.get("split_special_tokens", False)),
        templates={"single": [["$A", 0]], "pair": [["$A", 0], ["$B", 1]]},
        roles=options.get("roles") or {},
        add_special_tokens=add_special_tokens,
    )


# --- Other files -------------------------------------------------------------
def _load_vocab_json(path, *, add_special_tokens, **options):
    _check_options(path, options, ("merges",))
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
    from tf_input.tokenizers.wordpiece import WordPieceTokenizer

    _check_options(path, options, ("lowercase",))
    return WordPieceTokenizer.from_vocab_file(
        str(path),
        lowercase=options.get("lowercase", True),
        add_special_tokens=add_special_tokens,
    )


def _load_sentencepiece(path, *, add_special_tokens, **options):
    from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer

    _check_options(path, options, ())
    return SentencePieceTokenizer(
        str(path), add_special_tokens=add_special_tokens
    )


def load_for_command_line(vocab, merges=None, cased=False):
    """`load_tokenizer` for `tf-input tokenize / trace / plot lengths`.

    `--merges` and `--cased` become the `merges` and `lowercase` options
    (only when given, so that a `tokenizer.json` takes its own). A folder
    holding several tokenizer files loads the first in
    `find_tokenizer_files` order, and says so on stderr.
    """
    import sys

    path = pathlib.Path(vocab)
    options = {}
    if merges:
        options["merges"] = merges
    if cased:
        options["lowercase"] = False
    if path.is_dir():
        found = find_tokenizer_files(path)
        if len(found) > 1:
            names = ", ".join(p.name for p, _ in found)
            print(
                f"tf-input: {str(path)!r} holds {len(found)} tokenizer files "
                f"({names}); using {found[0][0].name}. Pass a file to choose "
                "another.",
                file=sys.stderr,
            )
            path = found[0][0]
    return load_tokenizer(path, **options)
