"""Record sources: JSONL, CSV/TSV, Parquet, TFRecord, datasets of dicts and
Hugging Face datasets, read through `columns=`.

The references are Python's own readers (`json`, `csv`), `pyarrow` and
`tf.train.Example`, on files the tests write; the batches are compared to
those of the same examples given as a list.
"""

import csv
import json
import os
import pathlib
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from tf_input import VocabularyTokenizer
from tf_input.data import make_dataset
from tf_input.data import read_records
from tf_input.data.arguments import check_columns
from tf_input.data.sources import as_dataset
from tf_input.data.sources import source_dataset

ROOT = pathlib.Path(__file__).resolve().parents[2]

TEXTS = [
    "the cat sat",
    'a "quoted", comma',
    "two\nlines and\r\na crlf",
    "café naïve 😀",
    "",
    "tab\there",
]
LABELS = [0, 1, 2, 1, 0, 3]
BATCHES = dict(batch_size=8, max_length=8)


@pytest.fixture(scope="module")
def tokenizer():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(TEXTS)
    return tokenizer


def rows(dataset):
    """The elements of a dataset as Python values (bytes decoded)."""

    def plain(value):
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if isinstance(value, np.ndarray):
            return [plain(x) for x in value.tolist()]
        if isinstance(value, tuple):
            return tuple(plain(x) for x in value)
        if isinstance(value, np.generic):
            return value.item()
        return value

    return [plain(x) for x in dataset.as_numpy_iterator()]


def read(source, columns, **kwargs):
    """The examples of `source` (not yet checked against the pipeline)."""
    return rows(source_dataset(source, columns=columns, **kwargs))


def write_jsonl(path, records_, newline="\n"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for record in records_:
            f.write(json.dumps(record, ensure_ascii=False) + newline)
    return str(path)


def write_csv(path, header, body, delimiter=","):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(body)
    return str(path)


def feature(values):
    values = values if isinstance(values, list) else [values]
    if values and isinstance(values[0], str):
        return tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[v.encode() for v in values])
        )
    if values and isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def write_tfrecord(path, records_):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records_:
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={k: feature(v) for k, v in record.items()}
                )
            )
            writer.write(example.SerializeToString())
    return str(path)


def labelled_records():
    return [
        {"text": text, "label": label, "meta": {"id": i, "lang": "en"}}
        for i, (text, label) in enumerate(zip(TEXTS, LABELS))
    ]


# --- Each reader against its reference -----------------------------------
def test_jsonl_equals_pythons_json(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", labelled_records(), "\r\n")
    with open(path, encoding="utf-8") as f:
        want = [json.loads(line) for line in f]
    assert list(read_records(path)) == want
    got = read(path, ("text", "label", "meta.lang"))
    assert got == [(r["text"], r["label"], r["meta"]["lang"]) for r in want]
    assert read(path, "meta.id") == [r["meta"]["id"] for r in want]
    # `.json` is JSON lines too; a UTF-8 BOM is dropped.
    data = b"\xef\xbb\xbf" + pathlib.Path(path).read_bytes()
    (tmp_path / "d.json").write_bytes(data)
    assert read(str(tmp_path / "d.json"), "text") == TEXTS


@pytest.mark.parametrize("format, delimiter", [("csv", ","), ("tsv", "\t")])
def test_csv_and_tsv_equal_pythons_csv(tmp_path, format, delimiter):
    body = [
        [t, label, 0.5 * i] for i, (t, label) in enumerate(zip(TEXTS, LABELS))
    ]
    path = write_csv(
        tmp_path / f"d.{format}", ["text", "label", "score"], body, delimiter
    )
    with open(path, encoding="utf-8", newline="") as f:
        want = list(csv.DictReader(f, delimiter=delimiter))
    assert list(read_records(path)) == want
    # Columns of numbers are read as numbers, the others as text.
    got = read(path, ("text", "label", "score"))
    assert got == [
        (r["text"], int(r["label"]), float(r["score"])) for r in want
    ]
    assert [r[0] for r in got] == TEXTS
    spec = source_dataset(path, columns=("text", "label")).element_spec
    assert [s.dtype for s in spec] == [tf.string, tf.int32]


def test_random_csv_fields_read_as_python_reads_them(tmp_path):
    # Quotes, separators and every line end inside quoted fields.
    rng = random.Random(0)
    alphabet = ["a", "é", " ", ",", "\t", '"', "'", "\n", "\r", "\r\n", "1"]
    body = [
        ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))]
        for _ in range(300)
    ]
    path = write_csv(tmp_path / "r.csv", ["text"], body)
    with open(path, encoding="utf-8", newline="") as f:
        want = [row["text"] for row in csv.DictReader(f)]
    assert [r[0] for r in body] == want
    assert read(path, "text") == want


def test_encodings_and_undecodable_lines(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_bytes('{"text": "café"}\n'.encode("latin-1"))
    assert read(str(path), "text", encoding="latin-1") == ["café"]
    with pytest.raises(ValueError, match="l.jsonl', line 1, is not valid"):
        read(str(path), "text")
    assert read(str(path), "text", errors="replace") == ["caf\ufffd"]
    path = tmp_path / "l.csv"
    path.write_bytes("text\ncafé\n".encode("latin-1"))
    assert read(str(path), "text", encoding="latin-1") == ["café"]
    with pytest.raises(ValueError, match="l.csv' is not valid utf-8"):
        read(str(path), "text")


def test_parquet_equals_pyarrow_nested_and_lists(tmp_path):
    table = pa.table(
        {
            "text": TEXTS,
            "label": LABELS,
            "meta": [{"id": i, "lang": "en"} for i in range(len(TEXTS))],
            "words": [t.split() for t in TEXTS],
        }
    )
    path = str(tmp_path / "d.parquet")
    pq.write_table(table, path, row_group_size=4)
    want = pq.read_table(path).to_pylist()
    assert list(read_records(path)) == want
    got = read(path, ("text", "label", "meta.id"))
    assert got == [(r["text"], r["label"], r["meta"]["id"]) for r in want]
    assert read(path, "words") == [r["words"] for r in want]


def test_parquet_is_read_one_row_group_at_a_time(tmp_path, monkeypatch):
    # 10 row groups of 100 rows: the first records come after reading the
    # first row group only, and the row groups are read in turn.
    path = str(tmp_path / "d.parquet")
    texts = [f"row {i}" for i in range(1000)]
    pq.write_table(pa.table({"text": texts}), path, row_group_size=100)
    assert pq.ParquetFile(path).num_row_groups == 10
    read_groups = []
    original = pq.ParquetFile.read_row_group

    def spy(self, i, *args, **kwargs):
        read_groups.append(i)
        return original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    reader = read_records(path)
    assert [next(reader)["text"] for _ in range(3)] == texts[:3]
    assert read_groups == [0]
    assert [r["text"] for r in reader] == texts[3:]
    assert read_groups == list(range(10))


def test_tfrecord_parsed_in_the_graph_equals_the_examples(tmp_path):
    examples = [
        {
            "text": t,
            "label": label,
            "score": 0.5 * i,
            "words": t.split() or ["-"],
        }
        for i, (t, label) in enumerate(zip(TEXTS, LABELS))
    ]
    path = write_tfrecord(tmp_path / "d.tfrecord", examples)
    assert list(read_records(path)) == [
        {k: v if isinstance(v, list) else [v] for k, v in e.items()}
        for e in examples
    ]
    dataset = source_dataset(path, columns=("text", "label", "score"))
    assert [s.dtype for s in dataset.element_spec] == [
        tf.string,
        tf.int32,
        tf.float32,
    ]
    assert rows(dataset) == [
        (e["text"], e["label"], e["score"]) for e in examples
    ]
    # A feature with other than one value in the first records is 1-D.
    assert read(path, "words") == [e["words"] for e in examples]
    # A glob: the files interleaved, record numbers counted per file.
    write_tfrecord(tmp_path / "e.tfrecord", [{"text": "z", "label": 9}])
    got = read(str(tmp_path / "*.tfrecord"), ("text", "label"))
    assert sorted(got) == sorted(
        [(e["text"], e["label"]) for e in examples] + [("z", 9)]
    )


def test_dataset_of_dicts_tfds_convention():
    dataset = tf.data.Dataset.from_tensor_slices(
        {"text": TEXTS, "meta": {"label": LABELS}, "other": LABELS}
    )
    assert read(dataset, ("text", "meta.label")) == list(zip(TEXTS, LABELS))
    assert read(dataset, "text") == TEXTS


@pytest.mark.parametrize("iterable", [False, True])
def test_hugging_face_dataset(iterable):
    import datasets

    data = datasets.Dataset.from_dict(
        {
            "text": TEXTS,
            "label": LABELS,
            "tokens": [t.split() for t in TEXTS],
        }
    )
    if iterable:
        data = data.to_iterable_dataset(num_shards=2)
    assert read(data, ("text", "label")) == list(zip(TEXTS, LABELS))
    assert read(data, "tokens") == [t.split() for t in TEXTS]
    name = type(data).__name__
    with pytest.raises(
        ValueError,
        match=rf"\(a Hugging Face {name}\), row 1, has no column 'txt'",
    ):
        read(data, "txt")


@pytest.mark.parametrize(
    "format", ["jsonl", "csv", "parquet", "tfrecord", "dicts", "hf"]
)
def test_batches_equal_those_of_the_same_list(tmp_path, tokenizer, format):
    examples = labelled_records()
    if format == "jsonl":
        source = write_jsonl(tmp_path / "d.jsonl", examples)
    elif format == "csv":
        body = [[e["text"], e["label"]] for e in examples]
        source = write_csv(tmp_path / "d.csv", ["text", "label"], body)
    elif format == "parquet":
        source = str(tmp_path / "d.parquet")
        pq.write_table(pa.Table.from_pylist(examples), source)
    elif format == "tfrecord":
        flat = [{"text": e["text"], "label": e["label"]} for e in examples]
        source = write_tfrecord(tmp_path / "d.tfrecord", flat)
    elif format == "dicts":
        source = tf.data.Dataset.from_tensor_slices(
            {"text": TEXTS, "label": LABELS}
        )
    else:
        import datasets

        source = datasets.Dataset.from_list(examples)
    # One row per example, in order: the empty text too.
    settings = dict(task="encode", batch_size=4, max_length=8, skip_empty=False)
    got = make_dataset(source, tokenizer, columns=("text", "label"), **settings)
    want = make_dataset(list(zip(TEXTS, LABELS)), tokenizer, **settings)
    got, want = list(got), list(want)
    assert len(got) == len(want) == 2
    for (f1, l1, w1), (f2, l2, w2) in zip(got, want):
        assert f1["token_ids"].numpy().tolist() == (
            f2["token_ids"].numpy().tolist()
        )
        assert l1.numpy().tolist() == l2.numpy().tolist()
        assert w1.numpy().tolist() == w2.numpy().tolist()


def test_token_classification_and_question_answering_columns(
    tmp_path, tokenizer
):
    # Hugging Face's conll2003 layout: lists of tokens and tag ids.
    sentences = [(t.split(), [1] * len(t.split())) for t in TEXTS if t]
    path = write_jsonl(
        tmp_path / "ner.jsonl",
        [{"tokens": w, "ner_tags": tags} for w, tags in sentences],
    )
    settings = dict(task="token_classification", batch_size=8, max_length=16)
    got = make_dataset(
        path, tokenizer, columns=("tokens", "ner_tags"), **settings
    )
    want = make_dataset(sentences, tokenizer, **settings)
    assert next(iter(got))[1].numpy().tolist() == (
        next(iter(want))[1].numpy().tolist()
    )
    # SQuAD-like records, the answer nested: the columns the task takes
    # (a QA pipeline's build is too slow for this file; the task's own
    # tests run it on these columns from a list).
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        [
            {
                "question": "who sat",
                "context": "the cat sat",
                "answers": {"start": 4, "text": "cat"},
            }
        ],
    )
    columns = ("question", "context", "answers.start", "answers.text")
    dataset, _ = as_dataset(path, columns=columns)
    assert rows(dataset) == [("who sat", "the cat sat", 4, "cat")]
    spec = dataset.element_spec
    assert check_columns(spec, "question_answering", "longest", None) == (
        "question+context+answer"
    )


def test_several_files_and_format_argument(tmp_path):
    write_jsonl(tmp_path / "1.jsonl", [{"t": "a"}, {"t": "b"}])
    write_jsonl(tmp_path / "2.jsonl", [{"t": "c"}])
    assert sorted(read(str(tmp_path / "*.jsonl"), "t")) == ["a", "b", "c"]
    # JSON lines in a `.txt` file: `format=` says so.
    write_jsonl(tmp_path / "3.txt", [{"t": "d"}])
    assert read(str(tmp_path / "3.txt"), "t", format="jsonl") == ["d"]
    # `format="text"`: a record file read as lines, as before.
    dataset, _ = as_dataset(str(tmp_path / "2.jsonl"), format="text")
    assert rows(dataset) == ['{"t": "c"}']
    with pytest.raises(ValueError, match="all be of one format"):
        read(str(tmp_path / "[13].*"), "t")
    with pytest.raises(ValueError, match="`format` must be None.*'xml'"):
        read(str(tmp_path / "3.txt"), "t", format="xml")


# --- Errors: the file, the record, what was found, what was expected ------
def test_jsonl_errors_name_the_file_and_line(tmp_path, tokenizer):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"}\n{"text": "c",}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl', line 3, is not JSON"):
        list(read_records(path))
    path.write_text('{"text": "a"}\n\n')
    with pytest.raises(ValueError, match="line 2, is not JSON.*''"):
        list(read_records(path))
    path.write_text('{"text": "a"}\n["text"]\n')
    with pytest.raises(ValueError, match="line 2, holds a JSON list"):
        list(read_records(path))
    # Past the records read when the dataset is made: in the graph.
    good = [{"text": "x"}] * 150
    path = write_jsonl(tmp_path / "late.jsonl", good + [{"text": 7}])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"late.jsonl', line 151, column 'text' holds an integer: 7\. "
        r"Expected text, as in the records before",
    ):
        list(make_dataset(path, tokenizer, columns="text", **BATCHES))


def test_missing_column_and_wrong_types(tmp_path):
    path = write_jsonl(
        tmp_path / "d.jsonl", [{"text": "a", "meta": {"x": 1}}, {"txt": "b"}]
    )
    with pytest.raises(
        ValueError,
        match=r"d.jsonl', line 2, has no column 'text': the record has keys "
        r"\['txt'\]",
    ):
        read(path, "text")
    with pytest.raises(ValueError, match="no column 'meta.y': meta has keys"):
        read(path, "meta.y")
    for value, found in [
        (None, "a null"),
        (True, "a boolean"),
        ({"a": 1}, "an object"),
        (["a", 1], "a list"),
    ]:
        path = write_jsonl(
            tmp_path / "t.jsonl", [{"text": "a"}, {"text": value}]
        )
        with pytest.raises(
            ValueError, match=f"line 2, column 'text' holds {found}"
        ):
            read(path, "text")
    path = write_jsonl(tmp_path / "i.jsonl", [{"label": 1}, {"label": 2**31}])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"line 2, column 'label' holds 2147483648, out of the int32",
    ):
        read(path, "label")
    path = write_jsonl(tmp_path / "n.jsonl", [{"text": 1}])
    with pytest.raises(ValueError, match="must yield scalar strings"):
        as_dataset(path, columns="text")


def test_csv_errors_name_the_row_and_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('text,label\n"a",1\n"b,2\n')
    with pytest.raises(ValueError, match="d.csv', line 3, is not valid CSV"):
        list(read_records(path))
    path.write_text("text,label\na,1\nb,2,3\n")
    with pytest.raises(
        ValueError, match=r"row 2 \(line 3\), has 3 fields.*Expected 2"
    ):
        list(read_records(path))
    path.write_text("text,label\n" + "a,1\n" * 120 + "b,two\n")
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"row 121 \(line 122\), column 'label' is 'two'\. Expected an "
        "integer",
    ):
        read(str(path), ("text", "label"))


def test_parquet_errors(tmp_path):
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"text": ["a", None]}), path)
    with pytest.raises(
        ValueError, match="d.parquet', row 2, column 'text' holds a null"
    ):
        read(path, "text")
    with pytest.raises(
        ValueError, match=r"no column 'label'. Its columns: \['text'\]"
    ):
        read(path, ("text", "label"))


def test_tfrecord_errors_in_the_graph(tmp_path):
    examples = [{"text": "a", "label": 1}] * 300 + [
        {"text": ["b", "c"], "label": 1}
    ]
    path = write_tfrecord(tmp_path / "d.tfrecord", examples)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"d.tfrecord, record 301, feature `text` holds 2 values\. "
        "Expected one",
    ):
        read(path, ("text", "label"))
    # A feature of another type: the parser names the file and record.
    examples = [{"text": "a"}] * 150 + [{"text": 5}]
    path = write_tfrecord(tmp_path / "t.tfrecord", examples)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"t.tfrecord, record 151.*Key: text.*Data types don't match",
    ):
        read(path, "text")
    # Within the records read when the dataset is made: at once.
    path = write_tfrecord(tmp_path / "u.tfrecord", examples[-3:])
    with pytest.raises(
        ValueError,
        match=r"u.tfrecord', record 3, feature 'text' holds integers: "
        r"\[5\]\. Expected strings",
    ):
        read(path, "text")
    path = write_tfrecord(tmp_path / "v.tfrecord", [{"text": "a"}])
    with pytest.raises(ValueError, match="record 1, has no column 'label'"):
        read(path, ("text", "label"))


def test_argument_errors(tmp_path, tokenizer):
    jsonl = write_jsonl(tmp_path / "d.jsonl", [{"text": "a"}])
    text = tmp_path / "d.txt"
    text.write_text("a\n")
    with pytest.raises(ValueError, match="A jsonl source needs `columns=`"):
        as_dataset(jsonl)
    with pytest.raises(
        ValueError, match="`columns` names the fields.*text file"
    ):
        as_dataset(str(text), columns="text")
    with pytest.raises(ValueError, match="`columns` names the fields.*list"):
        as_dataset(["a"], columns="text")
    with pytest.raises(ValueError, match="`format` is the format of file"):
        as_dataset(["a"], format="jsonl")
    with pytest.raises(ValueError, match="`columns` must be a column name"):
        as_dataset(jsonl, columns=("text", 3))
    dicts = tf.data.Dataset.from_tensor_slices({"text": ["a"]})
    with pytest.raises(ValueError, match=r"needs `columns=`.*\['text'\]"):
        as_dataset(dicts)
    with pytest.raises(
        ValueError, match="no column 'label': an element has keys"
    ):
        as_dataset(dicts, columns="label")


def test_optional_libraries_are_imported_only_when_used(
    tmp_path, monkeypatch, tokenizer
):
    # As if neither extra were installed (keras imports pyarrow through
    # pandas when it is installed: it is in sys.modules anyway).
    for name in ["pyarrow", "pyarrow.parquet", "datasets"]:
        monkeypatch.setitem(sys.modules, name, None)
    path = write_jsonl(tmp_path / "d.jsonl", labelled_records())
    ds = make_dataset(path, tokenizer, columns="text", **BATCHES)
    assert len(list(ds)) == 1
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"text": ["a"]}), path)
    with pytest.raises(
        ImportError,
        match=r"Reading Parquet files needs `pyarrow`.*"
        r"pip install 'tf_input\[parquet\]'",
    ):
        read(path, "text")


# --- Bounded memory ---------------------------------------------------------
MEASURE = """
import sys
from tf_input.data.sources import source_dataset


def peak_kib():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmHWM"))


dataset = source_dataset(sys.argv[1], columns="text")
examples = iter(dataset)
size = len(next(examples).numpy())
before = peak_kib()  # TensorFlow loaded, the first record read
count = 1 + sum(1 for _ in examples)
print(count, size, before, peak_kib())
"""
RECORDS = 20_000  # of 10,000 characters each: 200 MB


def write_large(path, format):
    texts = (os.urandom(5_000).hex() for _ in range(RECORDS))
    if format == "jsonl":
        write_jsonl(path, ({"text": t, "id": i} for i, t in enumerate(texts)))
    elif format == "csv":
        write_csv(path, ["id", "text"], enumerate(texts))
    elif format == "tfrecord":
        write_tfrecord(path, ({"text": t} for t in texts))
    else:
        schema = pa.schema([("text", pa.string())])
        with pq.ParquetWriter(path, schema) as writer:
            for _ in range(RECORDS // 1000):  # row groups of 10 MB
                batch = [next(texts) for _ in range(1000)]
                writer.write_table(pa.table({"text": batch}, schema=schema))


# Slow (about 10 s a format): 200 MB written, then read in a new process.
@pytest.mark.slow
@pytest.mark.parametrize("format", ["jsonl", "csv", "parquet", "tfrecord"])
def test_a_200_mb_file_is_read_in_bounded_memory(tmp_path, format):
    path = tmp_path / f"large.{format}"
    write_large(path, format)
    assert path.stat().st_size > 195e6
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    ).stdout
    count, size, before, after = map(int, out.split()[-4:])
    assert (count, size) == (RECORDS, 10_000)
    # The whole file would be 200 MB more (and more as Python strings).
    assert after - before < 40_000, (before, after)


# A Hugging Face `Dataset` is memory-mapped Arrow: the pages of the file it
# reads count in the process's resident set until the kernel drops them
# (they are the file's page cache, not memory the reader holds), so the
# peak resident set would grow by the file's size however the rows are
# read. What the reader holds is anonymous memory: `RssAnon`, sampled as
# the rows go by. `to_iterable_dataset` streams the same file.
MEASURE_HF = """
import sys
import datasets
from tf_input.data.sources import source_dataset


def anon_kib():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("RssAnon"))


data = datasets.load_from_disk(sys.argv[1])
if sys.argv[2] == "iterable":
    data = data.to_iterable_dataset()
examples = iter(source_dataset(data, columns="text"))
size = len(next(examples).numpy())
before = peak = anon_kib()  # TensorFlow loaded, the first record read
count = 1
for count, _ in enumerate(examples, 2):
    if count % 500 == 0:
        peak = max(peak, anon_kib())
print(count, size, before, max(peak, anon_kib()))
"""


# Slow (about 20 s each): 200 MB of Arrow written, then read in a new process.
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dataset", "iterable"])
def test_a_200_mb_hugging_face_dataset_is_read_in_bounded_memory(
    tmp_path, kind
):
    import datasets

    def rows():
        for _ in range(RECORDS):
            yield {"text": os.urandom(5_000).hex()}

    features = datasets.Features({"text": datasets.Value("string")})
    data = datasets.Dataset.from_generator(
        rows, features=features, cache_dir=str(tmp_path / "cache")
    )
    data.save_to_disk(str(tmp_path / "saved"))
    size = sum(f.stat().st_size for f in (tmp_path / "saved").glob("*.arrow"))
    assert size > 195e6
    out = subprocess.run(
        [sys.executable, "-c", MEASURE_HF, str(tmp_path / "saved"), kind],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={
            **os.environ,
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "HF_DATASETS_OFFLINE": "1",
        },
    ).stdout
    count, size, before, after = map(int, out.split()[-4:])
    assert (count, size) == (RECORDS, 10_000)
    assert after - before < 40_000, (before, after)
