"""The `tf.data` pipeline end to end, against what users wire by hand.

Tokenizer: our `WordPieceTokenizer` on the bert-base-uncased vocabulary, in
every row, so that only the pipeline around it differs. For each corpus
(tinyshakespeare.txt, wikitext-2-raw-test.txt from ../shared/data):

* tokenizer alone: `batch(1024)` + `map(tokenizer)` + prefetch, the ceiling;
* tokenizer alone, cut into batches of 32: the same, padded and `rebatch`ed
  to 32 rows, nothing else: the floor any batch-32 pipeline pays;
* hand-out alone: those batches of 32, cached in memory after the warm-up
  pass, so that no tokenizer runs: what tf.data's hand-out of the batches
  (and the consumer's step) costs by itself, per epoch;
* plain tf.data: per-example `map(tokenizer)` (with [CLS]/[SEP] and
  truncation) + `padded_batch` (pad to longest);
* keras-hub: `batch` + `map(tokenizer)` + `keras_hub.layers.StartEndPacker`
  (pads every batch to `max_length`);
* ours: `tf_input.data.make_dataset(..., task="lm")` in each batching mode
  (features, labels and sample weights).

Each figure is the median of `--repeats` rounds after one warm-up pass
(excluded), pipelines interleaved so that machine noise hits all alike;
"x tokenizer alone" is the median over rounds of each round's ratio (the
pipeline against the tokenizer alone, timed moments apart). Three
timings per round:

* per epoch: one epoch on a fresh iterator, as each epoch of `fit` runs.
  It includes the iterator's start-up: tf.data instantiates (and Grappler
  optimises) every map function again for each iterator, and the first
  chunk must pass the whole pipeline before the first batch. On these
  small corpora (16 and 3 chunks an epoch) that start-up is a large part
  of the epoch;
* steady: several epochs on one iterator (`repeat`, ~100k lines in all:
  4 epochs of tinyshakespeare, 35 of WikiText), timed from the first batch
  on: the throughput a long epoch gets, without the start-up;
* first batch: how long a fresh iterator's first batch takes, i.e. the
  start-up each training epoch waits for.

"× floor, steady" reads the steady throughput against the pipeline's own
floor, the tokenizer's output cut into the same batches of 32 with no
further work (the target: >= 0.9).

Task rows (`--section tasks`): the cost of a task's own work, in steady
state, against the same pipeline without it, and against the floor, by
wall time and by CPU time (see `time_rounds`):

* `task="mlm"` (seed 0) against `task="encode"` on the same corpus,
  tokenizer and batching (the same rows and padding; `encode` has no
  masks and no targets), in `"longest"`, `"max_length"`, `"bucket"` and
  `"pack"`;
* `task="chat"` on 300 conversations built from tinyshakespeare's speeches
  (2-4 exchanges each, a system prompt on every third), the Qwen 3
  tokenizer.json with a ChatML template (prefix-stable: one row per
  conversation), against `task="lm"` (no special tokens added) on the
  same conversations rendered once with `apply_chat_template(...,
  tokenize=False)`: the same token rows, without the rendering in Python,
  the offsets and the assistant flags. Its floor is the tokenizer alone on
  the rendered texts, cut into batches of 32; a second floor is the same
  with each token's byte span (`offsets_in_batches`), which the task
  needs to find the assistant's tokens. Also against `transformers`
  (`transformers_chat`): `apply_chat_template(..., tokenize=True,
  return_assistant_tokens_mask=True)` on each 32 conversations, padded,
  labels and weights in numpy, as TRL's `assistant_only_loss` makes them;
  its batches are checked equal to `"chat longest"`'s before timing.

Lines/s counts non-empty lines (all pipelines skip or never see empty
ones); tokens/s counts real tokens, [CLS]/[SEP] included.
Padding efficiency (real / all positions) and the number of distinct
batch shapes come from `tf_input.data.stats`.

Run: python benchmarks/bench_pipeline.py [--repeats 5] [--json out.json]
     [--section all|modes|tasks|mlm|chat]
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import time
import warnings

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_input  # noqa: E402
from tf_input import data as tfd  # noqa: E402
from tf_input.data.bucketing import choose_boundaries  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
AUTOTUNE = tf.data.AUTOTUNE
CORPORA = {
    "tinyshakespeare.txt": 128,
    "wikitext-2-raw-test.txt": 512,
}
BATCH_SIZE = 32
STEADY_LINES = 100_000
# task="chat": conversations per epoch, and epochs per steady run.
CONVERSATIONS = 300
CHAT_EPOCHS = 4
CHAT_MAX_LENGTH = 512
# ChatML as Qwen 2.5 writes it (no reasoning rules: prefix-stable).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def read_lines(path):
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [x.rstrip("\r") for x in lines]


def tokenizer_alone(lines, tokenizer):
    return (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(1024)
        .map(tokenizer.tokenize, num_parallel_calls=AUTOTUNE)
        .map(lambda ids: ids.row_lengths())
        .prefetch(AUTOTUNE)
    )


def tokenizer_in_batches(lines, tokenizer, max_length):
    """The floor of any pipeline that hands out batches of BATCH_SIZE rows:
    the tokenizer alone, padded to `max_length` and cut into batches by
    `rebatch`, with nothing else (no specials, mask or labels). tf.data
    spends ~0.05-0.1 ms on each element it hands out, so on short lines
    this alone falls well below the tokenizer's own rate."""
    return (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(1024)
        .map(
            # `to_tensor` with a shape also truncates.
            lambda texts: tokenizer.tokenize(texts).to_tensor(
                shape=[None, max_length]
            ),
            num_parallel_calls=AUTOTUNE,
        )
        .rebatch(BATCH_SIZE)
        .prefetch(AUTOTUNE)
    )


def offsets_in_batches(lines, tokenizer, max_length):
    """`tokenizer_in_batches` with each token's byte span as well
    (`tokenize_with_offsets(..., unit="byte")`, ids, starts and ends
    padded and cut alike): the floor of a task that needs the spans, as
    `task="chat"` does to find the assistant's tokens."""

    def pad(texts):
        ids, starts, ends = tokenizer.tokenize_with_offsets(texts, unit="byte")
        return tuple(
            x.to_tensor(shape=[None, max_length]) for x in (ids, starts, ends)
        )

    return (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(1024)
        .map(pad, num_parallel_calls=AUTOTUNE)
        .rebatch(BATCH_SIZE)
        .prefetch(AUTOTUNE)
    )


def hand_out_alone(lines, tokenizer, max_length):
    """The batches of `tokenizer_in_batches`, cached: from the second pass
    on, only tf.data's per-batch machinery runs (the cache's read, the
    iterator's `GetNext`, the consumer's step). Measured here: ~20-30 us a
    batch, about what `Dataset.range` costs an element through the same
    consumer, so it is tf.data's own per-element cost, not the cache's."""
    return tokenizer_in_batches(lines, tokenizer, max_length).cache()


def plain_tf_data(lines, tokenizer, max_length):
    cls = tokenizer.special_tokens["cls"]
    sep = tokenizer.special_tokens["sep"]

    def one(line):
        ids = tokenizer.tokenize(line)[: max_length - 2]
        ids = tf.concat([[cls], ids, [sep]], axis=0)
        return {"token_ids": ids, "padding_mask": tf.ones_like(ids, tf.bool)}

    nonempty = [x for x in lines if x.strip()]
    return (
        tf.data.Dataset.from_tensor_slices(nonempty)
        .map(one, num_parallel_calls=AUTOTUNE)
        .padded_batch(BATCH_SIZE)
        .prefetch(AUTOTUNE)
    )


def keras_hub_packer(lines, tokenizer, max_length):
    packer = keras_hub.layers.StartEndPacker(
        sequence_length=max_length,
        start_value=tokenizer.special_tokens["cls"],
        end_value=tokenizer.special_tokens["sep"],
        pad_value=0,
        return_padding_mask=True,
    )

    def batch(texts):
        ids, mask = packer(tokenizer.tokenize(texts))
        return {"token_ids": ids, "padding_mask": mask}

    nonempty = [x for x in lines if x.strip()]
    return (
        tf.data.Dataset.from_tensor_slices(nonempty)
        .batch(BATCH_SIZE)
        .map(batch, num_parallel_calls=AUTOTUNE)
        .prefetch(AUTOTUNE)
    )


def consumer(dataset):
    """A function that runs one pass over `dataset` in the graph (as `fit`
    does), not batch by batch in Python, whose ~0.5 ms per batch would
    swamp small batches, and returns `(seconds, first)`: the time of the
    pass and the time its first element took to arrive. Traced once here,
    so that no pass pays for tracing; each call makes a new iterator, as
    each epoch of `fit` does. The consumer itself costs ~30 us an element
    (a function call each), ~60 us with the hand-over from `prefetch`:
    1,024 times an epoch for batches of 32 short lines, 32 times for the
    tokenizer alone's 1,024-line batches. The "cut into batches of 32" row
    shows that cost."""

    @tf.function
    def run():
        begin = tf.timestamp()

        def step(state, *_):
            count, first = state
            first = tf.where(count == 0, tf.timestamp(), first)
            return count + 1, first

        _, first = dataset.reduce(
            (tf.constant(0, tf.int64), tf.constant(0.0, tf.float64)), step
        )
        return first - begin

    run()  # trace, and warm up

    def seconds():
        start = time.perf_counter()
        first = float(run())
        return time.perf_counter() - start, first

    return seconds


def efficiency_without_fill(dataset):
    """Real / all positions, leaving out all-padding fill rows."""
    real = total = 0
    for element in dataset:
        features = element[0] if isinstance(element, tuple) else element
        mask = features["padding_mask"].numpy() > 0
        kept = mask[mask.any(axis=1)]
        real += kept.sum()
        total += kept.size
    return real / total


def bucket_optimum(lines, tokenizer, max_length, num_buckets=8):
    """The best padding efficiency any `num_buckets` boundaries reach.

    Every row (tokens + [CLS]/[SEP], cut to `max_length`) padded to the
    smallest boundary that holds it; the boundaries that minimise the
    padding are the exact dynamic programme of `choose_boundaries`, run on
    every row of the corpus. Partial batches are left out: this is the
    bound on the rows themselves.
    """
    lengths = tokenizer(lines).row_lengths().numpy()
    lengths = np.minimum(lengths[lengths > 0] + 2, max_length)
    boundaries = np.array(choose_boundaries(lengths, num_buckets, max_length))
    padded = boundaries[np.searchsorted(boundaries, lengths)]
    return lengths.sum() / padded.sum(), boundaries.tolist()


def count_rows(pipelines, specials):
    """Lines and real tokens of each pipeline (`stats`, and padding
    efficiency without fill rows); the tokenizer alone's and its batches'
    from the tokenizer's output, plus `specials` tokens a line."""
    counts = {}
    for name, dataset in pipelines.items():
        if name.startswith(("tokenizer alone,", "hand-out alone")):
            counts[name] = counts["tokenizer alone"]
        elif name == "tokenizer alone":
            tokens = sum(int(x.numpy().sum()) for x in dataset)
            count = sum(int((x.numpy() > 0).sum()) for x in dataset)
            counts[name] = dict(
                real_tokens=tokens + specials * count, lines=count
            )
        else:
            counts[name] = dict(tfd.stats(dataset))
            counts[name]["no_fill"] = efficiency_without_fill(dataset)
    return counts


def time_rounds(pipelines, repeat, repeats):
    """`(epoch, steady, latency, cpu)`: per pipeline, the seconds of each
    round's epoch on a fresh iterator, of a steady epoch (`repeat` epochs
    on one iterator, from its first batch on), of its first batch, and the
    CPU seconds (the process's, all threads) of a steady epoch: the
    `repeat` epochs' less the one fresh epoch's, per epoch left (None for
    `repeat=1`). The pipelines are interleaved in every round. CPU time
    moves less than wall time when the machine's two cores are shared,
    but it is not throughput: a pipeline that runs more in parallel can
    spend more CPU and still finish first."""
    once, many = {}, {}
    for name, dataset in pipelines.items():
        once[name] = consumer(dataset)
        many[name] = consumer(dataset.repeat(repeat))
    epoch = {name: [] for name in pipelines}
    steady = {name: [] for name in pipelines}
    latency = {name: [] for name in pipelines}
    cpu = {name: [] for name in pipelines}
    for _ in range(repeats):
        for name in pipelines:
            start = time.process_time()
            seconds, first = once[name]()
            middle = time.process_time()
            epoch[name].append(seconds)
            latency[name].append(first)
            # Several epochs on one iterator, from the first batch on:
            # no start-up (function instantiation, pipeline fill), only
            # throughput.
            seconds, first = many[name]()
            steady[name].append((seconds - first) / repeat)
            if repeat > 1:
                spent = time.process_time() - middle - (middle - start)
                cpu[name].append(spent / (repeat - 1))
    return epoch, steady, latency, (cpu if repeat > 1 else None)


def round_ratio(times, counts, name, base):
    """Median over rounds of `name`'s tokens/s over `base`'s, each round's
    two timed moments apart: steadier than a ratio of medians when the
    machine is shared."""
    tokens, base_tokens = (
        counts[name]["real_tokens"],
        counts[base]["real_tokens"],
    )
    return statistics.median(
        (tokens / mine) / (base_tokens / other)
        for mine, other in zip(times[name], times[base])
    )


def speeches(path):
    """`(speaker, text)` of each speech of tinyshakespeare.txt (blocks of
    "Speaker:" and its lines, separated by blank lines)."""
    out = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        head, _, text = block.strip().partition("\n")
        if head.endswith(":") and text.strip():
            out.append((head[:-1], text.strip()))
    return out


def shakespeare_conversations(count=CONVERSATIONS):
    """`count` conversations of consecutive speeches: the user says one,
    the assistant answers with the next; 2-4 exchanges, a system prompt
    on every third."""
    said = speeches(DATA / "corpora" / "tinyshakespeare.txt")
    out, at = [], 0
    for i in range(count):
        exchanges = 2 + i % 3
        chat = []
        if i % 3 == 0:
            speaker = said[at + 1][0].title()
            chat.append(
                {"role": "system", "content": f"You are {speaker}. Answer."}
            )
        for k in range(exchanges):
            chat.append({"role": "user", "content": said[at + 2 * k][1]})
            chat.append(
                {"role": "assistant", "content": said[at + 2 * k + 1][1]}
            )
        out.append(chat)
        at += 2 * exchanges
    return out


# CHATML with the assistant turns in `{% generation %}` blocks, which
# `transformers`' `return_assistant_tokens_mask=True` needs.
CHATML_GENERATION = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
    "<|im_end|>\n{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def transformers_chat(conversations, max_length):
    """The batches of `task="chat"`, `"longest"`, made as a `transformers`
    user makes them (TRL's `assistant_only_loss`): `apply_chat_template(
    ..., return_assistant_tokens_mask=True)` on each batch of
    conversations, padded to its longest row, then the next-token labels
    and the assistant weights in numpy; into `tf.data` by a generator, so
    every epoch renders and tokenizes again, as `task="chat"` does."""
    import transformers

    theirs = transformers.AutoTokenizer.from_pretrained(
        str(DATA / "llm" / "qwen3")
    )

    def batches():
        for at in range(0, len(conversations), BATCH_SIZE):
            out = theirs.apply_chat_template(
                conversations[at : at + BATCH_SIZE],
                chat_template=CHATML_GENERATION,
                tokenize=True,
                return_dict=True,
                return_assistant_tokens_mask=True,
                padding="longest",
                truncation=True,
                max_length=max_length,
                return_tensors="np",
            )
            mask = out["attention_mask"].astype(np.int32)
            # Padding as 0, as `make_dataset` pads (HF pads with its id).
            ids = out["input_ids"].astype(np.int32) * mask
            flags = out["assistant_masks"].astype(np.float32)
            labels = np.zeros_like(ids)
            labels[:, :-1] = ids[:, 1:]
            weights = np.zeros_like(flags)
            weights[:, :-1] = flags[:, 1:] * mask[:, 1:]
            yield {"token_ids": ids, "padding_mask": mask}, labels, weights

    matrix = tf.TensorSpec([None, None], tf.int32)
    return tf.data.Dataset.from_generator(
        batches,
        output_signature=(
            {"token_ids": matrix, "padding_mask": matrix},
            matrix,
            tf.TensorSpec([None, None], tf.float32),
        ),
    )


def same_batches(ours, theirs, count=3):
    """Raises unless the first `count` batches are equal (features,
    labels, weights; padding masks as 0/1)."""
    for a, b in zip(ours.take(count), theirs.take(count)):
        for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
            np.testing.assert_array_equal(
                np.asarray(x, np.float32), np.asarray(y, np.float32)
            )


def print_task_table(pipelines, counts, times, bases, floor):
    epoch, steady, latency, cpu = times
    print(
        "| pipeline | steady tokens/s | × without it, steady "
        "| × floor, steady | × without it, CPU | × floor, CPU "
        "| × without it, per epoch | first batch ms "
        "| padding efficiency | shapes |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name in pipelines:
        base = bases.get(name)
        row = dict(
            pipeline=name,
            steady_tokens_per_s=counts[name]["real_tokens"]
            / statistics.median(steady[name]),
            steady_base_ratio=(
                round_ratio(steady, counts, name, base) if base else None
            ),
            steady_floor_ratio=round_ratio(steady, counts, name, floor),
            cpu_base_ratio=(
                round_ratio(cpu, counts, name, base) if cpu and base else None
            ),
            cpu_floor_ratio=(
                round_ratio(cpu, counts, name, floor) if cpu else None
            ),
            epoch_base_ratio=(
                round_ratio(epoch, counts, name, base) if base else None
            ),
            first_batch_ms=1000 * statistics.median(latency[name]),
            padding_efficiency=counts[name].get("padding_efficiency"),
            shapes=counts[name].get("shapes"),
        )
        rows.append(row)

        def show(value, spec):
            return "–" if value is None else format(value, spec)

        print(
            f"| {name} | {row['steady_tokens_per_s']:,.0f} "
            f"| {show(row['steady_base_ratio'], '.2f')} "
            f"| {row['steady_floor_ratio']:.2f} "
            f"| {show(row['cpu_base_ratio'], '.2f')} "
            f"| {show(row['cpu_floor_ratio'], '.2f')} "
            f"| {show(row['epoch_base_ratio'], '.2f')} "
            f"| {row['first_batch_ms']:.0f} "
            f"| {show(row['padding_efficiency'], '.3f')} "
            f"| {show(row['shapes'], 'd')} |"
        )
    return rows


def task_section(tokenizer, repeats, section):
    """`task="mlm"` against `"encode"`, `task="chat"` against `"lm"` on
    the rendered conversations (see the module's docstring); `section`
    `"mlm"` or `"chat"`: that one alone."""
    results = []
    floor = f"tokenizer alone, cut into batches of {BATCH_SIZE}"
    for corpus, max_length in CORPORA.items():
        if section == "chat":
            break
        lines = read_lines(DATA / "corpora" / corpus)
        pipelines = {
            "tokenizer alone": tokenizer_alone(lines, tokenizer),
            floor: tokenizer_in_batches(lines, tokenizer, max_length),
        }
        bases = {}
        for batching in ("longest", "max_length", "bucket", "pack"):
            for task, extra in (("encode", {}), ("mlm", {"seed": 0})):
                name = f"{task} {batching}"
                pipelines[name] = tfd.make_dataset(
                    lines,
                    tokenizer,
                    task=task,
                    batch_size=BATCH_SIZE,
                    max_length=max_length,
                    batching=batching,
                    **extra,
                )
            bases[f"mlm {batching}"] = f"encode {batching}"
        counts = count_rows(pipelines, specials=2)
        repeat = -(-STEADY_LINES // len(lines))
        times = time_rounds(pipelines, repeat, repeats)
        print(
            f'\n## task="mlm" against task="encode": {corpus} '
            f"(max_length={max_length}; without it: encode)"
        )
        for row in print_task_table(pipelines, counts, times, bases, floor):
            results.append(dict(corpus=corpus, **row))

    if section == "mlm":
        return results
    chat_tokenizer = tf_input.load_tokenizer(
        DATA / "llm" / "qwen3", chat_template=CHATML
    )
    conversations = shakespeare_conversations()
    rendered = [
        chat_tokenizer.apply_chat_template(c, tokenize=False)
        for c in conversations
    ]
    offsets_floor = (
        f"tokenizer alone, with byte offsets, in batches of {BATCH_SIZE}"
    )
    pipelines = {
        "tokenizer alone": tokenizer_alone(rendered, chat_tokenizer),
        floor: tokenizer_in_batches(rendered, chat_tokenizer, CHAT_MAX_LENGTH),
        offsets_floor: offsets_in_batches(
            rendered, chat_tokenizer, CHAT_MAX_LENGTH
        ),
    }
    bases = {}
    for batching in ("longest", "bucket", "pack"):
        common = dict(
            batch_size=BATCH_SIZE,
            max_length=CHAT_MAX_LENGTH,
            batching=batching,
        )
        pipelines[f"lm {batching}"] = tfd.make_dataset(
            rendered, chat_tokenizer, add_special_tokens=False, **common
        )
        pipelines[f"chat {batching}"] = tfd.make_dataset(
            conversations, chat_tokenizer, task="chat", **common
        )
        bases[f"chat {batching}"] = f"lm {batching}"
    reference = "transformers longest"
    pipelines[reference] = transformers_chat(conversations, CHAT_MAX_LENGTH)
    same_batches(pipelines["chat longest"], pipelines[reference])
    counts = count_rows(
        {k: v for k, v in pipelines.items() if k != reference}, specials=0
    )
    counts[reference] = counts["chat longest"]  # the same batches
    times = time_rounds(pipelines, CHAT_EPOCHS, repeats)
    weighted = counts["chat longest"]["targets"]
    print(
        f'\n## task="chat" against task="lm" on the rendered texts: '
        f"{len(conversations)} conversations from tinyshakespeare, Qwen 3 "
        f"tokenizer + ChatML (max_length={CHAT_MAX_LENGTH}; "
        f"{counts['chat longest']['real_tokens']:,} tokens, {weighted:,} "
        "of them assistant targets; without it: lm)"
    )
    for row in print_task_table(pipelines, counts, times, bases, floor):
        results.append(dict(corpus="tinyshakespeare conversations", **row))
    for batching in ("longest", "bucket", "pack"):
        name = f"chat {batching}"
        ratio = round_ratio(times[1], counts, name, offsets_floor)
        by_cpu = round_ratio(times[3], counts, name, offsets_floor)
        print(f"{name} × {offsets_floor}: steady {ratio:.2f}, CPU {by_cpu:.2f}")
        results.append(
            dict(
                comparison=f"{name} × offsets floor",
                ratio=ratio,
                cpu_ratio=by_cpu,
            )
        )
    for timing, label in ((times[1], "steady"), (times[0], "per epoch")):
        ratio = round_ratio(timing, counts, "chat longest", reference)
        print(f"chat longest × {reference}, {label}: {ratio:.2f}")
        results.append(
            dict(comparison=f"chat × transformers, {label}", ratio=ratio)
        )
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument(
        "--section",
        choices=("all", "modes", "tasks", "mlm", "chat"),
        default="all",
        help="modes: task='lm' in every batching mode; tasks: mlm and chat "
        "against the same pipeline without them (or mlm, chat alone)",
    )
    args = parser.parse_args()
    # The corpora keep their blank lines, which every pipeline skips.
    warnings.simplefilter("ignore", tfd.SkippedExamplesWarning)

    tokenizer = tf_input.WordPieceTokenizer.from_vocab_file(
        str(DATA / "bert" / "bert-base-uncased-vocab.txt")
    )
    print(
        f"# tf {tf.__version__}, keras-hub {keras_hub.__version__}, "
        f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs; WordPiece bert-base-uncased; "
        f"batch_size={BATCH_SIZE}; median of {args.repeats} epochs"
    )
    results = []
    for corpus, max_length in CORPORA.items():
        if args.section != "all" and args.section != "modes":
            break
        lines = read_lines(DATA / "corpora" / corpus)
        pipelines = {
            "tokenizer alone": tokenizer_alone(lines, tokenizer),
            f"tokenizer alone, cut into batches of {BATCH_SIZE}": (
                tokenizer_in_batches(lines, tokenizer, max_length)
            ),
            "hand-out alone (those batches, cached; no tokenizer)": (
                hand_out_alone(lines, tokenizer, max_length)
            ),
            "plain tf.data (per-example map + padded_batch)": plain_tf_data(
                lines, tokenizer, max_length
            ),
            "keras-hub StartEndPacker": keras_hub_packer(
                lines, tokenizer, max_length
            ),
        }
        for batching in ("longest", "max_length", "bucket", "pack", "stream"):
            pipelines[f"tf_input {batching}"] = tfd.make_dataset(
                lines,
                tokenizer,
                batch_size=BATCH_SIZE,
                max_length=max_length,
                batching=batching,
            )
        pipelines["tf_input bucket, tokens_per_batch=4096"] = tfd.make_dataset(
            lines,
            tokenizer,
            batch_size=BATCH_SIZE,
            max_length=max_length,
            batching="bucket",
            tokens_per_batch=4096,
        )
        # Enough epochs for ~100k lines (~50 chunks) per steady run.
        repeat = -(-STEADY_LINES // len(lines))
        counts = count_rows(pipelines, specials=2)
        epoch, steady, latency, _ = time_rounds(pipelines, repeat, args.repeats)
        lines_count = counts["tokenizer alone"]["lines"]
        print(f"\n## {corpus} (max_length={max_length}, {lines_count} lines)")
        optimum, boundaries = bucket_optimum(lines, tokenizer, max_length)
        print(
            f"Best padding efficiency of any 8 bucket boundaries on these "
            f"rows: {optimum:.3f} (boundaries {boundaries}); target: "
            "`bucket` within 1% of it."
        )
        print(
            "| pipeline | lines/s | tokens/s | × tokenizer alone "
            "| steady tokens/s | × tokenizer alone, steady "
            "| × floor, steady | first batch ms "
            "| padding efficiency | without fill rows | shapes | truncated |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        alone = counts["tokenizer alone"]["real_tokens"]

        floor = f"tokenizer alone, cut into batches of {BATCH_SIZE}"

        def ratio(times, name, base_name="tokenizer alone"):
            # The ratio of each round (this pipeline against the tokenizer
            # alone, or its floor, timed moments apart), then the median
            # over rounds: steadier than a ratio of medians when the
            # machine is shared.
            tokens = counts[name]["real_tokens"]
            return statistics.median(
                (tokens / mine) / (alone / base)
                for mine, base in zip(times[name], times[base_name])
            )

        for name in pipelines:
            seconds = statistics.median(epoch[name])
            steady_seconds = statistics.median(steady[name])
            tokens = counts[name]["real_tokens"]
            row = dict(
                corpus=corpus,
                pipeline=name,
                seconds=seconds,
                lines_per_s=lines_count / seconds,
                tokens_per_s=tokens / seconds,
                ratio=ratio(epoch, name),
                steady_seconds=steady_seconds,
                steady_tokens_per_s=tokens / steady_seconds,
                steady_ratio=ratio(steady, name),
                steady_floor_ratio=ratio(steady, name, floor),
                first_batch_ms=1000 * statistics.median(latency[name]),
                padding_efficiency=counts[name].get("padding_efficiency"),
                without_fill=counts[name].get("no_fill"),
                shapes=counts[name].get("shapes"),
                truncated=counts[name].get("truncated"),
            )
            results.append(row)

            def show(value, spec):
                return "–" if value is None else format(value, spec)

            print(
                f"| {name} | {row['lines_per_s']:,.0f} "
                f"| {row['tokens_per_s']:,.0f} | {row['ratio']:.2f} "
                f"| {row['steady_tokens_per_s']:,.0f} "
                f"| {row['steady_ratio']:.2f} "
                f"| {row['steady_floor_ratio']:.2f} "
                f"| {row['first_batch_ms']:.0f} "
                f"| {show(row['padding_efficiency'], '.3f')} "
                f"| {show(row['without_fill'], '.3f')} "
                f"| {show(row['shapes'], 'd')} "
                f"| {show(row['truncated'], 'd')} |"
            )
    if args.section != "modes":
        results += task_section(tokenizer, args.repeats, args.section)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
