"""Record sources: JSONL, CSV/TSV, Parquet, TFRecord, datasets of dicts.

A record is a dict of fields; `columns` names the fields an example is made
of, in the order the task takes them (`"text"`, `("text", "label")`,
`("question", "context", "answer_start", "answer_text")`, ...). A dotted
name goes into nested objects: `"meta.text"` is `record["meta"]["text"]`
(a JSON object, a Parquet struct, a nested dict of a `tf.data.Dataset` or
of a Hugging Face dataset); `tf.train.Example` features are flat, so their
names are taken as they are.

* `read_records(path, format=None)` yields the records of one file as
  dicts, streaming: one line (JSONL), one row (CSV/TSV), one row group
  (Parquet) or one record (TFRecord) in memory at a time.
* `record_dataset(...)` is the `tf.data.Dataset` of the examples of such
  files (or of a Hugging Face dataset): TFRecord files are parsed in the
  graph; the others are read in Python by `Dataset.from_generator`.
* `select_columns(dataset, columns)` picks the fields of a dataset of
  dicts (the TFDS convention), in the graph.

Each column's type (text, integer, float, or a list of one of these, e.g.
the words and tags of a tagging example) comes from the first
`_SNIFF_RECORDS` records, read when the dataset is made: JSON and Parquet
values have their own types; a CSV field is text unless each of those
records holds an integer (or a number) there. Every later record must hold
the same types. A missing column, a value of another type (a number where
text is expected, a null, an object), a line that is not JSON: a
`ValueError` naming the file, the record (the 1-based line of a JSONL
file, row of a CSV, Parquet or TFRecord file), what was found and what was
expected; read through `make_dataset` it arrives as a
`tf.errors.InvalidArgumentError` with that message. Nothing is skipped.
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import os
import re

import numpy as np
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
# Extension -> format. Other files are text, one example per line.
EXTENSIONS = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
}
FORMATS = ("text", "jsonl", "csv", "tsv", "parquet", "tfrecord")
# Records read when the dataset is made, for the columns' types.
_SNIFF_RECORDS = 100
# Records of a TFRecord file parsed per step in the graph.
_TFRECORD_BATCH = 256
# Examples per step of `Dataset.from_generator`.
_GENERATOR_BATCH = 256
# Rows per Arrow batch read from a Parquet row group.
_PARQUET_BATCH = 256
_INTEGER = re.compile(r"[+-]?\d+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# Extras of setup.cfg, by the module they install.
_EXTRAS = {"pyarrow": "parquet", "datasets": "datasets"}


def optional_import(name, purpose):
    """Imports `name` (an optional dependency), or says which extra to
    install."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        top = name.split(".")[0]
        raise ImportError(
            f"{purpose} needs `{top}`, which is not installed. Install it "
            f"with `pip install 'tf_input[{_EXTRAS[top]}]'`."
        ) from error


def file_format(path, format=None):
    """The format of `path`: `format` if given, else from its extension
    (`"text"` for an extension not in `EXTENSIONS`)."""
    if format is not None:
        if format not in FORMATS:
            raise ValueError(
                f"`format` must be None (from the file extension) or one of "
                f"{FORMATS}. Received: format={format!r}."
            )
        return format
    extension = os.path.splitext(os.fspath(path))[1].lower()
    return EXTENSIONS.get(extension, "text")


def check_columns_argument(columns):
    """`columns` as a tuple of names (a single `str` is one column)."""
    names = (columns,) if isinstance(columns, str) else columns
    if (
        not isinstance(names, (tuple, list))
        or not names
        or not all(isinstance(name, str) and name for name in names)
    ):
        raise ValueError(
            "`columns` must be a column name or a tuple of names (dotted "
            "names go into nested records: 'meta.text'). Received: "
            f"columns={columns!r}."
        )
    return tuple(names)


# --- Reading files -------------------------------------------------------
def _open_text(path, encoding, errors):
    return open(path, encoding=encoding, errors=errors, newline="")


def _json_lines(path, encoding, errors):
    # Lines are decoded one by one: "utf-8-sig" would drop a U+FEFF at the
    # start of every line, not only of the file.
    encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            where = f"line {number}"
            try:
                text = line.decode(encoding, errors)
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{_place(path, where)} is not valid {encoding}: "
                    f"{error.reason} at byte {error.start}."
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{_place(path, where)} is not JSON ({error.msg}, "
                    f"column {error.colno}): {_show(text.rstrip())}. "
                    "Expected one JSON object per line."
                ) from None
            if not isinstance(record, dict):
                raise ValueError(
                    f"{_place(path, where)} holds a JSON "
                    f"{_kind_name(record)}: {_show(text.rstrip())}. "
                    "Expected one JSON object per line."
                )
            yield where, record


def _csv_rows(path, delimiter, encoding, errors):
    with _open_text(path, encoding, errors) as f:
        reader = csv.reader(f, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return
            if header and header[0].startswith("\ufeff"):
                header[0] = header[0][1:]
            for number, row in enumerate(reader, 1):
                where = f"row {number} (line {reader.line_num})"
                if len(row) != len(header):
                    raise ValueError(
                        f"{_place(path, where)} has {len(row)} fields: "
                        f"{_show(row)}. Expected {len(header)}, one per "
                        f"column of the header {header}."
                    )
                yield where, dict(zip(header, row))
        except csv.Error as error:
            raise ValueError(
                f"{_place(path, f'line {reader.line_num}')} is not valid "
                f"CSV: {error}."
            ) from None
        except UnicodeDecodeError as error:
            raise ValueError(
                f"`source` file {os.fspath(path)!r} is not valid "
                f"{encoding.removesuffix('-sig')} after line "
                f"{reader.line_num}: {error.reason}."
            ) from None


def _parquet_rows(path, columns=None):
    pq = optional_import("pyarrow.parquet", "Reading Parquet files")
    parquet = pq.ParquetFile(path)
    if columns is not None:
        names = parquet.schema_arrow.names
        wanted = {column.split(".")[0] for column in columns}
        missing = sorted(wanted - set(names))
        if missing:
            raise ValueError(
                f"`source` file {os.fspath(path)!r} has no column "
                f"{missing[0]!r}. Its columns: {names}."
            )
        columns = [name for name in names if name in wanted]
    number = 0
    # One row group in memory at a time (as Arrow data), its rows turned
    # into Python values a batch at a time.
    for group in range(parquet.num_row_groups):
        table = parquet.read_row_group(group, columns=columns)
        for batch in table.to_batches(max_chunksize=_PARQUET_BATCH):
            for record in batch.to_pylist():
                number += 1
                yield f"row {number}", record
        del table


def _tfrecord_rows(path):
    for number, data in enumerate(tf.data.TFRecordDataset(path), 1):
        example = tf.train.Example.FromString(data.numpy())
        record = {}
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            values = list(getattr(feature, kind).value) if kind else []
            if kind == "bytes_list":
                values = [v.decode("utf-8", "replace") for v in values]
            record[name] = values
        yield f"record {number}", record


def numbered_records(
    path, format, columns=None, encoding="utf-8-sig", errors="strict"
):
    """`(where, record)` of each record of a file, `where` its place
    ("line 3", "row 2 (line 3)") for error messages. `encoding` and
    `errors` as Python's `open` takes them (JSONL and CSV/TSV)."""
    if format == "jsonl":
        return _json_lines(path, encoding, errors)
    if format in ("csv", "tsv"):
        delimiter = "," if format == "csv" else "\t"
        return _csv_rows(path, delimiter, encoding, errors)
    if format == "parquet":
        return _parquet_rows(path, columns)
    if format == "tfrecord":
        return _tfrecord_rows(path)
    raise ValueError(
        "`format` must name a record format, one of "
        f"{FORMATS[1:]}. Received: format={format!r} for "
        f"{os.fspath(path)!r}."
    )


def read_records(path, format=None):
    """Yields the records of a JSONL, CSV/TSV, Parquet or TFRecord file.

    Streaming: one line, row, row group or record in memory at a time.
    JSONL: one JSON object per line (a blank line, or one that is not an
    object, is an error). CSV/TSV: Python's `csv` module, strict quoting,
    the first row the header; each record a dict of `str`. Parquet
    (`pyarrow`, the `parquet` extra): each row as `pyarrow` gives it.
    TFRecord: each `tf.train.Example` as a dict of lists (its features'
    values, bytes decoded as UTF-8).

    Args:
        path: str or `os.PathLike`, the file.
        format: str or None. One of `"jsonl"`, `"csv"`, `"tsv"`,
            `"parquet"`, `"tfrecord"`. Defaults to `None`: from the
            extension (`.jsonl`/`.json`, `.csv`, `.tsv`, `.parquet`,
            `.tfrecord`/`.tfrecords`).

    Yields:
        dict: one record.

    Raises:
        ValueError: naming the file and the record (line or row) that is
            not valid.
    """
    format = file_format(path, format)
    for _, record in numbered_records(path, format):
        yield record


# --- Values and their types ------------------------------------------------
class _Named(str):
    """A source that is not a file, as error messages name it."""


def _place(source, where):
    if isinstance(source, _Named):
        return f"{source}, {where},"
    return f"`source` file {os.fspath(source)!r}, {where},"


def _show(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _a(noun):
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _kind_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


_SCALARS = {"string": str, "integer": int, "number": float}
# Integers as int32: the labels of in-memory sources are int32 too.
_DTYPES = {"string": tf.string, "integer": tf.int32, "number": tf.float32}


def _scalar_kind(value):
    """ "string", "integer" or "number", or None for another value."""
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return "integer"
    if isinstance(value, (float, np.floating)):
        return "number"
    return None


def _value_kind(value):
    """`(kind, is_list)` of a value; kind None for an empty list, or
    "bad" for a value that can be no column."""
    if isinstance(value, (list, tuple, np.ndarray)):
        kinds = {_scalar_kind(item) for item in value}
        if not kinds:
            return None, True
        if kinds == {"integer", "number"}:
            return "number", True
        if len(kinds) == 1 and None not in kinds:
            return kinds.pop(), True
        return "bad", True
    kind = _scalar_kind(value)
    return (kind or "bad"), False


def _describe(kind, is_list):
    if kind is None:
        return "a list"
    name = {"string": "text", "integer": "an integer", "number": "a number"}
    return f"a list of {kind}s" if is_list else name[kind]


class Columns:
    """The columns of an example: how to find them in a record, their types,
    and the checks each record goes through."""

    def __init__(self, names, csv_fields=False):
        self.names = names
        self.paths = [name.split(".") for name in names]
        self.csv_fields = csv_fields
        self.kinds = [None] * len(names)  # (kind, is_list) once known

    def get(self, record, index, source, where):
        value = record
        for depth, key in enumerate(self.paths[index]):
            if not isinstance(value, dict) or key not in value:
                found = (
                    f"keys {sorted(value)}"
                    if isinstance(value, dict)
                    else _a(_kind_name(value))
                )
                at = ".".join(self.paths[index][:depth]) or "the record"
                raise ValueError(
                    f"{_place(source, where)} has no column "
                    f"{self.names[index]!r}: {at} has {found}. Expected "
                    f"the columns {list(self.names)} in every record."
                )
            value = value[key]
        return value

    def sniff(self, records, source):
        """Sets the kinds from the first records: `(where, record)`."""
        seen = {}
        for where, record in records:
            for i in range(len(self.names)):
                value = self.get(record, i, source, where)
                if self.csv_fields:
                    seen.setdefault(i, []).append(value)
                    continue
                kind, is_list = _value_kind(value)
                self._merge(i, kind, is_list, value, source, where)
        for i, values in seen.items():
            if values and all(_INTEGER.fullmatch(v) for v in values):
                self.kinds[i] = ("integer", False)
            elif values and all(_is_number(v) for v in values):
                self.kinds[i] = ("number", False)
            else:
                self.kinds[i] = ("string", False)
        # Never seen but as empty lists: words (text) by default.
        self.kinds = [
            (k[0] or "string", k[1]) if k else ("string", False)
            for k in self.kinds
        ]

    def _merge(self, i, kind, is_list, value, source, where):
        known = self.kinds[i]
        if kind == "bad":
            self._mismatch(i, value, source, where)
        if known is None:
            self.kinds[i] = (kind, is_list)
            return
        if known[1] != is_list:
            self._mismatch(i, value, source, where)
        if known[0] is None or {known[0], kind} == {"integer", "number"}:
            merged = kind if known[0] is None else "number"
            self.kinds[i] = (merged, is_list)
        elif kind is not None and kind != known[0]:
            self._mismatch(i, value, source, where)

    def _mismatch(self, i, value, source, where):
        known = self.kinds[i]
        expected = (
            f"{_describe(*known)}, as in the records before"
            if known
            else "text, an integer, a number or a list of one of these"
        )
        raise ValueError(
            f"{_place(source, where)} column {self.names[i]!r} holds "
            f"{_a(_kind_name(value))}: {_show(value)}. Expected {expected}."
        )

    def batch_signature(self):
        """The specs of a batch of examples: a column of scalars is 1-D,
        a column of lists ragged."""
        return tuple(
            tf.RaggedTensorSpec(
                [None, None], _DTYPES[kind], 1, row_splits_dtype=tf.int64
            )
            if is_list
            else tf.TensorSpec([None], _DTYPES[kind])
            for kind, is_list in self.kinds
        )

    def batch(self, examples):
        """A batch of examples (tuples of checked values), as columns."""
        columns = []
        for i, (kind, is_list) in enumerate(self.kinds):
            dtype = _DTYPES[kind].as_numpy_dtype
            values = [example[i] for example in examples]
            if is_list:
                lengths = np.array([len(v) for v in values], np.int64)
                flat = np.concatenate(values) if values else []
                values = tf.RaggedTensor.from_row_lengths(
                    np.asarray(flat, dtype), lengths, validate=False
                )
            else:
                values = np.asarray(values, dtype)
            columns.append(values)
        return tuple(columns)

    def example(self, record, source, where):
        """The values of a record's columns, checked against the kinds."""
        values = []
        for i, (kind, is_list) in enumerate(self.kinds):
            value = self.get(record, i, source, where)
            if self.csv_fields:
                value = self._csv_value(i, value, kind, source, where)
                values.append(value)
                continue
            got, got_list = _value_kind(value)
            if (
                got_list != is_list
                or got == "bad"
                or (
                    got is not None
                    and got != kind
                    and (got, kind) != ("integer", "number")
                )
            ):
                self._mismatch(i, value, source, where)
            if kind == "integer":
                self._check_int32(i, value, source, where)
            if is_list:
                value = np.asarray(
                    list(value), _DTYPES[kind].as_numpy_dtype
                ).reshape([-1])
            values.append(value)
        return tuple(values)

    def _check_int32(self, i, value, source, where):
        items = value if isinstance(value, (list, tuple)) else [value]
        if any(not _INT32_MIN <= item <= _INT32_MAX for item in items):
            raise ValueError(
                f"{_place(source, where)} column {self.names[i]!r} holds "
                f"{_show(value)}, out of the int32 range the pipeline's "
                f"labels and positions take. Expected integers in "
                f"[{_INT32_MIN}, {_INT32_MAX}]."
            )

    def _csv_value(self, i, value, kind, source, where):
        try:
            if kind == "integer" and _INTEGER.fullmatch(value):
                self._check_int32(i, int(value), source, where)
                return int(value)
            if kind == "number":
                return float(value)
            if kind == "string":
                return value
        except ValueError:
            pass
        raise ValueError(
            f"{_place(source, where)} column {self.names[i]!r} is "
            f"{_show(value)}. Expected {_describe(kind, False)}, as in the "
            f"first {_SNIFF_RECORDS} rows (a CSV column is read as numbers "
            "when those rows hold numbers there)."
        )


def _is_number(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


# --- Datasets ---------------------------------------------------------------
def _head(records, size):
    head = []
    for item in records:
        head.append(item)
        if len(head) == size:
            break
    return head


def record_dataset(
    files,
    format,
    columns,
    deterministic=None,
    encoding="utf-8",
    errors="strict",
):
    """The examples (tuples of `columns`, or the one column) of record
    files, all of `format`; several files interleaved as text files are."""
    names = check_columns_argument(columns)
    if format == "tfrecord":
        return _tfrecord_dataset(files, names, deterministic)
    spec = Columns(names, csv_fields=format in ("csv", "tsv"))
    # A UTF-8 byte-order mark at the start of a file is dropped, as from
    # text files.
    encoding = "utf-8-sig" if encoding == "utf-8" else encoding

    def numbered(path):
        return numbered_records(path, format, names, encoding, errors)

    spec.sniff(_head(numbered(files[0]), _SNIFF_RECORDS), files[0])

    def one_file(path):
        def records(path):
            path = path.decode("utf-8") if isinstance(path, bytes) else path
            for where, record in numbered(path):
                yield path, where, record

        return _generated(spec, names, records, (path,))

    return _interleave(files, one_file, deterministic)


def _generated(spec, names, records, args=()):
    """The examples of `records(*args)`, `(source, where, record)`s,
    checked by `spec`: read in Python, handed to `tf.data` in batches of
    `_GENERATOR_BATCH` (one element per `from_generator` step costs more
    than the reading)."""

    def batches(*args):
        examples = []
        for source, where, record in records(*args):
            examples.append(spec.example(record, source, where))
            if len(examples) == _GENERATOR_BATCH:
                yield _single(spec.batch(examples), names)
                examples = []
        if examples:
            yield _single(spec.batch(examples), names)

    return tf.data.Dataset.from_generator(
        batches,
        args=args or None,
        output_signature=_single(spec.batch_signature(), names),
    ).unbatch()


def _single(values, names):
    return values[0] if len(names) == 1 else values


def _interleave(files, one_file, deterministic):
    if len(files) == 1:
        return one_file(files[0])
    return tf.data.Dataset.from_tensor_slices(files).interleave(
        one_file,
        cycle_length=min(len(files), 8),
        block_length=64,
        num_parallel_calls=AUTOTUNE,
        deterministic=deterministic,
    )


def hugging_face_dataset(dataset, columns):
    """The examples of a Hugging Face `Dataset` or `IterableDataset`, read
    row by row (an `IterableDataset` streams; a `Dataset` is memory-mapped
    Arrow)."""
    optional_import("datasets", "Reading a Hugging Face dataset")
    names = check_columns_argument(columns)
    spec = Columns(names)
    source = _Named(f"`source` (a Hugging Face {type(dataset).__name__})")

    def numbered():
        for number, record in enumerate(dataset, 1):
            yield f"row {number}", record

    spec.sniff(_head(numbered(), _SNIFF_RECORDS), source)

    def records():
        for where, record in numbered():
            yield source, where, record

    return _generated(spec, names, records)


def is_hugging_face_dataset(source):
    module = type(source).__module__ or ""
    return module.startswith("datasets.") and type(source).__name__ in (
        "Dataset",
        "IterableDataset",
    )


# --- TFRecord, in the graph ------------------------------------------------
def _tfrecord_kinds(path, names):
    """`(dtype, is_list)` per feature, from the first records of `path`."""
    spec = Columns(names)
    records = []
    for where, record in _head(_tfrecord_rows(path), _SNIFF_RECORDS):
        # Features are lists: one value is a scalar; missing, empty or
        # several values make a list column.
        records.append((where, record))
    kinds = []
    for i, name in enumerate(names):
        lengths, dtype = set(), None
        for where, record in records:
            if name not in record:
                spec.paths[i] = [name]
                spec.get(record, i, path, where)
            values = record[name]
            lengths.add(len(values))
            kind, _ = _value_kind(values)
            if kind is not None:
                dtype = dtype or kind
                if kind != dtype:
                    raise ValueError(
                        f"{_place(path, where)} feature {name!r} holds "
                        f"{kind}s: {_show(values)}. Expected {dtype}s, as "
                        "in the records before."
                    )
        kinds.append((_DTYPES[dtype or "string"], lengths != {1}))
    return kinds


def _tfrecord_dataset(files, names, deterministic):
    kinds = _tfrecord_kinds(files[0], names)
    features = {
        name: tf.io.RaggedFeature(
            tf.int64 if dtype.is_integer else dtype, row_splits_dtype=tf.int64
        )
        for name, (dtype, _) in zip(names, kinds)
    }

    def parse(path, first, serialized):
        count = tf.shape(serialized, out_type=tf.int64)[0]
        numbers = first + tf.range(count) + 1
        labels = tf.strings.join(
            [path, ", record ", tf.strings.as_string(numbers)]
        )
        parsed = tf.io.parse_example(serialized, features, example_names=labels)
        values = []
        for name, (_, is_list) in zip(names, kinds):
            value = parsed[name]
            if not is_list:
                lengths = value.row_lengths()
                good = tf.equal(lengths, 1)
                bad = tf.argmin(
                    tf.concat([tf.cast(good, tf.int32), [0]], 0),
                    output_type=tf.int64,
                )
                message = tf.strings.join(
                    [
                        "`source` file ",
                        path,
                        ", record ",
                        tf.strings.as_string(first + bad + 1),
                        f", feature `{name}` holds ",
                        tf.strings.as_string(tf.concat([lengths, [0]], 0)[bad]),
                        " values. Expected one value (as in the first "
                        "records), or a list in every record.",
                    ]
                )
                check = tf.raw_ops.Assert(
                    condition=tf.reduce_all(good), data=[message]
                )
                with tf.control_dependencies([check]):
                    value = tf.identity(value.flat_values)
            if value.dtype == tf.int64:
                value = tf.cast(value, tf.int32)
            values.append(value)
        return _single(tuple(values), names)

    def one_file(path):
        records = tf.data.TFRecordDataset(path).batch(_TFRECORD_BATCH)
        return (
            records.enumerate()
            .map(
                lambda i, batch: parse(path, i * _TFRECORD_BATCH, batch),
                num_parallel_calls=AUTOTUNE,
                deterministic=True,
            )
            .unbatch()
        )

    return _interleave(files, one_file, deterministic)


# --- Datasets of dicts (TFDS) ----------------------------------------------
def select_columns(dataset, columns):
    """A dataset of (nested) dicts -> a dataset of the `columns`' values."""
    names = check_columns_argument(columns)
    spec = dataset.element_spec
    paths = [name.split(".") for name in names]
    for name, path in zip(names, paths):
        value = spec
        for depth, key in enumerate(path):
            if not isinstance(value, dict) or key not in value:
                at = ".".join(path[:depth]) or "an element"
                found = (
                    f"keys {sorted(value)}"
                    if isinstance(value, dict)
                    else f"a {type(value).__name__}"
                )
                raise ValueError(
                    f"`source` dataset has no column {name!r}: {at} has "
                    f"{found}. Received: columns={columns!r}."
                )
            value = value[key]
        if not isinstance(value, tf.TensorSpec):
            raise ValueError(
                f"Column {name!r} of the `source` dataset must be a tensor "
                f"(a scalar, or 1-D). Received: {value}."
            )

    def select(element):
        values = []
        for path in paths:
            value = element
            for key in path:
                value = value[key]
            if value.dtype == tf.int64:
                value = tf.cast(value, tf.int32)
            values.append(value)
        return _single(tuple(values), names)

    return dataset.map(
        tf.autograph.experimental.do_not_convert(select),
        num_parallel_calls=AUTOTUNE,
        deterministic=True,
    )
