"""Decoding: ids back to text, as `sentencepiece`'s `decode` does."""

from __future__ import annotations

import tensorflow as tf

from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _CONTROL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNKNOWN

_REPLACEMENT = "\ufffd"

# How a piece decodes (`_Decoder`'s per-piece kinds).
_TEXT, _NOTHING, _UNKNOWN_SURFACE, _ONE_BYTE = 0, 1, 2, 3


def _byte_of_piece(piece):
    """255 for "<0xFF>", else None."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


class _Decoder:
    """Per-piece texts and kinds, and the graph that joins them.

    `byte_ids` is the list of the 256 byte pieces' ids when the model has
    byte fallback, else None.
    """

    def __init__(self, model, byte_ids):
        self._model = model
        self._byte_ids = byte_ids
        texts, stripped, kinds = [], [], []
        for piece, piece_type in zip(model.pieces, model.types):
            kind, text = _TEXT, piece.replace(_SPACE, " ")
            if piece_type == _CONTROL:
                kind, text = _NOTHING, ""
            elif piece_type == _UNKNOWN:
                kind, text = _UNKNOWN_SURFACE, model.unk_surface
            elif piece_type == _BYTE and self._byte_ids is not None:
                value = _byte_of_piece(piece)
                if value is not None:
                    kind, text = _ONE_BYTE, bytes([value])
            if isinstance(text, str):
                text = text.encode("utf-8")
            texts.append(text)
            if kind == _TEXT and piece.startswith(_SPACE):
                stripped.append(piece[1:].replace(_SPACE, " ").encode())
            else:
                stripped.append(text)
            kinds.append(kind)
        self._piece_texts = tf.constant(texts, tf.string)
        self._stripped_texts = tf.constant(stripped, tf.string)
        self._piece_kinds = tf.constant(kinds, tf.int32)
        self._is_space_piece = tf.constant(
            [p == _SPACE for p in model.pieces], tf.bool
        )

    def __call__(self, ids):
        """Ragged `[N, None]` ids -> `[N]` strings, as `decode`."""
        values = ids.values
        rows = ids.value_rowids()
        kinds = tf.gather(self._piece_kinds, values)
        is_normal = tf.equal(kinds, _TEXT)
        strip = tf.logical_and(is_normal, self._first_piece(ids, kinds, rows))
        model = self._model
        if not (model.add_dummy_prefix or model.remove_extra_whitespaces):
            strip = tf.zeros_like(strip)
        texts = tf.where(
            strip,
            tf.gather(self._stripped_texts, values),
            tf.gather(self._piece_texts, values),
        )
        is_byte = tf.equal(kinds, _ONE_BYTE)
        bad_byte = _bad_bytes(texts, is_byte, rows)
        texts = tf.where(bad_byte, _REPLACEMENT.encode(), texts)
        return tf.strings.reduce_join(ids.with_flat_values(texts), axis=1)

    def _first_piece(self, ids, kinds, rows):
        """Which pieces come first in their row but for control pieces
        (and, with `remove_extra_whitespaces`, "▁" pieces): those lose
        their leading "▁" (sentencepiece's `is_bos_ws`)."""
        values = ids.values
        is_control = tf.equal(kinds, _NOTHING)
        if self._model.remove_extra_whitespaces:
            is_normal = tf.equal(kinds, _TEXT)
            passes = tf.logical_or(
                is_control,
                tf.logical_and(
                    is_normal, tf.gather(self._is_space_piece, values)
                ),
            )
        else:
            passes = is_control
        blockers = tf.cumsum(
            tf.cast(tf.logical_not(passes), tf.int64), exclusive=True
        )
        row_start = tf.gather(ids.row_splits, rows)
        before = blockers - tf.gather(
            tf.concat([blockers, [0]], axis=0), row_start
        )
        return tf.equal(before, 0)


def _bad_bytes(texts, is_byte, rows):
    """Runs of byte pieces: the bytes of valid UTF-8 characters are kept,
    every other byte becomes U+FFFD (sentencepiece's flush_bytes).
    Returns True at the byte pieces to replace."""
    count = tf.size(texts)
    byte = tf.where(
        is_byte,
        tf.cast(
            tf.io.decode_raw(texts, tf.uint8, fixed_length=1)[:, 0],
            tf.int32,
        ),
        -1,
    )

    def shifted(x, k, fill):
        pad = tf.fill([k], tf.constant(fill, x.dtype))
        return tf.concat([x[k:], pad], 0)[:count]

    def same_run(k):
        ok = tf.logical_and(is_byte, shifted(is_byte, k, False))
        for j in range(1, k):
            ok = tf.logical_and(ok, shifted(is_byte, j, False))
        return tf.logical_and(ok, tf.equal(shifted(rows, k, -1), rows))

    lead = tf.bitwise.right_shift(byte, 4)
    length = tf.where(
        byte < 0xC0,
        1,
        tf.where(lead < 0xE, 2, tf.where(lead < 0xF, 3, 4)),
    )
    code = tf.bitwise.bitwise_and(byte, tf.bitwise.right_shift(0xFF, length))
    valid = is_byte
    for k in (1, 2, 3):
        follower = shifted(byte, k, -1)
        needed = length > k
        is_cont = tf.logical_and(follower >= 0x80, follower < 0xC0)
        ok = tf.logical_and(same_run(k), is_cont)
        valid = tf.logical_and(valid, tf.logical_or(~needed, ok))
        code = tf.where(
            needed, code * 64 + tf.bitwise.bitwise_and(follower, 0x3F), code
        )
    minimum = tf.gather([0, 0, 0x80, 0x800, 0x10000], length)
    valid = tf.logical_and(
        valid,
        tf.logical_or(
            byte < 0x80,
            tf.logical_and(
                byte >= 0xC0,
                tf.logical_and(
                    code >= minimum,
                    tf.logical_and(
                        code <= 0x10FFFF,
                        tf.logical_or(code < 0xD800, code > 0xDFFF),
                    ),
                ),
            ),
        ),
    )
    covered = tf.zeros_like(valid)
    for k in (1, 2, 3):
        earlier = tf.concat([tf.zeros([k], tf.bool), valid], 0)[:count]
        earlier_length = tf.concat([tf.ones([k], tf.int32), length], 0)[:count]
        earlier_rows = tf.concat(
            [tf.fill([k], tf.constant(-1, rows.dtype)), rows], 0
        )[:count]
        covered = tf.logical_or(
            covered,
            tf.logical_and(
                tf.logical_and(earlier, earlier_length > k),
                tf.equal(earlier_rows, rows),
            ),
        )
    return tf.logical_and(
        is_byte, tf.logical_not(tf.logical_or(valid, covered))
    )
