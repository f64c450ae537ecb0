"""The cost of reading files strictly: our line reader against TextLineDataset.

`make_dataset` reads file sources with its own reader
(`tf_input/data/sources.py`): universal newlines, a UTF-8 byte-order mark
dropped, strict UTF-8 with the file and line named on error (or Latin-1, or
U+FFFD replacement). `tf.data.TextLineDataset`, which it replaced, does none
of that (it splits on LF and deletes every CR). Two timings per corpus:

* read: the lines alone, `batch(2048)`, one pass in Python: TextLineDataset,
  ours strict, ours `errors="replace"`;
* pipeline: `make_dataset(path, WordPieceTokenizer, batching="max_length",
  batch_size=32, max_length=128)`, one epoch on a fresh iterator, against
  the same lines given as a Python list (read by Python): the share of the
  end-to-end time the reader costs.

Corpora: tinyshakespeare (LF), wikitext-2-raw-test (CRLF), hongloumeng
(Chinese, 2.5 MB), and all corpora concatenated 5 times (34 MB) for the read
rows. Medians of `--repeats` interleaved rounds after one warm-up round.

Run: python benchmarks/bench_sources.py [--repeats 5]
"""

import argparse
import os
import pathlib
import platform
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import tf_input  # noqa: E402
from tf_input.data import make_dataset  # noqa: E402
from tf_input.data.sources import as_dataset  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
CORPORA = [
    "tinyshakespeare.txt",
    "wikitext-2-raw-test.txt",
    "hongloumeng.txt",
]


def one_pass(dataset):
    start = time.perf_counter()
    for _ in dataset:
        pass
    return time.perf_counter() - start


def readers(path):
    return {
        "TextLineDataset": lambda: tf.data.TextLineDataset(path).batch(2048),
        "ours strict": lambda: as_dataset(path)[0].batch(2048),
        "ours replace": lambda: as_dataset(path, errors="replace")[0].batch(
            2048
        ),
    }


def pipelines(path, tokenizer):
    lines = pathlib.Path(path).read_text("utf-8").splitlines()
    kwargs = dict(batch_size=32, max_length=128, batching="max_length")
    return {
        "make_dataset(list)": lambda: make_dataset(lines, tokenizer, **kwargs),
        "make_dataset(file)": lambda: make_dataset(path, tokenizer, **kwargs),
    }


def measure(makers, repeats):
    datasets = {name: make() for name, make in makers.items()}
    for dataset in datasets.values():
        one_pass(dataset)  # warm-up: tracing, file cache
    times = {name: [] for name in datasets}
    for _ in range(repeats):
        for name, dataset in datasets.items():
            times[name].append(one_pass(dataset))
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"# File reading ({time.strftime('%Y-%m-%d')}): tensorflow "
        f"{tf.__version__}, tf_input {tf_input.__version__}, "
        f"{platform.processor() or platform.machine()}, "
        f"nproc={os.cpu_count()}; medians of {args.repeats} rounds\n"
    )
    folder = DATA / "corpora"
    with tempfile.TemporaryDirectory() as tmp:
        big = pathlib.Path(tmp) / "all-corpora-x5.txt"
        blob = b"".join(p.read_bytes() for p in sorted(folder.glob("*.txt")))
        big.write_bytes(blob * 5)
        paths = [str(folder / name) for name in CORPORA] + [str(big)]
        print(
            "| file | MB | TextLineDataset s | ours strict s | ratio |"
            " ours replace s | ratio |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for path in paths:
            t = measure(readers(path), args.repeats)
            base = t["TextLineDataset"]
            print(
                f"| {pathlib.Path(path).name} | "
                f"{os.path.getsize(path) / 1e6:.1f} | {base:.3f} | "
                f"{t['ours strict']:.3f} | {t['ours strict'] / base:.2f} | "
                f"{t['ours replace']:.3f} | {t['ours replace'] / base:.2f} |"
            )
    tokenizer = tf_input.WordPieceTokenizer.from_vocab_file(
        DATA / "bert" / "bert-base-uncased-vocab.txt"
    )
    print("\n| file | make_dataset(list) s | make_dataset(file) s | ratio |")
    print("|---|---:|---:|---:|")
    for name in CORPORA[:2]:
        path = str(folder / name)
        t = measure(pipelines(path, tokenizer), args.repeats)
        a, b = t["make_dataset(list)"], t["make_dataset(file)"]
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
