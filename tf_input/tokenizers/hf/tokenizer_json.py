"""A whole `tokenizer.json`: its `model` type picks the tokenizer.

`load` is the one dispatch over the model types: byte-level `BPE` ->
`BytePairTokenizer`; `BPE` over characters with `byte_fallback` or a
`Metaspace` -> `MetaspaceBytePairTokenizer`; `Unigram` ->
`UnigramTokenizer`; `WordPiece` -> `WordPieceTokenizer`. The special-token
roles come from the `tokenizer_config.json` beside the file (and the
file's own padding and unknown tokens), the templates from its
`post_processor`.

A fault of the file (a `SpecError` of any section, a missing field)
becomes a `TokenizerFileError` that names the path; anything else raised
while building a tokenizer (a fault of the code) keeps its own type and
traceback. The tokenizers built from the file's vocabulary and merges
check their contents with the same `SpecError` (`_byte_pair_arguments`,
`WordPieceTokenizer`); the values this module passes beside them (flags,
templates, roles) are checked here first, so any other error from a
constructor is a fault of the code.
"""

from __future__ import annotations

from tf_input.tokenizers._byte_level import byte_level
from tf_input.tokenizers._files import TokenizerFileError
from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from tf_input.tokenizers.hf import added_tokens
from tf_input.tokenizers.hf import decoders
from tf_input.tokenizers.hf import pre_tokenizers
from tf_input.tokenizers.hf import processors
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import require

_ROLE_KEYS = {
    "bos": "bos_token",
    "eos": "eos_token",
    "unk": "unk_token",
    "pad": "pad_token",
    "cls": "cls_token",
    "sep": "sep_token",
    "mask": "mask_token",
}
_MODEL = "`model`"
_BYTE_SYMBOLS = [byte_level(bytes([b])) for b in range(256)]


def load(path, text, data, config, *, add_special_tokens, split):
    """The tokenizer of the parsed `tokenizer.json` `data` (its `text`)
    and `tokenizer_config.json` `config` (a dict, maybe empty)."""
    where = repr(str(path))
    model = data["model"]
    kind = model.get("type") or _guess_model_type(model)
    builders = {
        "WordPiece": _wordpiece,
        "BPE": _byte_pair,
        "Unigram": _unigram,
    }
    if kind not in builders:
        if kind == "WordLevel":
            raise TokenizerFileError(
                f"{where}: the model type {kind!r} is not supported yet."
            )
        raise TokenizerFileError(
            f"{where}: unknown model type {kind!r}; supported are BPE "
            "(byte-level or SentencePiece-style), Unigram and WordPiece."
        )
    try:
        return builders[kind](
            text,
            data,
            config,
            add_special_tokens=add_special_tokens,
            split_special_tokens=split,
        )
    except SpecError as error:
        raise TokenizerFileError(f"{where}: {error}") from None


def _guess_model_type(model):
    if "merges" in model:
        return "BPE"
    if isinstance(model.get("vocab"), list):
        return "Unigram"
    if "max_input_chars_per_word" in model:
        return "WordPiece"
    return None


def _content(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def roles(data, config, token_ids):
    """Special-token roles from tokenizer_config.json and the file itself."""
    out = {}
    for role, key in _ROLE_KEYS.items():
        token = _content(config.get(key))
        if token is None:
            continue
        if token not in token_ids:
            raise SpecError(
                f"tokenizer_config.json names {token!r} as {key}, but it is "
                "not a token of tokenizer.json"
            )
        out[role] = token
    padding = data.get("padding")
    if "pad" not in out and isinstance(padding, dict):
        token = padding.get("pad_token")
        if token in token_ids:
            out["pad"] = token
    unk = data["model"].get("unk_token")
    if "unk" not in out and isinstance(unk, str) and unk in token_ids:
        out["unk"] = unk
    return out


def _specials(data, config, unk_id=False):
    """`token_ids -> (roles, templates)` for a `JsonFileTokenizer`, called
    once it has checked the file (with `unk_id`, the `unk` role defaults
    to the model's `unk_id` piece)."""

    def specials(token_ids):
        found = roles(data, config, token_ids)
        if unk_id:
            model = data["model"]
            found.setdefault("unk", model["vocab"][model["unk_id"]][0])
        post = data.get("post_processor")
        return found, processors.from_post_processor(post, token_ids)

    return specials


# --- SentencePiece-style models ---------------------------------------------
def _unigram(text, data, config, **kwargs):
    """A Unigram model (ALBERT, T5, XLM-R: SentencePiece unigram)."""
    from tf_input.tokenizers.unigram_tokenizer import UnigramTokenizer

    return UnigramTokenizer._from_file(
        text, data, _specials(data, config, unk_id=True), **kwargs
    )


def _byte_pair(text, data, config, **kwargs):
    """A BPE model: SentencePiece-style (`byte_fallback` or a "▁"
    Metaspace) or byte-level."""
    parts = flatten(
        data.get("pre_tokenizer"), "pre-tokenizer", "`pre_tokenizer`"
    )
    metaspace = any(p["type"] == "Metaspace" for p in parts)
    if data["model"].get("byte_fallback") or metaspace:
        from tf_input.tokenizers.metaspace_byte_pair_tokenizer import (
            MetaspaceBytePairTokenizer,
        )

        return MetaspaceBytePairTokenizer._from_file(
            text, data, _specials(data, config), **kwargs
        )
    return _byte_level_bpe(data, config, **kwargs)


# --- Byte-level BPE, WordPiece ---------------------------------------------
def _byte_level_bpe(data, config, **kwargs):
    model = data["model"]
    # Unknown pre-tokenizer types first: they are the clearer error.
    parts = pre_tokenizers.parse(data.get("pre_tokenizer"), "`pre_tokenizer`")
    if not any(isinstance(p, pre_tokenizers.ByteLevel) for p in parts):
        raise SpecError(
            "the model type 'BPE' without a ByteLevel pre-tokenizer (not a "
            "byte-level BPE) is not supported"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise SpecError(f"a BPE {key} ({model[key]!r}) is not supported")
    if model.get("dropout"):
        raise SpecError(
            f"BPE dropout ({model['dropout']}) is random; it is not supported"
        )
    decoder = data.get("decoder")
    if not decoders.is_byte_level(decoders.parse(decoder)):
        raise SpecError(
            f"the decoder {excerpt(decoder)} is not supported for a "
            "byte-level BPE (only ByteLevel)"
        )
    vocabulary = require(model, "vocab", _MODEL)
    if not isinstance(vocabulary, dict):
        raise SpecError("a BPE 'vocab' must be an object")
    merges = require(model, "merges", _MODEL)
    if not isinstance(merges, list):
        # A string would be read as the path of a merges.txt.
        raise SpecTypeError(
            f"{_MODEL}: a BPE 'merges' must be a list. Received: "
            f"{excerpt(merges)}."
        )
    added = added_tokens.check_added_tokens(
        data.get("added_tokens") or [], "`added_tokens`"
    )
    missing = [c for c in _BYTE_SYMBOLS if c not in vocabulary]
    if missing and model.get("unk_token"):
        raise SpecError(
            "a byte-level BPE whose vocabulary lacks byte symbols "
            f"({missing[:3]}...) and has an unk_token is not supported"
        )
    token_ids = {**vocabulary, **{t["content"]: t["id"] for t in added}}
    templates = processors.from_post_processor(
        data.get("post_processor"), token_ids
    )
    return BytePairTokenizer(
        vocabulary,
        merges,
        pretokenizer=data.get("pre_tokenizer"),
        normalizer=data.get("normalizer"),
        added_tokens=data.get("added_tokens") or [],
        ignore_merges=bool(model.get("ignore_merges", False)),
        templates=templates,
        roles=roles(data, config, token_ids),
        trim_offsets=_trims_offsets(data.get("post_processor")),
        **kwargs,
    )


def _trims_offsets(post_processor):
    """Whether the post-processor trims spaces from offsets (a ByteLevel
    part with `trim_offsets`; its default is true)."""
    return any(
        part["type"] == "ByteLevel" and bool(part.get("trim_offsets", True))
        for part in flatten(
            post_processor, "post-processor", "`post_processor`"
        )
    )


def _wordpiece(text, data, config, *, add_special_tokens, **kwargs):
    from tf_input.tokenizers.word_piece_tokenizer import WordPieceTokenizer

    model = data["model"]
    normalizer = data.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        raise SpecError(
            "a WordPiece file needs a BertNormalizer; received "
            f"{excerpt(normalizer)}"
        )
    for key in ("clean_text", "handle_chinese_chars"):
        if normalizer.get(key, True) is not True:
            raise SpecError(f"BertNormalizer with {key}=false is not supported")
    pre = data.get("pre_tokenizer") or {}
    if pre.get("type") != "BertPreTokenizer":
        raise SpecError(
            "a WordPiece file needs the BertPreTokenizer; received "
            f"{excerpt(pre)}"
        )
    if model.get("continuing_subword_prefix", "##") != "##":
        raise SpecError(
            "a WordPiece continuing_subword_prefix other than '##' is not "
            "supported"
        )
    decoder = data.get("decoder")
    parts = decoders.parse(decoder)
    if parts and (
        len(parts) != 1
        or parts[0]["type"] != "WordPiece"
        or parts[0].get("prefix", "##") != "##"
        or not parts[0].get("cleanup", True)
    ):
        raise SpecError(
            f"the decoder {excerpt(decoder)} is not supported for WordPiece"
        )
    vocabulary = require(model, "vocab", _MODEL)
    if not isinstance(vocabulary, dict):
        raise SpecTypeError("a WordPiece 'vocab' must be an object")
    if not all(_is_int(i) for i in vocabulary.values()):
        raise SpecTypeError("WordPiece ids must be integers")
    tokens = sorted(vocabulary, key=vocabulary.get)
    if [vocabulary[t] for t in tokens] != list(range(len(tokens))):
        raise SpecError("WordPiece ids must be 0..n-1, each once")
    unknown = model.get("unk_token", "[UNK]")
    if not isinstance(unknown, str) or not unknown:
        error = SpecError if isinstance(unknown, str) else SpecTypeError
        raise error(
            f"{_MODEL}: a WordPiece 'unk_token' must be a non-empty string. "
            f"Received: {excerpt(unknown)}."
        )
    longest = model.get("max_input_chars_per_word", 100)
    if not _is_int(longest) or longest < 1:
        error = SpecError if _is_int(longest) else SpecTypeError
        raise error(
            f"{_MODEL}: 'max_input_chars_per_word' must be an integer >= 1. "
            f"Received: {excerpt(longest)}."
        )
    _check_wordpiece_added_tokens(data, vocabulary, unknown)
    strip = normalizer.get("strip_accents")
    return WordPieceTokenizer(
        tokens,
        lowercase=bool(normalizer.get("lowercase", True)),
        strip_accents=None if strip is None else bool(strip),
        unknown_token=unknown,
        max_word_length=longest,
        add_special_tokens=add_special_tokens,
        templates=processors.from_post_processor(
            data.get("post_processor"), vocabulary
        ),
    )


def _is_int(value):
    """A JSON integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_wordpiece_added_tokens(data, vocabulary, unknown):
    handled = {unknown, "[SEP]", "[CLS]", "[PAD]", "[MASK]"}
    for token in added_tokens.check_added_tokens(
        data.get("added_tokens") or [], "`added_tokens`"
    ):
        plain = not any(token[k] for k in ("lstrip", "rstrip", "single_word"))
        if (
            token["content"] not in handled
            or not plain
            or vocabulary.get(token["content"]) != token["id"]
        ):
            raise SpecError(
                f"the added token {token!r} is not supported for WordPiece "
                "(only the vocabulary's [UNK], [SEP], [CLS], [PAD], [MASK])"
            )
