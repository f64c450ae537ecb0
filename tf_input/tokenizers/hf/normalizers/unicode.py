"""HF's Unicode normalization forms (NFC, NFD, NFKC, NFKD) in core TF ops.

Unicode normalization is done here rather than with ICU, which only TF
Text exposes and which follows a newer Unicode than HF's normalizers
(Unicode 9.0). A line whose characters are all quick-check safe (no
decomposition, combining class 0, never the second half of a composition)
is already normalized: one `regex_full_match` says so for most text, and
only the other lines are decoded to code points, decomposed through a
table, put in canonical order by a stable sort, and recomposed. The
recomposition is sequential within a *chunk* (a starter and what follows
it up to the next character that never composes with anything before
it), so its loop runs as many steps as the longest chunk has characters,
typically two or three, over all chunks at once.

`reference_normalize` is the same in plain Python, for construction-time
checks and as the tests' independent reference.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers import _unicode
from tf_input.tokenizers._offsets import sources_where
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._unicode import CodePoints

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
_KEY = 0x110000  # composition pairs are keyed first * _KEY + second
_PARTS = 32  # decompositions are keyed code point * _PARTS + index


class _Tables:
    """HF's normalization data for one form, as numpy arrays."""

    def __init__(self, form):
        compatibility = form in ("NFKC", "NFKD")
        self.compose = form in ("NFC", "NFKC")
        decomposition = _unicode.decomposition_table(compatibility)
        keys = sorted(decomposition)
        self.keys = np.array(keys, np.int32)
        lengths = [len(decomposition[k]) for k in keys]
        self.starts = np.cumsum([0, *lengths[:-1]]).astype(np.int64)
        self.lengths = np.array(lengths, np.int64)
        self.values = np.array(
            [c for k in keys for c in decomposition[k]], np.int32
        )
        classes = _combining_classes()
        self.ccc_starts = np.array([a for a, _, _ in classes], np.int32)
        self.ccc_ends = np.array([b for _, b, _ in classes], np.int32)
        self.ccc_values = np.array([v for _, _, v in classes], np.int32)
        pairs = _unicode.composition_table() if self.compose else {}
        self.pair_keys = np.array(
            [a * _KEY + b for a, b in pairs] or [-1], np.int64
        )
        self.pair_values = np.array(list(pairs.values()) or [-1], np.int32)
        seconds = {b for _, b in pairs}
        self.seconds = np.array(sorted(seconds) or [-1], np.int32)
        self.unsafe = _unsafe(form, decomposition, seconds)
        if max(lengths, default=0) >= _PARTS:
            raise ValueError("A decomposition is too long for `_PARTS`.")


@functools.cache
def _combining_classes():
    """`[(first, last, class)]` runs of nonzero combining classes."""
    out = []
    for first, last in _unicode.assigned().ranges:
        for c in range(first, last + 1):
            value = _unicode.combining_class(c)
            if not value:
                continue
            if out and out[-1][1] == c - 1 and out[-1][2] == value:
                out[-1] = (out[-1][0], c, value)
            else:
                out.append((c, c, value))
    return out


def _unsafe(form, decomposition, seconds):
    """Characters that may change or make a neighbour change."""
    points = set(seconds)
    for c in decomposition:
        if not form.endswith("D") and reference_normalize(chr(c), form) == (
            chr(c)
        ):
            continue
        points.add(c)
    for first, last, _ in _combining_classes():
        points.update(range(first, last + 1))
    return CodePoints((c, c) for c in points)


_TABLES = {}


def _tables(form):
    if form not in _TABLES:
        _TABLES[form] = _Tables(form)
    return _TABLES[form]


class UnicodeNormalization:
    # A text `moves` does not pick comes out as it went in.
    keeps_unmoved_texts = True

    def __init__(self, form):
        self.form = form
        tables = _tables(form)
        self.tables = tables
        self.safe_pattern = f"{(~tables.unsafe).re2()}*"
        # The decompositions are lookup tables: as constants in the graph
        # (Hangul alone is 11,172 of them) they would be copied and
        # optimized each time a `tf.data` iterator starts.
        starts = np.repeat(tables.starts, tables.lengths)
        offsets = np.arange(len(tables.values)) - starts
        with tf.init_scope():
            self.lengths = lookup_table(
                tables.keys, tables.lengths, 1, key_dtype=tf.int64
            )
            self.parts = lookup_table(
                np.repeat(tables.keys.astype(np.int64), tables.lengths) * _PARTS
                + offsets,
                tables.values,
                -1,
                key_dtype=tf.int64,
                value_dtype=tf.int32,
            )
            classes = [
                (c, value)
                for first, last, value in _combining_classes()
                for c in range(first, last + 1)
            ]
            self.classes = lookup_table(
                [c for c, _ in classes],
                [v for _, v in classes],
                0,
                key_dtype=tf.int64,
                value_dtype=tf.int32,
            )
            self.seconds = tf.constant(tables.seconds)
        self.pairs = lookup_table(
            tables.pair_keys,
            tables.pair_values,
            -1,
            key_dtype=tf.int64,
            value_dtype=tf.int32,
        )
        # For the `tf.Module` that holds this normalization to track.
        self.lookup_tables = [
            self.pairs,
            self.lengths,
            self.parts,
            self.classes,
        ]

    def __call__(self, texts):
        safe = tf.strings.regex_full_match(texts, self.safe_pattern)
        return tf.cond(
            tf.reduce_all(safe),
            lambda: texts,
            lambda: self._normalize_rows(texts, ~safe),
        )

    def _normalize_rows(self, texts, rows_mask):
        rows = tf.where(rows_mask)
        chars = tf.strings.unicode_decode(tf.gather_nd(texts, rows), "UTF-8")
        values, splits = self.normalize_code_points(
            chars.flat_values, tf.cast(chars.row_splits, tf.int64)
        )
        normalized = tf.strings.unicode_encode(
            tf.RaggedTensor.from_row_splits(values, splits, validate=False),
            "UTF-8",
        )
        return tf.tensor_scatter_nd_update(texts, rows, normalized)

    def with_sources(self, texts):
        """`[M]` texts -> (normalized `[M]` texts, int64 ragged `[M, None]`
        sources): for each character of a normalized text, the index of
        the character of the input text whose span Hugging Face gives it
        (its alignment), or -1 for none (HF's `(0, 0)`).

        HF's alignments follow a count, not the characters: every input
        character decomposes into a first part (counted 1) and the rest
        (counted 0); after the canonical reordering and the composition, an
        output character counted `w` (its parts summed) is aligned with
        the input character at the count of all characters before it, or
        with the one before that if `w` is 0 (an inserted character).
        Checked against HF for all four forms on random strings of
        combining marks, Hangul, compatibility characters.
        """
        return sources_where(self.moves(texts), texts, self._with_sources)

    def moves(self, texts):
        """bool `[M]`: the texts with a character the form may change (the
        others stay as they are)."""
        return ~tf.strings.regex_full_match(texts, self.safe_pattern)

    def _with_sources(self, texts):
        chars = tf.strings.unicode_decode(texts, "UTF-8")
        values, splits, sources = self.code_points_with_sources(
            chars.flat_values, tf.cast(chars.row_splits, tf.int64)
        )
        normalized = tf.strings.unicode_encode(
            tf.RaggedTensor.from_row_splits(values, splits, validate=False),
            "UTF-8",
        )
        return normalized, tf.RaggedTensor.from_row_splits(
            sources, splits, validate=False
        )

    def code_points_with_sources(self, flat, splits):
        """`with_sources` on code points: `flat` (int32, rows cut at int64
        `splits`) -> the normalized `(flat, splits)` and the int64 source
        of each output character, an index into its input row (or -1)."""
        values, splits, weights = self.normalize_code_points(
            flat, splits, with_weights=True
        )
        count = starts_in_rows(weights, splits)
        return values, splits, tf.where(weights > 0, count, count - 1)

    def normalize_code_points(self, flat, splits, with_weights=False):
        """Code points `flat` (int32, rows cut at int64 `splits`) ->
        the normalized `(flat, splits)`; with `with_weights`, also the
        int64 count of each output character (see `with_sources`)."""
        # Decompose (full mappings from the tables).
        lengths = self.lengths.lookup(tf.cast(flat, tf.int64))
        new_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        owner = row_ids(new_splits)
        offset = tf.range(new_splits[-1]) - tf.gather(new_splits, owner)
        source = tf.gather(flat, owner)
        part = self.parts.lookup(tf.cast(source, tf.int64) * _PARTS + offset)
        flat = tf.where(part >= 0, part, source)
        splits = tf.gather(new_splits, splits)
        weights = tf.cast(offset == 0, tf.int64) if with_weights else None
        # Canonical order: a stable sort by combining class within each run
        # that follows a starter (or a row start).
        ccc = self._ccc(flat)
        size = tf.size(flat, out_type=tf.int64)
        row_start = marks(splits[:-1], size + 1)[:size]
        group = tf.cumsum(tf.cast((ccc == 0) | (row_start > 0), tf.int64))
        key = group * 256 + tf.cast(ccc, tf.int64)
        # Keys already in order (no two marks to swap, as in most text)
        # need no sort, which costs the most here.
        order = tf.cond(
            tf.reduce_any(key[1:] < key[:-1]),
            lambda: tf.argsort(key, stable=True),
            lambda: tf.range(tf.size(key)),
        )
        flat = tf.gather(flat, order)
        if with_weights:
            weights = tf.gather(weights, order)
        if not self.tables.compose:
            return (flat, splits, weights) if with_weights else (flat, splits)
        ccc = tf.gather(ccc, order)
        return self._compose(flat, ccc, splits, row_start, weights)

    def _ccc(self, flat):
        return self.classes.lookup(tf.cast(flat, tf.int64))

    def _compose(self, flat, ccc, splits, row_start, weights=None):
        t = self.tables
        pairs = self.pairs
        seconds = self.seconds
        j = tf.minimum(
            tf.searchsorted(seconds, flat, side="left"), len(t.seconds) - 1
        )
        is_second = tf.gather(seconds, j) == flat
        # Chunks start at a row start or at a starter that never composes
        # with what comes before it.
        chunk_start = (row_start > 0) | ((ccc == 0) & ~is_second)
        starts = tf.where(chunk_start)[:, 0]
        size = tf.size(flat, out_type=tf.int64)
        lengths = tf.concat([starts[1:], [size]], 0) - starts
        first_is_starter = tf.gather(ccc, starts) == 0
        num_chunks = tf.size(starts)
        steps = tf.reduce_max(tf.concat([lengths, [1]], 0))

        def step(k, values, alive, starter, last_cc, has_starter, target):
            # Only the chunks that still have a character at `k`.
            active = tf.where(lengths > k)[:, 0]
            at = tf.gather(starts, active) + k
            char = tf.gather(values, at)
            cc = tf.gather(ccc, at)
            my_starter = tf.gather(starter, active)
            my_last = tf.gather(last_cc, active)
            my_has = tf.gather(has_starter, active)
            composite = pairs.lookup(
                tf.cast(tf.gather(values, my_starter), tf.int64) * _KEY
                + tf.cast(char, tf.int64)
            )
            free = (my_last < cc) | (my_last == 0)
            merge = my_has & free & (composite >= 0)
            # The starter takes the composite; the character goes.
            values = tf.tensor_scatter_nd_update(
                values,
                tf.where(merge, my_starter, at)[:, None],
                tf.where(merge, composite, char),
            )
            alive = tf.tensor_scatter_nd_update(alive, at[:, None], ~merge)
            if weights is not None:
                # Where each character's count goes: the starter it joins.
                target = tf.tensor_scatter_nd_update(
                    target, at[:, None], tf.where(merge, my_starter, at)
                )
            new_starter = ~merge & (cc == 0)
            starter = tf.tensor_scatter_nd_update(
                starter, active[:, None], tf.where(new_starter, at, my_starter)
            )
            has_starter = tf.tensor_scatter_nd_update(
                has_starter, active[:, None], my_has | new_starter
            )
            last_cc = tf.tensor_scatter_nd_update(
                last_cc,
                active[:, None],
                tf.where(new_starter, 0, tf.where(merge, my_last, cc)),
            )
            return k + 1, values, alive, starter, last_cc, has_starter, target

        _, flat, alive, _, _, _, target = tf.while_loop(
            lambda k, *_: k < steps,
            step,
            [
                tf.constant(1, tf.int64),
                flat,
                tf.ones_like(flat, tf.bool),
                starts,
                tf.zeros([num_chunks], tf.int32),
                first_is_starter,
                tf.range(size)
                if weights is not None
                else tf.zeros([0], tf.int64),
            ],
        )
        keep = tf.where(alive)[:, 0]
        kept_before = tf.concat([[0], tf.cumsum(tf.cast(alive, tf.int64))], 0)
        flat, splits = tf.gather(flat, keep), tf.gather(kept_before, splits)
        if weights is None:
            return flat, splits
        weights = tf.math.unsorted_segment_sum(weights, target, size)
        return flat, splits, tf.gather(weights, keep)


# --- Reference (plain Python, HF's tables) ---------------------------------
def reference_normalize(text, form):
    """HF's `form` normalization of `text`, in plain Python.

    Written from UAX #15 over the same tables as the graph code, for
    construction-time checks and as the tests' independent reference.
    """
    compatibility = form in ("NFKC", "NFKD")
    table = _unicode.decomposition_table(compatibility)
    chars = [c for ch in text for c in table.get(ord(ch), [ord(ch)])]
    # Canonical ordering (stable sort of each run of non-starters).
    out, run = [], []
    for c in chars:
        if _unicode.combining_class(c) == 0:
            out.extend(sorted(run, key=_unicode.combining_class))
            run = []
            out.append(c)
        else:
            run.append(c)
    out.extend(sorted(run, key=_unicode.combining_class))
    if form in ("NFD", "NFKD"):
        return "".join(map(chr, out))
    pairs = _unicode.composition_table()
    result, starter, last_cc = [], None, 0
    for c in out:
        cc = _unicode.combining_class(c)
        if starter is not None and (last_cc < cc or last_cc == 0):
            composite = pairs.get((result[starter], c))
            if composite is not None:
                result[starter] = composite
                continue
        if cc == 0:
            starter, last_cc = len(result), 0
        else:
            last_cc = cc
        result.append(c)
    return "".join(map(chr, result))
