"""Per-iterator start-up of `make_dataset`: graph nodes and first batch.

tf.data instantiates every function of a dataset again for each new
iterator (each epoch of `fit`), so the first batch of an epoch waits for
that set-up. For each batching mode this prints the node count of the
dataset's functions (from `ds._as_serialized_graph()`, `Const` nodes
apart; `-v`: per function) and the first-batch time of a fresh iterator,
consumed in the graph as `bench_pipeline.py` does, median and minimum of
`--repeats` rounds with the modes interleaved. "100 lines" is the first
100 lines of tinyshakespeare: the start-up with almost no work. The
tokenizer alone (`batch(1024)` + map) is the floor.

Run: python benchmarks/bench_startup.py [--repeats 7] [-v]
"""

import argparse
import collections
import os
import pathlib
import statistics
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import tensorflow as tf  # noqa: E402
from bench_pipeline import DATA  # noqa: E402
from bench_pipeline import consumer  # noqa: E402
from bench_pipeline import read_lines  # noqa: E402
from bench_pipeline import tokenizer_alone  # noqa: E402

import tf_input  # noqa: E402
from tf_input import data as tfd  # noqa: E402

MODES = ("max_length", "longest", "bucket", "pack")


def node_counts(dataset):
    """`{function name: (nodes, Const nodes)}` of the dataset's graph."""
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    counts = {}
    for function in graph.library.function:
        ops = collections.Counter(node.op for node in function.node_def)
        counts[function.signature.name] = (len(function.node_def), ops["Const"])
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("-v", action="store_true", help="nodes per function")
    args = parser.parse_args()
    tokenizer = tf_input.WordPieceTokenizer.from_vocab_file(
        str(DATA / "bert" / "bert-base-uncased-vocab.txt")
    )
    corpora = DATA / "corpora"
    shakespeare = read_lines(corpora / "tinyshakespeare.txt")
    cases = {
        "100 lines": (shakespeare[:100], 128),
        "tinyshakespeare.txt": (shakespeare, 128),
        "wikitext-2-raw-test.txt": (
            read_lines(corpora / "wikitext-2-raw-test.txt"),
            512,
        ),
    }
    for case, (lines, max_length) in cases.items():
        print(f"\n## {case} (max_length={max_length})")
        print("| pipeline | nodes (Const) | first batch ms, median | min |")
        print("|---|---:|---:|---:|")
        runs = {"tokenizer alone": consumer(tokenizer_alone(lines, tokenizer))}
        nodes = {}
        for mode in MODES:
            dataset = tfd.make_dataset(
                lines,
                tokenizer,
                batch_size=32,
                max_length=max_length,
                batching=mode,
            )
            nodes[mode] = node_counts(dataset)
            runs[mode] = consumer(dataset)
        times = {name: [] for name in runs}
        for _ in range(args.repeats):
            for name, run in runs.items():
                times[name].append(1000 * run()[1])
        for name in runs:
            counts = nodes.get(name)
            total = "–"
            if counts:
                total = (
                    f"{sum(n for n, _ in counts.values())} "
                    f"({sum(c for _, c in counts.values())})"
                )
            print(
                f"| {name} | {total} | {statistics.median(times[name]):.0f} "
                f"| {min(times[name]):.0f} |"
            )
            if args.v and counts:
                for function, (n, c) in sorted(
                    counts.items(), key=lambda item: -item[1][0]
                ):
                    print(f"|   {function} | {n} ({c}) | | |")


if __name__ == "__main__":
    main()
