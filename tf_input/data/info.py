"""What `make_dataset` built: the explicit record `stats` reads.

`make_dataset` registers, for the dataset it returns, a `PipelineInfo`:
the bucket boundaries and batch sizes it chose, the number of batches
(when counted), the features it emits, and the counting twin of the
pipeline (the same batches, each with the number of truncated rows), which
`stats` iterates to report truncation. `pipeline_info(ds)` returns it.

A dataset transformed afterwards (`ds.map(...)`, `ds.take(...)`) is a new
object with no record: pass the record explicitly,
`stats(ds.take(10), info=pipeline_info(ds))` (the counting twin is then
iterated as far as `max_batches` says), or `stats` reports
`truncated=None`.
"""

from __future__ import annotations

import dataclasses
import weakref

import tensorflow as tf

_REGISTRY = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class PipelineInfo:
    """What one `make_dataset` call built.

    Attributes:
        task: str, the task (`"lm"`, `"encode"`, `"seq2seq"`).
        batching: str, the batching mode.
        max_length: int.
        features: tuple of str, the feature names of each batch.
        boundaries: list of int or None, the bucket boundaries (padded
            lengths) in `"bucket"` mode.
        batch_sizes: list of int, rows per batch (one per bucket in
            `"bucket"` mode).
        num_batches: int or None, batches per epoch when counted
            (`count_batches=True`), else None.
        counting: `tf.data.Dataset` of `(features, labels, truncated)`,
            the same batches with the number of truncated rows in each.
        add_special_tokens: bool, whether the start and end tokens were
            added (`export_text_model(dataset=...)` serves the same).
        tokenizer: the tokenizer the rows came from.
        skipped: int or None, the examples skipped as empty, counted when
            the dataset was made (in-memory sources), else None.
        skipping: `tf.data.Dataset` of the number of examples skipped in
            each chunk of the source (`stats` sums it).
        separator: list of int or None, the ids between texts in
            `"stream"` mode.
        chat_counts: `tf.data.Dataset` or None (`task="chat"` only): per
            chunk of rendered rows, int64 `[2]`, the rows truncated and
            the rows dropped for being longer than `max_length`.
    """

    task: str
    batching: str
    max_length: int
    features: tuple
    boundaries: list | None
    batch_sizes: list
    num_batches: int | None
    counting: tf.data.Dataset = dataclasses.field(repr=False)
    add_special_tokens: bool = True
    tokenizer: object = dataclasses.field(default=None, repr=False)
    skipped: int | None = None
    skipping: tf.data.Dataset | None = dataclasses.field(
        default=None, repr=False
    )
    separator: list | None = None
    chat_counts: tf.data.Dataset | None = dataclasses.field(
        default=None, repr=False
    )


def register(dataset, info):
    _REGISTRY[dataset] = info
    return dataset


def pipeline_info(dataset: tf.data.Dataset) -> PipelineInfo | None:
    """The `PipelineInfo` of a dataset returned by `make_dataset`.

    None for any other dataset, including one transformed after
    `make_dataset` (keep the record of the original and pass it on).

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer()
    >>> tokenizer.adapt(["a b c", "d e"])
    >>> ds = tf_input.data.make_dataset(
    ...     ["a b c", "d e"], tokenizer, batch_size=1, max_length=8)
    >>> info = tf_input.data.pipeline_info(ds)
    >>> info.num_batches, info.features
    (2, ('token_ids', 'padding_mask'))
    >>> tf_input.data.pipeline_info(ds.take(1)) is None
    True
    """
    try:
        return _REGISTRY.get(dataset)
    except TypeError:  # not weak-referenceable: not ours
        return None
