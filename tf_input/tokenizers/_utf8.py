"""Invalid UTF-8 in a batch of strings: the strict check and two repairs.

A repair only runs on lines that fail the strict check, which is one RE2
match per line.
"""

from __future__ import annotations

import tensorflow as tf

# Strict: RE2 accepts surrogates and overlong forms in `[\x{0}-\x{10FFFF}]`.
VALID_UTF8 = r"(?:[\x{0}-\x{D7FF}]|[\x{E000}-\x{10FFFF}])*"
# The longest run of valid characters, then one byte (`\C`, a byte even in
# RE2's UTF-8 mode): that byte starts no valid character.
_VALID_THEN_BYTE = f"({VALID_UTF8})\\C"
_REPLACEMENT = "\ufffd"
_SENTINEL = b"\xff"  # never in UTF-8


def to_valid_utf8(texts):
    """Replaces invalid UTF-8 by U+FFFD as Python's
    `bytes.decode("utf-8", "replace")` does: one U+FFFD per maximal
    invalid subsequence (Hugging Face `tokenizers`, tiktoken)."""
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


def replace_invalid_bytes(texts):
    """Each byte that does not start a valid UTF-8 character (and is not
    inside one) becomes U+FFFD, as sentencepiece's normalizer does (one
    replacement per byte, unlike Python's "replace", which gives one per
    maximal invalid subsequence).

    A rebuilt line gets an invalid byte at its end, so that every match of
    `_VALID_THEN_BYTE` (RE2 prefers the longest valid run: the decoding
    of UTF-8 from a character boundary is unique) ends on an invalid byte,
    which becomes U+FFFD; the sentinel's U+FFFD is then cut off. Twelve
    graph nodes: a byte-by-byte version took 240, and every node costs
    each `tf.data` iterator start-up time (see benchmarks/README.md).
    """
    valid = tf.strings.regex_full_match(texts, VALID_UTF8)
    bad_at = tf.where(~valid)
    fixed = tf.strings.regex_replace(
        tf.gather_nd(texts, bad_at) + _SENTINEL,
        _VALID_THEN_BYTE,
        "\\1" + _REPLACEMENT,
    )
    length = tf.strings.length(fixed) - len(_REPLACEMENT.encode())
    fixed = tf.strings.substr(fixed, tf.zeros_like(length), length)
    return tf.tensor_scatter_nd_update(texts, bad_at, fixed)


def utf8_lengths(code_points):
    """The UTF-8 length in bytes of each code point (int64, same shape)."""
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )
