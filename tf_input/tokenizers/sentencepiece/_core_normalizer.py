"""The `sentencepiece` normalizer in core TensorFlow ops.

As sentencepiece's `Normalizer::Normalize` (0.2.3): invalid UTF-8 bytes
become U+FFFD one byte at a time; then, from the start of the line, the
longest user-defined piece that is a prefix of the rest is kept as it is,
else the longest key of the precompiled charsmap is replaced by its rule,
else one character is kept (the longest-key walk over the text, not HF's
walk by grapheme cluster). The whitespace rules work on those pieces:
with `remove_extra_whitespaces`, a piece loses its leading spaces when
the last non-empty piece before it ends with a space (or there is none),
and trailing spaces go at the end; `add_dummy_prefix` puts a space before
(or, with `treat_whitespace_as_suffix`, after) a line with content;
`escape_whitespaces` writes spaces as "▁".
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._utf8 import VALID_UTF8
from tf_input.tokenizers._utf8 import replace_invalid_bytes
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.hf.normalizers.precompiled import charsmap_rules
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED

# Code points at or above this share one entry of the first-character
# table.
_TOP = 0x30000
_NONE = b"\xff"  # a table miss: never in valid UTF-8
_USER = b"\xfe"  # marks a user-defined piece's value: never in UTF-8


def normalization_rules(model):
    """`{key: value}` (bytes) of what the normalizer matches: the
    charsmap's rules (the replacement) and the user-defined pieces (`_USER`
    and the piece, kept as it is). A user-defined piece wins over a rule
    with the same key, and its first character starts no rule's match
    (`_longest_keys` prefers user-defined pieces)."""
    rules = {}
    if model.charsmap:
        # A one-character key that maps to itself changes nothing (a
        # character is kept whole either way): left out.
        rules = {
            k.encode(): v.encode()
            for k, v in charsmap_rules(model.charsmap).items()
            if len(k) > 1 or k != v
        }
    firsts = {k.decode()[0] for k in rules}
    for piece, piece_type in zip(model.pieces, model.types):
        # A one-character piece no rule starts with changes nothing.
        if piece_type == _USER_DEFINED and (len(piece) > 1 or piece in firsts):
            rules[piece.encode()] = _USER + piece.encode()
    return rules


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


class CoreNormalizer(tf.Module):
    """`[N]` lines -> `[N]` lines normalized as `sentencepiece` does."""

    def __init__(self, model):
        super().__init__()
        self._model = model
        rules = normalization_rules(model)
        self.has_rules = bool(rules)
        texts = [k.decode() for k in rules]
        self.longest = max((len(k) for k in texts), default=1)
        # Lines of valid UTF-8 where no key can match normalize by the
        # whitespace rules alone: no one-character key, and no two
        # characters that begin a longer key. RE2 reads an invalid byte as
        # U+FFFD or a surrogate, so those always take the long way.
        firsts = {ord(k[0]) for k in texts}
        singles = {ord(k) for k in texts if len(k) == 1}
        singles |= set(range(0xD800, 0xE000)) | {0xFFFD}
        pairs = {}
        for k in texts:
            if len(k) > 1 and ord(k[0]) not in singles:
                pairs.setdefault(ord(k[0]), set()).add(ord(k[1]))
        ruled = [f"[{_char_class(singles)}]"] + [
            f"\\x{{{c:x}}}[{_char_class(seconds)}]"
            for c, seconds in sorted(pairs.items())
        ]
        self._ruled_pattern = f"(?s).*(?:{'|'.join(ruled)}).*"
        prefixes = {k[:n] for k in texts for n in range(1, len(k))}
        first = np.zeros(_TOP + 1, bool)
        first[[c for c in firsts if c < _TOP]] = True
        first[_TOP] = any(c >= _TOP for c in firsts)
        with tf.init_scope():
            self._first = tf.constant(first)
            self._rules = lookup_table(
                list(rules),
                list(rules.values()),
                _NONE,
                key_dtype=tf.string,
                value_dtype=tf.string,
            )
            self._prefixes = lookup_table(
                [p.encode() for p in prefixes],
                [True] * len(prefixes),
                False,
                key_dtype=tf.string,
                value_dtype=tf.bool,
            )

    def __call__(self, texts):
        model = self._model
        if not self.has_rules:
            return whitespace_rules(replace_invalid_bytes(texts), model)
        plain = ~tf.strings.regex_full_match(
            texts, self._ruled_pattern
        ) & tf.strings.regex_full_match(texts, VALID_UTF8)
        route = tf.cast(tf.logical_not(plain), tf.int32)
        parts = tf.dynamic_partition(texts, route, 2)
        positions = tf.dynamic_partition(tf.range(tf.size(texts)), route, 2)
        out = tf.concat(
            [whitespace_rules(parts[0], model), self._ruled(parts[1])], 0
        )
        order = tf.math.invert_permutation(tf.concat(positions, 0))
        return tf.gather(out, order)

    def _ruled(self, texts):
        """Lines a rule or a user-defined piece may touch."""
        valid = tf.strings.regex_full_match(texts, VALID_UTF8)
        texts = replace_invalid_bytes(texts)
        cps = tf.strings.unicode_decode(texts, "UTF-8")
        splits = cps.row_splits
        count = tf.size(cps.values, out_type=tf.int64)
        line = row_ids(splits)
        chars = tf.strings.unicode_encode(cps.values[:, None], "UTF-8")
        # In a line with invalid bytes, U+FFFD stands for one, which the
        # library keeps out of the rules (known limit: a literal U+FFFD in
        # such a line skips them too).
        code = tf.where(
            tf.equal(cps.values, 0xFFFD) & ~tf.gather(valid, line),
            -1,
            cps.values,
        )
        length, pieces = self._longest_keys(chars, code, line, count)
        start = _greedy_starts(length, count)
        at = tf.where(start)[:, 0]
        pieces = tf.gather(pieces, at)
        piece_line = tf.gather(line, at)
        user = tf.strings.substr(pieces, 0, 1) == _USER
        user = tf.where(user)
        pieces = tf.tensor_scatter_nd_update(
            pieces,
            user,
            tf.strings.substr(tf.gather_nd(pieces, user), 1, tf.int32.max),
        )
        lines = tf.size(texts, out_type=tf.int64)
        return self._whitespace(pieces, piece_line, lines)

    def _longest_keys(self, chars, code, line, count):
        """Per character: the length (in characters) of the longest
        user-defined piece that starts there, else of the longest rule's
        key (0: neither); and the pieces, characters replaced by the
        values of the keys that start there."""
        # Only characters that start a key are looked up; the search
        # works on their indices (`at`), in a table of their own.
        first = tf.gather(self._first, tf.clip_by_value(code, 0, _TOP))
        at = tf.where(first & (code >= 0))[:, 0]
        firsts = tf.size(at, out_type=tf.int64)
        best = [tf.zeros([firsts], tf.int64), tf.fill([firsts], _NONE)] * 2
        index = tf.range(firsts)
        ends = at
        grown = tf.gather(chars, at)
        for size in range(1, self.longest + 1):
            hit = self._rules.lookup(grown)
            user = tf.strings.substr(hit, 0, 1) == _USER
            for kind, found in enumerate((~user & (hit != _NONE), user)):
                where = tf.boolean_mask(index, found)[:, None]
                best[2 * kind] = tf.tensor_scatter_nd_update(
                    best[2 * kind],
                    where,
                    tf.fill(tf.shape(where)[:1], tf.constant(size, tf.int64)),
                )
                best[2 * kind + 1] = tf.tensor_scatter_nd_update(
                    best[2 * kind + 1], where, tf.boolean_mask(hit, found)
                )
            if size == self.longest:
                break
            nxt = ends + 1
            alive = self._prefixes.lookup(grown) & (nxt < count)
            nxt = tf.minimum(nxt, count - 1)
            alive &= tf.gather(line, nxt) == tf.gather(line, ends)
            keep = tf.where(alive)[:, 0]
            index = tf.gather(index, keep)
            ends = tf.gather(nxt, keep)
            grown = tf.strings.join(
                [tf.gather(grown, keep), tf.gather(chars, ends)]
            )
        length, value, user_length, user_value = best
        user = user_length > 0
        length = tf.where(user, user_length, length)
        value = tf.where(user, user_value, value)
        matched = tf.where(length > 0)[:, 0]
        where = tf.gather(at, matched)[:, None]
        return (
            tf.scatter_nd(where, tf.gather(length, matched), [count]),
            tf.tensor_scatter_nd_update(
                chars, where, tf.gather(value, matched)
            ),
        )

    def _whitespace(self, pieces, piece_line, lines):
        """The whitespace rules over the pieces of each line."""
        pieces, content = self._strip_pieces(pieces, piece_line, lines)
        joined = tf.strings.unsorted_segment_join(pieces, piece_line, lines)
        return _finish(joined, content, self._model)

    def _strip_pieces(self, pieces, piece_line, lines):
        """`(pieces, content)`: the pieces without the leading spaces that
        `remove_extra_whitespaces` drops, and bool `[lines]`, whether a
        line has content (gets the dummy prefix)."""
        model = self._model
        # Content: a piece other than " " (the heading spaces the library
        # drops before it decides on the dummy prefix).
        content = tf.math.unsorted_segment_max(
            tf.cast(tf.not_equal(pieces, " "), tf.int32), piece_line, lines
        )
        if not model.remove_extra_whitespaces:
            content = tf.math.unsorted_segment_max(
                tf.ones_like(piece_line, tf.int32), piece_line, lines
            )
        if model.remove_extra_whitespaces:
            # A piece loses its leading spaces if the last non-empty piece
            # of its line before it ends with a space, or there is none.
            nonempty = tf.strings.length(pieces) > 0
            kept = tf.where(nonempty)[:, 0]
            before = tf.cumsum(tf.cast(nonempty, tf.int64), exclusive=True)
            last = tf.gather(
                tf.concat([[-1], kept], 0), before
            )  # the last non-empty piece before, or -1
            size = tf.strings.length(pieces)
            ends_space = tf.equal(
                tf.strings.substr(
                    pieces, tf.maximum(size - 1, 0), tf.ones_like(size)
                ),
                " ",
            )
            last_safe = tf.maximum(last, 0)
            same_line = (last >= 0) & tf.equal(
                tf.gather(piece_line, last_safe), piece_line
            )
            prev_space = ~same_line | tf.gather(ends_space, last_safe)
            # Only pieces that start with a space change (a regex on those
            # alone: one per piece would cost more than the rest).
            strip = tf.where(
                prev_space & tf.equal(tf.strings.substr(pieces, 0, 1), " ")
            )
            pieces = tf.tensor_scatter_nd_update(
                pieces,
                strip,
                tf.strings.regex_replace(
                    tf.gather_nd(pieces, strip), "^ +", ""
                ),
            )
        return pieces, content > 0

    def with_alignments(self, texts):
        """`[N]` lines -> `(normalized, norm_to_orig)`: the lines as
        `__call__` normalizes them, and int64 ragged `[N, None]`: for each
        character of a normalized line, and once more for its end, the
        byte of the input line where `sentencepiece`'s `norm_to_orig`
        puts it.

        The library maps every byte a piece of the input (a rule's key, a
        user-defined piece, a character) writes to the piece's first
        byte; the dummy prefix to the first piece that is not a space; a
        line's end to the first of the trailing spaces it removes (or the
        input's end). Token boundaries fall between characters, so one
        entry per character is enough.
        """
        model = self._model
        valid = tf.strings.regex_full_match(texts, VALID_UTF8)
        repaired = replace_invalid_bytes(texts)
        cps = tf.strings.unicode_decode(repaired, "UTF-8")
        splits = cps.row_splits
        count = tf.size(cps.values, out_type=tf.int64)
        line = row_ids(splits)
        lines = tf.size(texts, out_type=tf.int64)
        chars = tf.strings.unicode_encode(cps.values[:, None], "UTF-8")
        # A U+FFFD that stands for an invalid byte is one byte of input.
        replaced = tf.equal(cps.values, 0xFFFD) & ~tf.gather(valid, line)
        code = tf.where(replaced, -1, cps.values)
        size = tf.where(
            replaced, tf.constant(1, tf.int64), utf8_lengths(cps.values)
        )
        byte = starts_in_rows(size, splits)  # each character's input byte
        if self.has_rules:
            length, pieces = self._longest_keys(chars, code, line, count)
            at = tf.where(_greedy_starts(length, count))[:, 0]
        else:
            pieces, at = chars, tf.range(count)
        pieces = tf.gather(pieces, at)
        user = tf.where(tf.strings.substr(pieces, 0, 1) == _USER)
        pieces = tf.tensor_scatter_nd_update(
            pieces,
            user,
            tf.strings.substr(tf.gather_nd(pieces, user), 1, tf.int32.max),
        )
        piece_line = tf.gather(line, at)
        piece_byte = tf.gather(byte, at)
        # The dummy prefix maps to the first piece that is not a space
        # (the library drops heading spaces before it).
        counted = tf.not_equal(pieces, " ")
        if not model.remove_extra_whitespaces:
            counted = tf.ones_like(counted)
        first_content = tf.math.unsorted_segment_min(
            tf.where(counted, piece_byte, tf.int64.max), piece_line, lines
        )
        pieces, content = self._strip_pieces(pieces, piece_line, lines)
        joined = tf.strings.unsorted_segment_join(pieces, piece_line, lines)
        normalized = _finish(joined, content, model)
        # Every character a piece writes maps to the piece's first byte.
        written = tf.cast(tf.strings.length(pieces, unit="UTF8_CHAR"), tf.int64)
        entries = tf.RaggedTensor.from_value_rowids(
            tf.repeat(piece_byte, written),
            tf.repeat(piece_line, written),
            nrows=lines,
            validate=False,
        )
        if model.add_dummy_prefix and not model.suffix_space:
            prefix = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(first_content, content),
                tf.cast(content, tf.int64),
                validate=False,
            )
            entries = tf.concat([prefix, entries], 1)
        suffix = model.add_dummy_prefix and model.suffix_space
        # The characters kept (trailing spaces cut off), and the line's
        # end: the first character cut off, or the input's end.
        kept = tf.cast(
            tf.strings.length(normalized, unit="UTF8_CHAR"), tf.int64
        )
        if suffix:
            kept -= tf.cast(content, tf.int64)
        row = entries.value_rowids()
        place = tf.range(tf.size(row, out_type=tf.int64)) - tf.gather(
            entries.row_splits, row
        )
        cut = place >= tf.gather(kept, row)
        end = tf.math.unsorted_segment_min(
            tf.where(cut, entries.flat_values, tf.int64.max), row, lines
        )
        length = tf.cast(tf.strings.length(texts), tf.int64)
        end = tf.where(end == tf.int64.max, length, end)
        entries = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(entries.flat_values, ~cut),
            tf.boolean_mask(row, ~cut),
            nrows=lines,
            validate=False,
        )
        # The end; with a suffix space, the space (mapped there) first.
        repeats = (
            1 + tf.cast(content, tf.int64) if suffix else tf.ones_like(end)
        )
        tail = tf.RaggedTensor.from_row_lengths(
            tf.repeat(end, repeats), repeats, validate=False
        )
        return normalized, tf.concat([entries, tail], 1)


def _greedy_starts(length, count):
    """bool `[count]`: the characters where a piece starts, walking from
    each line's start: a match of `length[p]` characters (at least one)
    covers the characters after it. A fixed point of "starts are the
    characters no earlier start covers", reached in as many rounds as the
    longest chain of overlapping keys (one or two in practice)."""
    span = tf.maximum(length, 1)
    positions = tf.range(count)

    def covered(start):
        long = start & (span > 1)
        at = tf.boolean_mask(positions, long)
        size = tf.boolean_mask(span, long)
        marks = tf.math.unsorted_segment_sum(
            tf.ones_like(at), at + 1, count + 1
        ) - tf.math.unsorted_segment_sum(
            tf.ones_like(at), tf.minimum(at + size, count), count + 1
        )
        return tf.cumsum(marks)[:count] > 0

    def body(start, _):
        new = ~covered(start)
        return new, tf.reduce_any(tf.not_equal(new, start))

    start, _ = tf.while_loop(
        lambda start, changed: changed,
        body,
        (~covered(tf.ones([count], tf.bool)), tf.constant(True)),
        shape_invariants=(tf.TensorShape([None]), tf.TensorShape([])),
    )
    return start


def _finish(joined, content, model):
    """Dummy prefix, escaping and trailing spaces, on joined lines."""
    space = _SPACE if model.escape_whitespaces else " "
    if model.add_dummy_prefix and not model.suffix_space:
        joined = tf.where(content, " " + joined, joined)
    if model.escape_whitespaces:
        joined = tf.strings.regex_replace(joined, " ", _SPACE)
    if model.remove_extra_whitespaces:
        joined = tf.strings.regex_replace(joined, f"(?:{space})+$", "")
    if model.add_dummy_prefix and model.suffix_space:
        joined = tf.where(content, joined + space, joined)
    return joined


def whitespace_rules(texts, model):
    """Lines of valid UTF-8 that no rule touches: each character is a
    piece, so the rules are regexes."""
    if model.remove_extra_whitespaces:
        texts = tf.strings.regex_replace(texts, "^ +", "")
        texts = tf.strings.regex_replace(texts, " +", " ")
    content = tf.strings.length(texts) > 0
    return _finish(texts, content, model)
