"""TF Text's SentencePiece ops, on `[N]` string tensors."""

from __future__ import annotations

import hashlib

import tensorflow as tf
from tensorflow_text.python.ops import fast_sentencepiece_tokenizer
from tensorflow_text.python.ops import sentencepiece_tokenizer

_FAST_OPS = fast_sentencepiece_tokenizer.gen_fast_sentencepiece_tokenizer
_LIBRARY_OPS = sentencepiece_tokenizer.gen_sentencepiece_tokenizer


def _run_library(proto, texts, out_type):
    """TF Text's op around the `sentencepiece` library, on `[N]` strings.

    The model resource is made by an op in the same graph, shared by name
    (a digest of the model) so that it is parsed once per process, not once
    per `tf.data` iterator. A resource made once in `__init__` instead would
    die with the eager kernel cache, which `tf.random.set_seed` clears.
    """
    values, splits = _LIBRARY_OPS.sentencepiece_tokenize_op(
        _model_handle(proto),
        texts,
        0,
        1.0,
        False,
        False,
        False,
        out_type=out_type,
    )
    return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


def _model_handle(proto):
    """The op's model resource, shared by name (a digest of the model)."""
    digest = hashlib.sha256(proto).hexdigest()[:32]
    return _LIBRARY_OPS.sentencepiece_op(
        model=proto, shared_name=f"tf_input_sentencepiece_{digest}"
    )


def _run_fast(model, texts):
    """TF Text's fast unigram op (`model` is a converted uint8 tensor)."""
    values, splits = _FAST_OPS.tf_text_fast_sentencepiece_tokenize(
        model, texts, 0, 0, False, False, False
    )
    return tf.RaggedTensor.from_row_splits(
        values, tf.cast(splits, tf.int64), validate=False
    )


def run_library_with_offsets(proto, texts):
    """`_run_library` with the library's piece spans: ragged `(ids,
    starts, ends)`, each piece's byte span `[begin, end)` in the input as
    `sentencepiece`'s `encode(..., return_type="proto")` gives it."""
    values, splits, starts, ends = (
        _LIBRARY_OPS.sentencepiece_tokenize_with_offsets_op(
            _model_handle(proto),
            texts,
            0,
            1.0,
            False,
            False,
            False,
            out_type=tf.int32,
        )
    )
    return tuple(
        tf.RaggedTensor.from_row_splits(x, splits, validate=False)
        for x in (values, starts, ends)
    )
