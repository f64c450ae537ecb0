"""Counting a source's examples: what is skipped, and the epoch length.

* `example_counter`: per chunk of the source, the examples skipped as
  empty, those kept, and their tokens (`Rows.counts`);
* `count_examples`: those counts for an in-memory source, read when the
  dataset is made (an error if nothing is kept, a warning if anything is
  skipped);
* `num_batches`: the batches of an epoch, by arithmetic where the counts
  say it, else by one pass over the counting twin;
* `check_not_empty`: a source read until its first kept example.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import tensorflow as tf

from tf_input.data.steps import AUTOTUNE
from tf_input.data.steps import batch_lines
from tf_input.data.steps import count
from tf_input.data.steps import plain
from tf_input.data.steps import total


class SkippedExamplesWarning(UserWarning):
    """Examples of an in-memory source gave no token and were skipped."""


def describe(source):
    if isinstance(source, tf.data.Dataset):
        return "a tf.data.Dataset"
    if isinstance(source, (list, tuple, np.ndarray)):
        kind = type(source).__name__
        if all(isinstance(item, os.PathLike) for item in source):
            return f"the files {[os.fspath(item) for item in source]}"
        return f"a {kind} of {len(source)} examples"
    if isinstance(source, (str, os.PathLike)):
        return f"the file(s) {os.fspath(source)!r}"
    return f"the {type(source).__name__}"


def empty_message(source):
    return (
        f"`source` ({describe(source)}) has no example left after "
        "skipping the empty ones: every line (for pairs, one side at least) "
        "is blank, whitespace only, or gives no token with this tokenizer. "
        "Check the path and the file's contents."
    )


def check_not_empty(lines, plan, chunk_size, source):
    """Raises unless some example of `lines` survives tokenization.

    Reads until the first chunk that holds one, so a normal source costs
    one chunk's tokenization; an empty one is read to its end.
    """
    for chunk in batch_lines(lines, chunk_size):
        chunk = chunk if isinstance(chunk, tuple) else (chunk,)
        if int(tf.size(plan.kept(*chunk))):
            return
    raise ValueError(empty_message(source))


def example_counter(lines, plan, chunk_size):
    """A dataset of `plan.counts` of each chunk: skipped, kept, tokens."""
    return batch_lines(lines, chunk_size).map(
        plain(plan.counts), num_parallel_calls=AUTOTUNE
    )


def count_examples(counter, source):
    """Reads an in-memory source's counts (skipped, kept, tokens): an
    error if no example is kept, a warning if any is skipped (the rows
    would no longer line up with the inputs)."""
    totals = total(counter, np.zeros([3], np.int64))
    skipped, kept, _ = (int(x) for x in totals)
    if not kept:
        raise ValueError(empty_message(source))
    if skipped:
        warnings.warn(
            f"{skipped} of the {skipped + kept} examples of `source` give "
            "no token (blank, whitespace only, or nothing this tokenizer "
            "keeps) and were skipped, so the batches do not align with the "
            "inputs. Pass `skip_empty=False` to keep one row per input "
            "(e.g. for `predict`).",
            SkippedExamplesWarning,
            stacklevel=3,
        )
    return totals


def num_batches(s, totals, counted):
    """The batches of an epoch: by arithmetic where the examples' counts
    say it (one row per example, or one stream), else by one pass over
    the counting twin. `assert_cardinality` checks it as the batches are
    read."""
    # A question's context may give several rows: they are counted.
    one_row_each = s.task != "question_answering"
    if (
        totals is not None
        and one_row_each
        and s.batching in ("longest", "max_length")
    ):
        rows, per_batch = int(totals[1]), s.batch_size
    elif totals is not None and s.batching == "stream":
        rows, per_batch = int(totals[2]), s.batch_size * s.max_length
    else:
        return count(counted)
    if s.drop_remainder:
        return rows // per_batch
    return -(-rows // per_batch)
