"""The padding efficiency of each batching mode.

* `BATCHINGS`: the batching modes of `make_dataset`.
* `quantile_boundaries`: boundaries at the length quantiles;
* `compare_batchings`: `make_dataset` + `stats` run in every batching mode
  on the same examples: the padding each mode really costs;
* `padding_efficiencies`: the same for examples given by their lengths.

The efficiencies are never modelled apart from the pipeline: they are what
`tf_input.data.stats` counts on `make_dataset`'s batches, so that they
cannot drift from it (the bucket boundaries it chooses, its packer, its
end-of-epoch regrouping, every mode added to `BATCHINGS`).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from tf_input._validation import check_integer_array
from tf_input._validation import check_positive_int
from tf_input._validation import describe
from tf_input.data.arguments import BATCHINGS
from tf_input.data.counting import SkippedExamplesWarning
from tf_input.data.info import pipeline_info
from tf_input.data.pipeline import make_dataset
from tf_input.data.stats import stats


def check_lengths(lengths) -> np.ndarray:
    """`lengths` as an int64 array: 1-D, non-empty, non-negative."""
    expected = (
        "a non-empty 1-D sequence of non-negative integers (tokens per example)"
    )
    array = check_integer_array("lengths", lengths, expected)
    if array.ndim != 1 or array.size == 0 or array.min() < 0:
        raise ValueError(
            f"`lengths` must be {expected}. "
            f"Received: lengths={describe(lengths)}."
        )
    return array.astype(np.int64)


def quantile_boundaries(
    lengths, num_buckets: int, max_length: int
) -> list[int]:
    """Bucket boundaries at the length quantiles, the last one `max_length`.

    The boundaries are the distinct values of the `k / num_buckets`
    quantiles (`k = 1 .. num_buckets - 1`, each the smallest length with at
    least that share of the examples at or below it) of the lengths cut to
    `max_length`, followed by `max_length`: at most `num_buckets` of them,
    each bucket holding about the same number of examples. (`make_dataset`
    chooses its boundaries by `choose_boundaries`, a search that minimises
    padding, unless given these as `bucket_boundaries`.)

    Example:

    >>> from tf_input.data.efficiency import quantile_boundaries
    >>> quantile_boundaries([1, 2, 3, 4, 5, 6, 7, 8], 4, 10)
    [2, 4, 6, 10]
    """
    lengths = check_lengths(lengths)
    num_buckets = check_positive_int("num_buckets", num_buckets)
    max_length = check_positive_int("max_length", max_length)
    lengths = np.minimum(lengths[lengths > 0], max_length)
    if lengths.size == 0 or num_buckets == 1:
        return [max_length]
    shares = np.arange(1, num_buckets) / num_buckets
    cuts = np.quantile(lengths, shares, method="inverted_cdf")
    boundaries = sorted({int(x) for x in cuts} - {max_length})
    return boundaries + [max_length]


@dataclasses.dataclass(frozen=True)
class BatchingComparison:
    """What `make_dataset` + `stats` measured in each batching mode.

    Attributes:
        stats: dict from each mode run to its `tf_input.data.stats` result.
        boundaries: list of int or None, the bucket boundaries `"bucket"`
            used (chosen by the pipeline, or given); None if it did not run.
    """

    stats: dict
    boundaries: list | None

    @property
    def efficiencies(self) -> dict[str, float]:
        """Mode -> padding efficiency (real tokens / all positions)."""
        return {
            mode: float(result["padding_efficiency"])
            for mode, result in self.stats.items()
        }


def compare_batchings(
    source,
    tokenizer,
    *,
    batch_size: int,
    max_length: int,
    batchings=BATCHINGS,
    **dataset_options,
) -> BatchingComparison:
    """Runs `make_dataset` in each batching mode and counts its padding.

    One `make_dataset(source, tokenizer, batching=mode, ...)` per mode, each
    read to the end once by `tf_input.data.stats`: the efficiencies are the
    pipeline's own, on the same examples (its bucket boundaries, its packer,
    its last batches), not a model of it.

    Args:
        source: what `make_dataset` reads (texts, files, a dataset).
        tokenizer: a `tf_input` tokenizer built with
            `add_special_tokens=False`.
        batch_size: int. Rows per batch.
        max_length: int. The longest row (the packed row length).
        batchings: sequence of modes to run. Defaults to every mode of
            `BATCHINGS`.
        **dataset_options: other `make_dataset` arguments (`num_buckets`,
            `bucket_boundaries`, `add_special_tokens`, `sample_size`...),
            the same for every mode. `count_batches` is False unless
            given: `stats` reads every batch anyway.

    Returns:
        A `BatchingComparison`.

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer()
    >>> tokenizer.adapt(["a b c", "d e", "f"])
    >>> comparison = tf_input.data.efficiency.compare_batchings(
    ...     ["a b c", "d e", "f"], tokenizer, batch_size=2, max_length=8)
    >>> for mode, value in comparison.efficiencies.items():
    ...     print(mode, round(value, 3))
    longest 0.923
    max_length 0.375
    bucket 0.5
    pack 0.75
    stream 0.562
    """
    unknown = [mode for mode in batchings if mode not in BATCHINGS]
    if isinstance(batchings, str) or unknown or not batchings:
        raise ValueError(
            f"`batchings` must be a non-empty sequence of modes among "
            f"{BATCHINGS}. Received: batchings={batchings!r}."
        )
    dataset_options.setdefault("count_batches", False)
    results, boundaries = {}, None
    for mode in batchings:
        options = dict(dataset_options)
        if mode != "stream":  # the separator of a stream only
            options.pop("separator", None)
        with warnings.catch_warnings():
            # Skipped examples are counted by `stats` (and reported).
            warnings.simplefilter("ignore", SkippedExamplesWarning)
            dataset = make_dataset(
                source,
                tokenizer,
                batching=mode,
                batch_size=batch_size,
                max_length=max_length,
                **options,
            )
        results[mode] = stats(dataset)
        if mode == "bucket":
            boundaries = list(pipeline_info(dataset).boundaries)
    return BatchingComparison(stats=results, boundaries=boundaries)


def probe_examples(lengths):
    """Examples of the given lengths, and a tokenizer that reads them.

    Example `i` is `lengths[i]` times the one token `"x"` of a
    `VocabularyTokenizer` that splits characters; an example of length 0 is
    an empty text, which `make_dataset` skips where it stands, as it skips
    a blank line (where the empty ones stand changes which examples share
    a chunk, and so the bucket sample and the packed rows). With
    `add_special_tokens=False`, `make_dataset` makes rows of exactly these
    lengths (cut to `max_length`).

    Returns:
        `(texts, tokenizer)`.
    """
    from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer

    lengths = check_lengths(lengths)
    tokenizer = VocabularyTokenizer(
        ["<pad>", "<sos>", "<eos>", "<unk>", "x"], split="character"
    )
    return ["x" * int(n) for n in lengths], tokenizer


def padding_efficiencies(
    lengths,
    *,
    batch_size: int,
    max_length: int,
    num_buckets: int = 8,
    bucket_boundaries=None,
    **dataset_options,
) -> dict[str, float]:
    """The padding efficiency of each batching mode, for examples of these
    lengths.

    Padding efficiency is real tokens / all token positions of the
    batches. `lengths` are the rows `make_dataset` would make of each
    example, special tokens included (before truncation); an example of
    length 0 is skipped where it stands, as `make_dataset` skips an empty
    one (give a blank line its 0: where the empty examples stand changes
    the chunks, so the bucket sample and the packed rows). The
    figures are measured, not modelled: `compare_batchings` runs
    `make_dataset` and `tf_input.data.stats` in every mode of `BATCHINGS`
    on examples of exactly these lengths (`probe_examples`), in this order,
    so they are the pipeline's own: the bucket boundaries it chooses from
    its first `sample_size` examples (`choose_boundaries`), its packer
    (whole examples per row, first-fit decreasing within each chunk), the
    regrouping of the buckets' last rows, the filled last batches. In
    `"stream"` the rows are joined as they are, with no separator: their
    special tokens stand for it (a tokenizer's stream puts its end token
    alone between texts, so the lengths of `[CLS] ... [SEP]` rows count one
    token more per example than its stream). For the figures of a
    particular tokenizer
    on texts, call `compare_batchings` (or `tf_input.viz.plot_lengths`)
    with the texts and the tokenizer.

    Args:
        lengths: 1-D sequence of non-negative ints, tokens per example.
        batch_size: int. Rows per batch.
        max_length: int. Truncation length (packed row length for `pack`).
        num_buckets: int. Most buckets for `"bucket"`. Defaults to `8`.
        bucket_boundaries: list of int or None. Explicit bucket boundaries
            (`max_length` appended if missing). Defaults to `None` (chosen
            by `make_dataset`).
        **dataset_options: other `make_dataset` arguments, e.g.
            `sample_size`, `tokens_per_batch`, `chunk_size`.

    Returns:
        dict from each mode of `BATCHINGS` to a float in [0, 1].

    Example:

    >>> efficiencies = tf_input.data.efficiency.padding_efficiencies(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> for mode, value in efficiencies.items():
    ...     print(mode, round(value, 4))
    longest 0.875
    max_length 0.4375
    bucket 0.875
    pack 0.6562
    stream 0.6562
    """
    if "add_special_tokens" in dataset_options:
        raise ValueError(
            "`padding_efficiencies` takes lengths that already count the "
            "special tokens, so it has no `add_special_tokens`. Received: "
            f"add_special_tokens={dataset_options['add_special_tokens']!r}. "
            "Pass texts and a tokenizer to `compare_batchings` instead."
        )
    texts, tokenizer = probe_examples(lengths)
    if not any(texts):
        raise ValueError(
            "`lengths` must hold at least one example with a token (length "
            f"> 0). Received: lengths={describe(lengths)}."
        )
    return compare_batchings(
        texts,
        tokenizer,
        batch_size=check_positive_int("batch_size", batch_size),
        max_length=check_positive_int("max_length", max_length),
        num_buckets=num_buckets,
        bucket_boundaries=bucket_boundaries,
        add_special_tokens=False,
        separator=[],
        **dataset_options,
    ).efficiencies
