"""Long uptimes: process memory over repeated builds of one tokenizer,
repeated iterators of one pipeline, and repeated loads of a SavedModel.

A server that rebuilds its tokenizer (a reload, a new worker thread, a
test suite) must not grow without bound, nor a training run that starts
a new iterator each epoch, nor a sweep that calls `make_dataset` again
and again.

* Builds: each file is built `--builds` times in one fresh process; each
  build is called once on two lines, then dropped.
* Iterators: in one fresh process, `--iterators` times, a new iterator of
  one `make_dataset` dataset gives its first batch and is dropped; and,
  in another, `make_dataset` is called anew each time.
* Loads: in one fresh process, `--loads` times a SavedModel is loaded,
  called on two texts and dropped: one written by `export_text_model`,
  and, as the reference, a plain `tf.Module` holding a `StaticHashTable`
  of the same vocabulary.

After each, `gc.collect()`, then the process's RSS (`/proc/self/statm`).
Reported: RSS after the first, the growth over the first few
(`--settle`), the growth per repetition after them (the slope from
repetition `--settle` to the last), and per repetition over the last half
(whether it levels off; the median of the slopes between every two of
them).

Run: python benchmarks/bench_rebuild.py [--builds 12] [--only mistral]
     python benchmarks/bench_rebuild.py --section iterators --iterators 300
     python benchmarks/bench_rebuild.py --section loads --loads 30
"""

import argparse
import atexit
import gc
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)


def files(folder):
    """`{name: path}`; the ALBERT Unigram `tokenizer.json` is made from
    its `.model` as the tests make it (shared/data holds none)."""
    sys.path.insert(0, str(ROOT))
    from tests.tokenizers import unigram_json

    albert, _ = unigram_json.write(folder, "albert", "albert")
    return {
        "WordPiece (BERT uncased vocab.txt)": str(
            DATA / "bert" / "bert-base-uncased-vocab.txt"
        ),
        "BPE (GPT-2 vocab.json)": str(DATA / "gpt2" / "vocab.json"),
        "BPE metaspace (Mistral v1 tokenizer.json)": str(
            DATA / "llm" / "mistral_v1" / "tokenizer.json"
        ),
        "BPE (cl100k tokenizer.json)": str(
            DATA / "llm" / "cl100k" / "tokenizer.json"
        ),
        "Unigram (ALBERT tokenizer.json)": str(albert),
    }


# `{name: (tokenizer file, batching)}` of the iterator rows.
PIPELINES = {
    "BERT WordPiece, longest": ("bert/bert-base-uncased-vocab.txt", "longest"),
    "Qwen 3 tokenizer.json, pack": ("llm/qwen3/tokenizer.json", "pack"),
}
LINES = 512  # of tinyshakespeare: a few chunks


def one_process(kind, path, count, batching=None):
    """In this process, `count` times: build, call and drop a tokenizer
    (`kind="build"`); or take the first batch of a new iterator of one
    dataset (`"iterator"`), or of a new `make_dataset` (`"dataset"`); or
    load, call and drop a SavedModel (`"load"`: `export_text_model` of a
    small classifier; `"load-plain"`: a `tf.Module` holding a
    `StaticHashTable` of the same vocabulary, saved by
    `tf.saved_model.save`). Prints the RSS in MB after each."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf

    if kind.startswith("load"):
        folder = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        saved, call = _saved_model(kind, path, folder)

    import tf_input
    from tf_input.data import make_dataset

    def rss_mb():
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6

    if kind in ("iterator", "dataset"):
        tokenizer = tf_input.load_tokenizer(path)
        text = (DATA / "corpora" / "tinyshakespeare.txt").read_text()
        lines = [line for line in text.splitlines() if line][:LINES]

        def dataset():
            return make_dataset(
                lines,
                tokenizer,
                batching=batching,
                batch_size=32,
                max_length=128,
            )

        one = dataset()
    sizes = []
    for _ in range(count):
        if kind == "build":
            tokenizer = tf_input.load_tokenizer(path)
            tokenizer(tf.constant(["hello world 123", "ünïcode text"]))
            del tokenizer
        elif kind.startswith("load"):
            call(tf.saved_model.load(saved))
        else:
            next(iter(one if kind == "iterator" else dataset()))
        gc.collect()
        sizes.append(rss_mb())
    print(" ".join(f"{s:.1f}" for s in sizes))


def _saved_model(kind, path, folder):
    """`(folder, call)`: the SavedModel of a `"load"` row, and a call of a
    loaded one on two texts."""
    import keras
    import tensorflow as tf

    import tf_input

    texts = tf.constant(["hello world 123", "ünïcode text"])
    if kind == "load":
        tokenizer = tf_input.load_tokenizer(path)
        ids = keras.Input((None,), dtype="int32", name="token_ids")
        hidden = keras.layers.Embedding(tokenizer.vocabulary_size(), 8)(ids)
        pooled = keras.layers.GlobalAveragePooling1D()(hidden)
        model = keras.Model(ids, keras.layers.Dense(2)(pooled))
        tf_input.export_text_model(model, tokenizer, folder, max_length=16)
        return folder, lambda loaded: loaded.serve(texts)
    words = pathlib.Path(path).read_text("utf-8").splitlines()

    class Vocabulary(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    words, tf.range(len(words), dtype=tf.int64)
                ),
                -1,
            )

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def lookup(self, texts):
            return self.table.lookup(tf.strings.split(texts).flat_values)

    tf.saved_model.save(Vocabulary(), folder)
    return folder, lambda loaded: loaded.lookup(texts)


def _measure(*one):
    """Runs `one_process(*one)` in a fresh process; its RSS figures."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", *map(str, one)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return [float(s) for s in out.stdout.split()]


def _row(name, sizes, settle):
    """A table row: first RSS, early growth, the slopes after."""
    settle -= 1
    slope = (sizes[-1] - sizes[settle]) / (len(sizes) - 1 - settle)
    late = _median_slope(sizes[len(sizes) // 2 :])
    return (
        f"| {name} | {sizes[0]:.0f} | {sizes[settle] - sizes[0]:.1f} | "
        f"{slope:.2f} | {late:.2f} |"
    )


def _median_slope(values):
    """Theil-Sen: the median of the slopes between every two points. One
    build's RSS moves by a few MB on its own (now and then by tens), so
    neither two end points nor least squares would do."""
    return statistics.median(
        (values[j] - values[i]) / (j - i)
        for i in range(len(values))
        for j in range(i + 1, len(values))
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--section",
        choices=["builds", "iterators", "loads", "all"],
        default="builds",
    )
    parser.add_argument("--builds", type=int, default=12)
    parser.add_argument("--iterators", type=int, default=100)
    parser.add_argument("--loads", type=int, default=30)
    parser.add_argument("--settle", type=int, default=4)
    parser.add_argument("--only", nargs="*", help="name prefixes")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, path, count, *batching = args.one
        one_process(kind, path, int(count), *batching)
        return

    def wanted(name):
        return not args.only or any(name.startswith(p) for p in args.only)

    if args.section in ("builds", "all"):
        print(
            f"| file | RSS after build 1, MB | growth builds 1-{args.settle}, "
            f"MB | growth per build after, MB ({args.builds} builds) | "
            "growth per build, last half, MB |"
        )
        print("|---|---:|---:|---:|---:|")
        with tempfile.TemporaryDirectory() as folder:
            for name, path in files(pathlib.Path(folder)).items():
                if wanted(name):
                    sizes = _measure("build", path, args.builds)
                    print(_row(name, sizes, args.settle), flush=True)
    if args.section in ("iterators", "all"):
        print(
            f"\n| pipeline | RSS after iterator 1, MB | growth iterators "
            f"1-{args.settle}, MB | growth per iterator after, MB "
            f"({args.iterators} iterators) | growth per iterator, last "
            "half, MB |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, (path, batching) in PIPELINES.items():
            if not wanted(name):
                continue
            for kind, how in (
                ("iterator", "a new iterator"),
                ("dataset", "a new make_dataset"),
            ):
                sizes = _measure(kind, DATA / path, args.iterators, batching)
                print(_row(f"{name}: {how}", sizes, args.settle), flush=True)
    if args.section in ("loads", "all"):
        print(
            f"\n| SavedModel | RSS after load 1, MB | growth loads "
            f"1-{args.settle}, MB | growth per load after, MB ({args.loads} "
            "loads) | growth per load, last half, MB |"
        )
        print("|---|---:|---:|---:|---:|")
        bert = DATA / "bert" / "bert-base-uncased-vocab.txt"
        for kind, path, name in (
            ("load", bert, "`export_text_model`, BERT WordPiece"),
            (
                "load-plain",
                bert,
                "plain TensorFlow, a `StaticHashTable` of BERT's vocabulary",
            ),
            (
                "load",
                DATA / "llm" / "qwen3" / "tokenizer.json",
                "`export_text_model`, Qwen 3 `tokenizer.json`",
            ),
        ):
            sizes = _measure(kind, path, args.loads)
            print(_row(name, sizes, args.settle), flush=True)


if __name__ == "__main__":
    main()
