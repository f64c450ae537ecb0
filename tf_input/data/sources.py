"""Turns the accepted `source` forms into a `tf.data.Dataset` of lines.

Accepted forms (see `make_dataset`):

* a list (or tuple, or 1-D array) of strings: one example each;
* a list of `(source, target)` pairs, or a tuple of two equally long lists
  `(sources, targets)`; a list of `(text_a, text_b, label)` triples or of
  `(question, context, answer_start, answer_text)`;
* a list of `(words, labels)` pairs, two equally long lists each (the
  sentences of `read_conll`), or of `(text, [(start, end, label), ...])`
  texts with labelled character spans, for
  `task="token_classification"`;
* a file path or glob pattern (`str` or `os.PathLike`), or a list of
  `os.PathLike` paths: one example per line, several files interleaved;
* a `tf.data.Dataset` of scalar strings, of tuples of scalars, or of
  `(words, labels)` pairs of 1-D tensors;
* with `columns=`, records: JSONL, CSV, TSV, Parquet or TFRecord files
  (the format from the extension, or `format=`), a `tf.data.Dataset` of
  dicts (TFDS), a Hugging Face `Dataset` or `IterableDataset`; each record
  gives the tuple of its columns (`tf_input.data.records`).

A list of plain `str` is always read as texts, never as file names: pass
paths as `pathlib.Path` objects, or one glob pattern as a single string.

Files are decoded strictly (`errors="strict"`, the default): a file with a
UTF-16 or UTF-32 byte-order mark, or that looks like UTF-16/32 without one,
is a `ValueError` naming it when the dataset is made, and a line that does
not decode is an `InvalidArgumentError` naming the file and the line number
when it is read. `encoding="latin-1"` (ISO-8859-1) decodes that encoding in
the graph; `errors="replace"` turns undecodable bytes into U+FFFD instead.
A UTF-8 byte-order mark at the start of a file is dropped. Line ends are
Python's universal newlines: `\\n`, `\\r\\n` and a lone `\\r` each end a line.
Texts given directly (lists, datasets) are not checked: the tokenizers
replace invalid UTF-8, as documented.

`tf.data.TextLineDataset` cannot do this (it splits on `\\n` and deletes
every `\\r`, which joins the lines of a CR-only file), so files are read in
chunks of `_CHUNK_BYTES` with `FixedLengthRecordDataset` and cut into lines
by a `scan` that carries the unfinished line from chunk to chunk: one pass,
memory bounded by the chunk and the longest line.
"""

from __future__ import annotations

import codecs
import os

import numpy as np
import tensorflow as tf

from tf_input.data import records
from tf_input.data.steps import scan
from tf_input.tokenizers._utf8 import VALID_UTF8

AUTOTUNE = tf.data.AUTOTUNE
# Bytes read per step. 1 MiB: large enough that the per-step cost (a few
# ops) is small against the per-line work, small enough to stay in cache.
_CHUNK_BYTES = 2**20
# The encodings decoded in the graph (by `codecs.lookup(...).name`).
ENCODINGS = {"utf-8": "utf-8", "utf-8-sig": "utf-8", "iso8859-1": "latin-1"}
ERRORS = ("strict", "replace")
_UTF8_BOM = b"\xef\xbb\xbf"
# Longest first: the UTF-32-LE mark starts with the UTF-16-LE one.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32-LE"),
    (codecs.BOM_UTF32_BE, "UTF-32-BE"),
    (codecs.BOM_UTF16_LE, "UTF-16-LE"),
    (codecs.BOM_UTF16_BE, "UTF-16-BE"),
)
# Bytes sniffed at the start of each file for a missing byte-order mark.
_SNIFF_BYTES = 4096


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


def _is_words(item) -> bool:
    """Whether an element of `source` is `(words, labels)`: two lists."""
    return (
        _is_pair(item)
        and len(item) == 2
        and all(isinstance(x, (list, tuple, np.ndarray)) for x in item)
    )


def _is_spans(item) -> bool:
    """Whether an element of `source` is `(text, [(start, end, label),
    ...])`: a text and its labelled character spans."""
    return (
        _is_pair(item)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], (list, tuple))
        and all(_is_pair(span) and len(span) == 3 for span in item[1])
    )


def _span_texts(source):
    """A list of `(text, spans)` -> a dataset of `(text, starts, ends,
    labels)`: the spans' 1-D ragged columns, checked to be in order and
    apart (a character has one label)."""
    texts, starts, ends, labels, counts = [], [], [], [], []
    for i, item in enumerate(source):
        if not _is_spans(item):
            raise ValueError(
                "`source` must be all `(text, spans)` examples, the spans "
                "a list of `(start, end, label)`. Received: "
                f"source[{i}]={item!r}."
            )
        text, spans = item
        previous = 0
        for start, end, label in spans:
            if not (
                isinstance(start, (int, np.integer))
                and isinstance(end, (int, np.integer))
                and isinstance(label, str)
                and previous <= start < end <= len(text)
            ):
                raise ValueError(
                    "Each span of a `(text, spans)` example is `(start, end, "
                    "label)`: characters `text[start:end]` (0 <= start < end "
                    "<= len(text)) and a str label, the spans in order and "
                    f"apart. Received: source[{i}] with the span "
                    f"{(start, end, label)!r} (text of {len(text)} "
                    "characters)."
                )
            previous = end
            starts.append(int(start))
            ends.append(int(end))
            labels.append(label)
        texts.append(text)
        counts.append(len(spans))
    counts = tf.constant(counts, tf.int64)

    def ragged(values, dtype):
        return tf.RaggedTensor.from_row_lengths(
            tf.constant(values, dtype), counts
        )

    return tf.data.Dataset.from_tensor_slices(
        (
            tf.constant(texts, tf.string),
            ragged(starts, tf.int64),
            ragged(ends, tf.int64),
            ragged(labels, tf.string),
        )
    )


def _word_sentences(source):
    """A list of `(words, labels)` pairs -> a dataset of `(words, labels)`
    1-D ragged elements (built from flat lists: one `tf.constant` each)."""
    words, labels, lengths = [], [], []
    for i, item in enumerate(source):
        if not _is_words(item):
            raise ValueError(
                "`source` must be all `(words, labels)` pairs of lists (or "
                f"all texts, or all tuples). Received: source[{i}]={item!r}."
            )
        if len(item[0]) != len(item[1]):
            raise ValueError(
                f"Each `(words, labels)` pair needs one label per word: "
                f"source[{i}] has {len(item[0])} words and {len(item[1])} "
                f"labels. Received: source[{i}]={item!r}."
            )
        if not all(isinstance(word, str) for word in item[0]):
            raise ValueError(
                "The words of a `(words, labels)` pair must be strings. "
                f"Received: source[{i}]={item!r}."
            )
        words.extend(item[0])
        labels.extend(item[1])
        lengths.append(len(item[0]))
    kinds = {type(label) for label in labels}
    if labels and not (
        kinds <= {str} or all(isinstance(x, (int, np.integer)) for x in labels)
    ):
        raise ValueError(
            "The labels of `(words, labels)` pairs must be all strings or "
            f"all integers. Received: labels of types "
            f"{sorted(k.__name__ for k in kinds)}."
        )
    dtype = tf.string if kinds <= {str} else tf.int32
    lengths = tf.constant(lengths, tf.int64)
    columns = tuple(
        tf.RaggedTensor.from_row_lengths(tf.constant(flat, dtype), lengths)
        for flat, dtype in ((words, tf.string), (labels, dtype))
    )
    return tf.data.Dataset.from_tensor_slices(columns)


def check_encoding(encoding, errors):
    """`(encoding, errors)` as the names used here ("utf-8" or "latin-1")."""
    try:
        name = codecs.lookup(encoding).name if encoding else None
    except (LookupError, TypeError):
        name = None
    if name not in ENCODINGS:
        raise ValueError(
            "`encoding` must be one of 'utf-8', 'utf-8-sig' or 'latin-1' "
            "(decoded in the graph). Received: "
            f"encoding={encoding!r}. Convert other files to UTF-8 first, "
            "e.g. `iconv -f UTF-16 -t UTF-8`."
        )
    if errors not in ERRORS:
        raise ValueError(
            f"`errors` must be one of {ERRORS}. Received: errors={errors!r}."
        )
    return ENCODINGS[name], errors


def _sniff(path):
    """Checks the start of a file; returns the bytes to skip (a UTF-8 BOM).

    A UTF-16 or UTF-32 byte-order mark is an error. Without one, UTF-16/32
    text of mostly ASCII characters is every other (or three in four) byte
    NUL, which real UTF-8 or Latin-1 text never is: a start that is over
    30% NUL bytes is an error too. A UTF-8 byte-order mark is skipped (by
    the reader, not in the graph).
    """
    with tf.io.gfile.GFile(path, "rb") as f:
        head = f.read(_SNIFF_BYTES)
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            raise ValueError(
                f"`source` file {path!r} starts with a {name} byte-order "
                "mark: it is not UTF-8 text. Convert it to UTF-8 first, "
                f"e.g. `iconv -f {name} -t UTF-8`."
            )
    if len(head) >= 16 and head.count(0) > 0.3 * len(head):
        raise ValueError(
            f"`source` file {path!r} is {head.count(0) / len(head):.0%} NUL "
            f"bytes in its first {len(head)}: it looks like UTF-16 or "
            "UTF-32 text without a byte-order mark (or a binary file), "
            "not UTF-8 or Latin-1. Convert it to UTF-8 first, e.g. "
            "`iconv -f UTF-16LE -t UTF-8`."
        )
    return len(_UTF8_BOM) if head.startswith(_UTF8_BOM) else 0


def _file_lines(path, start, size, encoding, errors):
    """The lines of bytes `[start, size)` of a file, decoded to UTF-8.

    Graph ops only. The bytes come in records of `_CHUNK_BYTES` and one
    shorter last record, then an empty record that marks the end.
    """
    tail = (size - start) % _CHUNK_BYTES
    body = tf.data.FixedLengthRecordDataset(
        path, _CHUNK_BYTES, header_bytes=start, footer_bytes=tail
    )
    # The last `tail` bytes as one record (none when `tail` is 0).
    one = tf.maximum(tail, 1)
    rest = tf.data.FixedLengthRecordDataset(
        path, one, header_bytes=tf.maximum(size - one, 0)
    ).take(tf.cast(tail > 0, tf.int64))
    chunks = body.concatenate(rest).concatenate(
        tf.data.Dataset.from_tensors(tf.constant(b""))
    )
    initial = (tf.constant(b""), tf.constant(0, tf.int64))
    lines = scan(
        chunks,
        initial,
        lambda state, chunk: _next_lines(state, chunk, path, encoding, errors),
    )
    return lines.unbatch()


def _next_lines(state, data, path, encoding, errors):
    """One `scan` step: the lines a chunk completes, decoded and checked.

    `state` is `(unfinished, count)`: the text after the last line end so
    far (plus a trailing `\\r`, which may be half of a `\\r\\n`) and the
    number of lines already given. The final step (no bytes) gives the
    unfinished line, if any.
    """
    unfinished, count = state
    last = tf.equal(tf.strings.length(data), 0)
    text = unfinished + data
    size = tf.strings.length(text)
    # Hold back a final "\r": the next chunk may start with "\n".
    final = tf.strings.substr(
        text, tf.maximum(size - 1, 0), tf.minimum(size, 1)
    )
    held = tf.logical_and(tf.logical_not(last), tf.equal(final, b"\r"))
    body = tf.strings.substr(text, 0, size - tf.cast(held, tf.int32))
    body = tf.strings.regex_replace(body, "\r\n?", "\n")
    parts = tf.strings.split(body, "\n")
    # Not last: the final part is unfinished. Last: it is a line, unless
    # empty (the file ended with a line end, or is empty).
    keep = tf.size(parts) - tf.cast(
        tf.logical_or(tf.logical_not(last), tf.equal(parts[-1], b"")),
        tf.int32,
    )
    done = parts[:keep]
    unfinished = tf.where(last, b"", parts[-1] + tf.where(held, b"\r", b""))
    state = (unfinished, count + tf.cast(keep, tf.int64))
    if encoding == "latin-1":
        return state, tf.strings.unicode_transcode(done, "ISO-8859-1", "UTF-8")
    # RE2 matches a class only on valid UTF-8, surrogates aside (checked
    # against Python's strict decoder on 300,000 fuzzed byte strings), and
    # is much faster than a transcode (bench_sources.py).
    valid = tf.strings.regex_full_match(done, VALID_UTF8)
    if errors == "replace":
        bad = tf.where(tf.logical_not(valid))
        fixed = tf.strings.unicode_transcode(
            tf.gather_nd(done, bad),
            "UTF-8",
            "UTF-8",
            errors="replace",
            replacement_char=0xFFFD,
        )
        done = tf.tensor_scatter_nd_update(done, bad, fixed)
    else:
        # The raw op (no `tf.cond` guard, which tf.data would instantiate
        # anew for every iterator) always evaluates its data: `first` must
        # exist even for a step without lines.
        first = tf.argmin(
            tf.concat([tf.cast(valid, tf.int32), [0]], 0),
            output_type=tf.int64,
        )
        check = tf.raw_ops.Assert(
            condition=tf.reduce_all(valid),
            data=[
                "`source` file",
                path,
                "is not valid UTF-8: line",
                count + first + 1,
                "is the first that does not decode. Pass "
                "encoding='latin-1' (or convert the file to UTF-8), or "
                "errors='replace' to read undecodable bytes as U+FFFD.",
            ],
        )
        with tf.control_dependencies([check]):
            done = tf.identity(done)
    return state, done


def _glob(patterns):
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
    return files


def _file_source(patterns, deterministic, encoding, errors, columns, format):
    """Text files (one example per line) or record files (`columns` of
    each record), the format from `format` or the extensions."""
    files = _glob(patterns)
    formats = {records.file_format(path, format) for path in files}
    if len(formats) > 1:
        raise ValueError(
            "`source` files must all be of one format. Received: files of "
            f"the formats {sorted(formats)} ({files[:4]}...); pass "
            "`format=` to read them all as one."
        )
    (kind,) = formats
    if kind == "text":
        if columns is not None:
            raise ValueError(
                "`columns` names the fields of records: JSONL, CSV, TSV, "
                "Parquet or TFRecord files (from the extension, or "
                f"`format=`). Received: columns={columns!r} with the text "
                f"file(s) {files[:4]}, read one example per line."
            )
        return _files(files, deterministic, encoding, errors)
    if columns is None:
        raise ValueError(
            f"A {kind} source needs `columns=`: the field(s) each example "
            "is made of, e.g. columns='text' or columns=('text', "
            f"'label'). Received: the file(s) {files[:4]} and no columns."
        )
    encoding, errors = check_encoding(encoding, errors)
    return records.record_dataset(
        files, kind, columns, deterministic, encoding, errors
    )


def _files(files, deterministic, encoding="utf-8", errors="strict"):
    encoding, errors = check_encoding(encoding, errors)
    starts, sizes = [], []
    for path in files:
        skip = _sniff(path)
        # Latin-1 has no byte-order mark: "\xef\xbb\xbf" is "ï»¿" there.
        starts.append(skip if encoding == "utf-8" else 0)
        sizes.append(tf.io.gfile.stat(path).length)

    def lines_of(path, start, size):
        return _file_lines(path, start, size, encoding, errors)

    if len(files) == 1:
        return lines_of(
            tf.constant(files[0]),
            tf.constant(starts[0], tf.int64),
            tf.constant(sizes[0], tf.int64),
        )
    return tf.data.Dataset.from_tensor_slices(
        (files, tf.constant(starts, tf.int64), tf.constant(sizes, tf.int64))
    ).interleave(
        lines_of,
        cycle_length=min(len(files), 8),
        block_length=64,
        num_parallel_calls=AUTOTUNE,
        deterministic=deterministic,
    )


def _check_dataset(dataset):
    spec = dataset.element_spec
    if (
        isinstance(spec, tuple)
        and len(spec) == 2
        and all(s.shape.rank == 1 for s in spec)
        and spec[0].dtype == tf.string
    ):
        return dataset, True  # (words, labels)
    if (
        isinstance(spec, tuple)
        and [s.shape.rank for s in spec] == [0, 1, 1, 1]
        and spec[0].dtype == tf.string
    ):
        return dataset, True  # (text, span starts, span ends, span labels)
    if isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string:
        if spec.shape.rank == 0:
            return dataset, False
    if (
        isinstance(spec, tuple)
        and len(spec) in (2, 3, 4)
        and all(isinstance(s, tf.TensorSpec) for s in spec)
        and all(s.shape.rank == 0 for s in spec)
        and spec[0].dtype == tf.string
    ):
        return dataset, True
    raise ValueError(
        "A `source` dataset must yield scalar strings, tuples of two or "
        "three scalars (`(text, target)`, `(text_a, text_b)`, `(text_a, "
        "text_b, label)`, `(question, context, answer_start, "
        "answer_text)`; use `dataset.unbatch()` on a batched dataset), "
        "`(words, labels)` pairs of 1-D tensors, or `(text, starts, ends, "
        "labels)` of a text's character spans (1-D). "
        f"Received: element_spec={spec}."
    )


def as_dataset(
    source,
    deterministic=None,
    encoding="utf-8",
    errors="strict",
    columns=None,
    format=None,
):
    """Returns `(dataset, is_pairs)`; the dataset yields one example each.

    `encoding` and `errors` apply to file sources (see the module
    docstring); with texts given directly they must keep their defaults.
    `columns` names the fields of records (record files, datasets of
    dicts, Hugging Face datasets); `format` the format of files.
    """
    dataset = source_dataset(
        source, deterministic, encoding, errors, columns, format
    )
    if dataset is not None:
        return _check_dataset(dataset)
    return _in_memory(source)


def source_dataset(
    source,
    deterministic=None,
    encoding="utf-8",
    errors="strict",
    columns=None,
    format=None,
):
    """The dataset of a file, record or dataset source, its elements not
    yet checked against what the pipeline takes; None for a source in
    memory (a list, tuple or array of examples)."""
    check_encoding(encoding, errors)
    paths = None
    if isinstance(source, (str, os.PathLike)):
        paths = [source]
    elif (
        isinstance(source, (list, tuple))
        and source
        and all(isinstance(item, os.PathLike) for item in source)
    ):
        paths = source
    if paths is not None:
        return _file_source(
            paths, deterministic, encoding, errors, columns, format
        )
    _check_direct(source, encoding, errors)
    if format is not None:
        raise ValueError(
            "`format` is the format of file sources. Received: "
            f"format={format!r} with a source of type "
            f"{type(source).__name__}."
        )
    if records.is_hugging_face_dataset(source):
        if columns is None:
            raise ValueError(
                "A Hugging Face dataset source needs `columns=`: the "
                "field(s) each example is made of. Received: a dataset "
                f"with the columns {source.column_names} and no columns."
            )
        return records.hugging_face_dataset(source, columns)
    if isinstance(source, tf.data.Dataset) and isinstance(
        source.element_spec, dict
    ):
        if columns is None:
            raise ValueError(
                "A `source` dataset of dicts (the TFDS convention) needs "
                "`columns=`: the key(s) each example is made of. Received: "
                f"elements with the keys {sorted(source.element_spec)}."
            )
        return records.select_columns(source, columns)
    if columns is not None:
        raise ValueError(
            "`columns` names the fields of records: JSONL, CSV, TSV, "
            "Parquet or TFRecord files, `tf.data.Dataset`s of dicts, "
            "Hugging Face datasets. Received: "
            f"columns={columns!r} with a source of type "
            f"{type(source).__name__}."
        )
    if isinstance(source, tf.data.Dataset):
        return source
    return None


def _check_direct(source, encoding, errors):
    """`encoding` and `errors` keep their defaults for a source that is
    not files."""
    name, _ = check_encoding(encoding, errors)
    if name != "utf-8":
        raise ValueError(
            "`encoding` applies to file sources only: texts given directly "
            "are already decoded. Received: encoding="
            f"{encoding!r} with a source of type {type(source).__name__}."
        )
    if errors != "strict":
        raise ValueError(
            "`errors` applies to file sources only: the tokenizers replace "
            "invalid UTF-8 in texts given directly. Received: errors="
            f"{errors!r} with a source of type {type(source).__name__}."
        )


def _in_memory(source):
    """`(dataset, is_pairs)` of the examples given as a list (or tuple, or
    array)."""
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
    if all(isinstance(item, str) for item in source):
        return tf.data.Dataset.from_tensor_slices(list(source)), False
    if _is_spans(source[0]):
        return _span_texts(source), True
    if _is_words(source[0]) and (
        len(source[0][0]) == 0 or not _is_pair(source[0][0][0])
    ):
        return _word_sentences(source), True
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
        if (
            not _is_pair(item)
            or len(item) not in (2, 3, 4)
            or len(item) != width
        ):
            raise ValueError(
                "`source` must be all strings, or all tuples of the same "
                "length: `(source, target)` / `(text, label)` / `(text_a, "
                f"text_b)` pairs, `(text_a, text_b, label)` triples or "
                "`(question, context, answer_start, answer_text)`. "
                f"Received: source[{i}]={item!r}."
            )
        if not isinstance(item[0], str):
            raise ValueError(
                "The first element of each pair must be a string. "
                f"Received: source[{i}]={item!r}."
            )
    names = ("sources", "targets", "labels", "answers")
    columns = tuple(
        _pair_value([item[k] for item in source], names[k])
        for k in range(width)
    )
    return tf.data.Dataset.from_tensor_slices(columns), True
