"""One example -> one row: the step shared by training and serving.

`make_dataset` and `export_text_model` both turn texts into rows here, so
the rows a model is trained on and the rows it is served cannot drift
apart: tokenize, skip empty examples, truncate (keeping room for the
special tokens), wrap in the tokenizer's template, pad, and build the
features and labels of the task.

* `select_rows` / `pad_rows`: one text per row, cut and wrapped, ragged or
  padded (single gathers, the fast path).
* `pair_rows`: two texts per row (`[CLS] a [SEP] b [SEP]`) with their
  token types, cut by a truncation strategy as Hugging Face does.
* `Rows`: the validated arguments, the chunk functions of the pipeline
  (`tokenize`, `pack`, `finalize`) and `serve`, the export's rows.
"""

from __future__ import annotations

import numbers

import keras
import tensorflow as tf

from tf_input._model_inputs import check_padding
from tf_input._model_inputs import input_names
from tf_input._ragged import row_ids
from tf_input.data import packing
from tf_input.tokenizers.base import Tokenizer

TASKS = ("lm", "seq2seq", "encode")
# Modes whose rows are padded to `max_length` as soon as they are tokenized.
PADDED = ("longest", "max_length")
START_ROLES = ("bos", "cls")
END_ROLES = ("eos", "sep")
TRUNCATIONS = ("longest_first", "only_first", "only_second")
# What one element of the source holds.
COLUMNS = ("text", "text+label", "pair", "pair+label", "seq2seq")
# The features of each kind of batch, in the order they are emitted. In
# `"pack"` rows, `example_ids` number the examples of a row (1, 2, ...; 0
# on padding) and `positions` restart at 0 in each; `segment_ids` are
# always token types (BERT's sentence A = 0, B = 1).
LM_FEATURES = ("token_ids", "padding_mask")
ENCODE_FEATURES = ("token_ids", "padding_mask", "segment_ids")
PACK_EXTRA = ("example_ids", "positions")
SEQ2SEQ_FEATURES = (
    "encoder_token_ids",
    "encoder_padding_mask",
    "decoder_token_ids",
    "decoder_padding_mask",
)
MASK_DTYPE = "int32"  # keras-hub's; a bool input fails under tf.distribute


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
    if not isinstance(tokenizer, Tokenizer):
        raise ValueError(
            f"`{name}` must be a tf_input tokenizer (e.g. "
            "`tf_input.tokenizers.WordPieceTokenizer`). "
            f"Received: {name} of type {type(tokenizer).__name__}."
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
    `[len(index)]` telling which rows were cut. Every output id is found
    by arithmetic on the row splits and one gather, in a single pass:
    ~1.7x faster on WikiText chunks than the ragged gather, ragged slice
    and scatter it replaced (9.0 vs 15.5 ms per 2,048 lines).
    """
    start, end = _as_ids(start), _as_ids(end)
    before, after = len(start), len(end)
    splits = ids.row_splits
    if index is None:
        index = tf.range(ids.nrows())
    begin = tf.gather(splits, index)
    length = tf.gather(splits, index + 1) - begin
    if capacity is None:
        kept, truncated = length, tf.zeros_like(length, tf.bool)
    else:
        kept, truncated = tf.minimum(length, capacity), length > capacity
    new_splits = tf.concat(
        [tf.zeros([1], tf.int64), tf.cumsum(kept + before + after)], 0
    )
    row = row_ids(new_splits)
    # Where each output slot is in its row's kept ids: negative in `start`,
    # `kept` and beyond in `end`.
    offset = tf.range(new_splits[-1]) - tf.gather(new_splits, row) - before
    row_kept = tf.gather(kept, row)
    inside = tf.logical_and(offset >= 0, offset < row_kept)
    source = tf.where(inside, tf.gather(begin, row) + offset, 0)
    values = tf.gather(ids.flat_values, source)
    # One special token (the usual case) is a scalar: no gather or clip,
    # ~10 graph nodes fewer, which tf.data sets up for every new iterator.
    if len(start) == 1:
        values = tf.where(offset < 0, start[0], values)
    elif start:
        first = tf.gather(
            tf.constant(start, tf.int32),
            tf.clip_by_value(offset + before, 0, before - 1),
        )
        values = tf.where(offset < 0, first, values)
    if len(end) == 1:
        values = tf.where(offset >= row_kept, end[0], values)
    elif end:
        last = tf.gather(
            tf.constant(end, tf.int32),
            tf.clip_by_value(offset - row_kept, 0, after - 1),
        )
        values = tf.where(offset >= row_kept, last, values)
    rows = tf.RaggedTensor.from_row_splits(values, new_splits, validate=False)
    return rows, truncated


def pad_rows(ids, index, capacity, start, end, width):
    """Rows `index` of ragged `ids`, padded: `select_rows` made dense.

    Returns `(dense, lengths, truncated)`: int32 `[len(index), width]`, each
    row its first `capacity` ids with the ids of `start` before and of
    `end` after (an int, a list of ints, or None), then 0; the row lengths
    with the specials; and which rows were cut. `width` must be at least
    `capacity` plus the specials. Built by a ragged gather, `to_tensor`
    (which also truncates) and column arithmetic, with no per-token index:
    ~2x faster than `select_rows` + `to_tensor` (5 vs 11 ms per 2,048-line
    WikiText chunk); with it the `"max_length"` pipeline went from 0.66x
    to 0.71-0.80x of the tokenizer's rate there.
    """
    start, end = _as_ids(start), _as_ids(end)
    before, after = len(start), len(end)
    rows = tf.gather(ids, index)
    length = rows.row_lengths()
    kept = tf.minimum(length, capacity)
    # `after` columns more than `capacity`: in cut rows, the end tokens
    # overwrite them.
    dense = rows.to_tensor(0, shape=[None, capacity + after])
    if start:
        first = tf.tile(
            tf.constant(start, tf.int32)[None], [tf.shape(dense)[0], 1]
        )
        dense = tf.concat([first, dense], 1)
    if end:
        column = tf.range(capacity + before + after, dtype=tf.int64)
        step = column[None, :] - (kept + before)[:, None]
        if after == 1:  # a scalar: no gather or clip (~10 nodes fewer)
            dense = tf.where(tf.equal(step, 0), end[0], dense)
        else:
            last = tf.gather(
                tf.constant(end, tf.int32),
                tf.clip_by_value(step, 0, after - 1),
            )
            dense = tf.where((step >= 0) & (step < after), last, dense)
    extra = width - capacity - before - after
    if extra:
        dense = tf.pad(dense, [[0, 0], [0, extra]])
    return dense, kept + before + after, length > capacity


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


def pair_rows(a, b, index, room, template, truncation):
    """Rows `index` of two ragged texts, wrapped in a pair template.

    Returns `(ids, types, truncated, ok)`: ragged ids `prefix a middle b
    suffix` and their token types, which rows were cut, and `ok` (see
    `pair_lengths`). `room` None: no cut.
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
            ids.append(_constant_rows(part, count, 0))
            types.append(_constant_rows(part, count, 1))
        if text is not None:
            ids.append(text)
            types.append(tf.ones_like(text) * text_type)
    truncated = (keep_a < la) | (keep_b < lb)
    return tf.concat(ids, 1), tf.concat(types, 1), truncated, ok


def _lm_labels(token_ids, example_ids=None):
    """The next token within the same example; 0 at its last token and at
    padding (padding ids are 0 already)."""
    following = tf.pad(token_ids[:, 1:], [[0, 0], [0, 1]])
    if example_ids is not None:
        same = tf.equal(
            tf.pad(example_ids[:, 1:], [[0, 0], [0, 1]]), example_ids
        )
        following = tf.where(same, following, tf.zeros_like(following))
    return following


class Rows:
    """The validated row arguments, and the graph functions built from them.

    Args (keyword-only): `task`; `batching`; `max_length`; `tokenizer`;
    `target_tokenizer` (seq2seq); `add_special_tokens`; `columns`, what
    one element holds (one of `COLUMNS`); `truncation` (pairs).
    """

    def __init__(
        self,
        *,
        task,
        batching,
        max_length,
        tokenizer,
        target_tokenizer=None,
        add_special_tokens=True,
        columns="text",
        truncation="longest_first",
    ):
        check_tokenizer("tokenizer", tokenizer)
        self.task = task
        self.batching = batching
        self.max_length = max_length
        self.tokenizer = tokenizer
        self.target_tokenizer = target_tokenizer or tokenizer
        self.columns = columns
        self.truncation = truncation
        self.pairs = columns.startswith("pair")
        self.has_labels = columns.endswith("label")
        if add_special_tokens:
            start, end = check_specials(
                "tokenizer", tokenizer, "`add_special_tokens=True`"
            )
        else:
            start, end = [], []
        self.start, self.end = start, end
        if self.pairs:
            template = tokenizer.templates()["pair"]
            if not add_special_tokens:
                template = [("$A", 0), ("$B", 1)]
            self.template = template
            num_specials = len(template) - 2
        else:
            num_specials = len(start) + len(end)
        self.num_specials = num_specials
        if max_length < num_specials + 1:
            raise ValueError(
                f"`max_length` must leave room for the {num_specials} "
                "special tokens and at least one token. "
                f"Received: max_length={max_length}."
            )
        # Room for the tokens of each row; no truncation when packing.
        self.capacity = (
            None if batching == "pack" else max_length - num_specials
        )
        if task == "seq2seq":
            check_tokenizer("target_tokenizer", self.target_tokenizer)
            target_start, target_end = check_specials(
                "target_tokenizer",
                self.target_tokenizer,
                '`task="seq2seq"` (decoder input starts with `<sos>`, '
                "labels end with `<eos>`)",
                template_ok=False,
            )
            # One token each, so that decoder inputs and labels stay
            # aligned: `<sos> t1 t2` against `t1 t2 <eos>`.
            self.target_start = target_start[:1]
            self.target_end = target_end[:1]
            if max_length < 2:
                raise ValueError(
                    "`max_length` must leave room for the decoder's start "
                    "(or end) token and at least one token. "
                    f"Received: max_length={max_length}."
                )
            self.target_capacity = max_length - 1

    # --- Features ------------------------------------------------------------
    def feature_names(self):
        """The features this task and batching produce, in order."""
        if self.task == "seq2seq":
            return SEQ2SEQ_FEATURES
        names = ENCODE_FEATURES if self.task == "encode" else LM_FEATURES
        if self.batching == "pack":
            names = names + PACK_EXTRA
        return names

    def check_features(self, features):
        """The feature names to emit (None: all), from `features=`."""
        if features is None:
            return None
        available = self.feature_names()
        if isinstance(features, keras.Model):
            check_padding(
                features, self.tokenizer, "Training it on these batches"
            )
            names = input_names(features, "`features`")
            source = f"the model {features.name!r} takes"
        elif isinstance(features, (list, tuple)) and all(
            isinstance(name, str) for name in features
        ):
            names = list(features)
            source = "`features` asks for"
        else:
            raise ValueError(
                "`features` must be None (every feature), a list of feature "
                "names, or the functional Keras model to feed (its input "
                f"names are read). Received: features={features!r}."
            )
        missing = [name for name in names if name not in available]
        if missing or not names or len(set(names)) != len(names):
            hints = []
            if set(missing) & set(PACK_EXTRA):
                hints.append(
                    '`example_ids` and `positions` come with batching="pack".'
                )
            if "segment_ids" in missing:
                hints.append(
                    '`segment_ids` (token types) come with task="encode".'
                )
            raise ValueError(
                f"{source} {names}, but task={self.task!r} with "
                f"batching={self.batching!r} produces the features "
                f"{available} (each at most once). Unknown or unavailable: "
                f"{missing}. {' '.join(hints)} Name each `keras.Input` after "
                "the feature it receives."
            )
        return [name for name in available if name in names]

    # --- Chunk of lines -> rows ----------------------------------------------
    def _tokenize(self, *batch):
        """`(columns dict of ragged ids or values, kept index)`."""
        parts = {}
        if self.columns == "text":
            (texts,) = batch
        elif self.columns == "text+label":
            texts, parts["labels"] = batch
        elif self.columns == "pair":
            texts, second = batch
        elif self.columns == "pair+label":
            texts, second, parts["labels"] = batch
        else:  # seq2seq
            texts, second = batch
        parts["ids"] = token_ids(self.tokenizer, texts)
        keep = parts["ids"].row_lengths() > 0
        if self.pairs:
            parts["second"] = token_ids(self.tokenizer, second)
            keep &= parts["second"].row_lengths() > 0
        if self.task == "seq2seq":
            parts["target"] = token_ids(self.target_tokenizer, second)
            keep &= parts["target"].row_lengths() > 0
        return parts, tf.reshape(tf.where(keep), [-1])

    def kept(self, *batch):
        """The index of the examples of `batch` that are not skipped."""
        return self._tokenize(*batch)[1]

    def tokenize(self, *batch):
        """`[C]` lines (or pairs) -> dict of rows; empty examples removed.

        `ids` (and `types` for sentence pairs): dense `[n, max_length]`
        with `lengths` in the padded modes (`pad_rows`), ragged otherwise
        (`select_rows`, `pair_rows`); `truncated`; `labels`; for seq2seq
        the decoder's rows.
        """
        parts, index = self._tokenize(*batch)
        rows = {}
        if self.pairs:
            ids, types, truncated, ok = pair_rows(
                parts["ids"],
                parts["second"],
                index,
                self.capacity,
                self.template,
                self.truncation,
            )
            check = tf.debugging.Assert(
                tf.reduce_all(ok),
                [
                    f'truncation="{self.truncation}" cannot make a pair fit '
                    f"max_length={self.max_length}: the other text alone "
                    "is too long (Hugging Face raises here too). Use "
                    'truncation="longest_first".'
                ],
            )
            with tf.control_dependencies([check]):
                truncated = tf.identity(truncated)
            if self.batching in PADDED:
                shape = [None, self.max_length]
                rows["lengths"] = ids.row_lengths()
                ids = ids.to_tensor(0, shape=shape)
                types = types.to_tensor(0, shape=shape)
            rows["ids"], rows["types"] = ids, types
        elif self.batching in PADDED:
            rows["ids"], rows["lengths"], truncated = pad_rows(
                parts["ids"],
                index,
                self.capacity,
                self.start,
                self.end,
                self.max_length,
            )
        else:
            rows["ids"], truncated = select_rows(
                parts["ids"], index, self.capacity, self.start, self.end
            )
        if "target" in parts:
            target = (parts["target"], index, self.target_capacity)
            if self.batching in PADDED:
                width = self.max_length
                rows["decoder_ids"], rows["decoder_lengths"], cut = pad_rows(
                    *target, self.target_start, None, width
                )
                rows["decoder_labels"], _, _ = pad_rows(
                    *target, None, self.target_end, width
                )
            else:
                rows["target"], cut = select_rows(*target)
            truncated = tf.logical_or(truncated, cut)
        if "labels" in parts:
            rows["labels"] = tf.gather(parts["labels"], index)
        rows["truncated"] = truncated
        return rows

    def pack(self, rows):
        """Packs a chunk's rows into rows of `max_length` (`"pack"` mode)."""
        packed = packing.pack_rows(rows["ids"], self.max_length)
        return {
            "ids": packed["ids"],
            "example_ids": packed["segment_ids"],
            "positions": packed["positions"],
            "truncated": tf.zeros([tf.shape(packed["ids"])[0]], tf.bool),
        }

    def lengths(self, rows):
        """The padded length each row needs (its bucket key)."""
        length = rows["ids"].row_lengths()
        if "target" in rows:  # decoder rows are target + 1 long
            length = tf.maximum(length, rows["target"].row_lengths() + 1)
        return length

    # --- Rows of a batch (or chunk) -> (features, labels, truncated) ------
    def finalize(self, rows, length=None, fill=None):
        """Pads rows and builds the features and labels of the task.

        `length`: the padded length (int or scalar tensor), or None for
        the longest row (rows padded in `tokenize` keep their width);
        `fill`: the number of rows to fill up to with all-padding rows, or
        None. Returns `(features, labels, number of truncated rows)`.
        """
        dense = self._dense(rows, length, fill)
        truncated = tf.reduce_sum(tf.cast(rows["truncated"], tf.int32))
        features, labels = self.features(dense)
        return features, labels, truncated

    def _dense(self, rows, length, fill):
        """Every row entry as a dense `[batch, size]` tensor, plus
        `lengths` (and `decoder_lengths`)."""
        ids = rows["ids"]
        if isinstance(ids, tf.RaggedTensor):
            count = ids.nrows()
        else:
            count = tf.shape(ids, out_type=tf.int64)[0]
        batch = count if fill is None else tf.cast(fill, tf.int64)
        extra = batch - count

        def rows_to(value):
            if isinstance(value, tf.RaggedTensor):
                value = value.row_lengths()
            if fill is None:  # no fill rows: no copy
                return value
            return tf.pad(value, [[0, extra]])

        def longest(ragged, more=0):
            return tf.reduce_max(
                tf.concat([ragged.row_lengths() + more, [1]], 0)
            )

        def dense(value, size):
            if isinstance(value, tf.RaggedTensor):
                shape = tf.stack([batch, tf.cast(size, tf.int64)])
                return value.to_tensor(0, shape=shape)
            if fill is None:  # dense already, no fill rows: no copy
                return value
            return tf.pad(value, [[0, extra], [0, 0]])

        out = {}
        if length is not None:
            size = length
        elif isinstance(ids, tf.RaggedTensor):
            size = longest(ids)
        else:  # dense already: its own width
            size = tf.shape(ids, out_type=tf.int64)[1]
        if "target" in rows:  # ragged seq2seq rows (bucket mode)
            target = rows["target"]
            decoder_size = length if length is not None else longest(target, 1)
            decoder_ids, _ = select_rows(target, start=self.target_start)
            labels, _ = select_rows(target, end=self.target_end)
            out["ids"] = dense(ids, size)
            out["lengths"] = rows_to(ids)
            out["decoder_ids"] = dense(decoder_ids, decoder_size)
            out["decoder_lengths"] = rows_to(decoder_ids)
            out["decoder_labels"] = dense(labels, decoder_size)
            return out
        for key, value in rows.items():
            if key in ("truncated",):
                continue
            if key in ("lengths", "decoder_lengths", "labels"):
                out[key] = rows_to(value)
            else:
                out[key] = dense(value, size)
        if "lengths" not in out:
            if "example_ids" in out:  # packed rows
                out["lengths"] = tf.reduce_sum(
                    tf.cast(out["example_ids"] > 0, tf.int64), 1
                )
            else:
                out["lengths"] = rows_to(ids)
        return out

    def features(self, dense):
        """`(features, labels)` of dense rows (see `_dense`)."""
        width = tf.shape(dense["ids"], out_type=tf.int64)[1]

        def mask(lengths):
            return tf.sequence_mask(lengths, width, dtype=MASK_DTYPE)

        if self.task == "seq2seq":
            features = {
                "encoder_token_ids": dense["ids"],
                "encoder_padding_mask": mask(dense["lengths"]),
                "decoder_token_ids": dense["decoder_ids"],
                "decoder_padding_mask": mask(dense["decoder_lengths"]),
            }
            return features, dense["decoder_labels"]
        ids = dense["ids"]
        features = {"token_ids": ids}
        example_ids = dense.get("example_ids")
        if example_ids is not None:
            features["padding_mask"] = tf.cast(example_ids > 0, MASK_DTYPE)
        else:
            features["padding_mask"] = mask(dense["lengths"])
        if self.task == "encode":
            features["segment_ids"] = dense.get("types", tf.zeros_like(ids))
        if example_ids is not None:
            features["example_ids"] = example_ids
            features["positions"] = dense["positions"]
        if self.task == "encode":
            return features, dense.get("labels")
        return features, _lm_labels(ids, example_ids)

    # --- Serving -----------------------------------------------------------
    def serve(self, texts, fill_id=0):
        """`[N]` strings -> the features of one padded batch, for export.

        One example per row, always (`N` rows out for `N` texts): the rows
        `tokenize` gives in `"longest"` / `"max_length"` mode, with
        `example_ids` 1 on tokens and `positions` from 0 (a packed row
        holding one example). A text with no token, and no special token
        around it, becomes the one token `fill_id`, so that no row is all
        padding (a masked mean over it would be NaN).
        """
        ids = token_ids(self.tokenizer, texts)
        rows = {}
        rows["ids"], rows["lengths"], rows["truncated"] = pad_rows(
            ids,
            tf.range(ids.nrows()),
            self.capacity,
            self.start,
            self.end,
            self.max_length,
        )
        empty = tf.equal(rows["lengths"], 0)
        first = tf.equal(tf.range(self.max_length), 0)[None, :]
        rows["ids"] = tf.where(
            empty[:, None] & first, tf.constant(fill_id), rows["ids"]
        )
        rows["lengths"] = tf.maximum(rows["lengths"], 1)
        if self.batching == "longest":
            size = tf.reduce_max(tf.concat([rows["lengths"], [1]], 0))
            rows["ids"] = rows["ids"][:, :size]
        dense = self._dense(rows, None, None)
        features, _ = self.features(dense)
        mask = features["padding_mask"]
        features["example_ids"] = mask
        width = tf.shape(mask)[1]
        features["positions"] = tf.range(width)[None] * mask
        if "segment_ids" not in features:
            features["segment_ids"] = tf.zeros_like(features["token_ids"])
        return features


def cut_to_longest(features, labels=None, *rest):
    """Cuts a batch padded to `max_length` to its longest row (at least 1).

    The features of each group (`encoder_*`, `decoder_*`, or the rest) are
    cut by the group's own mask; 2-D labels follow the decoder (`seq2seq`)
    or the tokens (`lm`). `rest` (e.g. a truncation count) passes through.
    """
    cut, size = dict(features), None
    for prefix in ("", "encoder_", "decoder_"):
        mask = features.get(f"{prefix}padding_mask")
        if mask is None:
            continue
        size = tf.maximum(tf.reduce_max(tf.reduce_sum(mask, axis=1)), 1)
        for name, value in features.items():
            group = name.startswith(prefix) and (
                prefix or not name.startswith(("encoder_", "decoder_"))
            )
            if group:
                cut[name] = value[:, :size]
    # The last group found is the one the labels follow.
    if labels is not None and labels.shape.rank == 2:
        labels = labels[:, :size]
    if labels is None and not rest:
        return cut
    return (cut, labels, *rest)
