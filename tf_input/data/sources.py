"""Turns the accepted `source` forms into a `tf.data.Dataset` of lines.

Accepted forms (see `make_dataset`):

* a list (or tuple, or 1-D array) of strings: one example each;
* a list of `(source, target)` pairs, or a tuple of two equally long lists
  `(sources, targets)`;
* a file path or glob pattern (`str` or `os.PathLike`), or a list of
  `os.PathLike` paths: one example per line, several files interleaved;
* a `tf.data.Dataset` of scalar strings or of pairs of scalars.

A list of plain `str` is always read as texts, never as file names: pass
paths as `pathlib.Path` objects, or one glob pattern as a single string.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE


def _is_pair(item) -> bool:
    return isinstance(item, (tuple, list)) and not isinstance(item, str)


def _pair_value(value, name):
    """`value` as a 1-D tensor of strings (or numbers for labels)."""
    array = np.asarray(value)
    if array.dtype.kind in "USO":
        return tf.constant([str(x) for x in array.tolist()], tf.string)
    if array.dtype.kind in "iub":
        return tf.constant(array, tf.int32)
    if array.dtype.kind == "f":
        return tf.constant(array, tf.float32)
    raise ValueError(
        f"The {name} of `source` must be strings or numbers. "
        f"Received: items of dtype {array.dtype}."
    )


def _files(patterns, deterministic):
    files = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(os.fspath(pattern)))
        if not matched:
            raise ValueError(
                "`source` names a file or glob pattern that matches no "
                f"file. Received: source={os.fspath(pattern)!r}. (A list "
                "of texts must be a list, not a single string.)"
            )
        files.extend(matched)
    if len(files) == 1:
        return tf.data.TextLineDataset(files[0])
    return tf.data.Dataset.from_tensor_slices(files).interleave(
        tf.data.TextLineDataset,
        cycle_length=min(len(files), 8),
        block_length=64,
        num_parallel_calls=AUTOTUNE,
        deterministic=deterministic,
    )


def _check_dataset(dataset):
    spec = dataset.element_spec
    if isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string:
        if spec.shape.rank == 0:
            return dataset, False
    if (
        isinstance(spec, tuple)
        and len(spec) in (2, 3)
        and all(isinstance(s, tf.TensorSpec) for s in spec)
        and all(s.shape.rank == 0 for s in spec)
        and spec[0].dtype == tf.string
    ):
        return dataset, True
    raise ValueError(
        "A `source` dataset must yield scalar strings, or tuples of two or "
        "three scalars (`(text, target)`, `(text_a, text_b)`, `(text_a, "
        "text_b, label)`; use `dataset.unbatch()` on a batched dataset). "
        f"Received: element_spec={spec}."
    )


def as_dataset(source, deterministic=None):
    """Returns `(dataset, is_pairs)`; the dataset yields one example each."""
    if isinstance(source, tf.data.Dataset):
        return _check_dataset(source)
    if isinstance(source, (str, os.PathLike)):
        return _files([source], deterministic), False
    if isinstance(source, np.ndarray):
        source = source.tolist()
    if not isinstance(source, (list, tuple)) or not source:
        raise ValueError(
            "`source` must be a non-empty list of strings or of "
            "`(source, target)` pairs, a file path or glob, a list of "
            "paths, or a `tf.data.Dataset`. "
            f"Received: source of type {type(source).__name__}"
            + (" (empty)." if isinstance(source, (list, tuple)) else ".")
        )
    if all(isinstance(item, os.PathLike) for item in source):
        return _files(source, deterministic), False
    if all(isinstance(item, str) for item in source):
        return tf.data.Dataset.from_tensor_slices(list(source)), False
    if (
        isinstance(source, tuple)
        and len(source) in (2, 3)
        and all(isinstance(x, (list, tuple, np.ndarray)) for x in source)
        and not all(_is_pair(x) for x in source[0])
        and len(source[0]) > 0
        and isinstance(source[0][0], str)
    ):
        sizes = [len(column) for column in source]
        if len(set(sizes)) != 1:
            raise ValueError(
                "`source` as a tuple of columns, `(sources, targets)` or "
                "`(texts_a, texts_b, labels)`, needs columns of the same "
                f"length. Received: columns of lengths {sizes}."
            )
        columns = tuple(
            _pair_value(column, name)
            for column, name in zip(source, ("sources", "targets", "labels"))
        )
        return tf.data.Dataset.from_tensor_slices(columns), True
    width = len(source[0]) if _is_pair(source[0]) else None
    for i, item in enumerate(source):
        if not _is_pair(item) or len(item) not in (2, 3) or len(item) != width:
            raise ValueError(
                "`source` must be all strings, or all tuples of the same "
                "length: `(source, target)` / `(text, label)` / `(text_a, "
                f"text_b)` pairs or `(text_a, text_b, label)` triples. "
                f"Received: source[{i}]={item!r}."
            )
        if not isinstance(item[0], str):
            raise ValueError(
                "The first element of each pair must be a string. "
                f"Received: source[{i}]={item!r}."
            )
    names = ("sources", "targets", "labels")
    columns = tuple(
        _pair_value([item[k] for item in source], names[k])
        for k in range(width)
    )
    return tf.data.Dataset.from_tensor_slices(columns), True
