"""`make_dataset(task="chat")`: conversations -> batches whose loss is on
the assistant turns only.

Conversations are Python objects, so they are rendered in Python, by the
tokenizer's chat template (`Tokenizer.apply_chat_template`'s rendering),
each as its text and the UTF-8 byte spans of its assistant turns; the
rest runs in the graph, a chunk of texts at a time: tokenizing with byte
offsets (no conversion to characters is needed), marking the tokens that
overlap an assistant span, cutting rows to `max_length`, batching, labels
and weights.

An assistant turn is what rendering the conversation up to and including
that turn adds after the same conversation rendered up to the turn's
prompt (`add_generation_prompt=True`): its header's rest, its content and
its end-of-turn tokens. A conversation gives one row when the template is
prefix-stable for it: each turn's rendering starts the rendering of the
whole conversation. Some templates are not (Qwen 3 drops the reasoning of
earlier turns, so a turn renders differently once a later user message
follows); then `unroll_turns=True` gives one row per assistant turn: the
conversation up to that turn, only that turn weighted.

Labels are next tokens (as `task="lm"`); the weight is 1 where the label
is an assistant token. A token id and its assistant flag travel through
packing, bucketing and streaming as one int32 (`id * 2 + flag`), so those
steps are the `"lm"` ones (`"bucket"` regroups the rows with
`bucketing.bucket_batches`, `ChatRows` its plan).
"""

from __future__ import annotations

import json
import os
import pathlib
import threading

import numpy as np
import tensorflow as tf

from tf_input import _feature_names as names
from tf_input._ragged import row_ids
from tf_input._validation import check_bool
from tf_input._validation import check_one_of
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_int
from tf_input.data import bucketing
from tf_input.data import packing
from tf_input.data import records
from tf_input.data import targets
from tf_input.data.arguments import check_bucket_boundaries
from tf_input.data.arguments import check_data_service
from tf_input.data.arguments import check_shard
from tf_input.data.batching import _fill_rows
from tf_input.data.info import PipelineInfo
from tf_input.data.info import register
from tf_input.data.rows import cut_to_longest
from tf_input.data.selection import select_features
from tf_input.data.steps import count
from tf_input.data.steps import dataset_options
from tf_input.data.steps import plain
from tf_input.data.steps import shuffle_chunks
from tf_input.tokenizers import chat
from tf_input.tokenizers._offsets import _ROW

CHAT_BATCHINGS = ("longest", "max_length", "bucket", "pack", "stream")
CHAT_TRUNCATIONS = ("end", "drop")
# Conversations rendered when the dataset is made, to check them early.
_CHECKED = 32
# Most characters (conversations as JSON, and their rendered rows) a
# dataset keeps from one epoch to the next (`RenderCache`).
RENDER_CACHE_CHARACTERS = 2**26


def chat_dataset(
    source,
    tokenizer,
    *,
    batch_size,
    max_length,
    batching,
    unroll_turns,
    chat_truncation,
    shuffle,
    seed,
    drop_remainder,
    chunk_size,
    features=None,
    template_kwargs=None,
    num_buckets=8,
    bucket_boundaries=None,
    tokens_per_batch=None,
    sample_size=10_000,
    shard=None,
    count_batches=None,
    data_service=None,
    data_service_mode="parallel_epochs",
):
    """The `make_dataset(task="chat")` dataset (see there)."""
    shard = check_shard(shard)
    count_batches = check_bool("count_batches", count_batches, allow_none=True)
    data_service, data_service_mode = check_data_service(
        data_service, data_service_mode
    )
    if data_service is not None:
        if _is_files(source):
            raise ValueError(
                'task="chat" with `data_service` renders the conversations '
                "in this process, all before the first batch, and sends "
                "them to the workers with the pipeline: it takes a list of "
                "conversations, not files (their size is not bounded). "
                f"Received: source={source!r}. Read the records into a "
                "list, or leave out `data_service`."
            )
        if count_batches:
            raise ValueError(
                "`count_batches=True` counts the batches of this process's "
                "pipeline, but with `data_service` the workers produce "
                "them. Received: count_batches=True with "
                f"data_service={data_service!r}. Pass count_batches=False."
            )
        count_batches = False
    batch_size = check_positive_int("batch_size", batch_size)
    max_length = check_positive_int("max_length", max_length)
    if batching not in CHAT_BATCHINGS:
        raise ValueError(
            f'task="chat" batches with one of {CHAT_BATCHINGS}. Received: '
            f"batching={batching!r}."
        )
    unroll_turns = check_bool("unroll_turns", unroll_turns)
    chat_truncation = check_one_of(
        "chat_truncation", chat_truncation, CHAT_TRUNCATIONS
    )
    drop_remainder = bool(
        check_bool("drop_remainder", drop_remainder, allow_none=True)
    )
    if shuffle is True:
        shuffle = 10_000
    shuffle = check_optional_int("shuffle", shuffle or None, 1)
    chunk_size = check_optional_int("chunk_size", chunk_size, 1) or max(
        4 * batch_size, 64
    )
    # Checked as for the other tasks (and, as there, used only by
    # batching="bucket").
    num_buckets = check_positive_int("num_buckets", num_buckets)
    bucket_boundaries = check_bucket_boundaries(bucket_boundaries, max_length)
    tokens_per_batch = check_optional_int(
        "tokens_per_batch", tokens_per_batch, 1
    )
    sample_size = check_positive_int("sample_size", sample_size)
    if template_kwargs is not None and not (
        isinstance(template_kwargs, dict)
        and all(isinstance(k, str) for k in template_kwargs)
    ):
        raise TypeError(
            "`chat_template_kwargs` must be a dict from variable name (str) "
            f"to value. Received: {template_kwargs!r}."
        )
    wanted = select_features(
        features, task="chat", batching=batching, tokenizer=tokenizer
    )
    template = chat.pick_template(tokenizer.chat_template)
    variables = {**tokenizer.chat_variables(), **(template_kwargs or {})}
    conversations = _conversations(source)
    _check_offsets(tokenizer)
    # The first conversations are rendered now, so that a template that
    # refuses them, or is not prefix-stable, is an error here and not a
    # stop in the middle of `fit` (later ones stop the pipeline with the
    # same message).
    cache = RenderCache(template)

    def rows_of(where, conversation):
        return cache.rows(
            conversation,
            lambda: render_rows(
                template, conversation, variables, unroll_turns, where
            ),
        )

    for number, (where, conversation) in enumerate(conversations()):
        if number == _CHECKED:
            break
        rows_of(where, conversation)

    def all_rows():
        for number, (where, conversation) in enumerate(conversations()):
            # A worker's share: every `count`-th conversation, unrendered
            # before it is skipped.
            if shard is not None and number % shard[0] != shard[1]:
                continue
            yield from rows_of(where, conversation)

    def generate():
        rows = []
        for row in all_rows():
            rows.append(row)
            if len(rows) >= chunk_size:
                yield _columns(rows)
                rows = []
        if rows:
            yield _columns(rows)

    vector = tf.TensorSpec([None], tf.int64)
    signature = (tf.TensorSpec([None], tf.string), vector, vector, vector)
    if data_service is None:
        # Rows cross from Python a chunk at a time (a generator's element
        # costs ~0.2 ms; one by one, `unbatch` then `ragged_batch` cost
        # ~0.1 ms a row).
        chunked = tf.data.Dataset.from_generator(
            generate, output_signature=signature
        ).map(plain(_spans))
    else:
        # A service worker runs the dataset's graph, not this process's
        # Python: every row is rendered here, now, and the rows go with
        # the graph (a list of conversations: its size is the caller's),
        # one slice each ("distributed_epoch" splits them), then chunks.
        columns = _columns(list(all_rows()))
        chunked = tf.data.Dataset.from_tensor_slices(
            _spans(
                *(
                    tf.constant(column, spec.dtype)
                    for column, spec in zip(columns, signature)
                )
            )
        ).ragged_batch(chunk_size)

    def tokenize(chunks):
        def rows_of(text, starts, ends):
            rows = _tokenize(
                tokenizer,
                text,
                starts,
                ends,
                max_length,
                chat_truncation,
                batching,
            )
            if batching == "pack":
                # Packed in the chunk's map, before any shuffle, which
                # then moves packed rows: an epoch's rows stay the same.
                packed = packing.pack_rows(rows["ids"], max_length)
                rows = {
                    "ids": packed["ids"],
                    "example_ids": packed["example_ids"],
                    "positions": packed["positions"],
                    "counts": rows["counts"],
                }
            return rows

        return chunks.map(plain(rows_of), num_parallel_calls=tf.data.AUTOTUNE)

    boundaries, batch_sizes = None, [batch_size]
    if batching == "bucket":
        boundaries = bucket_boundaries
        if boundaries is None:
            # The rows of the first `sample_size` rendered rows, in source
            # order (before any shuffle).
            rows = chunked.unbatch().take(sample_size)
            boundaries = bucketing.choose_boundaries(
                _sample_lengths(tokenize(rows.ragged_batch(chunk_size))),
                num_buckets,
                max_length,
            )
        batch_sizes = [batch_size] * len(boundaries)
        if tokens_per_batch is not None:
            batch_sizes = [max(1, tokens_per_batch // b) for b in boundaries]
    chunks = tokenize(chunked)
    counts = chunks.map(lambda rows: rows["counts"])
    if shuffle:
        # As `make_dataset` shuffles: the order of the tokenized chunks,
        # and the rows within each.
        buffer = max(1, shuffle // chunk_size)
        chunks = shuffle_chunks(chunks, buffer, seed, whole=("counts",))
    if data_service is not None:
        # The workers tokenize; the batches are cut here, where the end
        # of the epoch is seen whole (as in `pipeline._chunks`).
        chunks = chunks.apply(
            tf.data.experimental.service.distribute(
                processing_mode=data_service_mode, service=data_service
            )
        )
    if batching == "stream":
        dataset = _stream(chunks, batch_size, max_length, drop_remainder)
    elif batching == "bucket":
        dataset = _buckets(chunks, boundaries, batch_sizes, drop_remainder)
    else:
        dataset = _rows(
            chunks, batching, batch_size, max_length, drop_remainder
        )
    if wanted is not None:
        dataset = dataset.map(
            lambda f, y, w: ({name: f[name] for name in wanted}, y, w)
        )
    num_batches = None
    if count_batches is None:  # in memory: one counting pass, as elsewhere
        count_batches = not _is_files(source)
    if count_batches:
        # Rendered and batched once, so that `fit` knows the epoch length.
        num_batches = count(dataset)
        if num_batches == 0:
            raise ValueError(
                'task="chat" made no batch from these conversations (with '
                f"drop_remainder={drop_remainder}, batch_size={batch_size}"
                f", chat_truncation={chat_truncation!r}, "
                f"unroll_turns={unroll_turns})."
            )
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(num_batches)
        )
    features = tuple(dataset.element_spec[0])
    info = PipelineInfo(
        task="chat",
        batching=batching,
        max_length=max_length,
        features=features,
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        num_batches=num_batches,
        counting=None,
        add_special_tokens=False,
        tokenizer=tokenizer,
        skipped=0,
        separator=[] if batching == "stream" else None,
        chat_counts=counts,
    )
    return register(dataset.with_options(dataset_options(shard)), info)


# --- Python: sources and rendering ------------------------------------------
class RenderCache:
    """The rendered rows of the conversations seen, kept from one epoch to
    the next: a conversation's rows depend only on its messages (the
    template and its variables are the dataset's), so they are looked up
    by the conversation's JSON text, exactly, and a conversation changed
    in place is rendered again. Bounded: entries are added while the
    characters kept (keys and texts) stay within
    `RENDER_CACHE_CHARACTERS`, none evicted. Off for a template that
    reads the clock (`strftime_now`), and for a conversation that is not
    JSON. Safe under concurrent iterators: rendering runs outside the
    lock, which guards only the bound and the store (two threads rendering
    one conversation store equal rows)."""

    def __init__(self, template):
        self._rows = {}
        self._characters = 0
        self._lock = threading.Lock()
        self._on = "strftime_now" not in template

    def rows(self, conversation, render):
        if not self._on:
            return render()
        try:
            key = json.dumps(conversation, ensure_ascii=False)
        except (TypeError, ValueError):
            return render()
        found = self._rows.get(key)
        if found is not None:
            return found
        rows = render()
        size = len(key) + sum(len(text) + 2 * len(s) for text, s, _ in rows)
        with self._lock:
            if key not in self._rows and (
                self._characters + size <= RENDER_CACHE_CHARACTERS
            ):
                self._characters += size
                self._rows[key] = rows
        return rows


def _is_files(source):
    """Whether `source` names JSONL files (one path or a list of them)."""
    return isinstance(source, (str, os.PathLike)) or (
        isinstance(source, (list, tuple))
        and bool(source)
        and all(isinstance(s, (str, os.PathLike)) for s in source)
    )


def _conversations(source):
    """A function giving `(where, conversation)` pairs: `where` names the
    conversation in errors (its index, or its file and line)."""
    if _is_files(source):
        files = [source] if isinstance(source, (str, os.PathLike)) else source
        paths = [pathlib.Path(f) for f in files]
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(
                    f'task="chat" reads JSONL files of {{"messages": [...]}} '
                    f"records; no such file: {str(path)!r}."
                )

        def from_files():
            for path in paths:
                yield from _jsonl(path)

        return from_files
    if not isinstance(source, (list, tuple)) or not source:
        raise TypeError(
            'task="chat" takes conversations: a non-empty list of them '
            '(each a list of messages or a {"messages": [...]} record), or '
            "the path(s) of JSONL files of such records. Received: "
            f"{type(source).__name__}"
            + (" (empty)" if isinstance(source, (list, tuple)) else "")
            + "."
        )

    def from_list():
        for i, conversation in enumerate(source):
            yield f"conversation {i}", conversation

    return from_list


def _jsonl(path):
    """`(where, record)` of each `{"messages": [...]}` record of a JSONL
    file (`records.numbered_records`: its errors name the line)."""
    for line, record in records.numbered_records(path, "jsonl"):
        where = f"{str(path)!r}, {line}"
        if not isinstance(record.get("messages"), list):
            raise ValueError(
                f'{where}: each line must be a {{"messages": [...]}} '
                f"record. Received: {json.dumps(record)[:80]!r}."
            )
        yield where, record


def render_rows(template, conversation, variables, unroll_turns, where):
    """`[(text, starts, ends)]`: the rows of one conversation, each with
    the UTF-8 byte spans of its weighted assistant turns."""
    try:
        messages = chat.normalize_conversation(conversation, where)
    except TypeError as error:
        raise TypeError(f"{where}: {error}") from None

    def render(part, prompt):
        try:
            return chat.render(
                template,
                part,
                add_generation_prompt=prompt,
                variables=variables,
            )
        except chat.ChatTemplateError as error:
            raise chat.ChatTemplateError(f"{where}: {error}") from None

    turns = []
    whole = None
    for k, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        prompt = render(messages[:k], True)
        with_turn = render(messages[: k + 1], False)
        if k == len(messages) - 1:  # the last turn: the whole conversation
            whole = with_turn
        if not with_turn.startswith(prompt):
            raise ValueError(
                f"{where}: the chat template renders assistant turn {k} so "
                "that it does not extend the prompt of that turn (the "
                "conversation up to it with add_generation_prompt=True), so "
                "its tokens cannot be told apart. Prompt ends: "
                f"{prompt[-60:]!r}; with the turn: {with_turn[-80:]!r}."
            )
        turns.append((k, _bytes(prompt), with_turn))
    if unroll_turns:
        return [(text, [start], [_bytes(text)]) for _, start, text in turns]
    if whole is None:
        whole = render(messages, False)
    for k, start, with_turn in turns:
        if not whole.startswith(with_turn):
            raise ValueError(
                f"{where}: the chat template is not prefix-stable for this "
                f"conversation: assistant turn {k} renders differently once "
                "later messages follow (e.g. Qwen 3 drops the reasoning of "
                "earlier turns), so one row cannot weight every turn as it "
                "was rendered. Pass unroll_turns=True: one row per "
                "assistant turn, the conversation up to it, that turn "
                "weighted."
            )
    return [
        (
            whole,
            [start for _, start, _ in turns],
            [_bytes(text) for _, _, text in turns],
        )
    ]


def _bytes(text):
    """The length of `text` in UTF-8 bytes (a span's end in the offsets
    `_tokenize` reads)."""
    return len(text.encode("utf-8"))


def _columns(rows):
    """Rows `(text, starts, ends)` -> arrays: the texts, every row's starts
    and ends end to end, and the spans of each row."""
    return (
        np.array([text for text, _, _ in rows], dtype=object),
        np.array([s for _, starts, _ in rows for s in starts], np.int64),
        np.array([e for _, _, ends in rows for e in ends], np.int64),
        np.array([len(starts) for _, starts, _ in rows], np.int64),
    )


def _spans(texts, starts, ends, counts):
    """`_columns`' arrays -> texts and ragged `[rows, (spans)]` starts and
    ends (to unbatch into rows)."""
    return (
        texts,
        tf.RaggedTensor.from_row_lengths(starts, counts),
        tf.RaggedTensor.from_row_lengths(ends, counts),
    )


def _check_offsets(tokenizer):
    try:
        tokenizer.tokenize_with_offsets(["a"], unit="byte")
    except NotImplementedError as error:
        raise ValueError(
            f'task="chat" finds the assistant tokens by their byte '
            f"offsets, which {type(tokenizer).__name__} does not give: "
            f"{error}"
        ) from None


# --- Graph: tokens, flags, rows ---------------------------------------------
def _tokenize(tokenizer, text, starts, ends, max_length, truncation, batching):
    """A chunk of rendered rows -> `ids` (ragged, `id * 2 + flag`), with
    rows longer than `max_length` cut or dropped (not when streaming),
    and `counts` `[2]`: the rows truncated and dropped."""
    ids, token_starts, token_ends, _ = tokenizer._offset_rows(
        text, False, "byte"
    )
    row = row_ids(ids.row_splits)
    span_rows = row_ids(starts.row_splits)
    span_row = tf.concat([span_rows, [-1]], 0)
    span_start = tf.concat([starts.flat_values, [0]], 0)
    span_key = tf.concat(
        [span_rows * _ROW + ends.flat_values, [tf.int64.max]], 0
    )
    # The first span that ends after the token starts, in the token's row:
    # the token is in it if the span starts before the token ends.
    found = tf.searchsorted(
        span_key,
        row * _ROW + token_starts.flat_values,
        side="right",
        out_type=tf.int64,
    )
    inside = tf.equal(tf.gather(span_row, found), row) & (
        tf.gather(span_start, found) < token_ends.flat_values
    )
    coded = ids.with_flat_values(
        ids.flat_values * 2 + tf.cast(inside, tf.int32)
    )
    lengths = coded.row_lengths()
    zero = tf.constant(0, tf.int64)
    if batching == "stream":
        return {"ids": coded, "counts": tf.stack([zero, zero])}
    long = lengths > max_length
    count = tf.reduce_sum(tf.cast(long, tf.int64))
    if truncation == "drop":
        coded = tf.ragged.boolean_mask(coded, ~long)
        return {"ids": coded, "counts": tf.stack([zero, count])}
    return {"ids": coded[:, :max_length], "counts": tf.stack([count, zero])}


def _sample_lengths(chunks):
    """The row lengths of a dataset of tokenized chunks, as numpy."""
    lengths = [rows["ids"].row_lengths().numpy() for rows in chunks]
    return np.concatenate(lengths) if lengths else np.zeros([0], np.int64)


def _decode(coded):
    return tf.bitwise.right_shift(coded, 1), tf.bitwise.bitwise_and(coded, 1)


def _shift_left(values):
    return tf.pad(values[:, 1:], [[0, 0], [0, 1]])


def _padded(coded, width):
    """`(features, labels, weights)` of ragged coded rows (one row each),
    padded to `width` (an int or a scalar tensor)."""
    if isinstance(width, int):  # static: `[None, width]` batches
        shape = [None, width]
    else:
        shape = tf.stack([coded.nrows(), tf.cast(width, tf.int64)])
    ids, flags = _decode(coded.to_tensor(0, shape=shape))
    lengths = coded.row_lengths()
    labels, weights = targets.lm_targets(ids, lengths)
    features = {
        names.TOKEN_IDS: ids,
        names.PADDING_MASK: tf.sequence_mask(
            lengths, width, dtype=names.MASK_DTYPE
        ),
    }
    weights *= tf.cast(_shift_left(flags), weights.dtype)
    return features, labels, weights


def _rows(chunks, batching, batch_size, max_length, drop_remainder):
    """Padded (`"longest"`, `"max_length"`) or packed rows, batched."""

    def finish(rows):
        coded = rows["ids"]
        if batching == "pack":  # packed already (`tokenize`)
            ids, flags = _decode(coded)
            example_ids = rows["example_ids"]
            labels, weights = targets.lm_targets(ids, example_ids=example_ids)
            features = {
                names.TOKEN_IDS: ids,
                names.PADDING_MASK: tf.cast(example_ids > 0, names.MASK_DTYPE),
                names.EXAMPLE_IDS: example_ids,
                names.POSITIONS: rows["positions"],
            }
            weights *= tf.cast(_shift_left(flags), weights.dtype)
            return features, labels, weights
        return _padded(coded, max_length)

    rows = chunks.map(finish, num_parallel_calls=tf.data.AUTOTUNE)
    if batching == "longest":
        batches = rows.rebatch(batch_size, drop_remainder)
        return batches.map(lambda *element: cut_to_longest(*element)[:3])
    if not drop_remainder:
        fill = _fill_rows(rows.element_spec, batch_size - 1)
        rows = rows.concatenate(tf.data.Dataset.from_tensors(fill))
    return rows.rebatch(batch_size, drop_remainder=True)


class ChatRows:
    """The rows plan `bucketing.bucket_batches` takes, for chat rows: a
    row's bucket key is its length, and `finalize` pads the rows of a
    regrouped chunk as `"longest"` and `"max_length"` pad theirs."""

    masking = None

    def lengths(self, rows):
        return rows["ids"].row_lengths()

    def finalize(self, rows, length=None, fill=None, epoch=None):
        del fill, epoch  # no fill rows here; no masks to key
        coded = rows["ids"]
        if length is None:
            length = tf.reduce_max(tf.concat([coded.row_lengths(), [1]], 0))
        truncated = tf.reduce_sum(tf.cast(rows["truncated"], tf.int32))
        return (*_padded(coded, length), truncated)


def _buckets(chunks, boundaries, batch_sizes, drop_remainder):
    """`"bucket"`: rows regrouped by length (`bucketing.bucket_batches`),
    each batch padded to its bucket's boundary. The truncated rows are
    counted per chunk (`counts`), so each row's flag is False here."""

    def rows_of(rows):
        coded = rows["ids"]
        return {"ids": coded, "truncated": tf.zeros([coded.nrows()], tf.bool)}

    dataset, _ = bucketing.bucket_batches(
        chunks.map(plain(rows_of)),
        ChatRows(),
        boundaries=boundaries,
        batch_sizes=batch_sizes,
        drop_remainder=drop_remainder,
        deterministic=None,
        strip=lambda features, labels, weights: (features, labels, weights),
    )
    return dataset


def _stream(chunks, batch_size, max_length, drop_remainder):
    """`"stream"`: the rendered conversations joined (each ends with its
    template's end-of-turn tokens; no separator is added) and cut into
    full rows; the labels the stream's next tokens, weighted where the
    next token is an assistant token."""
    pieces = chunks.map(lambda rows: rows["ids"].flat_values)

    def decode(features, labels, weights):
        ids, _ = _decode(features[names.TOKEN_IDS])
        labels, flags = _decode(labels)
        features = {**features, names.TOKEN_IDS: ids}
        return features, labels, weights * tf.cast(flags, weights.dtype)

    return targets.stream_batches(
        pieces, batch_size, max_length, drop_remainder
    ).map(decode)
