"""SentencePiece tokenization inside the TensorFlow graph.

`SentencePieceTokenizer` reads a `.model` file (a serialized
`sentencepiece.ModelProto`) and gives the ids that the `sentencepiece`
library (0.2.3) gives, with TensorFlow and TF Text ops only. The proto is
parsed here (wire format), so `sentencepiece` itself is not needed.

How each model type is encoded, and why:

* BPE models run TF Text's `SentencepieceTokenizer` op, which embeds the
  `sentencepiece` C++ library; its merges equal version 0.2.3's.
* Unigram models cannot use that op: it compares a double-precision
  candidate with a float32 best score in its Viterbi search, where
  `sentencepiece` 0.2.3 compares two float32 scores, so exact float ties go
  the other way (ALBERT on the Chinese novel in shared/data: 50 lines of
  5,591 differ, e.g. `*` `**` where the library gives `*` `**` and the op
  `**` `*`). TF Text's `FastSentencepieceTokenizer` op does the float32
  search the library's way but differs around unknown characters,
  user-defined pieces and some whitespace, so the model it gets is rewritten:

  - user-defined pieces get the library's score `0.1 * (bytes - 1)`;
  - every BMP character and emoji that is not a piece of its own gets a
    "pseudo piece" scored like the library's unknown node (`min score -
    10`); afterwards pseudo ids become the unknown id (or the byte-fallback
    ids of the character), and runs of unknowns merge, as in the library.

  Lines the fast op would still treat differently take a second route:
  invalid UTF-8, tabs or newlines that survive normalization, a literal
  "▁", NUL, characters above the BMP that no piece uses, user-defined
  pieces a normalization rule could touch, and every line of models with
  `treat_whitespace_as_suffix` or without the dummy prefix. There the
  library's own normalizer runs (the library op with a character model),
  rare characters are replaced by a placeholder that has a pseudo piece,
  and the fast op runs with normalization switched off.

Known limit: on a line whose best-path score passes 1e5 in magnitude
(about 25,000 tokens) `sentencepiece` 0.2.3 re-centres its float32 scores,
which no TF op does, so exact ties after that point may be broken
differently (measured on 1 MB single lines: the first differing token was
number 24,658 to 79,336, depending on model and text).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
import struct

import keras
import numpy as np
import tensorflow as tf
from tensorflow_text.core.pybinds import pywrap_model_converter
from tensorflow_text.python.ops import fast_sentencepiece_tokenizer
from tensorflow_text.python.ops import sentencepiece_tokenizer

from tf_input.tokenizers.base import Tokenizer

_FAST_OPS = fast_sentencepiece_tokenizer.gen_fast_sentencepiece_tokenizer
_LIBRARY_OPS = sentencepiece_tokenizer.gen_sentencepiece_tokenizer

# `ModelProto.SentencePiece.Type` and `TrainerSpec.ModelType` values.
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
_UNIGRAM, _BPE, _WORD, _CHAR = 1, 2, 3, 4
_MODEL_TYPES = {_UNIGRAM: "unigram", _BPE: "bpe", _WORD: "word", _CHAR: "char"}

_SPACE = "\u2581"  # "▁", SentencePiece's escaped space.
_REPLACEMENT = "\ufffd"
_UNK_PENALTY = np.float32(10.0)
# Space-free runs of this many bytes or more are normalized through the
# byte-fallback model (see `SentencePieceTokenizer._normalize`). Shorter
# runs cost the merging model at most a few KB of copying per character;
# 1 MB of random bytes has no run this long (its longest is ~3 KB).
_LONG_RUN = 4096


class _ProtoError(ValueError):
    pass


# --- Protocol-buffer wire format (no dependency on `sentencepiece`) ---------
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
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if pos + width > size:
                raise _ProtoError("a fixed-width field runs past the end")
            value, pos = data[pos : pos + width], pos + width
        elif wire_type == 2:
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
    return _varint_bytes(number << 3 | 2) + _varint_bytes(len(value)) + value


def _piece_message(piece, score, piece_type):
    text = piece.encode("utf-8")
    score = struct.pack("<f", score)
    if len(text) < 110:  # Every length fits one varint byte.
        body = b"\n%c%s\x15%s\x18%c" % (len(text), text, score, piece_type)
        return b"\n%c%s" % (len(body), body)
    body = _bytes_field(1, text) + _varint_bytes(2 << 3 | 5) + score
    return _bytes_field(1, body + _varint_field(3, piece_type))


class _Model:
    """The parts of a `ModelProto` this tokenizer needs."""

    def __init__(self, data):
        self.pieces, self.scores, self.types = [], [], []
        trainer, normalizer = b"", b""
        for number, wire_type, value in _fields(data):
            if number in (1, 2, 3) and wire_type != 2:
                raise _ProtoError(f"field {number} has wire type {wire_type}")
            if number == 1:
                self._add_piece(value)
            elif number == 2:
                trainer += value  # Repeated sub-messages merge.
            elif number == 3:
                normalizer += value
        self.trainer_bytes, self.normalizer_bytes = trainer, normalizer
        spec = {}
        for number, wire_type, value in _fields(trainer):
            spec[number] = value
        self.model_type = spec.get(3, _UNIGRAM)
        self.suffix_space = bool(spec.get(24, 0))
        self.unk_id = _int32(spec.get(40, 0))
        self.bos_id = _int32(spec.get(41, 1))
        self.eos_id = _int32(spec.get(42, 2))
        self.pad_id = _int32(spec.get(43, -1))
        surface = spec.get(44, " \u2047 ".encode())
        self.unk_surface = bytes(surface).decode("utf-8", "replace")
        norm = {}
        for number, wire_type, value in _fields(normalizer):
            norm[number] = value
        self.charsmap = bytes(norm.get(2, b""))
        self.add_dummy_prefix = bool(norm.get(3, 1))
        self.remove_extra_whitespaces = bool(norm.get(4, 1))
        self.escape_whitespaces = bool(norm.get(5, 1))

    def _add_piece(self, data):
        piece, score, piece_type = None, 0.0, _NORMAL
        for number, wire_type, value in _fields(data):
            if number == 1 and wire_type == 2:
                try:
                    piece = bytes(value).decode("utf-8")
                except UnicodeDecodeError as error:
                    raise _ProtoError(
                        f"piece {len(self.pieces)} is not UTF-8"
                    ) from error
            elif number == 2 and wire_type == 5:
                (score,) = struct.unpack("<f", value)
            elif number == 3 and wire_type == 0:
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
        out += _bytes_field(2, self.trainer_bytes + trainer_extra)
        out += _bytes_field(3, self.normalizer_bytes + normalizer_extra)
        return bytes(out)


# --- The normalization rules (a Darts-clone double array) --------------------
def _first_chars(children, node, prefix=b""):
    """`[(char, node)]`: the paths of one UTF-8 character below `node`."""
    out = []
    for byte, child in children.get(node, ()):
        path = prefix + bytes([byte])
        lead = path[0]
        need = (
            1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        )
        if len(path) == need:
            try:
                out.append((path.decode("utf-8"), child))
            except UnicodeDecodeError:
                pass
        elif len(path) < need:
            out += _first_chars(children, child, path)
    return out


def _charsmap_facts(blob, is_bad):
    """What routing needs to know about a `precompiled_charsmap`.

    The rules are a Darts-clone double array (a DAG that shares suffixes)
    from key bytes to an offset into a block of NUL-terminated replacement
    strings. Returns `(first, single, unsafe, after_space, spaced)`: the first
    characters of all keys, the characters that are keys on their own, the
    first characters of keys whose replacement satisfies `is_bad(text)`,
    the second characters of keys that start with a space, and the
    characters that are keys on their own with a space in their
    replacement.
    """
    if len(blob) < 4:
        raise _ProtoError("precompiled_charsmap is shorter than 4 bytes")
    (trie_size,) = struct.unpack_from("<I", blob, 0)
    if trie_size % 4 or trie_size == 0 or 4 + trie_size > len(blob):
        raise _ProtoError("precompiled_charsmap has a bad trie size")
    units = np.frombuffer(blob, "<u4", trie_size // 4, 4).astype(np.int64)
    strings = blob[4 + trie_size :]
    count = len(units)
    offsets = (units >> 10) << ((units & (1 << 9)) >> 6)
    labels = units & ((1 << 31) | 0xFF)
    codes = np.arange(1, 256)
    children, values = {}, {}
    seen = np.zeros(count, bool)
    seen[0] = True
    frontier = np.array([0])
    while frontier.size:
        child = (frontier ^ offsets[frontier])[:, None] ^ codes[None, :]
        inside = child < count
        inside &= labels[np.where(inside, child, 0)] == codes[None, :]
        rows, cols = np.nonzero(inside)
        kids = child[rows, cols]
        for parent, byte, kid in zip(
            frontier[rows].tolist(), codes[cols].tolist(), kids.tolist()
        ):
            children.setdefault(parent, []).append((byte, kid))
        for kid in kids[((units[kids] >> 8) & 1) == 1].tolist():
            leaf = kid ^ int(offsets[kid])
            if leaf >= count:
                raise _ProtoError("a normalization rule points outside")
            values[kid] = int(units[leaf]) & ((1 << 31) - 1)
        frontier = np.unique(kids[~seen[kids]])
        seen[frontier] = True
    verdicts = {}
    for value in set(values.values()):
        end = strings.find(b"\0", value)
        if value >= len(strings) or end < 0:
            raise _ProtoError("a normalization rule has no replacement")
        text = strings[value:end].decode("utf-8", "replace")
        verdicts[value] = is_bad(text)
    parents = {}
    for parent, edges in children.items():
        for _, kid in edges:
            parents.setdefault(kid, []).append(parent)
    bad = {node for node, value in values.items() if verdicts[value]}
    stack = list(bad)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in bad:
                bad.add(parent)
                stack.append(parent)
    firsts = _first_chars(children, 0)
    single = {c for c, node in firsts if node in values}
    unsafe = {c for c, node in firsts if node in bad}
    after_space = set()
    for c, node in firsts:
        if c == " ":
            after_space |= {c2 for c2, _ in _first_chars(children, node)}
    spaced = {
        c
        for c, node in firsts
        if node in values and " " in _replacement(strings, values[node])
    }
    return {c for c, _ in firsts}, single, unsafe, after_space, spaced


def _replacement(strings, value):
    end = strings.find(b"\0", value)
    return strings[value:end].decode("utf-8", "replace")


def _char_class(codepoints):
    """An RE2 character class body for a set of code points."""
    parts, points = [], sorted(codepoints)
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        low, high = points[i], points[j]
        parts.append(
            f"\\x{{{low:x}}}"
            if low == high
            else f"\\x{{{low:x}}}-\\x{{{high:x}}}"
        )
        i = j + 1
    return "".join(parts)


def _outside_bmp_class(known):
    """Class body for code points above 0xFFFF that are not in `known`."""
    parts, low = [], 0x10000
    for c in sorted(c for c in known if c > 0xFFFF):
        if c > low:
            parts.append(f"\\x{{{low:x}}}-\\x{{{c - 1:x}}}")
        low = c + 1
    if low <= 0x10FFFF:
        parts.append(f"\\x{{{low:x}}}-\\x{{10ffff}}")
    return "".join(parts)


class _UnigramPlan:
    """The rewritten models and routing patterns for a unigram model."""

    def __init__(self, model):
        normal = [s for s, t in zip(model.scores, model.types) if t == _NORMAL]
        unk_score = np.float32(min(normal)) - _UNK_PENALTY
        pieces = []
        for piece, score, piece_type in zip(
            model.pieces, model.scores, model.types
        ):
            if piece_type == _USER_DEFINED:
                # sentencepiece 0.2.3 scores a user-defined piece by its
                # length in bytes: GetUserDefinedScore = 0.1f * (length - 1).
                length = np.float32(len(piece.encode("utf-8")) - 1)
                piece_type, score = _NORMAL, np.float32(0.1) * length
            elif piece_type in (_UNUSED, _BYTE):
                piece_type = _CONTROL  # Never matched; keeps the ids.
            pieces.append((piece, score, piece_type))
        matchable = [
            p
            for p, t in zip(model.pieces, model.types)
            if t in (_NORMAL, _USER_DEFINED)
        ]
        singles = {ord(p) for p in matchable if len(p) == 1}
        in_vocabulary = {ord(c) for p in matchable for c in p}
        # Every BMP character, every emoji, and every other character that a
        # piece uses gets a piece of its own if it has none (a "pseudo
        # piece"), scored like the library's unknown node.
        covered = in_vocabulary | _EMOJI
        pseudo = sorted((_BMP | {c for c in covered if c > 0xFFFF}) - singles)
        self.pseudo_chars = [chr(c) for c in pseudo]
        pieces += [(c, unk_score, _NORMAL) for c in self.pseudo_chars]
        # Characters still without a piece: NUL and characters above the
        # BMP that no piece uses. The second route replaces them by a
        # private-use character that no piece uses (so it has a pseudo
        # piece and cannot join a neighbour).
        self.placeholder = next(
            chr(c) for c in range(0xE000, 0xF900) if c not in in_vocabulary
        )
        self.rare_pattern = (
            f"[\\x00{_outside_bmp_class(covered)}"
            f"\\x{{{ord(self.placeholder):x}}}]"
        )
        # The first route lets the fast op normalize. A line is safe for it
        # unless it has a character whose normalized form the fast op would
        # treat differently: tabs and newlines (whitespace to the fast op,
        # not to the library), a literal "▁", NUL, characters above the BMP
        # without a piece, or a rule that could join the dummy-prefix space.
        quirks = set()
        if model.escape_whitespaces or model.remove_extra_whitespaces:
            quirks = {"\t", "\r", "\n"}
        if model.escape_whitespaces and model.remove_extra_whitespaces:
            # The library strips a trailing "▁" even if the text had it.
            quirks.add(_SPACE)

        def is_bad(text):
            return any(
                c in quirks
                or c == "\0"
                or (ord(c) > 0xFFFF and ord(c) not in covered)
                for c in text
            )

        first_keys, single_keys, unsafe, after_space, spaced = (set(),) * 5
        if model.charsmap:
            facts = _charsmap_facts(model.charsmap, is_bad)
            first_keys, single_keys, unsafe, after_space, spaced = facts
        unsafe = {ord(c) for c in unsafe | after_space | {self.placeholder}}
        # RE2 reads invalid UTF-8 as U+FFFD or as a surrogate: such lines
        # (and a literal U+FFFD) take the second route, whose normalizer
        # replaces bad bytes as the library does.
        unsafe |= set(range(0xD800, 0xE000)) | {0xFFFD}
        unsafe |= {ord(c) for c in quirks | {"\0"} if c not in single_keys}
        # The library keeps user-defined pieces out of normalization; the
        # fast op does not. Lines holding one that a rule could change (or
        # with whitespace) take the second route.
        touchy = first_keys | quirks | {" ", _SPACE}
        joined = [
            "".join(f"\\x{{{ord(c):x}}}" for c in p)
            for p, t in zip(model.pieces, model.types)
            if t == _USER_DEFINED and touchy.intersection(p)
        ]
        self.user_pattern = (
            f"(?s).*(?:{'|'.join(joined)}).*" if joined else None
        )
        self.all_second_route = model.suffix_space or (
            model.remove_extra_whitespaces and not model.add_dummy_prefix
        )
        known = covered | {ord(c) for c in single_keys}
        body = _char_class(unsafe) + _outside_bmp_class(known)
        self.safe_pattern = f"[^{body}]*"
        # Second-route lines with no character a rule starts with and no
        # user-defined piece are normalized by the whitespace rules alone
        # (`SentencePieceTokenizer._plain_normalize`); valid UTF-8 only.
        self.plain_pattern = None
        if not model.suffix_space:
            ruled = {ord(c) for c in first_keys} | {
                ord(c)
                for p, t in zip(model.pieces, model.types)
                if t == _USER_DEFINED
                for c in p
            }
            ruled |= set(range(0xD800, 0xE000))
            self.plain_pattern = f"[^{_char_class(ruled)}]*"
        # What ends a run of unknown pieces for the library op: a space, or
        # a character the rules turn into one (see `_LONG_RUN`).
        self.run_break_pattern = None
        if spaced:
            self.run_break_pattern = (
                f"[{_char_class({ord(c) for c in spaced})}]"
            )
        keep = b"" if model.charsmap else _bytes_field(2, _EMPTY_CHARSMAP)
        plain = b"".join(
            [
                _bytes_field(2, _EMPTY_CHARSMAP),
                _varint_field(3, 0),  # add_dummy_prefix
                _varint_field(4, 0),  # remove_extra_whitespaces
                _varint_field(5, 0),  # escape_whitespaces
            ]
        )
        convert = pywrap_model_converter.convert_sentencepiece_model
        self.fast = convert(model.serialize(pieces, b"", keep))
        self.fast_plain = convert(model.serialize(pieces, b"", plain))


@functools.lru_cache(maxsize=8)
def _unigram_plan(proto):
    return _UnigramPlan(_read_model(proto))


# An empty normalization trie: every transition fails (see DecodePrecompiled-
# Charsmap in TF Text). Used where the fast op must not normalize.
_EMPTY_CHARSMAP = struct.pack("<I", 1024) + bytes(1024) + b"\0"
_BMP = set(range(1, 0xD800)) | set(range(0xE000, 0x10000))
# Emoji and their tag characters, common outside the BMP.
_EMOJI = set(range(0x1F000, 0x1FB00)) | set(range(0xE0000, 0xE0080))


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


@functools.lru_cache(maxsize=8)
def _read_model(data):
    return _Model(data)  # Cached: ALBERT's 30,000 pieces take ~0.5 s.


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
    if model.model_type == _UNIGRAM:
        try:
            _unigram_plan(data)
        except _ProtoError as error:
            reason = f"its normalization rules are corrupt ({error})"
            raise problem(reason) from None
    return model


def _byte_of_piece(piece):
    """255 for "<0xFF>", else None."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


def _run_library(proto, texts, out_type):
    """TF Text's op around the `sentencepiece` library, on `[N]` strings.

    The model resource is made by an op in the same graph, shared by name
    (a digest of the model) so that it is parsed once per process, not once
    per `tf.data` iterator. A resource made once in `__init__` instead would
    die with the eager kernel cache, which `tf.random.set_seed` clears.
    """
    digest = hashlib.sha256(proto).hexdigest()[:32]
    handle = _LIBRARY_OPS.sentencepiece_op(
        model=proto, shared_name=f"tf_input_sentencepiece_{digest}"
    )
    values, splits = _LIBRARY_OPS.sentencepiece_tokenize_op(
        handle, texts, 0, 1.0, False, False, False, out_type=out_type
    )
    return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


def _run_fast(model, texts):
    """TF Text's fast unigram op (`model` is a converted uint8 tensor)."""
    values, splits = _FAST_OPS.tf_text_fast_sentencepiece_tokenize(
        model, texts, 0, 0, False, False, False
    )
    return tf.RaggedTensor.from_row_splits(
        values, tf.cast(splits, tf.int64), validate=False
    )


class _Traced:
    """The layer's own graphs for eager calls, traced on first use.

    A plain (untracked) object, so that a SavedModel holds only the
    functions its exporter defines. Concrete functions are called directly,
    which keeps TensorFlow's retracing warning quiet when a process builds
    many tokenizers.
    """

    def __init__(self, layer):
        self._layer = layer
        self._tokenize = None
        self._detokenize = None

    def tokenize(self, texts):
        if self._tokenize is None:
            self._tokenize = tf.function(
                self._layer._tokenize_graph
            ).get_concrete_function(tf.TensorSpec([None], tf.string))
        return self._tokenize(texts)

    def detokenize(self, ids):
        if self._detokenize is None:
            spec = tf.RaggedTensorSpec(
                [None, None], tf.int32, 1, row_splits_dtype=tf.int64
            )
            self._detokenize = tf.function(
                self._layer._detokenize_graph
            ).get_concrete_function(spec)
        return self._detokenize(ids)


@keras.saving.register_keras_serializable(package="tf_input")
class SentencePieceTokenizer(Tokenizer):
    """Tokenizes text with a SentencePiece model, id for id as `sentencepiece`.

    Gives exactly the ids of `sentencepiece` 0.2.3's
    `SentencePieceProcessor(model_file=...).encode(...)` for unigram and BPE
    models (normalization rules, user-defined pieces, byte fallback), using
    only TensorFlow and TF Text ops, so it runs in `tf.data.Dataset.map`,
    `tf.function` and a SavedModel. Map it over batches of lines
    (`ds.batch(n).map(tokenizer)`), not over single lines. The model travels
    in `get_config()` (base64), so a `.keras` file or SavedModel needs no
    other file; loading such a SavedModel needs `import tensorflow_text`
    first (its ops live there).

    Invalid UTF-8 is handled as `sentencepiece` handles it: every byte that
    does not start a valid character becomes U+FFFD before normalization.
    Known limit: on a single line whose best-path score passes 1e5 (about
    25,000 tokens, some 100 KB of text) `sentencepiece` re-centres its
    float32 scores and may then break exact ties differently. Parity is
    guaranteed up to `1e5 / |min piece score - 10|` normalized characters
    in a line (each token covers one or more and scores at least that):
    3,729 for sp-test-ja, 4,249 for ALBERT.

    Args:
        proto: str, path-like or bytes. The path of a `.model` file, or its
            contents.
        add_special_tokens: bool. Put the model's BOS id before and its EOS
            id after each sequence (each only if the model defines it, as
            `encode(..., add_bos=True, add_eos=True)` does). Defaults to
            `False`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a string, a list of strings, or a string tensor of shape
            `[]` or `[N]`.

    Returns:
        int32 ids: a 1-D tensor for a scalar string, a `tf.RaggedTensor`
        `[N, None]` for a batch. `detokenize(ids)` equals `sentencepiece`'s
        `decode(ids)`.

    Example:

    >>> import io
    >>> import sentencepiece as spm
    >>> from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
    >>> model = io.BytesIO()
    >>> lines = ["the cat sat on the mat", "a dog sat on a log"] * 10
    >>> spm.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(lines), model_writer=model, vocab_size=40,
    ...     hard_vocab_limit=False, minloglevel=2)
    >>> tokenizer = SentencePieceTokenizer(model.getvalue())
    >>> ids = tokenizer(["the cat sat", "a log"])
    >>> ids
    <tf.RaggedTensor [[3, 6, 9, 8, 3, 14, 4, 3, 7, 4], [3, 5, 18]]>
    >>> [tokenizer.id_to_token(i) for i in ids[1].numpy()]
    ['▁', 'a', '▁log']
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'the cat sat', b'a log']
    >>> reference = spm.SentencePieceProcessor(model_proto=model.getvalue())
    >>> ids.to_list() == reference.encode(["the cat sat", "a log"])
    True
    """

    def __init__(self, proto, *, add_special_tokens=False, **kwargs):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        data, source = _load_proto(proto)
        model = _parse_model(data, source)
        self.proto = data
        self._model = model
        self._special = {
            name: value
            for name, value in (
                ("pad", model.pad_id),
                ("unk", model.unk_id),
                ("bos", model.bos_id),
                ("eos", model.eos_id),
            )
            if value >= 0
        }
        self._start_ids = [model.bos_id] if model.bos_id >= 0 else []
        self._end_ids = [model.eos_id] if model.eos_id >= 0 else []
        # Byte fallback as `sentencepiece` 0.2.3 detects it: "<0x00>" exists
        # and the 256 byte pieces are consecutive.
        self._byte_ids = None
        if "<0x00>" in model.pieces:
            start = model.pieces.index("<0x00>")
            expected = [f"<0x{b:02X}>" for b in range(256)]
            if model.pieces[start : start + 256] != expected:
                raise ValueError(
                    f"SentencePieceTokenizer could not read {source}: its "
                    "byte pieces <0x00>..<0xFF> are not consecutive."
                )
            self._byte_ids = list(range(start, start + 256))
        try:
            if model.model_type == _BPE:
                self._build_bpe(model)
            else:
                self._build_unigram(model)
            self._build_detokenizer(model)
            with tf.init_scope():
                _run_library(self._library_proto, tf.constant([""]), tf.int32)
                if getattr(self, "_byte_normalizer", None) is not None:
                    _run_library(
                        self._byte_normalizer[0], tf.constant([""]), tf.int32
                    )
            # Kept out of object tracking, so that a SavedModel holds only
            # the functions its exporter defines.
            self._traced = _Traced(self)
        except tf.errors.OpError as error:
            raise ValueError(
                f"SentencePieceTokenizer could not load {source}: "
                f"{error.message}"
            ) from None

    # --- Model setup ---------------------------------------------------------
    @staticmethod
    def _normalizer_proto(model, byte_fallback=False):
        """A model that makes the library op return normalized lines.

        A character model turns every character into an unknown piece; runs
        of unknowns are merged, and with string output the op returns their
        normalized text. User-defined pieces stay, as the library keeps
        them out of normalization.

        With `byte_fallback`, unknown characters become the pieces of their
        UTF-8 bytes instead, ids 0.. of the returned byte table; returns
        `(proto, table)`, or None if a user-defined piece is named like a
        byte piece.
        """
        unk = model.pieces[model.unk_id]
        pieces = [(unk, 0.0, _UNKNOWN), (_SPACE, 0.0, _NORMAL)]
        pieces += [
            (p, 0.0, _USER_DEFINED)
            for p, t in zip(model.pieces, model.types)
            if t == _USER_DEFINED and p != _SPACE
        ]
        texts = [b"", _SPACE.encode()] + [p.encode() for p, _, _ in pieces[2:]]
        if byte_fallback:
            names = [f"<0x{b:02X}>" for b in range(256)]
            if set(names) & {p for p, _, _ in pieces}:
                return None
            pieces += [(name, 0.0, _BYTE) for name in names]
            texts += [bytes([b]) for b in range(256)]
        trainer = b"".join(
            [
                _varint_field(3, _CHAR),
                _varint_field(35, int(byte_fallback)),
                _varint_field(40, 0),  # unk_id
                _varint_field(41, -1),  # bos_id
                _varint_field(42, -1),  # eos_id
                _varint_field(43, -1),  # pad_id
                _bytes_field(45, unk.encode("utf-8")),
            ]
        )
        proto = model.serialize(pieces, trainer_extra=trainer)
        return (proto, texts) if byte_fallback else proto

    def _build_bpe(self, model):
        # The library's own BPE (TF Text embeds `sentencepiece`); its merges,
        # normalization and user-defined pieces equal version 0.2.3's.
        self._library_proto = self.proto

    def _build_unigram(self, model):
        plan = _unigram_plan(self.proto)
        self._pseudo_start = len(model.pieces)
        self._placeholder = plan.placeholder
        self._rare_pattern = plan.rare_pattern
        self._safe_pattern = plan.safe_pattern
        self._all_second_route = plan.all_second_route
        self._user_pattern = plan.user_pattern
        self._fast = tf.constant(np.frombuffer(plan.fast, np.uint8))
        self._fast_plain = tf.constant(np.frombuffer(plan.fast_plain, np.uint8))
        self._library_proto = self._normalizer_proto(model)
        self._plain_pattern = plan.plain_pattern
        self._run_break_pattern = plan.run_break_pattern
        self._byte_normalizer = self._normalizer_proto(model, True)
        if self._byte_normalizer is not None:
            proto, texts = self._byte_normalizer
            self._byte_normalizer = (proto, tf.constant(texts, tf.string))
        # Pseudo ids -> output ids: the unknown id, or the character's bytes.
        self._pseudo_outputs = None
        if self._byte_ids is not None:
            values, lengths = [], []
            for c in plan.pseudo_chars:
                raw = c.encode("utf-8")
                values += [self._byte_ids[b] for b in raw]
                lengths.append(len(raw))
            self._pseudo_outputs = (
                tf.constant(values, tf.int32),
                tf.constant(lengths, tf.int64),
            )
            self._placeholder_id = len(model.pieces) + plan.pseudo_chars.index(
                plan.placeholder
            )
            self._byte_id_table = tf.constant(self._byte_ids, tf.int32)

    def _build_detokenizer(self, model):
        texts, stripped, kinds = [], [], []
        for piece, piece_type in zip(model.pieces, model.types):
            kind, text = 0, piece.replace(_SPACE, " ")
            if piece_type == _CONTROL:
                kind, text = 1, ""
            elif piece_type == _UNKNOWN:
                kind, text = 2, model.unk_surface
            elif piece_type == _BYTE and self._byte_ids is not None:
                value = _byte_of_piece(piece)
                if value is not None:
                    kind, text = 3, bytes([value])
            if isinstance(text, str):
                text = text.encode("utf-8")
            texts.append(text)
            if kind == 0 and piece.startswith(_SPACE):
                stripped.append(piece[1:].replace(_SPACE, " ").encode())
            else:
                stripped.append(text)
            kinds.append(kind)
        self._piece_texts = tf.constant(texts, tf.string)
        self._stripped_texts = tf.constant(stripped, tf.string)
        self._piece_kinds = tf.constant(kinds, tf.int32)
        self._is_space_piece = tf.constant(
            [p == _SPACE for p in model.pieces], tf.bool
        )

    # --- Tokenizer API -------------------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def _tokenize_batch(self, texts):
        # Eagerly, run one traced graph rather than some 40 separate ops.
        if tf.executing_eagerly():
            return self._traced.tokenize(texts)
        return self._tokenize_graph(texts)

    @tf.autograph.experimental.do_not_convert
    def _detokenize_batch(self, ids):
        if tf.executing_eagerly():
            return self._traced.detokenize(ids.with_row_splits_dtype(tf.int64))
        return self._detokenize_graph(ids)

    def _tokenize_graph(self, texts):
        if self._model.model_type == _BPE:
            return _run_library(self._library_proto, texts, tf.int32)
        return self._tokenize_unigram(texts)

    def _tokenize_unigram(self, texts):
        # No `tf.cond` here: inside `tf.data` each conditional costs about
        # 0.1 s to instantiate per iterator, more than it saves per batch.
        texts = tf.reshape(texts, [-1])
        if self._all_second_route:
            ids, rare = self._second_route(texts)
            return self._finish(ids, rare)
        first = tf.strings.regex_full_match(texts, self._safe_pattern)
        if self._user_pattern is not None:
            first = tf.logical_and(
                first,
                tf.logical_not(
                    tf.strings.regex_full_match(texts, self._user_pattern)
                ),
            )
        route = tf.cast(tf.logical_not(first), tf.int32)
        parts = tf.dynamic_partition(texts, route, 2)
        positions = tf.dynamic_partition(tf.range(tf.size(texts)), route, 2)
        ids_first = _run_fast(self._fast, parts[0])
        ids_second, rare = self._second_route(parts[1])
        ids = tf.concat([ids_first, ids_second], axis=0)
        rare = tf.concat([tf.fill(tf.shape(parts[0]), ""), rare], axis=0)
        ids = self._finish(ids, rare)
        order = tf.math.invert_permutation(tf.concat(positions, axis=0))
        return tf.gather(ids, order)

    def _second_route(self, texts):
        """The library's normalizer, rare characters out, then the fast op.

        Returns the raw ids and, per line, the rare characters that the
        placeholders stand for (for byte fallback).
        """
        normalized = self._normalize(texts)
        mapped = tf.strings.regex_replace(
            normalized, self._rare_pattern, self._placeholder
        )
        rare = tf.strings.regex_replace(
            normalized, f"[^{self._rare_pattern[1:-1]}]", ""
        )
        return _run_fast(self._fast_plain, mapped), rare

    def _normalize(self, texts):
        """Each line as the library normalizes it, in linear time.

        The library op (the `sentencepiece` inside TF Text) merges a run of
        unknown pieces by copying the run so far for every character
        (`set_piece(piece() + w)`): quadratic in a run without spaces.
        Measured on sp-test-ja: 400,000 tabs took 3.4 s, 1 MB of control
        characters 28 s (sentencepiece 0.06 s). So three ways, by line:

        0. no character a normalization rule (or a user-defined piece)
           starts with, valid UTF-8: the whitespace rules alone, by regex;
        1. runs under `_LONG_RUN` bytes between spaces (or characters the
           rules turn into spaces): the library op with the merging
           character model, as before;
        2. longer runs: the library op with a byte-fallback model, which
           gives each byte a piece of its own (linear, ~3x slower than 1
           on ordinary text).
        """
        route = tf.ones_like(texts, tf.int32)
        if self._byte_normalizer is not None:
            spaced = texts
            if self._run_break_pattern is not None:
                spaced = tf.strings.regex_replace(
                    texts, self._run_break_pattern, " "
                )
            words = tf.strings.split(spaced, " ")
            longest = tf.reduce_max(tf.strings.length(words), axis=1)
            route = tf.where(longest >= _LONG_RUN, 2, route)
        if self._plain_pattern is not None:
            plain = tf.strings.regex_full_match(texts, self._plain_pattern)
            route = tf.where(plain, 0, route)
        parts = tf.dynamic_partition(texts, route, 3)
        positions = tf.dynamic_partition(tf.range(tf.size(texts)), route, 3)
        merged = _run_library(self._library_proto, parts[1], tf.string)
        out = [self._plain_normalize(parts[0])]
        out.append(tf.strings.reduce_join(merged, axis=1))
        if self._byte_normalizer is not None:
            proto, table = self._byte_normalizer
            ids = _run_library(proto, parts[2], tf.int32)
            out.append(tf.strings.reduce_join(tf.gather(table, ids), axis=1))
        order = tf.math.invert_permutation(tf.concat(positions, axis=0))
        return tf.gather(tf.concat(out, axis=0), order)

    def _plain_normalize(self, texts):
        """The library's whitespace rules, for lines no other rule touches.

        As sentencepiece's `Normalizer::Normalize`: leading spaces go and
        inner runs of spaces become one (`remove_extra_whitespaces`), a
        dummy "▁" goes in front of a non-empty line (`add_dummy_prefix`),
        spaces become "▁" (`escape_whitespaces`), and trailing "▁" go, a
        literal "▁" included.
        """
        model = self._model
        space = _SPACE if model.escape_whitespaces else " "
        if model.remove_extra_whitespaces:
            texts = tf.strings.regex_replace(texts, "^ +", "")
            texts = tf.strings.regex_replace(texts, " +", " ")
        if model.add_dummy_prefix:
            texts = tf.where(tf.equal(texts, ""), texts, " " + texts)
        if model.escape_whitespaces:
            texts = tf.strings.regex_replace(texts, " ", _SPACE)
        if model.remove_extra_whitespaces:
            texts = tf.strings.regex_replace(texts, f"(?:{space})+$", "")
        return texts

    def _finish(self, ids, rare):
        if self._pseudo_outputs is None:
            return self._merge_unknowns(ids)
        return self._expand_bytes(ids, rare)

    def _merge_unknowns(self, ids):
        """Pseudo ids become the unknown id; runs of unknowns merge."""
        unk = self._model.unk_id
        values = tf.where(ids.values >= self._pseudo_start, unk, ids.values)
        is_unk = tf.equal(values, unk)
        splits = ids.row_splits
        size = tf.size(values, tf.int64)
        row_start = tf.scatter_nd(
            splits[:, None], tf.ones_like(splits, tf.int32), [size + 1]
        )[:-1]
        repeat = tf.logical_and(
            tf.logical_and(is_unk, tf.concat([[False], is_unk[:-1]], 0)),
            tf.equal(row_start, 0),
        )
        keep = tf.logical_not(repeat)
        kept = tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0)
        return tf.RaggedTensor.from_row_splits(
            tf.boolean_mask(values, keep),
            tf.gather(kept, splits),
            validate=False,
        )

    def _expand_bytes(self, ids, rare):
        """Byte fallback: unknown characters become the ids of their bytes.

        A pseudo id stands for one known character; the k-th placeholder of
        the batch stands for the k-th character of `rare` (row by row).
        """
        table_values, table_lengths = self._pseudo_outputs
        values = ids.values
        is_pseudo = values >= self._pseudo_start
        is_placeholder = tf.equal(values, self._placeholder_id)
        pseudo = tf.where(is_pseudo, values - self._pseudo_start, 0)
        rank = tf.cumsum(tf.cast(is_placeholder, tf.int64), exclusive=True)
        rank = tf.where(is_placeholder, rank, 0)
        rare_chars = tf.strings.unicode_split(rare, "UTF-8").flat_values
        rare_bytes = tf.strings.bytes_split(rare_chars)
        padded = tf.concat([rare_bytes.row_lengths(), [0]], axis=0)
        rare_lengths = tf.gather(padded, rank)
        lengths = tf.where(
            is_placeholder,
            rare_lengths,
            tf.where(is_pseudo, tf.gather(table_lengths, pseudo), 1),
        )
        # One output per byte: `token` is its token, `offset` its byte.
        token = tf.repeat(tf.range(tf.size(values, tf.int64)), lengths)
        offset = tf.range(tf.size(token, tf.int64)) - tf.gather(
            tf.cumsum(lengths, exclusive=True), token
        )
        table_starts = tf.cumsum(table_lengths, exclusive=True)
        from_table = tf.gather(
            table_values,
            tf.gather(table_starts, tf.gather(pseudo, token)) + offset,
        )
        rare_flat = tf.concat(
            [
                tf.cast(
                    tf.io.decode_raw(
                        rare_bytes.flat_values, tf.uint8, fixed_length=1
                    )[:, 0],
                    tf.int32,
                ),
                [0],
            ],
            axis=0,
        )
        rare_starts = tf.concat(
            [tf.cumsum(rare_bytes.row_lengths(), exclusive=True), [0]], axis=0
        )
        token_placeholder = tf.gather(is_placeholder, token)
        rare_index = tf.where(
            token_placeholder,
            tf.gather(rare_starts, tf.gather(rank, token)) + offset,
            tf.cast(tf.size(rare_flat) - 1, tf.int64),
        )
        from_rare = tf.gather(
            self._byte_id_table, tf.gather(rare_flat, rare_index)
        )
        out = tf.where(
            token_placeholder,
            from_rare,
            tf.where(
                tf.gather(is_pseudo, token),
                from_table,
                tf.gather(values, token),
            ),
        )
        rows = tf.gather(ids.value_rowids(), token)
        return tf.RaggedTensor.from_value_rowids(
            out, rows, nrows=ids.nrows(), validate=False
        )

    def _detokenize_graph(self, ids):
        values = ids.values
        rows = ids.value_rowids()
        kinds = tf.gather(self._piece_kinds, values)
        is_normal = tf.equal(kinds, 0)
        is_control = tf.equal(kinds, 1)
        is_byte = tf.equal(kinds, 3)
        count = tf.size(values)
        # Which piece loses its leading "▁" (sentencepiece's `is_bos_ws`).
        model = self._model
        if model.remove_extra_whitespaces:
            passes = tf.logical_or(
                is_control,
                tf.logical_and(
                    is_normal, tf.gather(self._is_space_piece, values)
                ),
            )
        else:
            passes = is_control
        blockers = tf.cumsum(
            tf.cast(tf.logical_not(passes), tf.int64), exclusive=True
        )
        row_start = tf.gather(ids.row_splits, rows)
        before = blockers - tf.gather(
            tf.concat([blockers, [0]], axis=0), row_start
        )
        strip = tf.logical_and(is_normal, tf.equal(before, 0))
        if not (model.add_dummy_prefix or model.remove_extra_whitespaces):
            strip = tf.zeros_like(strip)
        texts = tf.where(
            strip,
            tf.gather(self._stripped_texts, values),
            tf.gather(self._piece_texts, values),
        )
        # Runs of byte pieces: bytes of valid UTF-8 characters are kept,
        # every other byte becomes U+FFFD (sentencepiece's flush_bytes).
        byte = tf.where(
            is_byte,
            tf.cast(
                tf.io.decode_raw(texts, tf.uint8, fixed_length=1)[:, 0],
                tf.int32,
            ),
            -1,
        )

        def shifted(x, k, fill):
            pad = tf.fill([k], tf.constant(fill, x.dtype))
            return tf.concat([x[k:], pad], 0)[:count]

        def same_run(k):
            ok = tf.logical_and(is_byte, shifted(is_byte, k, False))
            for j in range(1, k):
                ok = tf.logical_and(ok, shifted(is_byte, j, False))
            return tf.logical_and(ok, tf.equal(shifted(rows, k, -1), rows))

        lead = tf.bitwise.right_shift(byte, 4)
        length = tf.where(
            byte < 0xC0,
            1,
            tf.where(lead < 0xE, 2, tf.where(lead < 0xF, 3, 4)),
        )
        code = tf.bitwise.bitwise_and(
            byte, tf.bitwise.right_shift(0xFF, length)
        )
        valid = is_byte
        for k in (1, 2, 3):
            follower = shifted(byte, k, -1)
            needed = length > k
            is_cont = tf.logical_and(follower >= 0x80, follower < 0xC0)
            ok = tf.logical_and(same_run(k), is_cont)
            valid = tf.logical_and(valid, tf.logical_or(~needed, ok))
            code = tf.where(
                needed, code * 64 + tf.bitwise.bitwise_and(follower, 0x3F), code
            )
        minimum = tf.gather([0, 0, 0x80, 0x800, 0x10000], length)
        valid = tf.logical_and(
            valid,
            tf.logical_or(
                byte < 0x80,
                tf.logical_and(
                    byte >= 0xC0,
                    tf.logical_and(
                        code >= minimum,
                        tf.logical_and(
                            code <= 0x10FFFF,
                            tf.logical_or(code < 0xD800, code > 0xDFFF),
                        ),
                    ),
                ),
            ),
        )
        covered = tf.zeros_like(valid)
        for k in (1, 2, 3):
            earlier = tf.concat([tf.zeros([k], tf.bool), valid], 0)[:count]
            earlier_length = tf.concat([tf.ones([k], tf.int32), length], 0)[
                :count
            ]
            earlier_rows = tf.concat(
                [tf.fill([k], tf.constant(-1, rows.dtype)), rows], 0
            )[:count]
            covered = tf.logical_or(
                covered,
                tf.logical_and(
                    tf.logical_and(earlier, earlier_length > k),
                    tf.equal(earlier_rows, rows),
                ),
            )
        bad_byte = tf.logical_and(
            is_byte, tf.logical_not(tf.logical_or(valid, covered))
        )
        texts = tf.where(bad_byte, _REPLACEMENT.encode(), texts)
        return tf.strings.reduce_join(ids.with_flat_values(texts), axis=1)

    def get_vocabulary(self):
        return list(self._model.pieces)

    @property
    def special_tokens(self):
        return dict(self._special)

    def get_config(self):
        return {
            **super().get_config(),
            "proto": base64.b64encode(self.proto).decode("ascii"),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        proto = config.get("proto")
        # `get_config` stores the model as base64; a path stays a path.
        if isinstance(proto, str) and not os.path.isfile(proto):
            try:
                config["proto"] = base64.b64decode(proto, validate=True)
            except (binascii.Error, ValueError):
                pass  # Not base64 either: __init__ reports the missing file.
        return cls(**config)
