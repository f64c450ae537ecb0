"""The class alphabet: a regex's Unicode classes over a few characters.

Where a regex strains RE2's DFA (`regex.strains_the_dfa`: o200k's two
adjacent runs of large overlapping letter classes), the split passes run
on a *class alphabet*: each non-ASCII character is replaced by a
representative of its class, the set of characters that every character
class of the description treats alike, with the same UTF-8 length. Splits
are then unchanged, byte for byte, and the regexes hold a few dozen
characters instead of Unicode tables. RE2's DFA runs out of memory on
o200k's regex over Chinese text with its own classes, many times slower
than the other families' regexes; on the class alphabet it takes about as
long as any other (see `benchmarks/README.md`). ASCII characters are
their own representatives, and lines of pure ASCII are not mapped at all.
"""

from __future__ import annotations

import bisect

import numpy as np
import tensorflow as tf

from tf_input.tokenizers._unicode import CodePoints


class ClassAlphabet:
    """Non-ASCII characters -> representatives of their classes.

    Two characters are in one class when every set of `sets` holds both
    or neither, and they have the same UTF-8 length. `rewrite` spells a
    set of `sets` over the representatives (ASCII characters stand for
    themselves).
    """

    def __init__(self, sets):
        sets = list(dict.fromkeys(sets))
        cuts = {0x80, 0x800, 0x10000, 0xD800, 0xE000, 0x110000}
        for points in sets:
            for first, last in points.ranges:
                cuts.update((first, last + 1))
        cuts = sorted(c for c in cuts if 0x80 <= c <= 0x110000)
        starts = cuts[:-1]
        classes = {}
        reps = []
        for start in starts:
            if 0xD800 <= start < 0xE000:
                reps.append(0xFFFD)  # no UTF-8 text holds a surrogate
                continue
            key = (
                tuple(start in points for points in sets),
                len(chr(start).encode("utf-8")),
            )
            reps.append(classes.setdefault(key, start))
        self._starts = starts
        self._interval_reps = reps
        self.representatives = sorted(set(classes.values()))
        self.bounds = np.array(starts, np.int32)
        self.reps = np.array(reps, np.int32)

    def representative(self, code_point):
        if code_point < 0x80:
            return code_point
        i = bisect.bisect_right(self._starts, code_point) - 1
        return self._interval_reps[i]

    def rewrite(self, points):
        ascii_part = points & CodePoints([(0, 0x7F)])
        reps = [r for r in self.representatives if r in points]
        return ascii_part | CodePoints((r, r) for r in reps)

    def map_text(self, texts, mask):
        """`texts` with each non-ASCII character replaced by its class
        representative, on the rows where `mask` is True."""
        plain = tf.strings.regex_full_match(texts, "[\\x00-\\x7f]*")
        needs = mask & ~plain
        bounds = tf.constant(self.bounds)
        reps = tf.constant(self.reps)

        def mapped():
            rows = tf.where(needs)
            chars = tf.strings.unicode_decode(
                tf.gather_nd(texts, rows), "UTF-8"
            )
            flat = chars.flat_values
            interval = tf.searchsorted(bounds, flat, side="right") - 1
            flat = tf.where(
                flat < 0x80, flat, tf.gather(reps, tf.maximum(interval, 0))
            )
            encoded = tf.strings.unicode_encode(
                chars.with_flat_values(flat), "UTF-8"
            )
            return tf.tensor_scatter_nd_update(texts, rows, encoded)

        return tf.cond(tf.reduce_any(needs), mapped, lambda: texts)
