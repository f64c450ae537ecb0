"""`make_dataset`: raw text to model-ready batches, in one `tf.data` graph.

The steps live in three modules: `rows` (one example -> one row, shared
with `export_text_model`), `batching` (rows -> batches in each mode) and
`packing` (the packer, the bucket regrouping and boundaries). This module
checks the arguments and wires them together.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
import tensorflow as tf

from tf_input._validation import check_one_of
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_int
from tf_input.data import batching as batching_module
from tf_input.data.efficiency import BATCHINGS
from tf_input.data.efficiency import check_bucket_boundaries
from tf_input.data.efficiency import choose_boundaries
from tf_input.data.info import PipelineInfo
from tf_input.data.info import register
from tf_input.data.rows import TASKS
from tf_input.data.rows import TRUNCATIONS
from tf_input.data.rows import Rows
from tf_input.data.rows import check_tokenizer
from tf_input.data.sources import as_dataset

AUTOTUNE = tf.data.AUTOTUNE
DEFAULT_SHUFFLE_BUFFER = 10_000
DATA_SERVICE_MODES = ("parallel_epochs", "distributed_epoch")


def _check_bool(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(
            f"`{name}` must be True or False"
            + (" or None" if allow_none else "")
            + f". Received: {name}={value!r}."
        )
    return bool(value)


def _check_shuffle(shuffle):
    if shuffle is None or shuffle is False:
        return 0
    if shuffle is True:
        return DEFAULT_SHUFFLE_BUFFER
    if isinstance(shuffle, numbers.Integral) and shuffle >= 0:
        return int(shuffle)
    raise ValueError(
        "`shuffle` must be None, a bool, or a buffer size (int >= 0, in "
        f"examples). Received: shuffle={shuffle!r}."
    )


def _check_shard(shard):
    if shard is None:
        return None
    if (
        isinstance(shard, (tuple, list))
        and len(shard) == 2
        and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool)
            for x in shard
        )
        and 0 <= shard[1] < shard[0]
    ):
        return int(shard[0]), int(shard[1])
    raise ValueError(
        "`shard` must be None or `(num_shards, index)` with "
        f"0 <= index < num_shards. Received: shard={shard!r}."
    )


def make_dataset(
    source,
    tokenizer,
    *,
    task="lm",
    batch_size,
    max_length,
    batching="longest",
    target_tokenizer=None,
    add_special_tokens=True,
    truncation="longest_first",
    shuffle=None,
    seed=None,
    drop_remainder=None,
    cache=False,
    deterministic=None,
    num_buckets=8,
    bucket_boundaries=None,
    tokens_per_batch=None,
    sample_size=10_000,
    chunk_size=None,
    data_service=None,
    data_service_mode="parallel_epochs",
    shard=None,
    features=None,
    count_batches=None,
    encoding="utf-8",
    errors="strict",
) -> tf.data.Dataset:
    """Turns raw text into padded, bucketed or packed batches for `fit`.

    Lines are read, tokenized in the graph a chunk of `chunk_size` lines at
    a time, cut to `max_length` (keeping room for the special tokens),
    wrapped in the tokenizer's start/end tokens (`bos`/`eos`, or
    `cls`/`sep`), and batched. All per-line work is vectorised over the
    chunk; nothing runs once per line.

    Empty examples (no token after tokenization, e.g. blank or
    whitespace-only lines; for pairs, either side empty) are skipped; a
    source with no example left is an error.
    Truncation is counted: see `tf_input.data.stats(...)["truncated"]`.
    Padding is 0 in ids and labels; use the `padding_mask` (or
    `ignore_class=0` in the loss) to leave padding out.

    Batching modes:

    * `"longest"`: each batch padded to its longest row; the last batch
      may be smaller.
    * `"max_length"`: every tensor `[batch_size, max_length]`, static in
      `element_spec`. The last partial batch is filled with all-padding rows
      (mask False, labels 0) unless `drop_remainder=True`.
    * `"bucket"`: rows grouped by length; each batch padded to its bucket's
      boundary, so there are at most `num_buckets` shapes. Boundaries are
      chosen from the first `sample_size` examples to minimise padding, or
      given as `bucket_boundaries`; the last boundary is always
      `max_length`, so a row longer than every sampled row goes to that last
      bucket (rows longer than `max_length` are truncated and counted).
      At the end of an epoch, the rows left in a bucket (too few for a
      batch) move up to the next bucket, padded to its longer boundary, so
      that only the last bucket can end with a partial batch; that one is
      filled with all-padding rows, as in `"max_length"`
      (`drop_remainder=True` drops every bucket's partial batch instead).
    * `"pack"`: whole examples packed into rows of exactly `max_length`
      (fully static shape), never truncated and never cut at a row end:
      only an example longer than `max_length` is split, into pieces of
      `max_length` tokens and a shorter last piece, each its own segment.
      Rows are filled largest example first, close to first-fit
      decreasing, within each chunk of `chunk_size` lines (so rows, not
      examples, follow the chunk order). Adds `segment_ids` (1, 2, ... per
      example in each row, 0 = padding) and `positions` (restarting at 0
      in each segment). `lm` labels never cross a segment. The last
      partial batch is filled with all-padding rows (segment 0), as in
      `"max_length"`, or dropped with `drop_remainder=True`. See
      `segment_attention_mask`.

    Outputs `(features, labels)` (for `encode` without labels: `features`):

    * `lm`: `token_ids`, `padding_mask` (+ `segment_ids`, `positions` when
      packing); labels `[B, S]`, the next token of the same segment, 0 at a
      segment's last token.
    * `encode`: the same features; labels only if `source` gives
      `(text, label)` pairs (not with `"pack"`).
    * `seq2seq`: `encoder_token_ids`, `encoder_padding_mask`,
      `decoder_token_ids` (`<sos>` + target), `decoder_padding_mask`;
      labels are target + `<eos>`. The decoder's start and end tokens are
      always added; `add_special_tokens` is about the encoder side.

    Args:
        source: list of str; list of `(source, target)` pairs or a tuple
            `(sources, targets)` of two lists; a file path or glob (`str`),
            or a list of `pathlib.Path` (one example per line, files
            interleaved); or a `tf.data.Dataset` of scalar strings or pairs.
        tokenizer: a `tf_input` tokenizer built with
            `add_special_tokens=False`.
        task: str, one of `"lm"`, `"seq2seq"`, `"encode"`. Defaults to
            `"lm"`.
        batch_size: int. Rows per batch (bucket mode: see
            `tokens_per_batch`).
        max_length: int. The longest row, special tokens included (the
            packed row length in `"pack"` mode).
        batching: str, one of `"longest"`, `"max_length"`, `"bucket"`,
            `"pack"`. Defaults to `"longest"`.
        target_tokenizer: tokenizer of the targets for `seq2seq`. Defaults
            to `tokenizer`.
        add_special_tokens: bool. Add the start/end tokens (to the encoder
            side for `seq2seq`). Defaults to `True`.
        shuffle: None, bool or int. Shuffle buffer in examples (`True`:
            10000). Shuffling is done on tokenized chunks: the order of
            chunks is shuffled with a buffer of `shuffle / chunk_size`
            chunks and the rows of each chunk (packed rows, with
            `"pack"`) are permuted, anew each epoch. Defaults to `None`
            (file order).
        seed: int or None. Seed of the shuffle. Defaults to `None`.
        drop_remainder: bool or None. Drop the last partial batch (of each
            bucket) instead of emitting or filling it. Defaults to `None`
            (False).
        cache: bool or str. Cache the tokenized chunks (with `"pack"`:
            packed; with `"max_length"` and `"longest"`: already padded to
            `max_length`) in memory (`True`) or in files with this prefix.
            Defaults to `False`.
        deterministic: bool or None. Keep element order under parallel
            maps; `None` follows `tf.data.Options`. Defaults to `None`.
        num_buckets: int. Most buckets in `"bucket"` mode. Defaults to `8`.
        bucket_boundaries: list of int or None. Explicit boundaries (the
            padded lengths); `max_length` is appended if missing.
        tokens_per_batch: int or None. In `"bucket"` mode, use
            `max(1, tokens_per_batch // boundary)` rows per batch instead of
            `batch_size`. Defaults to `None`.
        sample_size: int. Examples read to choose bucket boundaries.
            Defaults to `10000`.
        chunk_size: int or None. Lines tokenized (and, except in
            `"bucket"` mode, padded to `max_length`) per call. Defaults to
            `max(4 * batch_size, min(2048, 2**20 // max_length))`, so that
            a padded chunk holds about a million positions at most.
        data_service: str or None. Address of a tf.data service dispatcher
            (e.g. `"grpc://host:5050"`): its workers then read, tokenize
            (and pack) the chunks, in `data_service_mode`, and this process
            cuts them into batches. Defaults to `None`.
        data_service_mode: str. `"parallel_epochs"`: every worker gives a
            whole epoch (each example once per worker); or
            `"distributed_epoch"`: the workers share one epoch, each
            example arriving once (the source must be splittable: files or
            an in-memory list). See the README's "Scale-out". Defaults to
            `"parallel_epochs"`.
        shard: None or `(num_shards, index)`. Keep only every
            `num_shards`-th example, starting at `index`, before
            tokenization: with one process per worker (e.g.
            `MultiWorkerMirroredStrategy`), worker `index` of `num_shards`
            then reads a share no other worker reads. The dataset is marked
            so that `tf.distribute` does not shard it again. Defaults to
            `None`.
        features: None, a list of feature names, or a functional Keras
            model. The features to emit: with a model, exactly the inputs
            it declares, by name (a name the task and batching do not
            produce is an error), and the model is checked against the
            tokenizer (it must not mask a real token as padding). Feeding a
            model exactly its inputs also avoids keras-team/keras#23258
            (see the README). Defaults to `None` (every feature).
        count_batches: bool or None. Count the batches once when the
            dataset is made (one pass over the source), so that its
            `cardinality()` is known and `fit` shows the epoch length.
            `None`: True for in-memory sources (lists, tuples, arrays),
            False for files, datasets and with `data_service`. Defaults to
            `None`.
        encoding: str, the encoding of file sources: `"utf-8"` (a UTF-8
            byte-order mark at the start of a file is dropped; so
            `"utf-8-sig"` is the same) or `"latin-1"`, decoded in the
            graph. A file with a UTF-16 or UTF-32 byte-order mark (or that
            looks like UTF-16/32 without one) is a `ValueError` naming it.
            Line ends are universal newlines (`\\n`, `\\r\\n`, a lone
            `\\r`). Defaults to `"utf-8"`.
        errors: str, `"strict"` or `"replace"`, for file sources. Strict:
            a line that is not valid UTF-8 stops the pipeline with an
            `InvalidArgumentError` naming the file and the line number;
            `"replace"` reads undecodable bytes as U+FFFD instead. Texts
            given directly (lists, datasets) are never checked: the
            tokenizers replace invalid UTF-8. Defaults to `"strict"`.

    Returns:
        A `tf.data.Dataset` of `(features, labels)` (the chunks are
        tokenized ahead, in parallel; no `prefetch` after the batches,
        whose hand-over between threads costs more than cutting a batch:
        add one if a step of yours goes on top), with
        tf.data's default static graph rewrites off in its options
        (`experimental_optimization.apply_default_optimizations=False`):
        they change nothing here and cost every new iterator (every epoch)
        a rebuild of the whole graph. Steps added on top of it are then
        not rewritten either (e.g. a `map` without `num_parallel_calls` is
        not parallelised); `ds.with_options(...)` turns them back on.

    Raises:
        ValueError: if no example is left after skipping the empty ones
            (checked when the dataset is made).

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer()
    >>> tokenizer.adapt(["the cat sat", "a dog"])
    >>> ds = tf_input.data.make_dataset(
    ...     ["the cat sat", "", "a dog"], tokenizer, batch_size=2,
    ...     max_length=8)
    >>> features, labels = next(iter(ds))
    >>> features["token_ids"].numpy().tolist()
    [[1, 4, 5, 6, 2], [1, 7, 8, 2, 0]]
    >>> labels.numpy().tolist()
    [[4, 5, 6, 2, 0], [7, 8, 2, 0, 0]]
    """
    task = check_one_of("task", task, TASKS)
    batching = check_one_of("batching", batching, BATCHINGS)
    batch_size = check_positive_int("batch_size", batch_size)
    max_length = check_positive_int("max_length", max_length)
    add_special_tokens = _check_bool("add_special_tokens", add_special_tokens)
    truncation = check_one_of("truncation", truncation, TRUNCATIONS)
    drop_remainder = bool(
        _check_bool("drop_remainder", drop_remainder, allow_none=True)
    )
    deterministic = _check_bool("deterministic", deterministic, True)
    shuffle = _check_shuffle(shuffle)
    seed = check_optional_int("seed", seed)
    num_buckets = check_positive_int("num_buckets", num_buckets)
    tokens_per_batch = check_optional_int(
        "tokens_per_batch", tokens_per_batch, 1
    )
    sample_size = check_positive_int("sample_size", sample_size)
    chunk_size = check_optional_int("chunk_size", chunk_size, 1)
    # Chunks are padded whole to max_length: at most ~1M positions each.
    chunk_size = chunk_size or max(
        4 * batch_size, min(2048, 2**20 // max_length)
    )
    bucket_boundaries = check_bucket_boundaries(bucket_boundaries, max_length)
    if not isinstance(cache, (bool, str)):
        raise ValueError(
            "`cache` must be a bool or a file prefix (str). "
            f"Received: cache={cache!r}."
        )
    if data_service is not None and not isinstance(data_service, str):
        raise ValueError(
            "`data_service` must be None or a dispatcher address such as "
            f"'grpc://localhost:5050'. Received: data_service={data_service!r}."
        )
    data_service_mode = check_one_of(
        "data_service_mode", data_service_mode, DATA_SERVICE_MODES
    )
    shard = _check_shard(shard)
    if task == "seq2seq" and batching == "pack":
        raise ValueError(
            '`batching="pack"` is for `task="lm"` and `"encode"`: packed '
            "sources and targets would have to be cut at the same places. "
            'Use batching="bucket" for seq2seq. Received: batching='
            f"{batching!r} with task={task!r}."
        )
    if target_tokenizer is not None and task != "seq2seq":
        raise ValueError(
            '`target_tokenizer` is only used with task="seq2seq". '
            f"Received: target_tokenizer with task={task!r}."
        )
    check_tokenizer("tokenizer", tokenizer)
    if tokenizer.add_special_tokens:
        raise ValueError(
            "`tokenizer` must be built with `add_special_tokens=False`: the "
            "pipeline adds the start and end tokens itself, after "
            "truncation, so that they are never cut off. Use "
            "`make_dataset(..., add_special_tokens=True)` instead. "
            "Received: tokenizer with add_special_tokens=True."
        )

    lines, _ = as_dataset(source, deterministic, encoding, errors)
    if shard is not None:
        lines = lines.shard(*shard)
    columns = _columns(lines.element_spec, task, batching)
    plan = Rows(
        task=task,
        batching=batching,
        max_length=max_length,
        tokenizer=tokenizer,
        target_tokenizer=target_tokenizer,
        add_special_tokens=add_special_tokens,
        columns=columns,
        truncation=truncation,
    )
    wanted = plan.check_features(features)
    if count_batches is None:
        # In memory, so one counting pass is cheap next to training.
        count_batches = data_service is None and isinstance(
            source, (list, tuple, np.ndarray)
        )
    count_batches = _check_bool("count_batches", count_batches)
    if count_batches and data_service is not None:
        raise ValueError(
            "`count_batches=True` counts the batches of this process's "
            "pipeline, but with `data_service` the workers produce them "
            "(each a whole epoch). Received: count_batches=True with "
            f"data_service={data_service!r}. Pass count_batches=False."
        )
    if not count_batches:
        _check_not_empty(lines, plan, chunk_size, source)

    batch_sizes = [batch_size]
    boundaries = None
    if batching == "bucket":
        boundaries = bucket_boundaries
        if boundaries is None:
            boundaries = choose_boundaries(
                batching_module.sample_lengths(
                    lines, plan, sample_size, chunk_size
                ),
                num_buckets,
                max_length,
            )
        if tokens_per_batch is not None:
            batch_sizes = [max(1, tokens_per_batch // b) for b in boundaries]
        else:
            batch_sizes = [batch_size] * len(boundaries)

    # 1. Lines -> chunks of tokenized rows (the only tokenizer call), then
    # for "pack", whole examples into rows of max_length, chunk by chunk
    # (before the cache, and before the shuffle, which then moves packed
    # rows). These steps stay `pending` so that, with nothing in between,
    # they run in the same map as the padding (see `batching.batches`).
    pending = [plan.tokenize] + ([plan.pack] if batching == "pack" else [])
    chunks = lines.batch(chunk_size)
    if (
        cache is not False
        or shuffle
        or batching == "bucket"
        or data_service is not None
    ):
        chunks = batching_module.apply(chunks, pending, deterministic)
        pending = []
    if cache is not False:
        chunks = chunks.cache("" if cache is True else cache)
    if shuffle:
        chunks = batching_module.shuffle_chunks(
            chunks, max(1, shuffle // chunk_size), seed
        )
    if data_service is not None:
        # The workers read, tokenize (and pack) chunks; the batches are cut
        # here. The end-of-epoch steps (the fill rows of the last batch,
        # the bucket flush) must see the whole epoch: on the workers,
        # under "distributed_epoch", each would see only its share, and
        # the rows of every other worker's last partial batch were lost
        # (measured: 8 of 600 lines with two workers).
        chunks = chunks.apply(
            tf.data.experimental.service.distribute(
                processing_mode=data_service_mode, service=data_service
            )
        )

    # 2. The batches: only the wanted features; no labels for "encode"
    # without labels.
    def strip(features, labels):
        if wanted is not None:
            features = {name: features[name] for name in wanted}
        if labels is None:
            return features
        return features, labels

    dataset, counted = batching_module.batches(
        chunks,
        pending,
        plan,
        batch_size=batch_size,
        drop_remainder=drop_remainder,
        deterministic=deterministic,
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        strip=strip,
    )
    num_batches = None
    if count_batches:
        # Counted once, so that `fit` knows the epoch length (no "Unknown"
        # progress bar, no "ran out of data" warning).
        num_batches = int(counted.reduce(np.int64(0), lambda n, *_: n + 1))
        if num_batches == 0:
            raise ValueError(_empty_message(source))
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(num_batches)
        )
    # No `prefetch` at the end: the chunk maps before it run ahead on
    # their own threads already, and the step that hands out batches
    # (`rebatch`, a slice, or the cut to the longest row) is cheaper than
    # a prefetch's hand-over between threads, ~20 us a batch on 2 cores
    # (CPU per element, 4,096 batches: 25 us handed out directly, 48 us
    # through a prefetch); tinyshakespeare makes 1,024 batches an epoch.
    dataset = dataset.with_options(_options(shard))
    # `stats` reads the truncation count from the counting twin, so that
    # the batches fed to `fit` carry nothing but features and labels.
    counted = counted.prefetch(AUTOTUNE).with_options(_options(shard))
    info = PipelineInfo(
        task=task,
        batching=batching,
        max_length=max_length,
        features=tuple(wanted or plan.feature_names()),
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        num_batches=num_batches,
        counting=counted,
        add_special_tokens=add_special_tokens,
        tokenizer=tokenizer,
    )
    return register(dataset, info)


def _options(shard):
    """The `tf.data.Options` of the returned datasets.

    tf.data's default static rewrites (map parallelisation, prefetch
    injection, no-op elimination, ...) are off: they change nothing wanted
    in this pipeline, whose chunk maps are parallel already (an injected
    `prefetch` after the batches would cost ~20 us a batch), but they
    rewrite (serialise, optimise and rebuild) the
    whole dataset graph on every new iterator, i.e. at the start of every
    epoch of `fit`. Measured on 100 lines of tinyshakespeare (the
    start-up alone): the first batch 54 -> 41 ms in `"max_length"` mode,
    128 -> 92 ms in `"bucket"`, 117 -> 90 ms in `"pack"`. Only the options
    of these datasets change, nothing global; transformations a user adds
    on top are not rewritten either unless they turn the rewrites back on
    (`ds.with_options(options)` with
    `options.experimental_optimization.apply_default_optimizations =
    True`).
    """
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    if shard is not None:  # sharded already: tf.distribute must not again
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF
        )
    return options


def _columns(spec, task, batching):
    """What one element holds (`rows.COLUMNS`), checked against the task."""
    if not isinstance(spec, tuple):
        if task == "seq2seq":
            raise ValueError(
                '`task="seq2seq"` needs (source, target) pairs. Received: '
                "a source of single texts."
            )
        return "text"
    dtypes = [s.dtype for s in spec]
    strings = [d == tf.string for d in dtypes]
    if task == "lm":
        raise ValueError(
            '`task="lm"` takes texts, not pairs. Use task="seq2seq" for '
            '(source, target) pairs or task="encode" for (text, label), '
            "(text_a, text_b) or (text_a, text_b, label). Received: a "
            f"source of {len(spec)}-tuples with task={task!r}."
        )
    if task == "seq2seq":
        if strings != [True, True]:
            raise ValueError(
                '`task="seq2seq"` needs (source, target) pairs of strings. '
                f"Received: elements of dtypes {[d.name for d in dtypes]}."
            )
        return "seq2seq"
    # encode
    if strings == [True, False]:
        columns = "text+label"
    elif strings == [True, True]:
        columns = "pair"
    elif strings == [True, True, False]:
        columns = "pair+label"
    else:
        raise ValueError(
            '`task="encode"` takes texts, (text, label), (text_a, text_b) '
            "or (text_a, text_b, label), with numeric labels. Received: "
            f"elements of dtypes {[d.name for d in dtypes]}."
        )
    if batching == "pack" and columns != "text":
        raise ValueError(
            "Packed rows mix several examples, so per-example labels and "
            'sentence pairs cannot follow them. Received: batching="pack" '
            f"with a source of {'pairs' if 'pair' in columns else 'labels'}."
        )
    return columns


def _describe(source):
    if isinstance(source, tf.data.Dataset):
        return "a tf.data.Dataset"
    if isinstance(source, (list, tuple, np.ndarray)):
        kind = type(source).__name__
        if all(isinstance(item, os.PathLike) for item in source):
            return f"the files {[os.fspath(item) for item in source]}"
        return f"a {kind} of {len(source)} examples"
    return f"the file(s) {os.fspath(source)!r}"


def _empty_message(source):
    return (
        f"`source` ({_describe(source)}) has no example left after "
        "skipping the empty ones: every line (for pairs, one side at least) "
        "is blank, whitespace only, or gives no token with this tokenizer. "
        "Check the path and the file's contents."
    )


def _check_not_empty(lines, plan, chunk_size, source):
    """Raises unless some example of `lines` survives tokenization.

    Reads until the first chunk that holds one, so a normal source costs
    one chunk's tokenization; an empty one is read to its end.
    """
    for chunk in lines.batch(chunk_size):
        chunk = chunk if isinstance(chunk, tuple) else (chunk,)
        if int(tf.size(plan.kept(*chunk))):
            return
    raise ValueError(_empty_message(source))
