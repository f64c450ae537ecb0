"""UTF-8 in TensorFlow string ops: validity, repair, character lengths.

RE2 matches a character class only on valid UTF-8, so a full match of
`VALID_UTF8` says whether a string is valid (surrogate code points, which
Python's strict decoder rejects, are outside both ranges).
"""

from __future__ import annotations

import tensorflow as tf

VALID_UTF8 = r"(?:[\x{0}-\x{D7FF}]|[\x{E000}-\x{10FFFF}])*"


def to_valid_utf8(texts):
    """`[N]` strings with invalid UTF-8 replaced by U+FFFD, as Python's
    `bytes.decode("utf-8", "replace")` does (the transcode runs only on
    batches that need it)."""
    valid = tf.strings.regex_full_match(texts, VALID_UTF8)
    return tf.cond(
        tf.reduce_all(valid),
        lambda: texts,
        lambda: tf.strings.unicode_transcode(
            texts,
            "UTF-8",
            "UTF-8",
            errors="replace",
            replacement_char=0xFFFD,
        ),
    )


def utf8_lengths(code_points):
    """The UTF-8 length in bytes of each code point (int64, same shape)."""
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )
