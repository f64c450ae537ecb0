"""Tagging and question answering rows: make_dataset against HF's recipe.

What a Hugging Face user runs to get the same rows: a fast tokenizer
(`tokenizers`, Rust) over a batch, then the Python of the examples:
`tokenize_and_align_labels` (`run_ner.py`) for tagging,
`prepare_train_features` (`run_qa.py`) for question answering, and the rows
padded into batches of 32 (what `DataCollatorForTokenClassification` /
`default_data_collator` do), as NumPy arrays. Ours: `make_dataset(...,
task="token_classification" | "question_answering")`, one steady epoch
(several epochs on one iterator, `repeat`, from its first batch on: no
start-up, as `fit` sees it with `repeat()`), and apart the first batch of
a fresh iterator (start-up). The same rows on both sides (checked by
tests/data/).

* tagging: the 500 sentences of the UD Chinese test file, 8 times (4,000
  sentences), BERT uncased, `max_length=128`, `"longest"` batches;
* QA: 2,000 SQuAD-shaped examples (WikiText paragraphs of 600+
  characters as contexts, Tatoeba questions, a span of the context as the
  answer), BERT uncased, `max_length=384`, `stride=128` (run_qa.py's
  defaults), `"max_length"` batches (run_qa.py pads to max_length).

Medians of `--repeats` rounds; the ratio is HF's time over ours (above 1:
ours is faster).

Run: python benchmarks/bench_tasks.py [--repeats 5]
"""

import argparse
import os
import pathlib
import random
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from tf_input.data import make_dataset  # noqa: E402
from tf_input.data import read_conll  # noqa: E402
from tf_input.tokenizers import load_tokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
BERT = DATA / "llm" / "bert_uncased" / "tokenizer.json"
BATCH = 32


def pad(rows, width=None):
    width = width or max(len(r) for r in rows)
    out = np.zeros([len(rows), width], np.int32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def hf_tagging(hf, sentences, names):
    """tokenize_and_align_labels, then padded batches."""
    index = {name: i for i, name in enumerate(names)}
    batches = []
    for at in range(0, len(sentences), BATCH):
        chunk = sentences[at : at + BATCH]
        encodings = hf.encode_batch([w for w, _ in chunk], is_pretokenized=True)
        labels = []
        for encoding, (_, tags) in zip(encodings, chunk):
            row, previous = [], None
            for word in encoding.word_ids:
                if word is None or word == previous:
                    row.append(-100)
                else:
                    row.append(index[tags[word]])
                previous = word
            labels.append(row)
        batches.append((pad([e.ids for e in encodings]), pad(labels)))
    return batches


def hf_qa(hf, examples, max_length):
    """prepare_train_features, then batches padded to max_length."""
    ids, starts, ends = [], [], []
    for at in range(0, len(examples), BATCH):
        chunk = examples[at : at + BATCH]
        encodings = hf.encode_batch([(q.lstrip(), c) for q, c, _, _ in chunk])
        for encoding, (_, _, answer_start, text) in zip(encodings, chunk):
            for window in [encoding] + encoding.overflowing:
                offsets, sequence_ids = window.offsets, window.sequence_ids
                start_char, end_char = answer_start, answer_start + len(text)
                first = sequence_ids.index(1)
                last = len(sequence_ids) - 1
                while sequence_ids[last] != 1:
                    last -= 1
                if not (
                    offsets[first][0] <= start_char
                    and offsets[last][1] >= end_char
                ):
                    start = end = 0
                else:
                    while (
                        first < len(offsets) and offsets[first][0] <= start_char
                    ):
                        first += 1
                    start = first - 1
                    while offsets[last][1] >= end_char:
                        last -= 1
                    end = last + 1
                ids.append(window.ids)
                starts.append(start)
                ends.append(end)
    return [
        (pad(ids[at : at + BATCH], max_length), starts[at : at + BATCH])
        for at in range(0, len(ids), BATCH)
    ]


def squad_like(count):
    rng = random.Random(0)
    contexts = [
        line.strip()
        for line in (DATA / "corpora" / "wikitext-2-raw-test.txt")
        .read_text(encoding="utf-8")
        .splitlines()
        if len(line) > 600
    ]
    questions = (
        (DATA / "corpora" / "tatoeba" / "tatoeba.fra-eng.eng")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    examples = []
    for k in range(count):
        context = contexts[k % len(contexts)]
        start = rng.randrange(0, len(context) - 30)
        end = start + rng.randrange(1, 30)
        examples.append(
            (questions[k % len(questions)], context, start, context[start:end])
        )
    return examples


def steady(dataset, repeats, epochs=4):
    """`(steady, first)`: the median seconds of a steady epoch, `epochs`
    epochs on one iterator (`repeat`) from its first batch on, less that
    batch, over `epochs` (what `fit` sees with `repeat()`, start-up left
    out); and the median seconds to the first batch of a fresh iterator
    (start-up: the map functions' instantiation, the first chunk)."""
    for _ in dataset:  # the first epoch builds what the others reuse
        pass
    runs, firsts = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        first = None
        for _ in dataset.repeat(epochs):
            if first is None:
                first = time.perf_counter() - start
        runs.append((time.perf_counter() - start - first) / epochs)
        firsts.append(first)
    return statistics.median(runs), statistics.median(firsts)


def timed(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    tokenizer = load_tokenizer(BERT, add_special_tokens=False)
    print(
        "| task | rows | HF recipe s | ours steady s | ratio "
        "| ours first batch s |"
    )
    print("|---|---:|---:|---:|---:|---:|")

    sentences = (
        list(read_conll(DATA / "corpora" / "zh_gsdsimp-ud-test.conllu")) * 8
    )
    names = sorted({tag for _, tags in sentences for tag in tags})
    hf = Tokenizer.from_file(str(BERT))
    hf.enable_truncation(128)
    hf_time = timed(lambda: hf_tagging(hf, sentences, names), args.repeats)
    ours = make_dataset(
        sentences,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=BATCH,
        max_length=128,
    )
    ours_time, first = steady(ours, args.repeats)
    print(
        f"| tagging (UD x8, BERT) | {len(sentences)} | {hf_time:.3f} | "
        f"{ours_time:.3f} | {hf_time / ours_time:.2f} | {first:.3f} |"
    )

    examples = squad_like(2000)
    hf = Tokenizer.from_file(str(BERT))
    hf.enable_truncation(384, stride=128, strategy="only_second")
    rows = sum(len(b[1]) for b in hf_qa(hf, examples, 384))
    hf_time = timed(lambda: hf_qa(hf, examples, 384), args.repeats)
    ours = make_dataset(
        examples,
        tokenizer,
        task="question_answering",
        batch_size=BATCH,
        max_length=384,
        stride=128,
        batching="max_length",
    )
    ours_time, first = steady(ours, args.repeats)
    print(
        f"| QA train features (BERT, 384/128) | {rows} | {hf_time:.3f} | "
        f"{ours_time:.3f} | {hf_time / ours_time:.2f} | {first:.3f} |"
    )


if __name__ == "__main__":
    main()
