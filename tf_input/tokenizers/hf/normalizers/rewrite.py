"""A regex rewrite (`Replace`, `StripAccents`) with HF's
alignments.

HF's `NormalizedString::replace` removes each match and inserts the
replacement's characters after it: they take the alignment of the
match's last character (the one before the insertion point). A filter
(StripAccents) is the same rewrite with an empty replacement: the
characters kept keep their own alignments.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import marks
from tf_input.tokenizers._offsets import sources_where

# Around each match in a marked text: never in valid UTF-8.
_OPEN, _MIDDLE, _CLOSE = b"\xfe", b"\xfd", b"\xff"


class RegexRewrite:
    """`[M]` strings -> every match of `re2` replaced by `rewrite` (an
    RE2 rewrite string: backslashes doubled); `with_sources` also gives
    each output character's source."""

    # A text `moves` does not pick comes out as it went in.
    keeps_unmoved_texts = True

    def __init__(self, re2, rewrite):
        self.re2 = re2
        self.rewrite = rewrite
        self._matching = f"(?s).*(?:{re2}).*"

    def __call__(self, texts):
        return tf.strings.regex_replace(texts, self.re2, self.rewrite)

    def with_sources(self, texts):
        """`(rewritten [M], int64 ragged [M, None] sources)`: an output
        character outside a replacement is its own input character; one
        inside a replacement comes from the match's last character."""
        return sources_where(self.moves(texts), texts, self._with_sources)

    def moves(self, texts):
        """bool `[M]`: the texts with a match (the others stay as they
        are)."""
        return tf.strings.regex_full_match(texts, self._matching)

    def _with_sources(self, texts):
        marked = tf.strings.regex_replace(
            texts,
            self.re2,
            _OPEN + b"\\0" + _MIDDLE + self.rewrite.encode() + _CLOSE,
        )
        return self(texts), marked_sources(marked)


def marked_sources(marked):
    """The sources of a rewrite from its marked texts: each match as
    `_OPEN match _MIDDLE replacement _CLOSE`, valid UTF-8 elsewhere.

    The input's characters are those outside the markers or inside a
    match; the output's are those outside or inside a replacement. An
    output character comes from the last input character at or before
    it (its own, or the match's last one).
    """
    lengths = tf.cast(tf.strings.length(marked), tf.int64)
    raw = tf.io.decode_raw(tf.strings.reduce_join(marked), tf.uint8)
    size = tf.size(raw, out_type=tf.int64)
    is_open, is_middle = tf.equal(raw, 0xFE), tf.equal(raw, 0xFD)
    is_close = tf.equal(raw, 0xFF)
    marker = is_open | is_middle | is_close
    # 0 outside, 1 in a match, 2 in a replacement.
    state = tf.cumsum(
        tf.cast(is_open, tf.int64)
        + tf.cast(is_middle, tf.int64)
        - 2 * tf.cast(is_close, tf.int64)
    )
    lead = (tf.bitwise.bitwise_and(raw, 0xC0) != 0x80) & ~marker
    is_input = lead & (state < 2)
    is_output = lead & (state != 1)
    splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    row = tf.cumsum(marks(splits[1:-1], size + 1)[:size])
    seen = tf.cumsum(tf.cast(is_input, tf.int64))  # inputs up to here
    before_row = tf.gather(
        tf.concat([[0], seen], 0), tf.gather(splits, row)
    )  # inputs of the rows before
    at = tf.where(is_output)[:, 0]
    sources = tf.gather(seen - before_row - 1, at)
    counts = tf.math.unsorted_segment_sum(
        tf.ones_like(at), tf.gather(row, at), tf.size(marked, out_type=tf.int64)
    )
    out_splits = tf.concat([[0], tf.cumsum(counts)], 0)
    return tf.RaggedTensor.from_row_splits(sources, out_splits, validate=False)
