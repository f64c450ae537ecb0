"""Normalization as the `sentencepiece` library does it, for the graphs.

`whitespace_rules` applies the normalizer spec's whitespace rules with
regexes (lines that no other rule touches); `normalizer_proto` makes a
model whose library op returns normalized lines (the others).
"""

from __future__ import annotations

import tensorflow as tf

from tf_input.tokenizers.sentencepiece._proto import _BYTE
from tf_input.tokenizers.sentencepiece._proto import _CHAR
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNKNOWN
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED
from tf_input.tokenizers.sentencepiece._proto import TRAINER_BOS_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_BYTE_FALLBACK
from tf_input.tokenizers.sentencepiece._proto import TRAINER_EOS_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_MODEL_TYPE
from tf_input.tokenizers.sentencepiece._proto import TRAINER_PAD_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_UNK_ID
from tf_input.tokenizers.sentencepiece._proto import TRAINER_UNK_PIECE
from tf_input.tokenizers.sentencepiece._proto import _bytes_field
from tf_input.tokenizers.sentencepiece._proto import _varint_field


def whitespace_rules(texts, model):
    """The library's whitespace rules, for lines no other rule touches.

    As sentencepiece's `Normalizer::Normalize`: leading spaces go and
    inner runs of spaces become one (`remove_extra_whitespaces`), a
    dummy "▁" goes in front of a non-empty line (`add_dummy_prefix`),
    spaces become "▁" (`escape_whitespaces`), and trailing "▁" go, a
    literal "▁" included.
    """
    space = _SPACE if model.escape_whitespaces else " "
    if model.remove_extra_whitespaces:
        texts = tf.strings.regex_replace(texts, "^ +", "")
        texts = tf.strings.regex_replace(texts, " +", " ")
    if model.add_dummy_prefix:
        texts = tf.where(tf.equal(texts, ""), texts, " " + texts)
    if model.escape_whitespaces:
        texts = tf.strings.regex_replace(texts, " ", _SPACE)
    if model.remove_extra_whitespaces:
        texts = tf.strings.regex_replace(texts, f"(?:{space})+$", "")
    return texts


def normalizer_proto(model, byte_fallback=False):
    """A model that makes the library op return normalized lines.

    A character model turns every character into an unknown piece; runs
    of unknowns are merged, and with string output the op returns their
    normalized text. User-defined pieces stay, as the library keeps
    them out of normalization.

    With `byte_fallback`, unknown characters become the pieces of their
    UTF-8 bytes instead, ids 0.. of the returned byte table; returns
    `(proto, table)`, or None if a user-defined piece is named like a
    byte piece.
    """
    unk = model.pieces[model.unk_id]
    pieces = [(unk, 0.0, _UNKNOWN), (_SPACE, 0.0, _NORMAL)]
    pieces += [
        (p, 0.0, _USER_DEFINED)
        for p, t in zip(model.pieces, model.types)
        if t == _USER_DEFINED and p != _SPACE
    ]
    texts = [b"", _SPACE.encode()] + [p.encode() for p, _, _ in pieces[2:]]
    if byte_fallback:
        names = [f"<0x{b:02X}>" for b in range(256)]
        if set(names) & {p for p, _, _ in pieces}:
            return None
        pieces += [(name, 0.0, _BYTE) for name in names]
        texts += [bytes([b]) for b in range(256)]
    trainer = b"".join(
        [
            _varint_field(TRAINER_MODEL_TYPE, _CHAR),
            _varint_field(TRAINER_BYTE_FALLBACK, int(byte_fallback)),
            _varint_field(TRAINER_UNK_ID, 0),
            _varint_field(TRAINER_BOS_ID, -1),
            _varint_field(TRAINER_EOS_ID, -1),
            _varint_field(TRAINER_PAD_ID, -1),
            _bytes_field(TRAINER_UNK_PIECE, unk.encode("utf-8")),
        ]
    )
    proto = model.serialize(pieces, trainer_extra=trainer)
    return (proto, texts) if byte_fallback else proto
