"""Cutting token ids into rows: the graph ops under `Rows`.

* `select_rows` / `pad_rows`: one text per row, cut and wrapped in special
  tokens, ragged or padded (each row copied as three pieces by one
  ragged gather).
* `pair_rows`: two texts per row (`[CLS] a [SEP] b [SEP]`) with their
  token types, cut by a truncation strategy as Hugging Face does.
* `special_ids`, `check_specials`: the start and end tokens of a
  tokenizer's template.
"""

from __future__ import annotations

import numbers

import tensorflow as tf

from tf_input._validation import check_type
from tf_input.tokenizers.base import Tokenizer

START_ROLES = ("bos", "cls")
END_ROLES = ("eos", "sep")


def special_ids(tokenizer):
    """`(start_ids, end_ids)`: the lists of ids put around each sequence.

    The tokenizer's own template (`tokenizer.start_ids` / `end_ids`): e.g.
    `[CLS]` / `[SEP]` for BERT, `<s>` / `</s>` for SentencePiece, only
    `<|begin_of_text|>` in front for Llama 3, nothing for Qwen.
    """
    return list(tokenizer.start_ids), list(tokenizer.end_ids)


def has_file_template(tokenizer):
    """Whether the tokenizer's templates come from its file (a
    `tokenizer.json` post-processor), which may rightly add nothing."""
    return getattr(tokenizer, "_templates", None) is not None


def check_tokenizer(name, tokenizer):
    check_type(
        name,
        tokenizer,
        Tokenizer,
        "a tf_input tokenizer (e.g. `tf_input.tokenizers.WordPieceTokenizer`)",
    )


def check_specials(name, tokenizer, why, template_ok=True):
    """`(start_ids, end_ids)`, or an error when the tokenizer has none."""
    start, end = special_ids(tokenizer)
    if not (start and end) and not (
        template_ok and has_file_template(tokenizer)
    ):
        raise ValueError(
            f"{why} needs start and end tokens (roles {START_ROLES} and "
            f"{END_ROLES}), but `{name}` ({type(tokenizer).__name__}) has "
            f"only special_tokens={tokenizer.special_tokens}."
        )
    return start, end


def _as_ids(value):
    """None, an int or a sequence of ints -> a list of ints."""
    if value is None:
        return []
    if isinstance(value, numbers.Integral):
        return [int(value)]
    return [int(v) for v in value]


def token_ids(tokenizer, texts):
    """`[N]` strings -> int32 ragged ids (int64 splits), no specials."""
    ids = tf.cast(tokenizer._tokenize_batch(texts), "int32")
    return ids.with_row_splits_dtype(tf.int64)


def select_rows(ids, index=None, capacity=None, start=None, end=None):
    """Rows `index` of ragged `ids`, cut to `capacity`, wrapped in specials.

    Returns `(rows, truncated)`: the ragged rows, each cut to its first
    `capacity` ids (None: no cut) with the ids of `start` before and of
    `end` after (an int, a list of ints, or None for none), and a bool
    `[len(index)]` telling which rows were cut.

    Each output row is three pieces of one flat array, the start ids, the
    row's kept ids and the end ids, copied whole by one ragged gather
    (`RaggedGather` copies a piece at a time), with no index arithmetic
    per id: 5-6x faster than finding every output id's source, on 1,024
    WikiText paragraphs (benchmarks/README.md).
    """
    start, end = _as_ids(start), _as_ids(end)
    splits = ids.row_splits
    if index is None:
        index = tf.range(ids.nrows())
    index = tf.cast(index, splits.dtype)
    length = tf.gather(splits, index + 1) - tf.gather(splits, index)
    row_length = splits[1:] - splits[:-1]
    if capacity is None:
        cut = row_length
        truncated = tf.zeros_like(length, tf.bool)
    else:
        cut = tf.minimum(row_length, capacity)
        truncated = length > capacity
    # The pieces: the start ids, the end ids, then each row's kept part
    # and the part cut off (never gathered).
    head = len(start) + len(end)
    bounds = tf.stack([splits[:-1], splits[:-1] + cut], 1)
    piece_splits = tf.concat(
        [
            tf.constant([0, len(start)], splits.dtype),
            tf.reshape(bounds, [-1]) + head,
            splits[-1:] + head,
        ],
        0,
    )
    values = ids.flat_values
    if head:
        specials = tf.constant(start + end, values.dtype)
        values = tf.concat([specials, values], 0)
    pieces = tf.RaggedTensor.from_row_splits(
        values, piece_splits, validate=False
    )
    count = tf.size(index, out_type=splits.dtype)
    order = tf.stack(
        [
            tf.zeros([count], splits.dtype),
            2 * index + 2,
            tf.ones([count], splits.dtype),
        ],
        1,
    )
    out = tf.gather(pieces, tf.reshape(order, [-1]))
    rows = tf.RaggedTensor.from_row_splits(
        out.flat_values, out.row_splits[::3], validate=False
    )
    return rows, truncated


def pad_rows(ids, index, capacity, start, end, width):
    """Rows `index` of ragged `ids`, padded: `select_rows` made dense.

    Returns `(dense, lengths, truncated)`: int32 `[len(index), width]`, each
    row its first `capacity` ids with the ids of `start` before and of
    `end` after (an int, a list of ints, or None), then 0; the row lengths
    with the specials; and which rows were cut. `width` must be at least
    `capacity` plus the specials.
    """
    rows, truncated = select_rows(ids, index, capacity, start, end)
    dense = rows.to_tensor(0, shape=[None, width])
    return dense, rows.row_lengths(), truncated


def split_template(template):
    """A pair template -> `(prefix, a_type, middle, b_type, suffix)`.

    `prefix`, `middle` and `suffix` are lists of `(id, type_id)`: the
    special tokens before `$A`, between `$A` and `$B`, and after `$B`.
    """
    pieces = [piece for piece, _ in template]
    if pieces.count("$A") != 1 or pieces.count("$B") != 1:
        raise ValueError(
            "A pair template needs `$A` and `$B` once each. "
            f"Received: template={template!r}."
        )
    a, b = pieces.index("$A"), pieces.index("$B")
    if b < a:
        raise ValueError(
            "Pair templates with `$B` before `$A` are not supported. "
            f"Received: template={template!r}."
        )
    return (
        list(template[:a]),
        template[a][1],
        list(template[a + 1 : b]),
        template[b][1],
        list(template[b + 1 :]),
    )


def pair_lengths(a, b, room, truncation):
    """How many tokens of each text a pair keeps, as Hugging Face cuts.

    `a`, `b`: int64 `[N]` lengths; `room`: the tokens left for both texts
    after the template's special tokens. Returns `(keep_a, keep_b, ok)`:
    `ok` is False where the strategy cannot make the pair fit
    (`only_first` / `only_second` when the other text alone is too long:
    an error in Hugging Face, and here).

    * `"longest_first"` (HF's default): if both fit, nothing is cut.
      Else, with `short <= long` the two lengths, the longer text keeps
      `max(short, room - short)` tokens (`short` if `short > room`) and
      the shorter keeps all of its own; when that is still too long, both
      keep `room // 2`, the longer text (the second one, on a tie) one
      more for an odd `room`. This is the rule of `tokenizers`' Rust code,
      checked against it on pairs from the corpora.
    * `"only_first"` / `"only_second"`: that text loses the excess; it
      must keep at least one token.
    """
    room = tf.constant(room, tf.int64)
    total = a + b
    over = total > room
    excess = tf.maximum(total - room, 0)
    if truncation == "only_first":
        ok = tf.logical_or(~over, a > excess)
        return a - excess, b, ok
    if truncation == "only_second":
        ok = tf.logical_or(~over, b > excess)
        return a, b - excess, ok
    swap = a > b
    short = tf.minimum(a, b)
    keep_long = tf.where(short > room, short, tf.maximum(short, room - short))
    keep_short = short
    both = keep_short + keep_long > room
    keep_short = tf.where(both, room // 2, keep_short)
    keep_long = tf.where(both, room // 2 + room % 2, keep_long)
    keep_a = tf.where(swap, keep_long, keep_short)
    keep_b = tf.where(swap, keep_short, keep_long)
    keep_a = tf.where(over, tf.minimum(keep_a, a), a)
    keep_b = tf.where(over, tf.minimum(keep_b, b), b)
    return keep_a, keep_b, tf.ones_like(over)


def _constant_rows(pairs, count, column):
    """`count` ragged rows, each the `column` (0: ids, 1: types) of
    `pairs`."""
    values = tf.constant([p[column] for p in pairs], tf.int32)
    tiled = tf.tile(values[None], [count, 1])
    return tf.RaggedTensor.from_tensor(tiled).with_row_splits_dtype(tf.int64)


def _first(ragged, keep):
    """Each row of `ragged` cut to its first `keep` values."""
    position = tf.ragged.range(ragged.row_lengths(), dtype=tf.int64)
    return tf.ragged.boolean_mask(ragged, position < keep[:, None])


def pair_rows(a, b, index, room, template, truncation, special=None):
    """Rows `index` of two ragged texts, wrapped in a pair template.

    Returns `(ids, types, truncated, ok)`: ragged ids `prefix a middle b
    suffix` and their token types, which rows were cut, and `ok` (see
    `pair_lengths`). `room` None: no cut. `special`: an int to put in
    place of the template's ids (values that follow the tokens, e.g.
    their word ids), else None.
    """
    prefix, a_type, middle, b_type, suffix = split_template(template)
    a, b = tf.gather(a, index), tf.gather(b, index)
    la, lb = a.row_lengths(), b.row_lengths()
    if room is None:
        keep_a, keep_b, ok = la, lb, tf.ones_like(la, tf.bool)
    else:
        keep_a, keep_b, ok = pair_lengths(la, lb, room, truncation)
        keep_a, keep_b = tf.maximum(keep_a, 0), tf.maximum(keep_b, 0)
    a, b = _first(a, keep_a), _first(b, keep_b)
    count = tf.shape(index, out_type=tf.int64)[0]
    ids, types = [], []
    for part, text, text_type in (
        (prefix, a, a_type),
        (middle, b, b_type),
        (suffix, None, None),
    ):
        if part:
            if special is not None:
                part = [(special, type_id) for _, type_id in part]
            ids.append(_constant_rows(part, count, 0))
            types.append(_constant_rows(part, count, 1))
        if text is not None:
            ids.append(text)
            types.append(tf.ones_like(text) * text_type)
    truncated = (keep_a < la) | (keep_b < lb)
    return tf.concat(ids, 1), tf.concat(types, 1), truncated, ok


def empty_text_id(tokenizer):
    """The one token a text with no token is served as (and kept as by
    `make_dataset(..., skip_empty=False)`): the end token (`eos`, else
    `sep`), else `unk`, else the padding id, else 0."""
    roles = tokenizer.special_tokens
    for role in ("eos", "sep", "unk", "pad"):
        if roles.get(role) is not None:
            return int(roles[role])
    return 0


def stream_separator(tokenizer, separator):
    """`(start, end)`: the ids put before and after each text of a stream.

    `separator=None` takes the tokenizer's end token (role `eos`, else
    `sep`), put after each text; else its start token (`bos`, else `cls`),
    put before each text; else nothing. An explicit separator (an id, a
    token string of the vocabulary, or a list of ids; `[]` for none) goes
    after each text.
    """
    roles = tokenizer.special_tokens
    if separator is None:
        for role in END_ROLES:
            if roles.get(role) is not None:
                return [], [int(roles[role])]
        for role in START_ROLES:
            if roles.get(role) is not None:
                return [int(roles[role])], []
        return [], []
    size = tokenizer.vocabulary_size()
    if isinstance(separator, str):
        try:
            found = tokenizer.token_to_id(separator)
        except ValueError:
            raise ValueError(
                "`separator` must be a token of the vocabulary, an id, or "
                f"a list of ids. Received: separator={separator!r}, which "
                "is not a token of this vocabulary."
            ) from None
        return [], [int(found)]
    ids = [separator] if isinstance(separator, numbers.Integral) else separator
    if not isinstance(ids, (list, tuple)) or any(
        isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in ids
    ):
        raise TypeError(
            "`separator` must be None (the tokenizer's end or start "
            "token), a token string, an id, or a list of ids ([] for "
            f"none). Received: separator={separator!r}."
        )
    if any(not 0 <= i < size for i in ids):
        raise ValueError(
            f"`separator` ids must be in [0, {size}), the vocabulary of "
            f"the tokenizer. Received: separator={separator!r}."
        )
    return [], [int(i) for i in ids]
