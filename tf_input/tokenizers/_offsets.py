"""Index arithmetic for token offsets (character spans of tokens).

A tokenizer's graph transforms the text in stages (invalid UTF-8
repaired, added tokens cut out, the text normalized, words split off),
and each token is found in the output of the last stage. Its span in the
input is found by going back one stage at a time: a span inside a piece
plus the piece's start in its parent, or, through a stage that rewrites
characters (the repair, a normalizer), the characters' alignments.

Spans are byte offsets `[start, end)`. `to_characters` turns them into
code-point offsets, Hugging Face's `offsets` for a Python `str`.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._utf8 import VALID_UTF8

# Positions of different rows are compared as `row * _ROW + position`:
# rows longer than 2**32 bytes do not occur (a tf.string is < 2**31).
_ROW = 1 << 32


def starts_in_rows(lengths, splits, rows=None):
    """Where each item starts inside its row, items laid end to end.

    Args:
        lengths: int64 `[K]`, the length of each item.
        splits: int64 `[R + 1]`, the row splits of the items.
        rows: int64 `[K]`, the row of each item, if the caller has it
            (`row_ids(splits)`).

    Returns:
        int64 `[K]`: the sum of the lengths before each item in its row.
    """
    total = tf.concat([[0], tf.cumsum(lengths)], 0)
    first = tf.gather(total, splits[:-1])
    if rows is None:
        rows = row_ids(splits)
    return total[:-1] - tf.gather(first, rows)


def sources_where(changing, texts, with_sources, kept=None):
    """A normalizer's `with_sources` run only where it can move characters.

    Args:
        changing: bool `[M]`, the texts that may not stay as they are.
        texts: `[M]` valid UTF-8 strings.
        with_sources: `[K]` texts -> (rewritten `[K]` texts, int64 ragged
            `[K, None]` sources), the rewrite with its alignments.
        kept: int64 ragged `[M, None]`, the sources of the texts not
            `changing`; by default each character is its own source.

    Returns:
        The texts, those of `changing` rewritten, and the sources of all:
        those of `kept` for the others.
    """
    where = tf.where(changing)
    done, moved = with_sources(tf.gather_nd(texts, where))
    texts = tf.tensor_scatter_nd_update(texts, where, done)
    return texts, Sources(changing, moved).ragged(texts, kept)


class Sources:
    """A rewrite's alignments, for a batch of which only the texts
    `moving` were rewritten with their alignments (`moved`, int64 ragged
    `[P, None]`, a row per moving text, in order): each character of
    another text is the character `shift` (int64 `[M]`, default 0) places
    after it in the text before.

    `reader` looks sources up where they are needed, without listing one
    per character of the batch (`ragged`).
    """

    def __init__(self, moving, moved, shift=None):
        self.moving, self.moved = moving, moved
        self.shift = tf.zeros(tf.shape(moving), tf.int64)
        if shift is not None:
            self.shift = shift
        self.rank = tf.cumsum(tf.cast(moving, tf.int64)) - 1

    def reader(self, rows):
        """For items of rows `rows` (int64 `[K]`): a function from the
        index of a character of each item's rewritten text (int64 `[K]`)
        to its source, its index in the text before, or -1 for none.
        What depends on the rows alone is worked out once."""
        moving = tf.gather(self.moving, rows)
        flat = tf.concat([self.moved.flat_values, [-1]], 0)
        last = tf.size(flat, out_type=tf.int64) - 1
        rank = tf.maximum(tf.gather(self.rank, rows), 0)
        first = tf.where(moving, tf.gather(self.moved.row_splits, rank), last)
        shift = tf.gather(self.shift, rows)

        def read(index):
            at = tf.where(moving, tf.minimum(first + index, last), last)
            return tf.where(moving, tf.gather(flat, at), shift + index)

        return read

    def ragged(self, texts, kept=None):
        """Every character's source: int64 ragged `[M, None]` for the
        rewritten `texts`; `kept` replaces the rows of the texts not
        moving (default: from `shift`)."""
        if kept is None:
            lengths = tf.strings.length(texts, unit="UTF8_CHAR")
            kept = tf.ragged.range(
                self.shift, self.shift + tf.cast(lengths, tf.int64)
            )
        # Row i: row i of `kept`, or its own row among `moved`.
        count = tf.size(self.moving, out_type=tf.int64)
        rows = tf.where(self.moving, count + self.rank, tf.range(count))
        return tf.gather(tf.concat([kept, self.moved], axis=0), rows)


def _char_at(char_keys, rows, positions):
    """Index (into the flat characters) of the character holding the byte
    at `positions` of `rows`; `char_keys` are `row * _ROW + start` of each
    character, sorted."""
    keys = rows * _ROW + positions
    return tf.searchsorted(char_keys, keys, side="right", out_type=tf.int64) - 1


def char_spans(texts, replace=False):
    """The byte span of every character of `texts` (`[R]` strings):
    int64 `(starts, ends, splits)`, flat `[C]` and row splits `[R + 1]`.
    With `replace`, invalid UTF-8 is read as `bytes.decode("utf-8",
    "replace")` reads it (one character per replaced subsequence)."""
    _, offsets = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    starts, splits = offsets.flat_values, offsets.row_splits
    rows = row_ids(splits)
    last = tf.concat([rows[1:] != rows[:-1], [True]], 0)
    lengths = tf.cast(tf.strings.length(texts), tf.int64)
    ends = tf.where(
        last,
        tf.gather(lengths, rows),
        tf.concat([starts[1:], [0]], 0),
    )
    return starts, ends, splits


def valid_char_spans(texts):
    """`char_spans` of valid UTF-8, from the bytes that start a character
    (not `10xxxxxx`), with no decoding: the same result, several times
    faster."""
    raw = tf.io.decode_raw(tf.strings.reduce_join(texts), tf.uint8)
    lead = tf.bitwise.bitwise_and(raw, 0xC0) != 0x80
    at = tf.where(lead)[:, 0]  # each character's start in the joined bytes
    total = tf.size(raw, out_type=tf.int64)
    counts = tf.cast(tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64)
    splits = tf.concat([[0], tf.cumsum(counts)], 0)
    # Rows lie end to end: a character ends where the next one starts.
    row_starts = tf.cumsum(
        tf.cast(tf.strings.length(texts), tf.int64), exclusive=True
    )
    shift = tf.gather(row_starts, row_ids(splits))
    ends = tf.concat([at[1:], [total]], 0)
    return at - shift, ends - shift, splits


def remap(starts, ends, rows, new_texts, old_starts, old_ends):
    """Byte spans in rewritten texts -> byte spans in the texts before.

    A stage that rewrites characters (the UTF-8 repair, a normalizer)
    says, for each character of its output, which bytes of its input it
    comes from (`old_starts`, `old_ends`: Hugging Face's alignments). A
    span then starts where the character holding its first byte starts
    and ends where the character holding its last byte ends, as Hugging
    Face's `expand_alignments` does; inside a character that kept its
    length (most of them) the byte itself is kept, so that a token
    holding part of a character keeps its exact bytes.

    Args:
        starts, ends: int64 `[K]`, spans in `new_texts`.
        rows: int64 `[K]`, the row of `new_texts` of each span.
        new_texts: string `[R]`, valid UTF-8.
        old_starts, old_ends: int64 `[C]`, per character of `new_texts`
            (flat, row by row), its span in the input text of its row.

    Returns:
        `(starts, ends)` in the input texts.
    """
    char_starts, char_ends, splits = valid_char_spans(new_texts)
    keys = row_ids(splits) * _ROW + char_starts
    # A last entry that no span reaches keeps every gather in range.
    pad = tf.zeros([1], tf.int64)
    old_starts, old_ends, char_starts, char_ends = (
        tf.concat([x, pad], 0)
        for x in (old_starts, old_ends, char_starts, char_ends)
    )
    last = tf.size(keys, out_type=tf.int64)

    def moved(at, position, side):
        c = _char_at(keys, rows, at)
        known = c >= 0
        c = tf.where(known, c, last)
        char_start = tf.gather(char_starts, c)
        old_start = tf.gather(old_starts, c)
        return to_source(
            old_start,
            tf.gather(old_ends, c) - old_start,
            tf.gather(char_ends, c) - char_start,
            position - char_start,
            side,
            known,
        )

    new_starts = moved(starts, starts, 0)
    new_ends = moved(ends - 1, ends, 1)
    empty = ends <= starts
    return new_starts, tf.where(empty, new_starts, new_ends)


def before_rewrite(starts, ends, rows, texts, rewritten, sources):
    """Byte spans in `rewritten` (the texts after a normalizer) -> byte
    spans in `texts`, through the rewrite's alignments: `remap`'s rule,
    worked out per span rather than per character.

    The rows of each batch lie end to end in its joined bytes, so a
    character is known by the position of its first byte there; only
    those positions are listed (one search per span finds its character),
    and a character's alignment is read for the spans that need it.

    Args:
        starts, ends, rows: int64 `[K]`, spans in `rewritten` and the row
            of each.
        texts, rewritten: string `[R]`, before and after, valid UTF-8.
        sources: int64 ragged `[R, None]`: for each character of
            `rewritten`, the index of the character of its text it is
            aligned with, -1 for none (HF's `(0, 0)`).
    """
    starts, ends, rows = (tf.cast(x, tf.int64) for x in (starts, ends, rows))
    new_at, new_rows, new_lengths = character_starts(rewritten)
    old_at, old_rows, _ = character_starts(texts)
    # One more end keeps the reads in range when no text has a character
    # (a batch of added tokens and empty lines).
    old_at = tf.concat([old_at, old_at[-1:]], 0)
    # The characters of a row before it, in `texts`.
    old_before = tf.cast(
        tf.cumsum(tf.strings.length(texts, unit="UTF8_CHAR"), exclusive=True),
        tf.int64,
    )
    source = tf.concat([sources.flat_values, [-1]], 0)
    last = tf.size(new_at, out_type=tf.int64) - 1  # the end, no character

    def moved(at, position, side):
        """Where byte `position` of a row goes; `at` is the byte whose
        character decides, `side` 0 for a start and 1 for an end."""
        row_start = tf.gather(new_rows, rows)
        # A byte of the row (a span may start at its end: its last
        # character decides), so that the search finds a character of it.
        inside = tf.minimum(at, tf.gather(new_lengths, rows) - 1)
        c = (
            tf.searchsorted(
                new_at, row_start + inside, side="right", out_type=tf.int64
            )
            - 1
        )
        # No character (an empty row): the last entry, which reads as 0.
        c = tf.where(inside < 0, last, c)
        char_start = tf.gather(new_at, c)
        char_bytes = tf.gather(new_at, tf.minimum(c + 1, last)) - char_start
        aligned = tf.gather(source, c)
        known = (aligned >= 0) & (c < last)
        old = tf.maximum(aligned + tf.gather(old_before, rows), 0)
        old_start = tf.gather(old_at, old)
        old_bytes = tf.gather(old_at, old + 1) - old_start
        old_start -= tf.gather(old_rows, rows)
        in_char = row_start + position - char_start
        return to_source(old_start, old_bytes, char_bytes, in_char, side, known)

    new_starts = moved(starts, starts, 0)
    new_ends = moved(ends - 1, ends, 1)
    return new_starts, tf.where(ends <= starts, new_starts, new_ends)


def to_source(old_start, old_bytes, char_bytes, in_char, side, known):
    """`remap`'s rule for one span end: where a byte of a rewritten
    character goes in the text before the rewrite.

    A character that kept its length (`char_bytes == old_bytes`) keeps
    the byte (`in_char` bytes into its source, which starts at
    `old_start`); another takes its whole source, its start (`side` 0)
    or its end (`side` 1); a character with no source (`known` False)
    gives 0.
    """
    exact = old_start + in_char
    whole = old_start + side * old_bytes
    moved = tf.where(char_bytes == old_bytes, exact, whole)
    return tf.where(known, moved, tf.zeros_like(moved))


def character_starts(texts):
    """Where each character of `[R]` valid UTF-8 `texts` starts in their
    joined bytes, then the end of the bytes (int64 `[C + 1]`); where each
    row starts there and its length (int64 `[R]`)."""
    raw = tf.io.decode_raw(tf.strings.reduce_join(texts), tf.uint8)
    lead = tf.where(tf.bitwise.bitwise_and(raw, 0xC0) != 0x80)[:, 0]
    total = tf.size(raw, out_type=tf.int64)
    lengths = tf.cast(tf.strings.length(texts), tf.int64)
    starts = tf.cumsum(lengths, exclusive=True)
    return tf.concat([lead, [total]], 0), starts, lengths


class WideCharacters:
    """Bytes and characters of `[R]` valid UTF-8 texts, read per item.

    In a text of one byte per character (most text) a character's index
    is its byte's; only the other texts ("wide": some character of two
    bytes or more) have their characters listed, so that the cost goes
    with their bytes, not with the whole batch's.
    """

    def __init__(self, texts):
        lengths = tf.cast(tf.strings.length(texts), tf.int64)
        counts = tf.cast(tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64)
        self.wide = lengths != counts
        wide = tf.gather(texts, tf.where(self.wide)[:, 0])
        # Each wide text's rank among them.
        self.rank = tf.cumsum(tf.cast(self.wide, tf.int64)) - 1
        self.at, self.first_byte, _ = character_starts(wide)
        self.first_char = tf.cumsum(
            tf.boolean_mask(counts, self.wide), exclusive=True
        )

    def reader(self, rows):
        """For items of texts `rows` (int64 `[K]`): a function from the
        index of a character of each item's text (int64 `[K]`; 0 in an
        empty text) to that character's first byte and its length in
        bytes. What depends on the rows alone is worked out once."""
        picked = tf.where(tf.gather(self.wide, rows))
        rank = tf.gather(self.rank, tf.gather(rows, picked[:, 0]))
        first_char = tf.gather(self.first_char, rank)
        first_byte = tf.gather(self.first_byte, rank)

        def read(index):
            c = first_char + tf.gather_nd(index, picked)
            start = tf.gather(self.at, c)
            return (
                tf.tensor_scatter_nd_update(index, picked, start - first_byte),
                tf.tensor_scatter_nd_update(
                    tf.ones_like(index),
                    picked,
                    tf.gather(self.at, c + 1) - start,
                ),
            )

        return read


def before_repair(raw, texts, starts, ends, rows):
    """Byte spans in `texts`, the UTF-8 repair of `raw` (`to_valid_utf8`),
    -> byte spans in the raw bytes: each U+FFFD of the repair stands for
    the invalid bytes it replaced. Free when no text needed a repair.

    Args:
        raw: string `[R]`, the texts as given.
        texts: string `[R]`, `to_valid_utf8(raw)`.
        starts, ends: int64 `[K]`, spans in `texts`.
        rows: int64 `[K]`, the row of each span.

    Returns:
        `(starts, ends)` in `raw`.
    """

    def remapped():
        old_starts, old_ends, _ = char_spans(raw)
        return remap(starts, ends, rows, texts, old_starts, old_ends)

    return tf.cond(
        tf.reduce_all(texts == raw), lambda: (starts, ends), remapped
    )


def to_characters(texts, starts, ends, rows, valid=False):
    """Byte spans -> code-point spans, for rows of `texts`.

    A span that starts or ends inside a character covers all of it
    (Hugging Face's offsets of a byte-level token holding part of an
    emoji). Invalid UTF-8 counts as `bytes.decode("utf-8", "replace")`
    counts it: one character per replaced subsequence. `valid=True` says
    the texts are valid UTF-8 (`to_valid_utf8`'s) and every span lies in
    its text, which skips the check and the clamping.
    """
    if valid:
        return _valid_to_characters(texts, starts, ends, rows)
    valid = tf.strings.regex_full_match(texts, VALID_UTF8)

    def clamped():
        length = tf.gather(tf.cast(tf.strings.length(texts), tf.int64), rows)
        first = tf.minimum(starts, length)
        return _valid_to_characters(texts, first, tf.maximum(ends, first), rows)

    return tf.cond(
        tf.reduce_all(valid),
        clamped,
        lambda: _decoded_to_characters(texts, starts, ends, rows),
    )


def _valid_to_characters(texts, starts, ends, rows):
    """`to_characters` for valid UTF-8 and spans in their texts.

    In a row of ASCII the characters are the bytes. In the other rows a
    character starts at every byte that is not a continuation byte
    (`10xxxxxx`), so the characters before a byte are the bytes before it
    less the continuation bytes before it: those are found once and
    counted by a binary search per span, with no decoding and no running
    sum over every byte (TensorFlow's `cumsum` costs ~4 ns a byte, its
    binary search ~20 ns a span, and a token is 4-5 bytes). Only the spans
    that end at or after their row's first continuation byte are counted.
    A span's start counts the character holding its byte (its end, at the
    end of the row: the next row starts with a lead byte, or the bytes
    end)."""
    lengths = tf.cast(tf.strings.length(texts), tf.int64)
    wide = lengths != tf.cast(
        tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64
    )

    def counted():
        raw = tf.io.decode_raw(tf.strings.reduce_join(texts), tf.uint8)
        following = tf.where(tf.bitwise.bitwise_and(raw, 0xC0) == 0x80)[:, 0]
        row_starts = tf.cumsum(lengths, exclusive=True)

        def continuations(at):
            """Continuation bytes before byte `at` of the joined texts."""
            return tf.searchsorted(following, at, out_type=tf.int64)

        before_row = continuations(row_starts)
        # Each row's first continuation byte, in the row (past its end if
        # it has none).
        first_wide = (
            tf.gather(
                tf.concat([following, [tf.size(raw, out_type=tf.int64)]], 0),
                before_row,
            )
            - row_starts
        )
        at = tf.where(ends >= tf.gather(first_wide, rows))
        row = tf.gather(rows, at[:, 0])
        first = tf.gather(row_starts, row)
        before = tf.gather(before_row, row)
        start = tf.gather(starts, at[:, 0])
        end = tf.gather(ends, at[:, 0])
        start -= continuations(first + start + 1) - before
        end -= continuations(first + end) - before
        return (
            tf.tensor_scatter_nd_update(starts, at, start),
            tf.tensor_scatter_nd_update(ends, at, end),
        )

    return tf.cond(tf.reduce_any(wide), counted, lambda: (starts, ends))


def _decoded_to_characters(texts, starts, ends, rows):
    char_starts, _, splits = char_spans(texts)
    keys = row_ids(splits) * _ROW + char_starts
    first = tf.gather(splits, rows)
    start = _char_at(keys, rows, starts)
    # An empty span at the end of the text (a trimmed space) starts after
    # the last character, not in it.
    at_end = starts >= tf.gather(
        tf.cast(tf.strings.length(texts), tf.int64), rows
    )
    start = tf.where(at_end, tf.gather(splits, rows + 1), start)
    end = tf.searchsorted(keys, rows * _ROW + ends, out_type=tf.int64)
    start = tf.maximum(start - first, 0)
    return start, tf.maximum(end - first, start)


def in_lines(starts, ends, whole, segment_starts, segment_ends, token_segment):
    """Token spans in their segments (the pieces left between added
    tokens) -> in their lines. A token that is a whole segment (an added
    token, `whole` per segment) spans the segment.

    Args:
        starts, ends: int64 `[T]`, each token's span in its segment.
        whole: bool `[G]`, which segments are one token each.
        segment_starts, segment_ends: int64 `[G]`, each segment's span
            in its line.
        token_segment: int64 `[T]`, each token's segment.
    """
    whole = tf.gather(whole, token_segment)
    starts = tf.where(whole, tf.zeros_like(starts), starts)
    ends = tf.where(
        whole, tf.gather(segment_ends - segment_starts, token_segment), ends
    )
    shift = tf.gather(segment_starts, token_segment)
    return starts + shift, ends + shift
