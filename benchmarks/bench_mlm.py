"""Masked LM batches: make_dataset(task="mlm") against the same pipeline
without masking.

The cost of the masking alone: one steady epoch of `make_dataset(...,
task="mlm")` against `task="encode"` on the same texts, tokenizer and
batching (the same rows, features and padding; `encode` has no targets).
Also keras-hub's way: `MaskedLMMaskGenerator` mapped over the `encode`
batches (`"max_length"` only: its output is ragged per batch). WikiText-2
test paragraphs (no headings or blank lines), BERT uncased WordPiece,
`max_length=128`, batches of 32, medians of `--repeats` steady epochs (the
iterator's second and later ones). The target: masking costs at most a
tenth (`mlm / encode` time <= 1 / 0.9).

Run: python benchmarks/bench_mlm.py [--repeats 5]
"""

import argparse
import os
import pathlib
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tf_input import WordPieceTokenizer  # noqa: E402
from tf_input.data import make_dataset  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
BATCH = 32
MAX_LENGTH = 128


def steady(dataset, repeats):
    for _ in dataset:  # the first epoch builds what the others reuse
        pass
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in dataset:
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def keras_hub_masking(lines, tokenizer):
    import keras_hub
    import tensorflow as tf

    specials = sorted(set(tokenizer.special_tokens.values()))
    generator = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=tokenizer.vocabulary_size(),
        mask_selection_rate=0.15,
        mask_token_id=tokenizer.special_tokens["mask"],
        mask_selection_length=20,
        unselectable_token_ids=specials,
    )
    encoded = make_dataset(
        lines,
        tokenizer,
        task="encode",
        batch_size=BATCH,
        max_length=MAX_LENGTH,
        batching="max_length",
    )

    def mask(features):
        return {**features, **generator(features["token_ids"])}

    return encoded.map(mask, num_parallel_calls=tf.data.AUTOTUNE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    text = (DATA / "corpora" / "wikitext-2-raw-test.txt").read_text("utf-8")
    lines = [
        line
        for line in text.split("\n")
        if line.strip() and not line.strip().startswith("=")
    ]
    tokenizer = WordPieceTokenizer(
        DATA / "bert" / "bert-base-uncased-vocab.txt",
        add_special_tokens=False,
    )
    print(
        f"{len(lines)} WikiText-2 test paragraphs, BERT uncased, "
        f"max_length={MAX_LENGTH}, batch {BATCH}; steady epoch, median of "
        f"{args.repeats}\n"
    )
    print("| batching | encode ms | mlm ms | encode / mlm | keras-hub ms |")
    print("|---|---|---|---|---|")
    for batching in ("longest", "max_length", "bucket", "pack"):
        times = {}
        for task, extra in (("encode", {}), ("mlm", {"seed": 0})):
            ds = make_dataset(
                lines,
                tokenizer,
                task=task,
                batch_size=BATCH,
                max_length=MAX_LENGTH,
                batching=batching,
                **extra,
            )
            times[task] = steady(ds, args.repeats)
        hub = "-"
        if batching == "max_length":
            hub_time = steady(keras_hub_masking(lines, tokenizer), args.repeats)
            hub = f"{hub_time * 1e3:.0f}"
        print(
            f"| {batching} | {times['encode'] * 1e3:.0f} | "
            f"{times['mlm'] * 1e3:.0f} | "
            f"{times['encode'] / times['mlm']:.2f} | {hub} |"
        )


if __name__ == "__main__":
    main()
