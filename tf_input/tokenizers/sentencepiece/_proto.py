"""The `sentencepiece.ModelProto` wire format, without `sentencepiece`.

Reads the parts of a `.model` file this package needs and writes rewritten
models for TF Text's ops. Field numbers are those of sentencepiece's
`sentencepiece_model.proto`.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

# `ModelProto.SentencePiece.Type`: the kinds of piece.
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
# `TrainerSpec.ModelType`.
_UNIGRAM, _BPE, _WORD, _CHAR = 1, 2, 3, 4
_MODEL_TYPES = {_UNIGRAM: "unigram", _BPE: "bpe", _WORD: "word", _CHAR: "char"}

# Wire types.
_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5

# `ModelProto` fields.
MODEL_PIECES, MODEL_TRAINER_SPEC, MODEL_NORMALIZER_SPEC = 1, 2, 3
# `ModelProto.SentencePiece` fields.
PIECE_TEXT, PIECE_SCORE, PIECE_TYPE = 1, 2, 3
# `TrainerSpec` fields.
TRAINER_MODEL_TYPE = 3
TRAINER_TREAT_WHITESPACE_AS_SUFFIX = 24
TRAINER_BYTE_FALLBACK = 35
TRAINER_UNK_ID, TRAINER_BOS_ID, TRAINER_EOS_ID, TRAINER_PAD_ID = 40, 41, 42, 43
TRAINER_UNK_SURFACE = 44
TRAINER_UNK_PIECE = 45
# `NormalizerSpec` fields.
PRECOMPILED_CHARSMAP = 2
ADD_DUMMY_PREFIX = 3
REMOVE_EXTRA_WHITESPACES = 4
ESCAPE_WHITESPACES = 5

_SPACE = "\u2581"  # "▁", SentencePiece's escaped space.


class _ProtoError(ValueError):
    pass


def _read_varint(data, pos):
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise _ProtoError("a varint runs past the end of the data")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _ProtoError("a varint is longer than 10 bytes")


def _fields(data):
    """Yields `(field_number, wire_type, value)` of one serialized message."""
    pos, size = 0, len(data)
    while pos < size:
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise _ProtoError("field number 0")
        if wire_type == _VARINT:
            value, pos = _read_varint(data, pos)
        elif wire_type in (_FIXED64, _FIXED32):
            width = 8 if wire_type == _FIXED64 else 4
            if pos + width > size:
                raise _ProtoError("a fixed-width field runs past the end")
            value, pos = data[pos : pos + width], pos + width
        elif wire_type == _LENGTH_DELIMITED:
            length, pos = _read_varint(data, pos)
            if pos + length > size:
                raise _ProtoError("a length-delimited field runs past the end")
            value, pos = data[pos : pos + length], pos + length
        else:
            raise _ProtoError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _int32(value):
    value &= (1 << 64) - 1
    value = value - (1 << 64) if value >= 1 << 63 else value
    return ((value + (1 << 31)) % (1 << 32)) - (1 << 31)


def _varint_bytes(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _varint_field(number, value):
    return _varint_bytes(number << 3) + _varint_bytes(int(value))


def _bytes_field(number, value):
    key = number << 3 | _LENGTH_DELIMITED
    return _varint_bytes(key) + _varint_bytes(len(value)) + value


def _piece_message(piece, score, piece_type):
    text = piece.encode("utf-8")
    score = struct.pack("<f", score)
    if len(text) < 110:  # Every length fits one varint byte.
        # Keys: 0x0A = PIECE_TEXT bytes, 0x15 = PIECE_SCORE fixed32,
        # 0x18 = PIECE_TYPE varint; the outer 0x0A = MODEL_PIECES bytes.
        body = b"\n%c%s\x15%s\x18%c" % (len(text), text, score, piece_type)
        return b"\n%c%s" % (len(body), body)
    body = _bytes_field(PIECE_TEXT, text)
    body += _varint_bytes(PIECE_SCORE << 3 | _FIXED32) + score
    body += _varint_field(PIECE_TYPE, piece_type)
    return _bytes_field(MODEL_PIECES, body)


class _Model:
    """The parts of a `ModelProto` this tokenizer needs."""

    def __init__(self, data):
        self.pieces, self.scores, self.types = [], [], []
        trainer, normalizer = b"", b""
        messages = (MODEL_PIECES, MODEL_TRAINER_SPEC, MODEL_NORMALIZER_SPEC)
        for number, wire_type, value in _fields(data):
            if number in messages and wire_type != _LENGTH_DELIMITED:
                raise _ProtoError(f"field {number} has wire type {wire_type}")
            if number == MODEL_PIECES:
                self._add_piece(value)
            elif number == MODEL_TRAINER_SPEC:
                trainer += value  # Repeated sub-messages merge.
            elif number == MODEL_NORMALIZER_SPEC:
                normalizer += value
        self.trainer_bytes, self.normalizer_bytes = trainer, normalizer
        spec = {}
        for number, wire_type, value in _fields(trainer):
            spec[number] = value
        self.model_type = spec.get(TRAINER_MODEL_TYPE, _UNIGRAM)
        self.suffix_space = bool(
            spec.get(TRAINER_TREAT_WHITESPACE_AS_SUFFIX, 0)
        )
        self.byte_fallback = bool(spec.get(TRAINER_BYTE_FALLBACK, 0))
        self.unk_id = _int32(spec.get(TRAINER_UNK_ID, 0))
        self.bos_id = _int32(spec.get(TRAINER_BOS_ID, 1))
        self.eos_id = _int32(spec.get(TRAINER_EOS_ID, 2))
        self.pad_id = _int32(spec.get(TRAINER_PAD_ID, -1))
        surface = spec.get(TRAINER_UNK_SURFACE, " \u2047 ".encode())
        self.unk_surface = bytes(surface).decode("utf-8", "replace")
        norm = {}
        for number, wire_type, value in _fields(normalizer):
            norm[number] = value
        self.charsmap = bytes(norm.get(PRECOMPILED_CHARSMAP, b""))
        self.add_dummy_prefix = bool(norm.get(ADD_DUMMY_PREFIX, 1))
        self.remove_extra_whitespaces = bool(
            norm.get(REMOVE_EXTRA_WHITESPACES, 1)
        )
        self.escape_whitespaces = bool(norm.get(ESCAPE_WHITESPACES, 1))

    def _add_piece(self, data):
        piece, score, piece_type = None, 0.0, _NORMAL
        for number, wire_type, value in _fields(data):
            if number == PIECE_TEXT and wire_type == _LENGTH_DELIMITED:
                try:
                    piece = bytes(value).decode("utf-8")
                except UnicodeDecodeError as error:
                    raise _ProtoError(
                        f"piece {len(self.pieces)} is not UTF-8"
                    ) from error
            elif number == PIECE_SCORE and wire_type == _FIXED32:
                (score,) = struct.unpack("<f", value)
            elif number == PIECE_TYPE and wire_type == _VARINT:
                piece_type = value
        if piece is None:
            raise _ProtoError(f"piece {len(self.pieces)} has no text")
        self.pieces.append(piece)
        self.scores.append(np.float32(score))
        self.types.append(piece_type)

    def serialize(self, pieces, trainer_extra=b"", normalizer_extra=b""):
        """A new ModelProto: `pieces` plus this model's specs and overrides.

        Later fields override earlier ones (protobuf merge rules), so the
        `*_extra` bytes are appended overrides. The self-test data and the
        denormalizer are dropped.
        """
        out = bytearray()
        for piece, score, piece_type in pieces:
            out += _piece_message(piece, score, piece_type)
        out += _bytes_field(
            MODEL_TRAINER_SPEC, self.trainer_bytes + trainer_extra
        )
        out += _bytes_field(
            MODEL_NORMALIZER_SPEC, self.normalizer_bytes + normalizer_extra
        )
        return bytes(out)


@functools.lru_cache(maxsize=8)
def _read_model(data):
    return _Model(data)  # Cached: parsing 30,000 pieces is slow.
