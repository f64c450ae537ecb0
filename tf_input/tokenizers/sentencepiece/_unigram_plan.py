"""The unigram plan: the models and routing patterns TF Text's ops get.

See the package docstring for why unigram models are rewritten (pseudo
pieces, user-defined scores) and which lines take the second route.
"""

from __future__ import annotations

import functools

import numpy as np
from tensorflow_text.core.pybinds import pywrap_model_converter

from tf_input.tokenizers.sentencepiece._charsmap import _EMPTY_CHARSMAP
from tf_input.tokenizers.sentencepiece._charsmap import _character_rules
from tf_input.tokenizers.sentencepiece._charsmap import _charsmap_facts
from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _CONTROL
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNKNOWN
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
# The longest routing pattern of the trivial route (see its use).
_TRIVIAL_PATTERN_LIMIT = 60_000
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
        pieces = _rewritten_pieces(model)
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
        after_space = {ord(c) for c in after_space}
        unsafe = {ord(c) for c in unsafe | {self.placeholder}} | after_space
        # RE2 reads invalid UTF-8 as U+FFFD or as a surrogate: such lines
        # (and a literal U+FFFD) take the second route, whose normalizer
        # replaces bad bytes as the library does.
        unsafe |= set(range(0xD800, 0xE000)) | {0xFFFD}
        unsafe |= {ord(c) for c in quirks | {"\0"} if c not in single_keys}
        self.user_pattern = _user_pattern(
            model, first_keys | quirks | {" ", _SPACE}
        )
        self.all_second_route = model.suffix_space or (
            model.remove_extra_whitespaces and not model.add_dummy_prefix
        )
        known = covered | {ord(c) for c in single_keys}
        # The third route: the first route's characters, less whitespace,
        # and those after a space only where a space precedes them.
        trivial_unsafe = {ord(c) for c in quirks | {"\0", " "}} | (
            unsafe - after_space
        )
        body = _char_class(unsafe) + _outside_bmp_class(known)
        self.safe_pattern = f"[^{body}]*"
        self.trivial_pattern, self.trivial_table = None, None
        if not self.all_second_route:
            self._plan_trivial_route(model, trivial_unsafe, after_space)
        self._plan_plain_route(model, first_keys, spaced)
        self.fast, self.fast_plain = _fast_models(model, pieces)

    def _plan_plain_route(self, model, first_keys, spaced):
        """Second-route lines with no character a rule starts with and no
        user-defined piece are normalized by the whitespace rules alone
        (`_normalizer.whitespace_rules`); valid UTF-8 only."""
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

    def _plan_trivial_route(self, model, unsafe, after_space):
        """The third route: lines whose lattice has one path.

        No piece spans two neighbouring characters when one of them occurs
        in no piece of two or more characters (it is "isolated"): the
        lattice has a boundary there. A line whose normalized text (the
        dummy "▁", then the line) has no two neighbours that both occur in
        longer pieces, and whose first character does not follow "▁" in a
        piece, has a boundary between all its characters: exactly one
        segmentation, so no Viterbi search (and no float comparison that
        could break a tie) is needed, only one table lookup per character.

        `trivial_pattern` matches those lines, over characters of the BMP
        that are safe for the first route (or that only a rule starting
        with a space could change: `after_space`), that no user-defined
        piece of two or more characters holds (one of one character stays
        itself, as the library keeps it out of normalization), that are
        not the second character of a normalization key (so no longer key
        matches, and the line normalizes character by character) and that
        normalize to one such character. `trivial_table` gives by code
        point the id (or pseudo id) of the normalized character, -1 for
        characters outside the route.
        """
        if not (model.add_dummy_prefix and model.escape_whitespaces):
            return
        ids = {}
        for i, (p, t) in enumerate(zip(model.pieces, model.types)):
            if len(p) == 1 and t in (_NORMAL, _USER_DEFINED):
                ids.setdefault(p, i)
        start = len(model.pieces)
        ids.update((c, start + i) for i, c in enumerate(self.pseudo_chars))
        # Pieces the library could match (all but these kinds; unused ones
        # too, to be safe), and the characters of the longer ones.
        longer_pieces = [
            p
            for p, t in zip(model.pieces, model.types)
            if len(p) > 1 and t not in (_CONTROL, _UNKNOWN, _BYTE)
        ]
        joined = {c for p in longer_pieces for c in p}
        after_dummy = {
            p[i + 1]
            for p in longer_pieces
            for i in range(len(p) - 1)
            if p[i] == _SPACE
        }
        # The library keeps user-defined pieces out of normalization: a
        # single character one stays itself; the characters of longer ones
        # are left out of the route.
        user = {
            c
            for p, t in zip(model.pieces, model.types)
            if t == _USER_DEFINED and len(p) > 1
            for c in p
        }
        kept = {
            p
            for p, t in zip(model.pieces, model.types)
            if t == _USER_DEFINED and len(p) == 1
        }
        rules, seconds = {}, set()
        if model.charsmap:
            rules, seconds = _character_rules(model.charsmap)
        table = np.full(0x10000, -1, np.int32)
        isolated, neighbourly, first = [], [], []
        for code in sorted(_BMP - unsafe):
            c = chr(code)
            if c in seconds or c in user or c == _SPACE:
                continue
            normalized = c if c in kept else rules.get(c, c)
            if (
                len(normalized) != 1
                or ord(normalized) >= 0x10000
                or ord(normalized) in unsafe
                or normalized == _SPACE
                or normalized not in ids
            ):
                continue
            table[code] = ids[normalized]
            if normalized not in joined:
                isolated.append(code)
            else:
                neighbourly.append(code)
                if normalized not in after_dummy:
                    first.append(code)
        if not isolated or _SPACE not in ids or _SPACE in user:
            return
        # Isolated characters (`i`), the others (`j`) never two in a row;
        # a `j` first only if no piece has it after "▁". With
        # `remove_extra_whitespaces`, leading spaces go (`_trivial_ids` drops
        # them) and a single space between isolated characters is a "▁"
        # with a boundary on each side; not where a normalization key
        # starts with a space (`after_space`).
        i = f"[{_char_class(isolated)}]"
        j = f"[{_char_class(neighbourly)}]?" if neighbourly else ""
        spaces = model.remove_extra_whitespaces and not after_space & set(
            isolated + neighbourly
        )
        end = f"{i}+{j}"
        block = f"(?:{i}+(?:{j}| )?)*{end}" if spaces else f"(?:{end})+"
        pattern = f"{block}"
        if first:
            pattern += f"|[{_char_class(first)}](?:{block})?"
        if spaces:
            pattern = f" *(?:{pattern})"
            table[ord(" ")] = ids[_SPACE]
        # A pattern this long makes RE2's fast engine run out of memory,
        # and every line then runs on its slow one (sp-test-ja: ~290,000
        # characters, its CJK characters in and out of longer pieces).
        if len(pattern) > _TRIVIAL_PATTERN_LIMIT:
            return
        table[ord(_SPACE)] = ids[_SPACE]
        self.trivial_table = table
        self.trivial_pattern = pattern


@functools.lru_cache(maxsize=8)
def _unigram_plan(proto):
    return _UnigramPlan(_read_model(proto))


def _rewritten_pieces(model):
    """The model's pieces as `(piece, score, type)` for the fast op:
    user-defined pieces become normal pieces with the library's score,
    unused and byte pieces control pieces (never matched; ids kept)."""
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
            piece_type = _CONTROL
        pieces.append((piece, score, piece_type))
    return pieces


def _user_pattern(model, touchy):
    """The library keeps user-defined pieces out of normalization; the
    fast op does not. Lines holding one with a character of `touchy` (a
    rule could change it, or whitespace) take the second route: the
    pattern of such lines, or None."""
    joined = [
        "".join(f"\\x{{{ord(c):x}}}" for c in p)
        for p, t in zip(model.pieces, model.types)
        if t == _USER_DEFINED and touchy.intersection(p)
    ]
    return f"(?s).*(?:{'|'.join(joined)}).*" if joined else None


def _fast_models(model, pieces):
    """The fast op's two models (`pieces` rewritten): with the model's
    normalization, and with none (for lines normalized already)."""
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
    fast = convert(model.serialize(pieces, b"", keep))
    fast_plain = convert(model.serialize(pieces, b"", plain))
    return fast, fast_plain
