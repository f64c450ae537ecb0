"""`make_dataset`: raw text to model-ready batches, in one `tf.data` graph.

The steps live in their own modules: `arguments` (the checks), `rows` (one
example -> one row, shared with `export_text_model`), `targets` (labels
and sample weights), `counting` (skipped examples, the epoch length),
`batching` (rows -> batches in each mode), `packing` and `bucketing`. This
module wires them together; `make_dataset`'s length is its docstring, the
user's reference, and the keyword arguments it hands to `check_arguments`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input.data import batching as batching_module
from tf_input.data import counting
from tf_input.data.arguments import check_arguments
from tf_input.data.arguments import check_columns
from tf_input.data.arguments import check_tokenizers
from tf_input.data.bucketing import choose_boundaries
from tf_input.data.bucketing import sample_lengths
from tf_input.data.info import PipelineInfo
from tf_input.data.info import register
from tf_input.data.masking import masking_for
from tf_input.data.rows import Rows
from tf_input.data.sources import as_dataset
from tf_input.data.steps import apply
from tf_input.data.steps import batch_lines
from tf_input.data.steps import dataset_options
from tf_input.data.steps import plain
from tf_input.data.steps import shuffle_chunks

AUTOTUNE = tf.data.AUTOTUNE


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
    label_vocabulary=None,
    label_all_tokens=False,
    stride=None,
    mask_selection_rate=None,
    mask_token_rate=None,
    random_token_rate=None,
    max_selections=None,
    whole_word_masking=None,
    separator=None,
    skip_empty=True,
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
    columns=None,
    format=None,
    unroll_turns=None,
    chat_truncation=None,
    chat_template_kwargs=None,
) -> tf.data.Dataset:
    """Turns raw text into batches for `fit`: features, labels, weights.

    Lines are read, tokenized in the graph a chunk of `chunk_size` lines at
    a time, cut to `max_length` (keeping room for the special tokens),
    wrapped in the tokenizer's start/end tokens (`bos`/`eos`, or
    `cls`/`sep`), and batched. All per-line work is vectorised over the
    chunk; nothing runs once per line.

    Every batch with targets is Keras's `(features, labels,
    sample_weight)`, which `fit` and `evaluate` apply as they are: the
    weight is 1 exactly on the positions (or rows) that are real targets
    and 0 on everything else: padding, an example's last token (it has no
    next token), the all-padding rows that fill a last partial batch. The
    label under a weight of 0 is 0, but only the weight marks it: id 0 is
    a real token in many vocabularies (`"!"` in GPT-2, Qwen, Llama 3), so
    neither the padding mask nor `ignore_class=0` can replace the weights.
    Compile with `weighted_metrics=[...]` for metrics over the targets, and
    a loss with `reduction="mean_with_sample_weight"` for the mean over
    the targets (Keras's default divides by every position).

    Empty examples (no token after tokenization, e.g. blank or
    whitespace-only lines; for pairs, either side empty) are skipped
    (`skip_empty=True`, for training); skipping any from an in-memory
    source warns (`SkippedExamplesWarning`), and `stats(ds)["skipped"]`
    counts them for every source. With `skip_empty=False` (for `predict`)
    every input gives one row, in input order, an empty text the row that
    `export_text_model` serves for it. Truncation is counted:
    `stats(ds)["truncated"]`.

    Batching modes:

    * `"longest"`: each batch padded to its longest row; the last batch
      may be smaller.
    * `"max_length"`: every tensor `[batch_size, max_length]`, static in
      `element_spec`. The last partial batch is filled with all-padding rows
      (mask 0, weights 0) unless `drop_remainder=True` (or
      `skip_empty=False`, which leaves it partial: one row per input).
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
      `max_length` tokens and a shorter last piece, each its own example.
      Rows are filled largest example first, close to first-fit
      decreasing, within each chunk of `chunk_size` lines (so rows, not
      examples, follow the chunk order). Adds `example_ids` (1, 2, ... per
      example in each row, 0 = padding) and `positions` (restarting at 0
      in each example). `lm` targets never cross an example. The model
      must keep the examples apart (`segment_attention_mask(example_ids)`
      in attention, `positions` for the position encoding): a model given
      as `features=` that takes no `example_ids` is an error. The last
      partial batch is filled with all-padding rows, as in
      `"max_length"`, or dropped with `drop_remainder=True`.
    * `"stream"` (`task="lm"`): the texts joined into one stream, each
      followed by `separator`, and cut into rows of exactly `max_length`
      (Hugging Face's `group_texts`), for a model with no notion of
      example boundaries (keras-hub's GPT-2, Llama, Qwen, Gemma
      backbones). Labels are the next token of the stream everywhere,
      across texts and rows; only the stream's last token has weight 0.
      Nothing is truncated, lost or repeated. The last partial row is
      filled with padding and the last batch with all-padding rows
      (weights 0), or dropped with `drop_remainder=True` unless whole.

    Outputs:

    * `lm`: features `token_ids`, `padding_mask` (+ `example_ids`,
      `positions` when packing); labels `[B, S]`, the next token of the
      same example (of the stream with `"stream"`); weights `[B, S]`.
    * `encode`: features `token_ids`, `padding_mask`, `segment_ids` (token
      types: 1 on the second text of a pair). With `(text, label)` or
      `(text_a, text_b, label)` examples (not with `"pack"`): labels `[B]`
      and weights `[B]`, 1 on real rows, 0 on fill rows. String labels
      need `label_vocabulary`. Without labels: `features` alone.
    * `token_classification`: `(words, labels)` sentences, the words
      pre-split (as `read_conll` gives them), one label per word. Each
      word is tokenized on its own (Hugging Face's
      `is_split_into_words=True`); features as `encode`; labels `[B, S]`,
      the word's label on its first token, with weight 1 there and 0 on
      the word's other tokens, on special tokens and on padding
      (`tokenize_and_align_labels` of Hugging Face's examples).
      `label_all_tokens=True` puts the label (its `I-` form for a `B-`
      label) on every token of the word, each with weight 1. Or `(text,
      [(start, end, label), ...])` texts with character spans: each token
      tagged `B-label` / `I-label` / `O` by its character offsets (the
      first token overlapping a span is `B-`), every token a target;
      `label_vocabulary` names the tags. Not with `"pack"` or
      `"stream"`.
    * `chat`: conversations (lists of `{"role", "content", ...}`
      messages, `{"messages": [...]}` records, or JSONL files of such
      records) rendered by the tokenizer's chat template (see
      `Tokenizer.apply_chat_template`); features as `lm`; labels the next
      tokens, weight 1 exactly where the label is a token of an assistant
      turn: what rendering the conversation up to and including that turn
      adds after it rendered up to the turn's prompt
      (`add_generation_prompt=True`), its end-of-turn tokens included.
      One row per conversation when the template is prefix-stable for it
      (each turn renders the same once later messages follow), else an
      error: pass `unroll_turns=True` for one row per assistant turn (the
      conversation up to it, only that turn weighted; e.g. Qwen 3, which
      drops the reasoning of earlier turns). `"longest"`, `"max_length"`,
      `"bucket"` (the bucket arguments as for the other tasks; boundaries
      chosen on the first `sample_size` rendered rows), `"pack"` or
      `"stream"` (conversations joined as rendered, no separator added);
      a conversation longer than `max_length` is cut
      from the end (`chat_truncation="end"`) or left out (`"drop"`),
      counted by `stats(ds)["truncated"]` / `["dropped"]` (not with
      `"stream"`, which cuts nothing).
    * `mlm` (masked language modelling, BERT's; texts, or `(text_a,
      text_b)` sentence pairs as `encode` makes them, not packed; not
      with `"stream"`): features as `encode` (+ `example_ids`,
      `positions` when packing, as RoBERTa packs), `token_ids` masked,
      both texts of a pair alike. Of each
      example's selectable tokens (not padding, not a special token of
      the tokenizer), `ceil(mask_selection_rate * count)` are chosen at
      random (at most `max_selections`), keras-hub's
      `MaskedLMMaskGenerator` rule; of those, `mask_token_rate` become the
      mask token, `random_token_rate` a random token (uniform over the
      vocabulary without its special tokens; keras-hub and Hugging Face
      draw from all ids) and the rest stay. Labels `[B, S]` are the
      original ids at the chosen positions, 0 elsewhere; weights 1 exactly
      there. `whole_word_masking=True` chooses whole words of the
      tokenizer's pre-tokenization (the tokens sharing a word id of
      `tokenize_with_offsets`; then `max_selections` counts words, as in
      TF Text). Each token's draws are a hash of `(seed, epoch, its
      example's number in the source, its position in the example)`, so
      the masks do not depend on `chunk_size`, the batching mode, packing
      or parallelism, and each new iterator of the dataset (each epoch of
      `fit`) masks anew: with a `seed`, the same masks epoch by epoch in
      every run.
    * `seq2seq`: `encoder_token_ids`, `encoder_padding_mask`,
      `decoder_token_ids` (`<sos>` + target), `decoder_padding_mask`;
      labels are target + `<eos>`, weights 1 on each of them. The
      decoder's start and end tokens are always added;
      `add_special_tokens` is about the encoder side.

    Args:
        source: list of str; list of `(source, target)` pairs or a tuple
            `(sources, targets)` of two lists; a file path or glob (`str`),
            or a list of `pathlib.Path` (one example per line, files
            interleaved); or a `tf.data.Dataset` of scalar strings or pairs.
            For `token_classification`: a list of `(words, labels)` pairs
            of lists, or a dataset of `(words, labels)` 1-D tensors; or a
            list of `(text, [(start, end, label), ...])`, or a dataset of
            `(text, starts, ends, labels)`, the spans' columns 1-D.
            Records, with `columns=`: JSONL (`.jsonl`, `.json`), CSV
            (`.csv`), TSV (`.tsv`), Parquet (`.parquet`, the `parquet`
            extra) or TFRecord files of `tf.train.Example`s (`.tfrecord`,
            `.tfrecords`), a path or glob as for text files; a
            `tf.data.Dataset` of dicts (the TFDS convention); a Hugging
            Face `datasets.Dataset` or `IterableDataset` (the `datasets`
            extra). Streamed: memory is bounded by a record (a row group
            for Parquet), not by the file.
        tokenizer: a `tf_input` tokenizer built with
            `add_special_tokens=False`.
        task: str, one of `"lm"`, `"seq2seq"`, `"encode"`,
            `"token_classification"`, `"question_answering"`, `"mlm"`,
            `"chat"`.
            Defaults to `"lm"`.
        batch_size: int. Rows per batch (bucket mode: see
            `tokens_per_batch`).
        max_length: int. The longest row, special tokens included (the
            row length in `"pack"` and `"stream"` modes).
        batching: str, one of `"longest"`, `"max_length"`, `"bucket"`,
            `"pack"`, `"stream"`. Defaults to `"longest"`.
        target_tokenizer: tokenizer of the targets for `seq2seq`. Defaults
            to `tokenizer`.
        add_special_tokens: bool. Add the start/end tokens (to the encoder
            side for `seq2seq`; not with `"stream"`, which puts
            `separator` between texts instead). Defaults to `True`.
        truncation: str, how a sentence pair is cut to `max_length`:
            `"longest_first"`, `"only_first"` or `"only_second"`, as in
            Hugging Face. Defaults to `"longest_first"`.
        label_vocabulary: list or dict, or None. The names of string
            labels (`task="encode"`): a list (label `i` gets id `i`) or a
            dict name -> id. A label not in it stops the pipeline, naming
            it. Without it, an element of two strings is a sentence pair.
            Also the word labels of `token_classification`. Defaults to
            `None`.
        label_all_tokens: bool. `token_classification`: every token of a
            word is a target, not only the first (a `B-X` label becomes
            `I-X` after the first token when `label_vocabulary` names
            `I-X`). Defaults to `False`.
        mask_selection_rate: float in (0, 1], `task="mlm"`: the share
            of each example's selectable tokens (words) chosen. Defaults
            to `0.15`.
        mask_token_rate: float in [0, 1], `task="mlm"`: the share of the
            chosen tokens replaced by the mask token (role `mask`).
            Defaults to `0.8`.
        random_token_rate: float in [0, 1], `task="mlm"`: the share
            replaced by a random token (at most `1 - mask_token_rate`).
            Defaults to `0.1`.
        max_selections: int or None, `task="mlm"`: most tokens (words)
            chosen per example. Defaults to `None` (no cap).
        whole_word_masking: bool, `task="mlm"`: choose whole words.
            Defaults to `False`.
        separator: None, int, str or list of int. With `"stream"`, the
            token(s) after each text: an id, a token of the vocabulary, a
            list of ids (`[]`: nothing). Defaults to `None`: the
            tokenizer's end token (role `eos`, else `sep`) after each
            text; else its start token (`bos`, else `cls`) before each;
            else nothing.
        skip_empty: bool. Skip examples that give no token (for
            training). `False` keeps one row per input, in input order
            (for `predict`; `"longest"` and `"max_length"` only, with no
            shuffle). Defaults to `True`.
        shuffle: None, bool or int. Shuffle buffer in examples (`True`:
            10000). Shuffling is done on tokenized chunks: the order of
            chunks is shuffled with a buffer of `shuffle / chunk_size`
            chunks and the rows of each chunk (packed rows, with
            `"pack"`) are permuted, anew each epoch. Defaults to `None`
            (file order).
        seed: int or None. Seed of the shuffle and of the masks
            (`task="mlm"`; None: new masks in every run). Defaults to
            `None`.
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
        sample_size: int. Examples (for `"chat"`, rendered rows) read to
            choose bucket boundaries. Defaults to `10000`.
        chunk_size: int or None. Lines tokenized (and, except in
            `"bucket"` mode, padded to `max_length`) per call. Defaults to
            `max(4 * batch_size, min(2048, 2**20 // max_length))`, so that
            a padded chunk holds about a million positions at most.
        data_service: str or None. Address of a tf.data service dispatcher
            (e.g. `"grpc://host:5050"`): its workers then read, tokenize
            (and pack) the chunks, in `data_service_mode`, and this process
            cuts them into batches. With `task="chat"`, a list of
            conversations only: they are rendered here first, and the rows
            go to the workers with the graph. Defaults to `None`.
        data_service_mode: str. `"parallel_epochs"`: every worker gives a
            whole epoch (each example once per worker); or
            `"distributed_epoch"`: the workers share one epoch, each
            example arriving once (the source must be splittable: files or
            an in-memory list). See the scale-out docs. Defaults to
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
            tokenizer (it must not mask a real token as padding) and, with
            `"pack"`, against packing (it must take `example_ids`).
            Defaults to `None` (every feature).
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
        columns: None, str or tuple of str. The fields of each record an
            example is made of, in the order the task takes them:
            `"text"`, `("text", "label")`, `("text_a", "text_b",
            "label")`, `("source", "target")`, `("tokens", "ner_tags")`,
            `("question", "context", "answer_start", "answer_text")`. A
            dotted name goes into nested records (`"meta.text"`). Each
            column's type (text, integer, number, or a list of these)
            comes from the first 100 records; a missing column or a value
            of another type is an error naming the file and the record.
            Required for record sources, refused for the others. Defaults
            to `None`.
        format: None or str, the format of file sources: `"text"` (one
            example per line), `"jsonl"`, `"csv"`, `"tsv"`, `"parquet"`
            or `"tfrecord"`. Defaults to `None`: from the extension (text
            for any extension not listed under `source`).
        unroll_turns: bool or None. `task="chat"`: one row per assistant
            turn instead of one per conversation. Defaults to `None`
            (False).
        chat_truncation: str or None. `task="chat"`: `"end"` (cut a
            conversation longer than `max_length` from its end) or
            `"drop"` (leave it out). Defaults to `None` (`"end"`).
        chat_template_kwargs: dict or None. `task="chat"`: more variables
            for the chat template (e.g. `{"enable_thinking": False}` for
            Qwen 3), as `apply_chat_template`'s keywords. Defaults to
            `None`.

    Returns:
        A `tf.data.Dataset` of `(features, labels, sample_weight)` (or of
        `features` for `encode` without labels). The chunks are tokenized
        ahead, in parallel; there is no `prefetch` after the batches (add
        one if a step of yours goes on top). tf.data's default static
        graph rewrites are off in its options
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
    ...     ["the cat sat", "a dog"], tokenizer, batch_size=2,
    ...     max_length=8)
    >>> features, labels, weights = next(iter(ds))
    >>> features["token_ids"].numpy().tolist()
    [[1, 4, 5, 6, 2], [1, 7, 8, 2, 0]]
    >>> labels.numpy().tolist()
    [[4, 5, 6, 2, 0], [7, 8, 2, 0, 0]]
    >>> weights.numpy().tolist()
    [[1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]]
    """
    if task == "chat":
        _check_chat_arguments(locals())
        from tf_input.data.chat import chat_dataset

        return chat_dataset(
            source,
            tokenizer,
            batch_size=batch_size,
            max_length=max_length,
            batching=batching,
            unroll_turns=bool(unroll_turns),
            chat_truncation=chat_truncation or "end",
            shuffle=shuffle,
            seed=seed,
            drop_remainder=drop_remainder,
            chunk_size=chunk_size,
            features=features,
            template_kwargs=chat_template_kwargs,
            num_buckets=num_buckets,
            bucket_boundaries=bucket_boundaries,
            tokens_per_batch=tokens_per_batch,
            sample_size=sample_size,
            shard=shard,
            count_batches=count_batches,
            data_service=data_service,
            data_service_mode=data_service_mode,
        )
    for name, value in (
        ("unroll_turns", unroll_turns),
        ("chat_truncation", chat_truncation),
        ("chat_template_kwargs", chat_template_kwargs),
    ):
        if value is not None:
            raise ValueError(
                f'`{name}` is an argument of task="chat". Received: '
                f"{name}={value!r} with task={task!r}."
            )
    s = check_arguments(
        task=task,
        batching=batching,
        batch_size=batch_size,
        max_length=max_length,
        add_special_tokens=add_special_tokens,
        truncation=truncation,
        shuffle=shuffle,
        seed=seed,
        drop_remainder=drop_remainder,
        cache=cache,
        deterministic=deterministic,
        num_buckets=num_buckets,
        bucket_boundaries=bucket_boundaries,
        tokens_per_batch=tokens_per_batch,
        sample_size=sample_size,
        chunk_size=chunk_size,
        data_service=data_service,
        data_service_mode=data_service_mode,
        shard=shard,
        count_batches=count_batches,
        separator=separator,
        skip_empty=skip_empty,
        label_vocabulary=label_vocabulary,
        label_all_tokens=label_all_tokens,
        stride=stride,
        mask_selection_rate=mask_selection_rate,
        mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate,
        max_selections=max_selections,
        whole_word_masking=whole_word_masking,
    )
    check_tokenizers(tokenizer, target_tokenizer, s.task)
    lines, plan = _rows(
        source,
        tokenizer,
        target_tokenizer,
        s,
        dict(encoding=encoding, errors=errors, columns=columns, format=format),
    )
    wanted = plan.check_features(features)
    in_memory = isinstance(source, (list, tuple, np.ndarray))
    count = s.count_batches
    if count is None:  # in memory, one counting pass is cheap next to fit
        count = s.data_service is None and in_memory
    counter = counting.example_counter(lines, plan, s.chunk_size)
    totals = None
    if in_memory:
        totals = counting.count_examples(counter, source)
    elif not count:
        counting.check_not_empty(lines, plan, s.chunk_size, source)
    boundaries, batch_sizes = _buckets(s, lines, plan)
    chunks, pending = _chunks(s, lines, plan)
    dataset, counted = batching_module.batches(
        chunks,
        pending,
        plan,
        batch_size=s.batch_size,
        drop_remainder=s.drop_remainder,
        fill=plan.skip_empty,
        deterministic=s.deterministic,
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        strip=_strip(wanted),
    )
    num_batches = None
    if count:
        # Counted once, so that `fit` knows the epoch length (no "Unknown"
        # progress bar, no "ran out of data" warning).
        num_batches = counting.num_batches(s, totals, counted)
        if num_batches == 0:
            raise ValueError(counting.empty_message(source))
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(num_batches)
        )
    # No `prefetch` at the end: the chunk maps before it run ahead on their
    # own threads already, and the step that hands out batches is cheaper
    # than a prefetch's hand-over between threads (see benchmarks/README.md).
    info = PipelineInfo(
        task=s.task,
        batching=s.batching,
        max_length=s.max_length,
        features=tuple(wanted or plan.feature_names()),
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        num_batches=num_batches,
        # `stats` reads the truncation count from the counting twin, so
        # that the batches fed to `fit` carry only features and targets.
        counting=counted.prefetch(AUTOTUNE).with_options(
            dataset_options(s.shard)
        ),
        # A stream has its separators, not the template: a model trained
        # on it is served each text's own tokens.
        add_special_tokens=s.add_special_tokens and s.batching != "stream",
        tokenizer=tokenizer,
        skipped=None if totals is None else int(totals[0]),
        skipping=counter.map(plain(lambda counts: counts[0])).with_options(
            dataset_options(s.shard)
        ),
        separator=(plan.start + plan.end) if s.batching == "stream" else None,
    )
    return register(dataset.with_options(dataset_options(s.shard)), info)


# The arguments `task="chat"` takes, and their defaults.
_CHAT_ARGUMENTS = {
    "source",
    "tokenizer",
    "task",
    "batch_size",
    "max_length",
    "batching",
    "shuffle",
    "seed",
    "drop_remainder",
    "chunk_size",
    "unroll_turns",
    "chat_truncation",
    "chat_template_kwargs",
    "features",
    "num_buckets",
    "bucket_boundaries",
    "tokens_per_batch",
    "sample_size",
    "shard",
    "count_batches",
    "data_service",
    "data_service_mode",
}
_DEFAULTS = {
    "target_tokenizer": None,
    "add_special_tokens": True,
    "truncation": "longest_first",
    "label_vocabulary": None,
    "label_all_tokens": False,
    "stride": None,
    "separator": None,
    "skip_empty": True,
    "cache": False,
    "deterministic": None,
    "num_buckets": 8,
    "bucket_boundaries": None,
    "tokens_per_batch": None,
    "sample_size": 10_000,
    "data_service": None,
    "data_service_mode": "parallel_epochs",
    "shard": None,
    "features": None,
    "count_batches": None,
    "encoding": "utf-8",
    "errors": "strict",
    "columns": None,
    "format": None,
    "mask_selection_rate": None,
    "mask_token_rate": None,
    "random_token_rate": None,
    "max_selections": None,
    "whole_word_masking": None,
}


def _check_chat_arguments(given):
    """`task="chat"` renders its rows by the tokenizer's template: the
    arguments of other tasks given a non-default value are an error."""
    unused = [
        name
        for name, default in _DEFAULTS.items()
        if name not in _CHAT_ARGUMENTS and given[name] != default
    ]
    if unused:
        raise ValueError(
            'task="chat" renders conversations with the chat template; '
            f"it does not take {', '.join(unused)}. Received: "
            + ", ".join(f"{name}={given[name]!r}" for name in unused)
            + "."
        )


def _rows(source, tokenizer, target_tokenizer, s, reading):
    """`(lines, plan)`: the source as a dataset of examples (this worker's
    share), and the `Rows` that turn them into rows. `reading`: the
    arguments of `as_dataset` about files and records."""
    lines, _ = as_dataset(source, s.deterministic, **reading)
    columns = check_columns(
        lines.element_spec, s.task, s.batching, s.label_vocabulary
    )
    if s.task == "question_answering":
        # Each example's number in the source, for the rows of its windows.
        lines = lines.enumerate().map(plain(lambda i, example: (*example, i)))
    masking = masking_for(tokenizer, s) if s.task == "mlm" else None
    if s.shard is not None:
        lines = lines.shard(*s.shard)
    plan = Rows(
        task=s.task,
        batching=s.batching,
        max_length=s.max_length,
        tokenizer=tokenizer,
        target_tokenizer=target_tokenizer,
        add_special_tokens=s.add_special_tokens,
        columns=columns,
        truncation=s.truncation,
        separator=s.separator,
        skip_empty=s.skip_empty,
        label_vocabulary=s.label_vocabulary,
        label_all_tokens=s.label_all_tokens,
        stride=s.stride,
        masking=masking,
    )
    return lines, plan


def _strip(wanted):
    """A batch's element from `(features, labels, weights)`: the wanted
    features (None: all), then the targets (none for `encode` without
    labels)."""

    def strip(features, labels=None, weights=None):
        if wanted is not None:
            features = {name: features[name] for name in wanted}
        if labels is None:
            return features
        return features, labels, weights

    return strip


def _buckets(s, lines, plan):
    """`(boundaries, batch_sizes)`: the bucket boundaries (None outside
    `"bucket"` mode) and the rows per batch of each bucket."""
    if s.batching != "bucket":
        return None, [s.batch_size]
    boundaries = s.bucket_boundaries
    if boundaries is None:
        boundaries = choose_boundaries(
            sample_lengths(lines, plan, s.sample_size, s.chunk_size),
            s.num_buckets,
            s.max_length,
        )
    if s.tokens_per_batch is not None:
        return boundaries, [max(1, s.tokens_per_batch // b) for b in boundaries]
    return boundaries, [s.batch_size] * len(boundaries)


def _chunks(s, lines, plan):
    """`(chunks, pending)`: the source in chunks of `chunk_size` lines, with
    the chunk functions not yet applied.

    Lines -> chunks of tokenized rows (the only tokenizer call), then for
    `"pack"`, whole examples into rows of `max_length`, chunk by chunk
    (before the cache, and before the shuffle, which then moves packed
    rows). These steps stay `pending` so that, with nothing in between,
    they run in the same map as the padding (see `batching.batches`).
    """
    tokenize = plan.tokenize
    chunks = batch_lines(lines, s.chunk_size)
    if plan.masking is not None:
        chunks = chunks.enumerate()
        tokenize = _numbered(tokenize, s.chunk_size, s.shard)
    pending = [tokenize] + ([plan.pack] if s.batching == "pack" else [])
    if (
        s.cache is not False
        or s.shuffle
        or s.batching == "bucket"
        or s.data_service is not None
    ):
        chunks = apply(chunks, pending, s.deterministic)
        pending = []
    if s.cache is not False:
        chunks = chunks.cache("" if s.cache is True else s.cache)
    if s.shuffle:
        chunks = shuffle_chunks(
            chunks, max(1, s.shuffle // s.chunk_size), s.seed
        )
    if s.data_service is not None:
        # The workers read, tokenize (and pack) chunks; the batches are cut
        # here. The end-of-epoch steps (the fill rows of the last batch,
        # the bucket flush, the end of a stream) must see the whole epoch:
        # on the workers, under "distributed_epoch", each would see only
        # its share, and the rows of every other worker's last partial
        # batch would be lost.
        chunks = chunks.apply(
            tf.data.experimental.service.distribute(
                processing_mode=s.data_service_mode, service=s.data_service
            )
        )
    return chunks, pending


def _numbered(tokenize, chunk_size, shard):
    """`tokenize` of the enumerated chunks: each chunk of texts (of pairs:
    `(texts, seconds)`) is tokenized with each example's number in the
    source (the key of its masks, `task="mlm"`), found by arithmetic on
    the chunk's number (every chunk but the last is full), not by a step
    per line; with `shard`, the number before sharding. In the chunk's
    own map, not a map of its own."""
    num_shards, index = shard or (1, 0)

    def numbered(chunk, texts):
        # A chunk of texts, or of `(text_a, text_b)` pairs: its columns.
        columns = texts if isinstance(texts, tuple) else (texts,)
        first = chunk * chunk_size
        local = first + tf.range(tf.size(columns[0], out_type=tf.int64))
        return tokenize(*columns, local * num_shards + index)

    return numbered
