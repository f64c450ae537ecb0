"""Reading a `.model` argument and checking it, with errors naming it."""

from __future__ import annotations

import os

from tf_input.tokenizers.hf.normalizers.precompiled import CharsmapError
from tf_input.tokenizers.hf.normalizers.precompiled import read_charsmap
from tf_input.tokenizers.sentencepiece._proto import _BPE
from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _MODEL_TYPES
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _UNIGRAM
from tf_input.tokenizers.sentencepiece._proto import _UNKNOWN
from tf_input.tokenizers.sentencepiece._proto import _ProtoError
from tf_input.tokenizers.sentencepiece._proto import _read_model


def _load_proto(proto):
    """Returns `(bytes, description)` of a path or bytes argument."""
    if isinstance(proto, (bytes, bytearray, memoryview)):
        return bytes(proto), "the `proto` bytes"
    if isinstance(proto, (str, os.PathLike)):
        path = os.fspath(proto)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                "SentencePieceTokenizer could not find the model file "
                f"{path!r}. Pass the path of a `.model` file (a serialized "
                "sentencepiece ModelProto) or its bytes."
            )
        with open(path, "rb") as f:
            return f.read(), f"the model file {path!r}"
    raise TypeError(
        "`proto` must be the path of a SentencePiece `.model` file or its "
        f"bytes. Received: proto of type {type(proto).__name__}."
    )


def _parse_model(data, source):
    def problem(reason):
        return ValueError(
            f"SentencePieceTokenizer could not read {source}: {reason}. "
            "Expected a serialized sentencepiece ModelProto (a `.model` "
            "file written by `sentencepiece` training)."
        )

    if not data:
        raise problem("it is empty")
    try:
        model = _read_model(data)
    except _ProtoError as error:
        raise problem(f"it is not a valid protocol buffer ({error})") from None
    if not model.pieces:
        raise problem("it has no pieces")
    if model.model_type not in (_UNIGRAM, _BPE):
        name = _MODEL_TYPES.get(model.model_type, model.model_type)
        raise problem(
            f"model type {name!r} is not supported (only 'unigram' and "
            "'bpe' models are)"
        )
    size = len(model.pieces)
    if not 0 <= model.unk_id < size or model.types[model.unk_id] != _UNKNOWN:
        raise problem(f"unk_id={model.unk_id} is not an unknown piece")
    if model.types.count(_UNKNOWN) != 1:
        raise problem("it must have exactly one unknown piece")
    if _NORMAL not in model.types:
        raise problem("it has no normal pieces")
    if len(set(model.pieces)) != size:
        raise problem("a piece is defined twice")
    for i, (piece, piece_type) in enumerate(zip(model.pieces, model.types)):
        if not piece:
            raise problem(f"piece {i} is empty")
        if not _NORMAL <= piece_type <= _BYTE:
            raise problem(f"piece {i} has unknown type {piece_type}")
    for name in ("bos_id", "eos_id", "pad_id"):
        value = getattr(model, name)
        if not -1 <= value < size:
            raise problem(f"{name}={value} is outside [-1, {size})")
    if model.charsmap:
        try:
            read_charsmap(model.charsmap)
        except CharsmapError as error:
            reason = f"its normalization rules are corrupt ({error})"
            raise problem(reason) from None
    return model
