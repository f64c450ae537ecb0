"""The numbers of the length picture: lengths and measured efficiencies.

`length_report` tokenizes the texts as `make_dataset` does (or takes the
lengths), and measures the padding efficiency of every batching mode with
`make_dataset` and `tf_input.data.stats` on those examples
(`tf_input.data.efficiency.compare_batchings`): the pipeline's own figures,
never a model of it.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import numbers

import numpy as np

from tf_input._validation import check_bool
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input.data.arguments import check_bucket_boundaries
from tf_input.data.efficiency import BATCHINGS
from tf_input.data.efficiency import check_lengths
from tf_input.data.efficiency import compare_batchings
from tf_input.data.efficiency import probe_examples

_CHUNK_LINES = 4096  # texts tokenized per call in `example_lengths`


@dataclasses.dataclass(frozen=True)
class LengthReport:
    """The numbers `plot_lengths` draws; prints as the CLI's summary.

    Attributes:
        lengths: int64 array, the tokens of each example as `make_dataset`
            makes its row (special tokens included, before truncation);
            examples without a token are left out, as the pipeline skips
            them.
        batch_size: int.
        max_length: int.
        efficiencies: dict from each mode of `BATCHINGS`, in that order,
            to its padding efficiency (real tokens / all positions).
        given: tuple of str, the modes whose efficiency was given
            (`efficiencies=`) instead of measured.
        boundaries: list of int or None, the bucket boundaries of
            `"bucket"` (the pipeline's choice, or those given).
        skipped: int, examples left out because they have no token.
    """

    lengths: np.ndarray
    batch_size: int
    max_length: int
    efficiencies: dict
    given: tuple = ()
    boundaries: list | None = None
    skipped: int = 0

    def __str__(self):
        lengths, max_length = self.lengths, self.max_length
        over = int(np.sum(lengths > max_length))
        lines = [
            f"{lengths.size:,} examples, {int(lengths.sum()):,} tokens "
            f"(mean {lengths.mean():.1f}, max {int(lengths.max())}; "
            f"{over:,} over max_length={max_length})"
        ]
        if self.skipped:
            lines.append(f"{self.skipped:,} empty examples skipped")
        lines.append(
            "padding efficiency (make_dataset + stats, "
            f"batch_size={self.batch_size}):"
        )
        for mode, value in self.efficiencies.items():
            note = "  (given)" if mode in self.given else ""
            lines.append(f"  {mode:<10}  {value:.1%}{note}")
        return "\n".join(lines)


def example_lengths(
    texts, tokenizer, *, add_special_tokens: bool = True
) -> tuple[np.ndarray, int]:
    """Tokens per text as `make_dataset` makes its row, before truncation.

    Each text's tokens plus the tokenizer's start and end tokens
    (`len(tokenizer.start_ids) + len(tokenizer.end_ids)`: 2 for BERT's
    `[CLS]`/`[SEP]`, 0 for Qwen) when `add_special_tokens`. Texts without
    any token (blank, whitespace-only for most tokenizers) are left out and
    counted, as `make_dataset` skips them.

    Returns:
        `(lengths, skipped)`: an int64 array, one length per text with a
        token, and the number of texts left out.
    """
    counts = [
        tokenizer.tokenize(list(texts[start : start + _CHUNK_LINES]))
        .row_lengths()
        .numpy()
        for start in range(0, len(texts), _CHUNK_LINES)
    ]
    counts = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    specials = len(tokenizer.start_ids) + len(tokenizer.end_ids)
    kept = counts[counts > 0].astype(np.int64)
    return kept + (
        specials if add_special_tokens else 0
    ), counts.size - kept.size


def _check_examples(lengths, texts, tokenizer):
    """Exactly one of `lengths` and `texts` (with its `tokenizer`)."""
    if (lengths is None) == (texts is None):
        raise ValueError(
            "Pass either `lengths` (tokens per example) or `texts` and "
            "their `tokenizer`. Received: "
            + ("both." if lengths is not None else "neither.")
        )
    if (texts is None) != (tokenizer is None):
        raise ValueError(
            "`texts` and `tokenizer` go together: the texts are tokenized "
            "by the tokenizer, as `make_dataset` would. Received: "
            f"{'texts' if tokenizer is None else 'tokenizer'} alone."
        )
    if texts is None:
        return
    expected = "a sequence of str, one example each"
    if isinstance(texts, str) or not isinstance(
        texts, collections.abc.Sequence
    ):
        raise TypeError(
            f"`texts` must be {expected}. Received: texts of type "
            f"{type(texts).__name__}."
        )
    wrong = [t for t in texts if not isinstance(t, str)]
    if wrong:
        raise TypeError(
            f"`texts` must be {expected}. Received: an item {wrong[0]!r} "
            f"(of type {type(wrong[0]).__name__})."
        )


def _check_efficiencies(efficiencies):
    if efficiencies is None:
        return {}
    expected = (
        f"None or a dict from modes among {BATCHINGS} to a number in "
        "[0, 1] or a `tf_input.data.stats` result"
    )
    check_type("efficiencies", efficiencies, collections.abc.Mapping, expected)
    if set(efficiencies) - set(BATCHINGS):
        raise ValueError(
            f"`efficiencies` must be {expected}. "
            f"Received: efficiencies={efficiencies!r}."
        )
    out = {}
    for mode, value in efficiencies.items():
        if isinstance(value, collections.abc.Mapping):  # a `stats(...)` dict
            value = value.get("padding_efficiency")
        check_type(
            f"efficiencies[{mode!r}]",
            value,
            numbers.Real,
            "a number in [0, 1] or a `tf_input.data.stats` result",
        )
        if not 0.0 <= value <= 1.0:
            raise ValueError(
                f"`efficiencies[{mode!r}]` must be a number in [0, 1]. "
                f"Received: {value!r}."
            )
        out[mode] = float(value)
    return out


def length_report(
    lengths=None,
    *,
    texts=None,
    tokenizer=None,
    batch_size: int,
    max_length: int,
    num_buckets: int = 8,
    bucket_boundaries=None,
    efficiencies=None,
    **dataset_options,
) -> LengthReport:
    """The lengths and the measured padding efficiency of each batching.

    Takes the arguments of `plot_lengths` (but `bins`, `log` and `path`)
    and returns its numbers; `print(report)` shows them as
    `tf-input plot lengths` does.

    Example:

    >>> report = tf_input.viz.length_report(
    ...     [1, 2, 7, 8, 2, 1], batch_size=2, max_length=8,
    ...     bucket_boundaries=[2, 8])
    >>> for mode, value in report.efficiencies.items():
    ...     print(mode, round(value, 4))
    longest 0.875
    max_length 0.4375
    bucket 0.875
    pack 0.6562
    stream 0.6562
    """
    _check_examples(lengths, texts, tokenizer)
    examples = "texts" if texts is not None else "lengths"
    given = _check_efficiencies(efficiencies)
    batch_size = check_positive_int("batch_size", batch_size)
    max_length = check_positive_int("max_length", max_length)
    boundaries = check_bucket_boundaries(bucket_boundaries, max_length)
    if texts is not None:
        lengths, skipped = example_lengths(
            texts,
            tokenizer,
            add_special_tokens=check_bool(
                "add_special_tokens",
                dataset_options.get("add_special_tokens", True),
            ),
        )
    else:
        if "add_special_tokens" in dataset_options:
            raise ValueError(
                "`lengths` already count the special tokens: "
                "`add_special_tokens` applies to `texts`. Received: "
                "add_special_tokens="
                f"{dataset_options['add_special_tokens']!r} with lengths."
            )
        texts, tokenizer = probe_examples(lengths)
        lengths = check_lengths(lengths)
        skipped = int(np.sum(lengths == 0))
        lengths = lengths[lengths > 0]
        dataset_options["add_special_tokens"] = False
        # A stream joins these rows as they are: their special tokens
        # stand for the separators (see `padding_efficiencies`).
        dataset_options["separator"] = []
    if lengths.size == 0:
        raise ValueError(
            f"`{examples}` must hold at least one example with a token. "
            f"Received: {skipped:,} examples, all empty."
        )
    measured = {}
    missing = [mode for mode in BATCHINGS if mode not in given]
    if missing:
        comparison = compare_batchings(
            texts,
            tokenizer,
            batch_size=batch_size,
            max_length=max_length,
            batchings=missing,
            num_buckets=num_buckets,
            bucket_boundaries=boundaries,
            **dataset_options,
        )
        measured = comparison.efficiencies
        boundaries = comparison.boundaries or boundaries
        if "longest" in comparison.stats:
            _check_same_examples(
                lengths, comparison.stats["longest"], max_length
            )
    return LengthReport(
        lengths=lengths,
        batch_size=batch_size,
        max_length=max_length,
        efficiencies={mode: {**measured, **given}[mode] for mode in BATCHINGS},
        given=tuple(mode for mode in BATCHINGS if mode in given),
        boundaries=boundaries,
        skipped=skipped,
    )


def _check_same_examples(lengths, longest, max_length):
    """The histogram's examples are the pipeline's: the same real tokens
    as the `stats` of its `"longest"` batches."""
    want = int(np.minimum(lengths, max_length).sum())
    got = int(longest["real_tokens"])
    if want != got:
        raise RuntimeError(
            f"The length histogram counts {want:,} tokens (cut to "
            f"max_length={max_length}) but make_dataset made rows of "
            f"{got:,}: the texts were read differently. Options that drop "
            "or split examples (e.g. `shard`) do not go with `plot_lengths`."
        )
