"""Long uptimes: process memory over repeated builds of one tokenizer.

A server that rebuilds its tokenizer (a reload, a new worker thread, a
test suite) must not grow without bound. Each file is built `--builds`
times in one fresh process; each build is called once on two lines, then
dropped, then `gc.collect()`; the process's RSS (`/proc/self/statm`) is
read after each. Reported: RSS after the first build, the growth over the
first few builds, and the growth per build after them (the slope from
build `--settle` to the last).

Run: python benchmarks/bench_rebuild.py [--builds 12] [--only mistral]
"""

import argparse
import gc
import os
import pathlib
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


def one_process(path, builds):
    """In this process: build, call, drop `builds` times; RSS in MB."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf

    import tf_input

    def rss_mb():
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6

    sizes = []
    for _ in range(builds):
        tokenizer = tf_input.load_tokenizer(path)
        tokenizer(tf.constant(["hello world 123", "ünïcode text"]))
        del tokenizer
        gc.collect()
        sizes.append(rss_mb())
    print(" ".join(f"{s:.1f}" for s in sizes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--builds", type=int, default=12)
    parser.add_argument("--settle", type=int, default=4)
    parser.add_argument("--only", nargs="*", help="name prefixes")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_process(args.one, args.builds)
        return
    print(
        f"| file | RSS after build 1, MB | growth builds 1-{args.settle}, "
        f"MB | growth per build after, MB ({args.builds} builds) |"
    )
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for name, path in files(pathlib.Path(folder)).items():
            if args.only and not any(name.startswith(p) for p in args.only):
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--one", path]
                + ["--builds", str(args.builds)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            sizes = [float(s) for s in out.stdout.split()]
            settle = args.settle - 1
            slope = (sizes[-1] - sizes[settle]) / (len(sizes) - 1 - settle)
            print(
                f"| {name} | {sizes[0]:.0f} | "
                f"{sizes[settle] - sizes[0]:.1f} | {slope:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
