"""CPU time of one steady epoch of `make_dataset`, per batching mode.

Wall time on a shared machine moves by more than a small change costs, so
this measures what the process itself spends: `time.process_time` (all
threads) around the epochs. One steady epoch is the CPU time of `R + 1`
epochs on one iterator minus that of one epoch on a fresh iterator,
divided by `R` (enough epochs for `--lines` lines: 4 of tinyshakespeare,
23 of WikiText by default): the start-up (function instantiation, the
first chunk) cancels out. Same tokenizer and data as
`bench_pipeline.py` (WordPiece bert-base-uncased, `task="lm"`,
`batch_size=32`).

Its use is an A/B of two versions of tf_input: run it once per version
(the version on `PYTHONPATH` is the one measured, and its path is recorded
in the JSON), alternating, several times each, then compare:

    PYTHONPATH=/path/to/a python benchmarks/bench_epoch_cpu.py --json a1.json
    PYTHONPATH=/path/to/b python benchmarks/bench_epoch_cpu.py --json b1.json
    ...
    python benchmarks/bench_epoch_cpu.py --compare 'a*.json' 'b*.json'

`--compare` prints, per corpus and mode, the median CPU ms per epoch of
each side over all its runs and rounds, and the ratio b / a; then the
same for wall time (recorded beside it: noisier, but it shows a change of
parallelism, which CPU time does not).

Run: python benchmarks/bench_epoch_cpu.py [--rounds 3] [--lines 100000]
    [--modes longest pack] [--json out.json]
"""

import argparse
import glob
import json
import os
import pathlib
import statistics
import sys
import time
import warnings

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
CORPORA = {"tinyshakespeare.txt": 128, "wikitext-2-raw-test.txt": 512}
MODES = ("longest", "max_length", "bucket", "pack", "stream")
BATCH_SIZE = 32


def read_lines(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [x.rstrip("\r") for x in lines]


def epoch_runner(dataset):
    """A traced function that consumes `dataset` in the graph (as `fit`
    does); each call makes a new iterator."""
    import tensorflow as tf

    @tf.function
    def run():
        return dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)

    run()  # trace, and warm up
    return run


def seconds(run):
    """`(CPU seconds, wall seconds)` of one call of `run`."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(args):
    import tensorflow as tf

    import tf_input
    from tf_input import data as tfd

    warnings.simplefilter("ignore")  # the corpora's blank lines
    tokenizer = tf_input.WordPieceTokenizer.from_vocab_file(
        str(DATA / "bert" / "bert-base-uncased-vocab.txt")
    )
    rows = []
    for corpus, max_length in CORPORA.items():
        lines = read_lines(DATA / "corpora" / corpus)
        epochs = -(-args.lines // len(lines))
        once, many = {}, {}
        for mode in args.modes:
            try:
                dataset = tfd.make_dataset(
                    lines,
                    tokenizer,
                    task="lm",
                    batch_size=BATCH_SIZE,
                    max_length=max_length,
                    batching=mode,
                )
            except ValueError as error:  # a version without this mode
                print(f"# {corpus} {mode}: skipped ({error})", file=sys.stderr)
                continue
            once[mode] = epoch_runner(dataset)
            many[mode] = epoch_runner(dataset.repeat(epochs + 1))
        for round_ in range(args.rounds):
            for mode in once:  # modes interleaved within each round
                (cpu_one, wall_one), (cpu, wall) = (
                    seconds(once[mode]),
                    seconds(many[mode]),
                )
                rows.append(
                    dict(
                        corpus=corpus,
                        mode=mode,
                        round=round_,
                        cpu_ms_per_epoch=1000 * (cpu - cpu_one) / epochs,
                        wall_ms_per_epoch=1000 * (wall - wall_one) / epochs,
                    )
                )
                print(
                    f"{corpus} {mode} round {round_}: "
                    f"{rows[-1]['cpu_ms_per_epoch']:.0f} CPU ms, "
                    f"{rows[-1]['wall_ms_per_epoch']:.0f} wall ms / epoch",
                    flush=True,
                )
    return dict(
        tf_input=str(pathlib.Path(tf_input.__file__).parent),
        tensorflow=tf.__version__,
        rows=rows,
    )


def compare(a_pattern, b_pattern, key="cpu_ms_per_epoch"):
    """Median `key` (CPU or wall ms per epoch) of each side, and b / a,
    per corpus and mode; the printed table is Markdown."""

    def load(pattern):
        files = sorted(glob.glob(pattern))
        if not files:
            raise SystemExit(f"no file matches {pattern!r}")
        runs = [json.loads(pathlib.Path(f).read_text()) for f in files]
        values = {}
        for run in runs:
            for row in run["rows"]:
                if key in row:  # files without wall times have none
                    values.setdefault((row["corpus"], row["mode"]), []).append(
                        row[key]
                    )
        return values, len(files), runs[0]["tf_input"]

    a, a_runs, a_path = load(a_pattern)
    b, b_runs, b_path = load(b_pattern)
    print(f"a: {a_path} ({a_runs} runs); b: {b_path} ({b_runs} runs)")
    what = key.replace("_ms_per_epoch", "").replace("cpu", "CPU")
    print(
        f"| corpus | mode | a {what} ms / epoch | b {what} ms / epoch | b / a |"
    )
    print("|---|---|---:|---:|---:|")
    for pair in sorted(set(a) | set(b)):
        corpus, mode = pair
        ma = statistics.median(a[pair]) if pair in a else None
        mb = statistics.median(b[pair]) if pair in b else None
        ratio = f"{mb / ma:.3f}" if ma and mb else "–"
        show = [("–" if m is None else f"{m:,.0f}") for m in (ma, mb)]
        print(f"| {corpus} | {mode} | {show[0]} | {show[1]} | {ratio} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--lines", type=int, default=100_000, help="steady lines per round"
    )
    parser.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A_GLOB", "B_GLOB"),
        help="compare the JSON files of two versions; measures nothing",
    )
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        compare(*args.compare, key="wall_ms_per_epoch")
        return
    result = measure(args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
