"""Tokenizer throughput inside tf.data, against the tokenizers users pick.

For each family (WordPiece, byte-level BPE, SentencePiece) and corpus, the
same lines go through:

* ours: `tf.data` from the lines, batches of 1024, `map(tokenizer)` with
  AUTOTUNE parallelism, prefetch;
* keras-hub's tokenizer of the same kind, in the same pipeline;
* the reference: Hugging Face `tokenizers` `encode_batch` (WordPiece, BPE)
  or `sentencepiece`'s batch `encode`, on the same batches of 1024.

One warm-up pass is excluded; each figure is the median of `--repeats`
passes, with the implementations interleaved so machine noise hits all of
them alike. It also counts lines whose ids equal the reference's (parity):
speed bought with wrong ids does not count.

Run: make bench (or python benchmarks/bench_tokenizers.py --help).
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402
import tokenizers  # noqa: E402

import tf_input  # noqa: E402
from tf_input import tokenizers as ours  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
BATCH = 1024


def read_lines(path):
    text = path.read_text(encoding="utf-8")
    return [x.rstrip("\r") for x in text.split("\n") if x.strip()]


def spread(lines, limit):
    """At most `limit` lines, taken evenly across `lines` (all languages)."""
    if not limit or len(lines) <= limit:
        return lines
    step = len(lines) / limit
    return [lines[int(i * step)] for i in range(limit)]


def corpora(limit):
    tatoeba = []
    for path in sorted((DATA / "corpora" / "tatoeba").glob("tatoeba.*")):
        tatoeba += read_lines(path)
    return {
        "wikitext": spread(
            read_lines(DATA / "corpora/wikitext-2-raw-test.txt"), limit
        ),
        "tatoeba-36": spread(tatoeba, limit),
        "hongloumeng": spread(
            read_lines(DATA / "corpora/hongloumeng.txt"), limit
        ),
    }


def pipeline_runner(tokenizer, lines):
    """Returns f() that runs the tf.data pipeline and counts tokens."""

    # Built (and traced) once, as a training input pipeline is; each run is
    # one epoch over it, iterator start-up included.
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(BATCH)
    ds = ds.map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.prefetch(tf.data.AUTOTUNE)

    def run():
        tokens = 0
        for ids in ds:
            tokens += int(ids.flat_values.shape[0])
        return tokens

    return run


def python_runner(encode_batch, lines):
    def run():
        tokens = 0
        for start in range(0, len(lines), BATCH):
            for ids in encode_batch(lines[start : start + BATCH]):
                tokens += len(ids)
        return tokens

    return run


def ids_of(tokenizer, lines):
    out = []
    for start in range(0, len(lines), BATCH):
        ids = tokenizer(tf.constant(lines[start : start + BATCH]))
        # keras-hub returns Python lists in eager mode, ours a RaggedTensor.
        out += ids.to_list() if hasattr(ids, "to_list") else list(ids)
    return out


def families():
    bert = str(DATA / "bert/bert-base-uncased-vocab.txt")
    vocab_json = str(DATA / "gpt2/vocab.json")
    merges = str(DATA / "gpt2/merges.txt")
    spm_path = str(DATA / "sentencepiece/mistral-7b-v0.3-tokenizer.model")
    albert_path = str(DATA / "sentencepiece/albert-base-v2-spiece.model")

    hf_bert = tokenizers.BertWordPieceTokenizer(bert, lowercase=True)
    hf_bpe = tokenizers.ByteLevelBPETokenizer(vocab_json, merges)
    spm = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    albert = sentencepiece.SentencePieceProcessor(model_file=albert_path)

    def hf(tok):
        def encode(batch):
            return [
                e.ids for e in tok.encode_batch(batch, add_special_tokens=False)
            ]

        return encode

    return {
        "WordPiece (BERT uncased)": {
            "ours": ours.WordPieceTokenizer.from_vocab_file(bert),
            "keras-hub": keras_hub.tokenizers.WordPieceTokenizer(
                vocabulary=bert, lowercase=True, strip_accents=True
            ),
            "reference": ("HF tokenizers", hf(hf_bert)),
        },
        "byte-level BPE (GPT-2)": {
            "ours": ours.BytePairTokenizer.from_files(vocab_json, merges),
            "keras-hub": keras_hub.tokenizers.BytePairTokenizer(
                vocabulary=vocab_json, merges=merges
            ),
            "reference": ("HF tokenizers", hf(hf_bpe)),
        },
        "SentencePiece (Mistral v0.3)": {
            "ours": ours.SentencePieceTokenizer(spm_path),
            "keras-hub": keras_hub.tokenizers.SentencePieceTokenizer(
                proto=spm_path
            ),
            "reference": ("sentencepiece", spm.encode),
        },
        "SentencePiece (ALBERT, unigram)": {
            "ours": ours.SentencePieceTokenizer(albert_path),
            "keras-hub": keras_hub.tokenizers.SentencePieceTokenizer(
                proto=albert_path
            ),
            "reference": ("sentencepiece", albert.encode),
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--lines",
        type=int,
        default=0,
        help="at most this many lines per corpus, spread evenly (default: "
        "all; a short run gives tf.data start-up too much weight)",
    )
    parser.add_argument(
        "--families", nargs="*", help="substrings of family names to run"
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        sys.exit(f"Shared data not found at {DATA}: set TF_INPUT_SHARED_DATA.")

    print(
        f"tf_input {tf_input.__version__}, tensorflow {tf.__version__}, "
        f"keras-hub {keras_hub.__version__}, tokenizers "
        f"{tokenizers.__version__}, sentencepiece {sentencepiece.__version__}"
        f"; {os.cpu_count()} CPUs, {platform.machine()}"
    )
    rows = []
    texts = corpora(args.lines)
    for family, impl in families().items():
        if args.families and not any(f in family for f in args.families):
            continue
        ref_name, ref_encode = impl["reference"]
        for corpus, lines in texts.items():
            want = []
            for start in range(0, len(lines), BATCH):
                want += [
                    list(x) for x in ref_encode(lines[start : start + BATCH])
                ]
            parity = {}
            for name in ("ours", "keras-hub"):
                got = ids_of(impl[name], lines)
                parity[name] = sum(g == w for g, w in zip(got, want))
            runners = {
                "ours": pipeline_runner(impl["ours"], lines),
                "keras-hub": pipeline_runner(impl["keras-hub"], lines),
                ref_name: python_runner(ref_encode, lines),
            }
            times = {name: [] for name in runners}
            tokens = {name: run() for name, run in runners.items()}  # warm-up
            for _ in range(args.repeats):
                for name, run in runners.items():
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
            median = {k: statistics.median(v) for k, v in times.items()}
            rows.append(
                {
                    "family": family,
                    "corpus": corpus,
                    "lines": len(lines),
                    "tokens": tokens["ours"],
                    "lines_per_s": {
                        k: len(lines) / v for k, v in median.items()
                    },
                    "ours_vs_reference": median[ref_name] / median["ours"],
                    "ours_vs_keras_hub": median["keras-hub"] / median["ours"],
                    "parity_ours": parity["ours"],
                    "parity_keras_hub": parity["keras-hub"],
                    "reference": ref_name,
                }
            )
            print_row(rows[-1])
    print()
    print(
        "| tokenizer | corpus | lines | ours lines/s | ours tokens/s | "
        "reference lines/s | keras-hub lines/s | ours / reference | "
        "ours / keras-hub | parity ours | parity keras-hub |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        speed = r["lines_per_s"]
        per_line = r["tokens"] / r["lines"]
        print(
            f"| {r['family']} | {r['corpus']} | {r['lines']} | "
            f"{speed['ours']:,.0f} | {speed['ours'] * per_line:,.0f} | "
            f"{speed[r['reference']]:,.0f} "
            f"({r['reference']}) | {speed['keras-hub']:,.0f} | "
            f"{r['ours_vs_reference']:.2f}x | {r['ours_vs_keras_hub']:.2f}x | "
            f"{r['parity_ours']}/{r['lines']} | "
            f"{r['parity_keras_hub']}/{r['lines']} |"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


def print_row(r):
    speed = r["lines_per_s"]
    print(
        f"{r['family']:<30} {r['corpus']:<12} ours {speed['ours']:>9,.0f} "
        f"lines/s ({r['tokens'] / r['lines']:.1f} tok/line)  "
        f"{r['ours_vs_reference']:.2f}x {r['reference']}, "
        f"{r['ours_vs_keras_hub']:.2f}x keras-hub; parity "
        f"{r['parity_ours']}/{r['lines']} (keras-hub "
        f"{r['parity_keras_hub']}/{r['lines']})",
        flush=True,
    )


if __name__ == "__main__":
    np.set_printoptions(linewidth=120)
    main()
