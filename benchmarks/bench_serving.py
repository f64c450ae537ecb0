"""Served requests: one text (or 32) in, the model's answer out.

For each tokenizer family the same small `InputBlock` classifier (token
ids and padding mask -> `InputBlock` -> mean -> `Dense(2)`) is served two
ways, and the same request timed through each:

* ours: `tf_input.export_text_model(model, tokenizer, ...)`, loaded with
  `tf.saved_model.load` (after `import tensorflow_text` where the graph
  needs it), called on raw strings: `served.serve(tf.constant(texts))`;
* the reference: the family's Python tokenizer on the same file (Hugging
  Face `tokenizers` with truncation and padding to the longest row, or
  `sentencepiece` + the same truncation and padding in numpy), then the
  same Keras model exported with `model.export` and loaded, called on the
  ids.

Both add the tokenizer's special tokens and truncate to `--max-length`.
Each request is a batch of real corpus lines (Tatoeba's English side:
short sentences, as a served request is), a different batch each call.
The figure is the median of `--calls` calls after a warm-up, ours and the
reference interleaved call by call so machine noise hits both alike. The
two answers must be equal (the logits, to 1e-5: the same weights on the
same ids), or the family is reported as a mismatch.

The empty request (a batch of no text) is timed as well, through the
served model and through the tokenizer layer alone.

Where the time goes: the same requests through each part alone,
interleaved with the two above: our tokenizer layer (`tokenizer(texts)`,
no model), the reference tokenizer (ids and mask in numpy), and the
exported model called on those ids. "Ceiling" is (reference tokenizer +
model) / model: the ratio a served model whose tokenizer cost nothing
would reach. "Budget" is what our tokenizer may cost inside the served
graph for the ratio to reach its target (1x at batch 1, 1.5x at batch
32): (reference tokenizer + model) / target - model.

Run: python benchmarks/bench_serving.py [--families bert qwen] [--json out.json]
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (WordPiece / unigram graphs)
import tokenizers  # noqa: E402

import tf_input  # noqa: E402
from tf_input import tokenizers as ours  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
BATCHES = (1, 32)
# The ratios asked of a served request (reference time / ours), by batch.
TARGETS = {1: 1.0, 32: 1.5}


def request_lines(count=1024):
    """Short real sentences, one served request each."""
    path = DATA / "corpora/tatoeba/tatoeba.fra-eng.eng"
    lines = [x.strip() for x in path.read_text("utf-8").split("\n")]
    lines = [x for x in lines if x]
    return (lines * (count // len(lines) + 1))[:count]


# === The model ===
def classifier(vocabulary_size):
    """token_ids + padding_mask -> InputBlock -> masked mean -> Dense(2)."""
    keras.utils.set_random_seed(0)
    inputs = {
        "token_ids": keras.Input((None,), dtype="int32", name="token_ids"),
        "padding_mask": keras.Input(
            (None,), dtype="int32", name="padding_mask"
        ),
    }
    hidden = tf_input.InputBlock(vocabulary_size, 64, padding_mask_input=True)(
        inputs
    )
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    return keras.Model(inputs, keras.layers.Dense(2)(pooled))


# === The references' tokenizers: texts -> padded int32 ids and mask ===
def hf_encoder(path, max_length):
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding(pad_id=0)

    def encode(texts):
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], np.int32)
        mask = np.array([e.attention_mask for e in encodings], np.int32)
        return ids, mask

    return encode


def sentencepiece_encoder(path, max_length, start, end):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    room = max_length - len(start) - len(end)

    def encode(texts):
        rows = [start + r[:room] + end for r in processor.encode(texts)]
        width = max(max(len(r) for r in rows), 1)
        ids = np.zeros((len(rows), width), np.int32)
        mask = np.zeros((len(rows), width), np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask

    return encode


# === The families ===
def families(max_length, selected):
    """`{name: build}`; `build()` gives `(our tokenizer, reference encode,
    reference name, add_special_tokens)`."""
    llm = DATA / "llm"
    bert_vocab = DATA / "bert/bert-base-uncased-vocab.txt"
    mistral_model = DATA / "sentencepiece/mistral-7b-v0.3-tokenizer.model"
    albert_model = DATA / "sentencepiece/albert-base-v2-spiece.model"

    def json_family(path):
        def build():
            tokenizer = ours.load_tokenizer(path)
            encode = hf_encoder(path, max_length)
            return tokenizer, encode, "HF tokenizers", True

        return build

    def spm_family(path, specials=True, **options):
        def build():
            tokenizer = ours.SentencePieceTokenizer(str(path), **options)
            start, end = tokenizer.start_ids, tokenizer.end_ids
            if not specials:
                start, end = [], []
            encode = sentencepiece_encoder(path, max_length, start, end)
            return tokenizer, encode, "sentencepiece", specials

        return build

    def gpt2():
        folder = DATA / "gpt2"
        tokenizer = ours.BytePairTokenizer.from_files(
            str(folder / "vocab.json"), str(folder / "merges.txt")
        )
        reference = tokenizers.ByteLevelBPETokenizer(
            str(folder / "vocab.json"), str(folder / "merges.txt")
        )
        reference.enable_truncation(max_length)
        reference.enable_padding(pad_id=0)

        def encode(texts):
            encodings = reference.encode_batch(texts)
            ids = np.array([e.ids for e in encodings], np.int32)
            mask = np.array([e.attention_mask for e in encodings], np.int32)
            return ids, mask

        # The reference adds no special token: neither does ours.
        return tokenizer, encode, "HF tokenizers", False

    def bert():
        tokenizer = ours.WordPieceTokenizer.from_vocab_file(str(bert_vocab))
        encode = hf_encoder(llm / "bert_uncased/tokenizer.json", max_length)
        return tokenizer, encode, "HF tokenizers", True

    table = {
        "BERT WordPiece": bert,
        "Qwen 3 byte-level BPE": json_family(llm / "qwen3/tokenizer.json"),
        "cl100k byte-level BPE": json_family(llm / "cl100k/tokenizer.json"),
        "Mistral v1 tokenizer.json": json_family(
            llm / "mistral_v1/tokenizer.json"
        ),
        "Mistral v0.3 .model": spm_family(mistral_model),
        # The .model has no [CLS] / [SEP]: no special tokens either way.
        "ALBERT unigram .model": spm_family(albert_model, specials=False),
        # The same on core ops only (no TF Text op in the SavedModel).
        "ALBERT unigram .model, core ops": spm_family(
            albert_model, specials=False, tf_text_unigram=False
        ),
        "GPT-2 byte-level BPE": gpt2,
    }
    return {
        name: build
        for name, build in table.items()
        if not selected or any(f.lower() in name.lower() for f in selected)
    }


# === Timing ===
def median_ms(samples):
    return statistics.median(samples) * 1e3


def interleaved(runs, calls, warmup):
    """`({name: [wall seconds per call]}, {name: [CPU seconds per call]})`,
    the runs taking turns call by call. CPU time is the process's (all
    of TensorFlow's threads): less sensitive to other processes on a busy
    machine than wall time."""
    for i in range(warmup):
        for run in runs.values():
            run(i)
    times = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for i in range(calls):
        for name, run in runs.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run(warmup + i)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return times, cpu


def serve_both(name, build, lines, args, folder):
    tokenizer, encode, reference_name, specials = build()
    model = classifier(tokenizer.vocabulary_size())
    ours_path = os.path.join(folder, "ours")
    reference_path = os.path.join(folder, "reference")
    tf_input.export_text_model(
        model,
        tokenizer,
        ours_path,
        max_length=args.max_length,
        add_special_tokens=specials,
    )
    model.export(reference_path, verbose=False)
    served = tf.saved_model.load(ours_path)
    exported = tf.saved_model.load(reference_path)

    def ours_call(texts):
        return served.serve(tf.constant(texts)).numpy()

    def reference_call(texts):
        ids, mask = encode(texts)
        return exported.serve({"token_ids": ids, "padding_mask": mask})

    results = []
    for batch in BATCHES:
        requests = [
            lines[(i * batch) % len(lines) :][:batch] for i in range(64)
        ]
        requests = [r for r in requests if len(r) == batch]
        mismatch = sum(
            not np.allclose(
                ours_call(r), np.asarray(reference_call(r)), atol=1e-5
            )
            for r in requests[:8]
        )
        encoded = [encode(r) for r in requests]
        times, cpu = interleaved(
            {
                "ours": lambda i: ours_call(requests[i % len(requests)]),
                "reference": lambda i: reference_call(
                    requests[i % len(requests)]
                ),
                # Where the time goes: each side's parts alone.
                "our tokenizer": lambda i: tokenizer(
                    tf.constant(requests[i % len(requests)])
                ),
                "reference tokenizer": lambda i: encode(
                    requests[i % len(requests)]
                ),
                "model": lambda i: exported.serve(
                    dict(
                        zip(
                            ("token_ids", "padding_mask"),
                            encoded[i % len(encoded)],
                        )
                    )
                ),
            },
            args.calls,
            args.warmup,
        )
        parts = {k: round(median_ms(v), 3) for k, v in times.items()}
        ours_ms = median_ms(times["ours"])
        reference_ms = median_ms(times["reference"])
        results.append(
            {
                "tokenizer": name,
                "reference": reference_name,
                "batch": batch,
                "ours_ms": round(ours_ms, 3),
                "reference_ms": round(reference_ms, 3),
                "ratio": round(reference_ms / ours_ms, 2),
                "ours_cpu_ms": round(median_ms(cpu["ours"]), 3),
                "reference_cpu_ms": round(median_ms(cpu["reference"]), 3),
                "cpu_ratio": round(
                    statistics.mean(cpu["reference"])
                    / statistics.mean(cpu["ours"]),
                    2,
                ),
                "mismatched_requests": mismatch,
                "our_tokenizer_ms": parts["our tokenizer"],
                "reference_tokenizer_ms": parts["reference tokenizer"],
                "model_ms": parts["model"],
            }
        )
    empty = tf.constant([], tf.string)
    served_empty, _ = interleaved(
        {
            "served": lambda i: served.serve(empty),
            "layer": lambda i: tokenizer(empty),
        },
        args.calls,
        args.warmup,
    )
    empty_row = {
        "tokenizer": name,
        "served_ms": round(median_ms(served_empty["served"]), 3),
        "layer_ms": round(median_ms(served_empty["layer"]), 3),
    }
    return results, empty_row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--families", nargs="*", help="substrings of family names to run"
    )
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    lines = request_lines()
    rows, empties = [], []
    for name, build in families(args.max_length, args.families).items():
        with tempfile.TemporaryDirectory() as folder:
            results, empty = serve_both(name, build, lines, args, folder)
        rows.extend(results)
        empties.append(empty)
        for r in results:
            print_row(r)
        sys.stderr.flush()
    if args.json:
        record = {
            "machine": {
                "python": platform.python_version(),
                "tensorflow": tf.__version__,
                "cpus": os.cpu_count(),
            },
            "calls": args.calls,
            "rows": rows,
            "empty": empties,
        }
        pathlib.Path(args.json).write_text(json.dumps(record, indent=2))
    print()
    print(
        "| tokenizer | batch | ours ms | reference ms | ratio "
        "| ratio of mean CPU time |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        flag = "" if not r["mismatched_requests"] else " (MISMATCH)"
        print(
            f"| {r['tokenizer']} ({r['reference']}) | {r['batch']} | "
            f"{r['ours_ms']:.2f} | {r['reference_ms']:.2f} | "
            f"{r['ratio']:.2f}x{flag} | {r['cpu_ratio']:.2f}x |"
        )
    print()
    print(
        "| tokenizer | batch | our tokenizer layer ms | reference tokenizer "
        "ms | model alone ms | ceiling | our tokenizer's budget at the "
        "target, ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        target = TARGETS[r["batch"]]
        total = r["reference_tokenizer_ms"] + r["model_ms"]
        print(
            f"| {r['tokenizer']} | {r['batch']} | {r['our_tokenizer_ms']:.3f} "
            f"| {r['reference_tokenizer_ms']:.3f} | {r['model_ms']:.3f} | "
            f"{total / r['model_ms']:.2f}x | "
            f"{total / target - r['model_ms']:.3f} |"
        )
    print()
    print("| tokenizer | empty request, served ms | tokenizer layer ms |")
    print("|---|---:|---:|")
    for e in empties:
        print(
            f"| {e['tokenizer']} | {e['served_ms']:.3f} | {e['layer_ms']:.3f} |"
        )


def print_row(r):
    print(
        f"{r['tokenizer']:32} batch {r['batch']:>3}: ours "
        f"{r['ours_ms']:7.2f} ms, {r['reference']} {r['reference_ms']:7.2f}"
        f" ms, {r['ratio']:.2f}x (CPU {r['cpu_ratio']:.2f}x), mismatched "
        f"{r['mismatched_requests']}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
