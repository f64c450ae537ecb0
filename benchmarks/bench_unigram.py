"""Unigram SentencePiece models: where the time goes, against sentencepiece.

For each unigram `.model` in shared/data/sentencepiece and each corpus
(WikiText, Tatoeba-36, Hong Lou Meng), the same lines go through
`SentencePieceTokenizer` in the pipeline of `bench_tokenizers.py`
(`tf.data`, batches of 1024, `map` with AUTOTUNE, prefetch; one epoch per
run, iterator start-up included) and through `sentencepiece`'s batch
`encode` on the same batches. Besides the wall time of an epoch it
reports its CPU time (`time.process_time`, all threads): on a shared
machine the CPU time moves less with the other jobs than the wall time.
It also reports the steady throughput (one iterator over the lines
repeated to 24 batches, timed from its first batch, as in
`bench_tokenizers.py`; against `sentencepiece`'s median epoch), the
iterator start-up alone (an epoch of one short line, minus that of a
trivial map) and, with `--construction`, the construction time and peak
memory of each model in fresh processes.

One warm-up pass is excluded; figures are medians of `--repeats` passes
with the implementations interleaved. Parity (lines whose ids equal
`sentencepiece`'s) is counted on every line.

Run: python benchmarks/bench_unigram.py --help
"""

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import textwrap
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_tokenizers as common  # noqa: E402

from tf_input.tokenizers import SentencePieceTokenizer  # noqa: E402

MODELS = (
    "albert-base-v2-spiece.model",
    "sp-test-botchan-unigram-1000.model",
    "sp-test-ja.model",
)


def trivial_map(texts):
    lengths = tf.strings.length(texts)
    return tf.RaggedTensor.from_row_splits(
        lengths, tf.range(tf.size(lengths, tf.int64) + 1), validate=False
    )


def timed(runs, repeats):
    """`{name: (median wall s, median CPU s)}` of interleaved runs."""
    for run in runs.values():
        run()
    walls = {name: [] for name in runs}
    cpus = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            walls[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
    return {
        name: (statistics.median(walls[name]), statistics.median(cpus[name]))
        for name in runs
    }


def start_up(tokenizer, repeats):
    """Seconds an epoch of one line costs more than with a trivial map."""
    runs = {
        "trivial": common.pipeline_runner(trivial_map, ["hello world"]),
        "ours": common.pipeline_runner(tokenizer, ["hello world"]),
    }
    for run in runs.values():
        run()
    best = {name: float("inf") for name in runs}
    for _ in range(3 * repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best["ours"] - best["trivial"]


def measure(models, corpora, repeats, tf_text_unigram=True):
    rows = []
    texts = common.corpora(0)
    for model in models:
        path = str(common.DATA / "sentencepiece" / model)
        tokenizer = SentencePieceTokenizer(
            path, tf_text_unigram=tf_text_unigram
        )
        reference = sentencepiece.SentencePieceProcessor(model_file=path)
        graph = tf.function(tokenizer._tokenize_graph).get_concrete_function(
            tf.TensorSpec([None], tf.string)
        )
        nodes = len(graph.graph.get_operations())
        extra = start_up(tokenizer, repeats)
        print(
            f"{model}: {nodes} graph nodes; iterator start-up "
            f"+{extra * 1000:.1f} ms over a trivial map",
            flush=True,
        )
        for corpus in corpora:
            lines = texts[corpus]
            got = common.ids_of(tokenizer, lines)
            want = []
            for start in range(0, len(lines), common.BATCH):
                want += reference.encode(lines[start : start + common.BATCH])
            same = sum(g == list(w) for g, w in zip(got, want))
            times = timed(
                {
                    "ours": common.pipeline_runner(tokenizer, lines),
                    "sentencepiece": common.python_runner(
                        reference.encode, lines
                    ),
                },
                repeats,
            )
            (wall, cpu), (ref_wall, ref_cpu) = (
                times["ours"],
                times["sentencepiece"],
            )
            steady = common.steady_runner(tokenizer, lines)
            steady()  # warm-up
            steady_rate = statistics.median(steady() for _ in range(repeats))
            row = {
                "model": model,
                "corpus": corpus,
                "lines": len(lines),
                "parity": same,
                "ours_ms": wall * 1000,
                "sp_ms": ref_wall * 1000,
                "ratio": ref_wall / wall,
                "ours_cpu_ms": cpu * 1000,
                "sp_cpu_ms": ref_cpu * 1000,
                "cpu_ratio": ref_cpu / cpu,
                "steady_lines_per_s": steady_rate,
                "steady_ratio": steady_rate / (len(lines) / ref_wall),
                "start_up_ms": extra * 1000,
                "nodes": nodes,
            }
            rows.append(row)
            print(
                f"  {corpus:12s} epoch {row['ours_ms']:7.1f} ms vs "
                f"{row['sp_ms']:6.1f} ms ({row['ratio']:.2f}x sentencepiece)"
                f"; CPU {row['ours_cpu_ms']:7.1f} vs {row['sp_cpu_ms']:6.1f} "
                f"ms ({row['cpu_ratio']:.2f}x); steady {steady_rate:,.0f} "
                f"lines/s ({row['steady_ratio']:.2f}x); parity "
                f"{same}/{len(lines)}",
                flush=True,
            )
    return rows


def construction(models, repeats):
    """Construction seconds and peak RSS of each model, fresh processes."""
    script = textwrap.dedent(
        """
        import json, resource, sys, time
        from tf_input.tokenizers import SentencePieceTokenizer
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        SentencePieceTokenizer(sys.argv[1])
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps([seconds, base * 1024, peak * 1024]))
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(common.ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    rows = []
    for model in models:
        path = str(common.DATA / "sentencepiece" / model)
        runs = []
        for _ in range(repeats):
            out = subprocess.run(
                [sys.executable, "-c", script, path],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        mib = 1 << 20
        row = {
            "model": model,
            "seconds": statistics.median(r[0] for r in runs),
            "base_mib": statistics.median(r[1] for r in runs) / mib,
            "peak_mib": statistics.median(r[2] for r in runs) / mib,
        }
        rows.append(row)
        added = row["peak_mib"] - row["base_mib"]
        print(
            f"{model}: construction {row['seconds']:.2f} s (median of "
            f"{repeats}); RSS {row['base_mib']:.0f} MiB after imports, peak "
            f"{row['peak_mib']:.0f} MiB (+{added:.0f} MiB)",
            flush=True,
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--models", nargs="*", default=list(MODELS), help="model file names"
    )
    parser.add_argument(
        "--corpora", nargs="*", default=list(common.CLASSIC_CORPORA)
    )
    parser.add_argument(
        "--construction",
        action="store_true",
        help="construction time and peak memory instead (fresh processes)",
    )
    parser.add_argument(
        "--core-ops",
        action="store_true",
        help="the core-ops route (`tf_text_unigram=False`)",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if not common.DATA.is_dir():
        sys.exit(
            f"Shared data not found at {common.DATA}: set TF_INPUT_SHARED_DATA."
        )
    print(
        f"tensorflow {tf.__version__}, sentencepiece "
        f"{sentencepiece.__version__}; {os.cpu_count()} CPUs; peak RSS so "
        f"far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB"
    )
    if args.construction:
        rows = construction(args.models, args.repeats)
    else:
        rows = measure(
            args.models,
            args.corpora,
            args.repeats,
            tf_text_unigram=not args.core_ops,
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
