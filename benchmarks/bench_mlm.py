"""Masked LM batches: make_dataset(task="mlm") against keras-hub's
masking.

keras-hub's way of masking: `MaskedLMMaskGenerator` (TF Text's masking
ops) mapped over the `task="encode"` batches, against `task="mlm"`, which
masks in its own chunk maps. `"max_length"` only (the generator's output
is ragged per batch otherwise). The `encode` batches alone are timed too,
for the cost of each masking on top of them. WikiText-2 test paragraphs
(no headings or blank lines), BERT uncased WordPiece, `max_length=128`,
batches of 32, medians of `--repeats` steady epochs (4 epochs on one
iterator, `repeat`, from its first batch on: no start-up; the datasets
in turn), wall and CPU time.

`task="mlm"` against `task="encode"` in every batching mode, steady and
against the floor, is in bench_pipeline.py (`--section tasks`).

Run: python benchmarks/bench_mlm.py [--repeats 7]
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


def epoch(dataset, epochs=1):
    """`(wall, cpu)` seconds of a steady epoch (the process's CPU time: all
    its threads, less sensitive than wall time to other processes):
    `epochs` epochs on one iterator (`repeat`) from its first batch on,
    less that batch, per epoch, so that no iterator's start-up (its map
    functions' instantiation, the first chunk) is counted."""
    first = None
    for _ in dataset.repeat(epochs):
        if first is None:
            first = time.perf_counter(), time.process_time()
    return (
        (time.perf_counter() - first[0]) / epochs,
        (time.process_time() - first[1]) / epochs,
    )


def steady(datasets, repeats):
    """Median `(wall, cpu)` of each dataset's steady epochs, the datasets'
    epochs taken in turn so that a slower spell of the machine hits all
    of them."""
    for dataset in datasets:  # the first epoch builds what the others reuse
        epoch(dataset)
    times = [[] for _ in datasets]
    for _ in range(repeats):
        for dataset, own in zip(datasets, times):
            own.append(epoch(dataset, epochs=4))
    return [
        tuple(statistics.median(t[i] for t in own) for i in (0, 1))
        for own in times
    ]


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
    parser.add_argument("--repeats", type=int, default=7)
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
    print(
        "| batching | encode ms | mlm ms | keras-hub ms | keras-hub / mlm "
        "| encode CPU ms | mlm CPU ms | mlm / encode CPU |"
    )
    print("|---|---|---|---|---|---|---|---|")
    datasets = [
        make_dataset(
            lines,
            tokenizer,
            task=task,
            batch_size=BATCH,
            max_length=MAX_LENGTH,
            batching="max_length",
            **extra,
        )
        for task, extra in (("encode", {}), ("mlm", {"seed": 0}))
    ]
    datasets.append(keras_hub_masking(lines, tokenizer))
    (encode, encode_cpu), (mlm, mlm_cpu), (hub, _) = steady(
        datasets, args.repeats
    )
    print(
        f"| max_length | {encode * 1e3:.0f} | {mlm * 1e3:.0f} | "
        f"{hub * 1e3:.0f} | {hub / mlm:.2f} | {encode_cpu * 1e3:.0f} | "
        f"{mlm_cpu * 1e3:.0f} | {mlm_cpu / encode_cpu:.2f} |"
    )


if __name__ == "__main__":
    main()
