"""The unigram plan: the models and routing patterns TF Text's ops get.

See the package docstring for why unigram models are rewritten (pseudo
pieces, user-defined scores) and which lines take the second route.
"""

from __future__ import annotations

import functools

import numpy as np
from tensorflow_text.core.pybinds import pywrap_model_converter

from tf_input.tokenizers.sentencepiece._charsmap import _EMPTY_CHARSMAP
from tf_input.tokenizers.sentencepiece._charsmap import _charsmap_facts
from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _CONTROL
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNUSED
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED
from tf_input.tokenizers.sentencepiece._proto import ADD_DUMMY_PREFIX
from tf_input.tokenizers.sentencepiece._proto import ESCAPE_WHITESPACES
from tf_input.tokenizers.sentencepiece._proto import PRECOMPILED_CHARSMAP
from tf_input.tokenizers.sentencepiece._proto import REMOVE_EXTRA_WHITESPACES
from tf_input.tokenizers.sentencepiece._proto import _bytes_field
from tf_input.tokenizers.sentencepiece._proto import _read_model
from tf_input.tokenizers.sentencepiece._proto import _varint_field

_UNK_PENALTY = np.float32(10.0)
_BMP = set(range(1, 0xD800)) | set(range(0xE000, 0x10000))
# Emoji and their tag characters, common outside the BMP.
_EMOJI = set(range(0x1F000, 0x1FB00)) | set(range(0xE0000, 0xE0080))


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
        keep = b""
        if not model.charsmap:
            keep = _bytes_field(PRECOMPILED_CHARSMAP, _EMPTY_CHARSMAP)
        plain = b"".join(
            [
                _bytes_field(PRECOMPILED_CHARSMAP, _EMPTY_CHARSMAP),
                _varint_field(ADD_DUMMY_PREFIX, 0),
                _varint_field(REMOVE_EXTRA_WHITESPACES, 0),
                _varint_field(ESCAPE_WHITESPACES, 0),
            ]
        )
        convert = pywrap_model_converter.convert_sentencepiece_model
        self.fast = convert(model.serialize(pieces, b"", keep))
        self.fast_plain = convert(model.serialize(pieces, b"", plain))


@functools.lru_cache(maxsize=8)
def _unigram_plan(proto):
    return _UnigramPlan(_read_model(proto))
