"""HF's `Lowercase` normalizer in core TF ops.

HF's Lowercase is Rust's `char::to_lowercase`, one character at a time;
`tf.strings.lower` (ICU) applies the final-sigma rule, lacks the capitals
of Unicode 14-16 listed here, and stops at a NUL byte. Each difference is
undone around it; the tests compare every code point with HF.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import sources_where
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._unicode import CodePoints

_NEW_CAPITALS = (
    "1C89>1C8A 2C2F>2C5F A7C0>A7C1 A7CB>0264 A7CC>A7CD A7CE>A7CF A7D0>A7D1 "
    "A7D2>A7D3 A7D4>A7D5 A7D6>A7D7 A7D8>A7D9 A7DA>A7DB A7DC>019B "
    "10570-1057A>10597 1057C-1058A>105A3 1058C-10592>105B3 "
    "10594-10595>105BB 10D50-10D65>10D70 16EA0-16EB8>16EBB"
)


def _new_capitals():
    out = {}
    for item in _NEW_CAPITALS.split():
        source, target = item.split(">")
        ((first, last),) = CodePoints.parse(source).ranges
        for c in range(first, last + 1):
            out[c] = int(target, 16) + c - first
    return out


class Lowercase:
    def __init__(self):
        capitals = _new_capitals()
        keys = sorted(capitals)
        self.pattern = f"(?s).*{CodePoints((k, k) for k in keys).re2()}.*"
        self.table = lookup_table(
            keys,
            [capitals[k] for k in keys],
            -1,
            key_dtype=tf.int32,
            value_dtype=tf.int32,
        )

    def with_sources(self, texts):
        """The lowercased texts and their sources: Rust's lowercase of a
        character is one character, except U+0130, whose second
        character ("i" + U+0307) HF inserts after the first (both come
        from U+0130)."""
        _, sources = sources_where(self.moves(texts), texts, self._with_sources)
        return self(texts), sources

    def moves(self, texts):
        """bool `[M]`: the texts with a U+0130 (in the others, every
        character stays in place, lowercased)."""
        return tf.strings.regex_full_match(texts, "(?s).*\u0130.*")

    def _with_sources(self, texts):
        chars = tf.strings.unicode_decode(texts, "UTF-8")
        flat = chars.flat_values
        splits = tf.cast(chars.row_splits, tf.int64)
        local = tf.range(tf.size(flat, out_type=tf.int64)) - tf.gather(
            splits, row_ids(splits)
        )
        widths = 1 + tf.cast(tf.equal(flat, 0x130), tf.int64)
        sources = tf.repeat(local, widths)
        new_splits = tf.gather(tf.concat([[0], tf.cumsum(widths)], 0), splits)
        return self(texts), tf.RaggedTensor.from_row_splits(
            sources, new_splits, validate=False
        )

    def __call__(self, texts):
        has_new = tf.strings.regex_full_match(texts, self.pattern)

        def map_new():
            chars = tf.strings.unicode_decode(texts, "UTF-8")
            flat = chars.flat_values
            small = self.table.lookup(flat)
            flat = tf.where(small >= 0, small, flat)
            return tf.strings.unicode_encode(
                chars.with_flat_values(flat), "UTF-8"
            )

        texts = tf.cond(tf.reduce_any(has_new), map_new, lambda: texts)
        texts = tf.strings.regex_replace(texts, "\u03a3", "\u03c3")
        has_nul = tf.strings.regex_full_match(texts, "(?s).*\\x00.*")

        def around_nul():
            # Op attributes are C strings: a NUL separator would be empty,
            # so each piece gets its NUL as a tensor and the last one goes.
            parts = tf.strings.split(texts, sep="\x00")
            flat = tf.strings.lower(parts.flat_values, encoding="utf-8")
            nul = tf.fill(tf.shape(flat), tf.constant(b"\x00"))
            joined = tf.strings.reduce_join(
                parts.with_flat_values(tf.strings.join([flat, nul])), axis=-1
            )
            return tf.strings.substr(
                joined,
                tf.zeros_like(tf.strings.length(joined)),
                tf.strings.length(joined) - 1,
            )

        return tf.cond(
            tf.reduce_any(has_nul),
            around_nul,
            lambda: tf.strings.lower(texts, encoding="utf-8"),
        )
