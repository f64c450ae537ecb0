"""The configurations whose batches `test_pinned_batches.py` pins.

`python -m tests.data.pinned` (from the repository root, with the shared
data) writes `fixtures/pinned_batches.json`: a SHA-256 of every batch of
each configuration (names, dtypes, shapes and bytes of every tensor, in
order) and its `stats`, as computed by the code at the time. It was
written by the code before the start-up work on fewer graph nodes per
chunk function, so that those changes provably leave every batch as it
was. The digest covers features and labels, which the sample weights
did not change; the weights are checked against their rule
(`expected_weights`) batch by batch.
"""

import hashlib
import json
import pathlib

import numpy as np

from tests.shared_data import data_path
from tests.shared_data import read_lines

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "pinned_batches.json"
MODES = ("max_length", "longest", "bucket", "pack")
# The `stats` keys the fixture holds (those the batches had when pinned).
PINNED_STATS = (
    "batches",
    "real_tokens",
    "padded_tokens",
    "padding_efficiency",
    "fill_rows",
    "truncated",
    "shapes",
)


def corpus():
    """700 lines of tinyshakespeare and 300 of WikiText-2 test (long
    lines: truncation, and pieces split in "pack"), blanks kept."""
    shakespeare = read_lines(data_path("corpora", "tinyshakespeare.txt"))
    wiki = read_lines(data_path("corpora", "wikitext-2-raw-test.txt"))
    return shakespeare[:700] + wiki[:300]


def configurations(lines):
    """`{name: make_dataset keyword arguments}` (source included)."""
    base = dict(batch_size=8, max_length=48, chunk_size=128)
    labels = [(line, i % 5) for i, line in enumerate(lines)]
    pairs = [(a, b) for a, b in zip(lines[::2], lines[1::2])]
    # Short first texts (Shakespeare), long second ones (WikiText).
    triples = [
        (a, b, i % 3) for i, (a, b) in enumerate(zip(lines[:300], lines[700:]))
    ]
    configs = {}
    for mode in MODES:
        configs[f"lm-{mode}"] = dict(source=lines, batching=mode)
        configs[f"lm-{mode}-drop"] = dict(
            source=lines, batching=mode, drop_remainder=True
        )
        configs[f"lm-{mode}-shuffle"] = dict(
            source=lines, batching=mode, shuffle=300, seed=7
        )
        configs[f"encode-{mode}"] = dict(
            source=lines, batching=mode, task="encode"
        )
        if mode != "pack":
            configs[f"labels-{mode}"] = dict(
                source=labels, batching=mode, task="encode"
            )
            configs[f"pairs-{mode}"] = dict(
                source=pairs, batching=mode, task="encode"
            )
            configs[f"triples-{mode}"] = dict(
                source=triples,
                batching=mode,
                task="encode",
                truncation="only_second",
                max_length=64,
            )
            configs[f"seq2seq-{mode}"] = dict(
                source=pairs, batching=mode, task="seq2seq"
            )
    configs["lm-pack-512"] = dict(
        source=lines, batching="pack", max_length=512, chunk_size=256
    )
    configs["lm-bucket-tokens"] = dict(
        source=lines, batching="bucket", tokens_per_batch=300
    )
    configs["lm-bucket-one"] = dict(
        source=lines, batching="bucket", num_buckets=1
    )
    configs["lm-bucket-given"] = dict(
        source=lines, batching="bucket", bucket_boundaries=[8, 16, 30]
    )
    configs["lm-bucket-tokens-drop"] = dict(
        source=lines,
        batching="bucket",
        tokens_per_batch=300,
        drop_remainder=True,
    )
    configs["lm-max_length-nospecials"] = dict(
        source=lines, batching="max_length", add_special_tokens=False
    )
    configs["lm-longest-cache"] = dict(
        source=lines, batching="longest", cache=True
    )
    configs["lm-pack-cache"] = dict(source=lines, batching="pack", cache=True)
    return {name: {**base, **kwargs} for name, kwargs in configs.items()}


def digest(dataset):
    """SHA-256 of every batch's features and labels (each tensor's name,
    dtype, shape, bytes), the number of batches, and whether every batch's
    sample weights are what its features say (`expected_weights`)."""
    sha = hashlib.sha256()
    count = 0
    weights_ok = True
    for element in dataset:
        parts = element if isinstance(element, tuple) else (element,)
        for i, part in enumerate(parts[:2]):
            items = part.items() if isinstance(part, dict) else [(i, part)]
            for name, value in items:
                value = np.asarray(value)
                sha.update(f"{name}|{value.dtype}|{value.shape}|".encode())
                sha.update(np.ascontiguousarray(value).tobytes())
        if len(parts) == 3:
            want = expected_weights(parts[0], np.asarray(parts[1]))
            weights_ok &= np.array_equal(np.asarray(parts[2]), want)
        count += 1
    return sha.hexdigest(), count, weights_ok


def expected_weights(features, labels):
    """The sample weights a batch must have, from its features alone: 1 on
    a language model's positions whose next position holds a token of the
    same example, on a decoder's real positions, on a classifier's real
    rows; 0 everywhere else."""
    features = {name: np.asarray(value) for name, value in features.items()}
    if "decoder_padding_mask" in features:
        return features["decoder_padding_mask"].astype(np.float32)
    mask = features["padding_mask"] > 0
    if labels.ndim == 1:  # classification: one label per row
        return mask.any(axis=1).astype(np.float32)
    example = features.get("example_ids", mask.astype(np.int32))
    following = np.pad(example[:, 1:], [(0, 0), (0, 1)])
    return ((following == example) & (example > 0)).astype(np.float32)


def summary(dataset):
    from tf_input.data import stats

    digest_hex, count, weights_ok = digest(dataset)
    numbers = {
        key: (round(value, 12) if isinstance(value, float) else value)
        for key, value in dict(stats(dataset)).items()
        if isinstance(value, (int, float)) and key in PINNED_STATS
    }
    return {
        "sha256": digest_hex,
        "batches": count,
        "stats": numbers,
        "weights_ok": weights_ok,
    }


def compute():
    import keras

    from tf_input import WordPieceTokenizer
    from tf_input.data import make_dataset

    tokenizer = WordPieceTokenizer.from_vocab_file(
        str(data_path("bert", "bert-base-uncased-vocab.txt"))
    )
    out = {}
    for name, kwargs in configurations(corpus()).items():
        keras.utils.set_random_seed(1234)  # as the tests' conftest does
        kwargs = dict(kwargs)
        source = kwargs.pop("source")
        got = summary(make_dataset(source, tokenizer, **kwargs))
        got.pop("weights_ok")
        out[name] = got
    return out


if __name__ == "__main__":
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
