"""One example -> one row: the step shared by training and serving.

`make_dataset` and `export_text_model` both turn texts into rows here, so
the rows a model is trained on and the rows it is served cannot drift
apart: tokenize, skip empty examples, truncate (keeping room for the
special tokens), wrap in the tokenizer's template, pad, and build the
features, labels and sample weights of the task (`targets`).

`Rows` holds the validated arguments and builds the chunk functions of the
pipeline (`tokenize`, `pack`, `finalize`) and `serve`, the export's rows;
the graph ops that cut and wrap rows are in `cutting`.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._feature_names import MASK_DTYPE
from tf_input._feature_names import WEIGHT_DTYPE
from tf_input._ragged import row_ids
from tf_input.data import masking as masking_module
from tf_input.data import packing
from tf_input.data import selection
from tf_input.data import targets
from tf_input.data.cutting import check_specials
from tf_input.data.cutting import check_tokenizer
from tf_input.data.cutting import empty_text_id
from tf_input.data.cutting import pad_rows
from tf_input.data.cutting import pair_rows
from tf_input.data.cutting import select_rows
from tf_input.data.cutting import stream_separator
from tf_input.data.cutting import token_ids
from tf_input.data.question_answering import answer_spans
from tf_input.data.question_answering import qa_rows
from tf_input.data.question_answering import strip_questions
from tf_input.tokenizers._offsets import _ROW
from tf_input.tokenizers._tables import lookup_table

# Hugging Face's `doc_stride` in run_qa.py.
DEFAULT_STRIDE = 128
# Modes whose rows are padded to `max_length` as soon as they are tokenized.
PADDED = ("longest", "max_length")
# The tasks whose rows go to an encoder, with token types.
ENCODERS = ("encode", "token_classification", "question_answering", "mlm")
# The row entries with one value per row (the others: one per token).
PER_ROW = (
    "lengths",
    "decoder_lengths",
    "labels",
    "example",
    "start_positions",
    "end_positions",
    "number",
)
TRUNCATIONS = ("longest_first", "only_first", "only_second")
# What one element of the source holds.
COLUMNS = (
    "text",
    "text+label",
    "pair",
    "pair+label",
    "seq2seq",
    "words+labels",
    "text+spans",
    "question+context",
    "question+context+answer",
)


class Rows:
    """The validated row arguments, and the graph functions built from them.

    Args (keyword-only): `task`; `batching`; `max_length`; `tokenizer`;
    `target_tokenizer` (seq2seq); `add_special_tokens`; `columns`, what
    one element holds (one of `COLUMNS`); `truncation` (pairs);
    `separator` (`"stream"`: the ids put between texts, see
    `cutting.stream_separator`); `skip_empty` (False: an example with no
    token keeps its row, as served); `label_vocabulary` (string labels ->
    ids: a dict, checked by the caller); `label_all_tokens`
    (`"words+labels"`: every token of a word is a target, not only its
    first); `stride` (question answering: the tokens two windows of a
    context share; None: `DEFAULT_STRIDE`, or `max_length // 4` if less);
    `masking` (`task="mlm"`: a `masking.Masking`; the chunks of texts
    then come with each text's number in the source).
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
        separator=None,
        skip_empty=True,
        label_vocabulary=None,
        label_all_tokens=False,
        stride=None,
        masking=None,
    ):
        check_tokenizer("tokenizer", tokenizer)
        self.masking = masking
        self.task = task
        self.batching = batching
        self.max_length = max_length
        self.tokenizer = tokenizer
        self.target_tokenizer = target_tokenizer or tokenizer
        self.columns = columns
        self.truncation = truncation
        self.pairs = columns.startswith(("pair", "question"))
        self.stride = stride
        self.has_labels = columns.endswith("label")
        self.skip_empty = skip_empty
        # A row with no token is served (and kept by `skip_empty=False`)
        # as this one token, so that no row is all padding.
        self.fill_id = empty_text_id(tokenizer)
        self.label_names = dict(label_vocabulary or {})
        self.label_table = _label_table(self.label_names)
        self.label_all_tokens = label_all_tokens
        self.inside_table = _inside_table(self.label_names)
        # Rows are padded as they are cut from the texts in the padded
        # modes; `task="mlm"` keeps them ragged until masked, so that the
        # masks are drawn for the tokens only.
        self.pad_when_cut = batching in PADDED and masking is None
        self._set_specials(add_special_tokens, separator)
        if task == "seq2seq":
            self._set_target()

    def _set_specials(self, add_special_tokens, separator):
        """The special tokens around each row (a pair's template), and the
        room they leave for the text's own tokens (`capacity`)."""
        tokenizer = self.tokenizer
        if self.batching == "stream":
            start, end = stream_separator(tokenizer, separator)
        elif add_special_tokens:
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
        if self.max_length < num_specials + 1:
            raise ValueError(
                f"`max_length` must leave room for the {num_specials} "
                "special tokens and at least one token. "
                f"Received: max_length={self.max_length}."
            )
        # Room for the tokens of each row; no truncation when packing or
        # joining texts into a stream, nor of the question answering
        # windows, cut to fit already.
        self.capacity = (
            None
            if self.batching in ("pack", "stream")
            or self.task == "question_answering"
            else self.max_length - num_specials
        )
        if self.task == "question_answering" and self.stride is None:
            self.stride = min(DEFAULT_STRIDE, self.max_length // 4)

    def _set_target(self):
        """The decoder's start and end tokens (`task="seq2seq"`)."""
        check_tokenizer("target_tokenizer", self.target_tokenizer)
        target_start, target_end = check_specials(
            "target_tokenizer",
            self.target_tokenizer,
            '`task="seq2seq"` (decoder input starts with `<sos>`, '
            "labels end with `<eos>`)",
            template_ok=False,
        )
        # One token each, so that decoder inputs and labels stay aligned:
        # `<sos> t1 t2` against `t1 t2 <eos>`.
        self.target_start = target_start[:1]
        self.target_end = target_end[:1]
        if self.max_length < 2:
            raise ValueError(
                "`max_length` must leave room for the decoder's start (or "
                "end) token and at least one token. "
                f"Received: max_length={self.max_length}."
            )
        self.target_capacity = self.max_length - 1

    # --- Features ------------------------------------------------------------
    def feature_names(self):
        """The features this task and batching produce, in order."""
        return selection.feature_names(self.task, self.batching)

    def check_features(self, features):
        """The feature names to emit (None: all), from `features=`."""
        return selection.select_features(
            features,
            task=self.task,
            batching=self.batching,
            tokenizer=self.tokenizer,
        )

    # --- Chunk of lines -> rows ----------------------------------------------
    def _tokenize(self, *batch):
        """`(columns dict of ragged ids or values, kept index)`."""
        parts = {}
        if self.masking is not None and len(batch) == 2 + self.pairs:
            # Texts (or pairs) and their numbers (the chunks of
            # `make_dataset`).
            *batch, parts["number"] = batch
        if self.columns == "text":
            (texts,) = batch
        elif self.columns == "text+label":
            texts, parts["labels"] = batch
        elif self.columns == "pair":
            texts, second = batch
        elif self.columns == "pair+label":
            texts, second, parts["labels"] = batch
        elif self.columns.startswith("question"):
            return self._tokenize_questions(*batch)
        elif self.columns in ("words+labels", "text+spans"):
            if self.columns == "words+labels":
                parts = self._tokenize_words(*batch)
            else:
                parts = self._tokenize_spans(*batch)
            keep = parts["ids"].row_lengths() > 0
            if not self.skip_empty:
                keep = tf.ones_like(keep)
            return parts, tf.reshape(tf.where(keep), [-1])
        else:  # seq2seq
            texts, second = batch
        words = self.masking is not None and self.masking.whole_word_masking
        if words:
            parts["ids"], parts["token_words"] = self._words(texts)
        else:
            parts["ids"] = token_ids(self.tokenizer, texts)
        keep = parts["ids"].row_lengths() > 0
        if self.pairs and words:
            parts["second"], second_words = self._words(second)
            # The second text's words numbered after the first's.
            last = tf.maximum(tf.reduce_max(parts["token_words"], axis=1), 0)
            parts["second_words"] = second_words + last[:, None]
        elif self.pairs:
            parts["second"] = token_ids(self.tokenizer, second)
        if self.pairs:
            keep &= parts["second"].row_lengths() > 0
        if self.task == "seq2seq":
            parts["target"] = token_ids(self.target_tokenizer, second)
            keep &= parts["target"].row_lengths() > 0
        if not self.skip_empty:
            keep = tf.ones_like(keep)
        return parts, tf.reshape(tf.where(keep), [-1])

    def _tokenize_questions(self, questions, contexts, *rest):
        """`(question, context[, answer_start, answer_text], index)`
        examples -> the questions' ids, the contexts' ids and character
        offsets, and the answers' character spans; an example is kept
        when both its question and its context give tokens."""
        *answer, number = rest
        tokenizer = self.tokenizer
        parts = {"number": number}
        parts["questions"] = token_ids(tokenizer, strip_questions(questions))
        ids, starts, ends, _ = tokenizer._offset_rows(contexts, False, "char")
        parts["ids"], parts["starts"], parts["ends"] = ids, starts, ends
        if answer:
            parts["answers"], found = answer_spans(contexts, *answer)
            check = tf.debugging.Assert(
                tf.reduce_all(found),
                [
                    "An answer is not in its context at `answer_start`: "
                    "`context[answer_start:answer_start + len(answer_text)]"
                    "` must be `answer_text` (characters, not bytes). "
                    "Received (question, answer_start, answer_text):",
                    tf.boolean_mask(questions, ~found),
                    tf.boolean_mask(answer[0], ~found),
                    tf.boolean_mask(answer[1], ~found),
                ],
                summarize=3,
            )
            with tf.control_dependencies([check]):
                parts["number"] = tf.identity(number)
        keep = (parts["questions"].row_lengths() > 0) & (ids.row_lengths() > 0)
        return parts, tf.reshape(tf.where(keep), [-1])

    def _question_rows(self, parts, index):
        """The windows of the kept examples as rows (`qa_rows`)."""

        def kept(value):
            return tf.gather(value, index)

        answers = parts.get("answers")
        if answers is not None:
            answers = tuple(kept(x) for x in answers)
        context = tuple(kept(parts[k]) for k in ("ids", "starts", "ends"))
        windows, ok = qa_rows(
            kept(parts["questions"]),
            context,
            self.template,
            self.max_length,
            self.stride,
            answers,
        )
        check = tf.debugging.Assert(
            tf.reduce_all(ok),
            [
                f"max_length={self.max_length} leaves a question's context "
                f"no more than stride={self.stride} tokens a window, so "
                "its windows cannot move on (Hugging Face raises here too). "
                "Raise max_length, lower stride, or shorten the question. "
                "Question lengths in tokens:",
                tf.boolean_mask(kept(parts["questions"]).row_lengths(), ~ok),
            ],
        )
        with tf.control_dependencies([check]):
            ids = tf.identity(windows["ids"])
        count = tf.shape(windows["example"])[0]
        rows = {
            "ids": ids,
            "types": windows["types"],
            "offset_starts": windows["offset_starts"],
            "offset_ends": windows["offset_ends"],
            # + 1: fill rows (0) read as example -1.
            "example": tf.gather(kept(parts["number"]), windows["example"]) + 1,
        }
        for key in ("start_positions", "end_positions"):
            if key in windows:
                rows[key] = windows[key]
        if self.pad_when_cut:
            rows["lengths"] = ids.row_lengths()
            for key in ("ids", "types", "offset_starts", "offset_ends"):
                rows[key] = rows[key].to_tensor(
                    0, shape=[None, self.max_length]
                )
        rows["truncated"] = tf.zeros([count], tf.bool)
        return rows

    def _tokenize_words(self, words, labels):
        """`(words, labels)` sentences -> ragged `ids`, `token_labels` and
        `token_weights` (int32, 1 on a target), one row per sentence.

        Each word is tokenized alone, as Hugging Face's fast tokenizers
        do with `is_split_into_words=True`: the word's label goes on its
        first token (weight 1) and its other tokens get weight 0, or, with
        `label_all_tokens`, the same label (its `I-` form for a `B-`
        label, as `run_ner.py` does) with weight 1. A word that gives no
        token (e.g. only characters the tokenizer removes) carries no
        label, as in Hugging Face.
        """
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(words.row_lengths(), labels.row_lengths())),
            [
                "Each (words, labels) pair needs the same number of words "
                "and labels. Received pairs of lengths (words, labels):",
                words.row_lengths(),
                labels.row_lengths(),
            ],
            summarize=10,
        )
        with tf.control_dependencies([check]):
            word_labels = labels.flat_values
        if self.label_table is not None:
            word_labels = self._label_ids(word_labels)
        word_labels = tf.cast(word_labels, tf.int32)
        pieces = token_ids(self.tokenizer, words.flat_values)
        word = row_ids(pieces.row_splits)
        first = tf.equal(
            tf.range(tf.size(word, out_type=tf.int64)),
            tf.gather(pieces.row_splits, word),
        )
        token_labels = tf.gather(word_labels, word)
        if self.label_all_tokens:
            if self.inside_table is not None:
                inside = self.inside_table.lookup(token_labels)
                token_labels = tf.where(first, token_labels, inside)
            weights = tf.ones_like(token_labels)
        else:
            weights = tf.cast(first, tf.int32)
            # Under a weight of 0 the label is 0, as everywhere.
            token_labels *= weights
        splits = tf.gather(pieces.row_splits, words.row_splits)

        def sentences(values):
            return tf.RaggedTensor.from_row_splits(
                values, splits, validate=False
            )

        return {
            "ids": sentences(pieces.flat_values),
            "token_labels": sentences(token_labels),
            "token_weights": sentences(weights),
        }

    def _tokenize_spans(self, texts, starts, ends, labels):
        """Texts with labelled character spans -> ragged `ids`,
        `token_labels` (B-, I-, O by the tokens' character offsets) and
        `token_weights` (1 on every token).

        A token is in a span when their characters overlap (in the first
        of two spans it overlaps); the first token of a span gets
        `B-label`, the others `I-label`, a token in no span `O`. The
        spans of a text must be in order and apart, each `start < end`.
        """
        key_starts = starts.value_rowids() * _ROW + starts.flat_values
        key_ends = starts.value_rowids() * _ROW + ends.flat_values
        check = tf.debugging.Assert(
            tf.reduce_all(key_starts < key_ends)
            & tf.reduce_all(key_starts[1:] >= key_ends[:-1]),
            [
                "The character spans of a text must be (start, end, label) "
                "with start < end, in order and apart. Received texts:",
                texts,
            ],
            summarize=3,
        )
        with tf.control_dependencies([check]):
            texts = tf.identity(texts)
        ids, token_starts, token_ends, _ = self.tokenizer._offset_rows(
            texts, False, "char"
        )
        row = ids.value_rowids()
        # The spans, and after them one in no row that ends after all.
        span_row = tf.concat([starts.value_rowids(), [-1]], 0)
        span_start = tf.concat([starts.flat_values, [0]], 0)
        span_label = tf.concat([labels.flat_values, [""]], 0)
        span_key = tf.concat([key_ends, [tf.int64.max]], 0)
        # The first span that ends after the token starts, in its row:
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
        span = tf.where(inside, found, -1)
        previous = tf.concat([[-1], span[:-1]], 0)
        same_row = tf.concat([[False], tf.equal(row[1:], row[:-1])], 0)
        first = ~(same_row & tf.equal(previous, span))
        names = tf.where(
            inside,
            tf.where(first, "B-", "I-") + tf.gather(span_label, found),
            "O",
        )
        token_labels = self._label_ids(names)

        def rows_of(values):
            return ids.with_flat_values(values)

        return {
            "ids": ids,
            "token_labels": rows_of(token_labels),
            "token_weights": rows_of(tf.ones_like(token_labels)),
        }

    def _label_ids(self, labels):
        """String labels -> int32 ids by `label_vocabulary`; a label
        that is not in it stops the pipeline, naming it."""
        ids = self.label_table.lookup(labels)
        unknown = ids < 0
        check = tf.debugging.Assert(
            ~tf.reduce_any(unknown),
            [
                "A label is not in `label_vocabulary` "
                f"({', '.join(self.label_names)}): add it, or fix the "
                "source. Received labels:",
                tf.boolean_mask(labels, unknown),
            ],
            summarize=10,
        )
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def counts(self, *batch):
        """int64 `[3]`: the examples of `batch` skipped as empty, those
        kept, and the tokens of the kept ones with their special tokens
        (before any truncation; for single texts)."""
        parts, index = self._tokenize(*batch)
        count = tf.shape(batch[0], out_type=tf.int64)[0]
        kept = tf.size(index, out_type=tf.int64)
        lengths = tf.gather(parts["ids"].row_lengths(), index)
        specials = len(self.start) + len(self.end)
        tokens = tf.reduce_sum(lengths) + kept * specials
        return tf.stack([count - kept, kept, tokens])

    def kept(self, *batch):
        """The index of the examples of `batch` that are not skipped."""
        return self._tokenize(*batch)[1]

    def _words(self, texts):
        """`(ids, words)`: ragged token ids and int32 word ids, 1, 2, ...
        (the words of the tokenizer's pre-tokenization; 0 is left for the
        special tokens and padding around them), for whole-word masking."""
        ids, _, _, words = self.tokenizer._offset_rows(texts, False, "byte")
        return ids, tf.cast(words + 1, tf.int32)

    def tokenize(self, *batch):
        """`[C]` lines (or pairs) -> dict of rows; empty examples removed.

        `ids` (and `types` for sentence pairs): dense `[n, max_length]`
        with `lengths` in the padded modes (`pad_rows`), ragged otherwise
        (`select_rows`, `pair_rows`); `truncated`; `labels`; for seq2seq
        the decoder's rows.
        """
        parts, index = self._tokenize(*batch)
        if "questions" in parts:
            return self._question_rows(parts, index)
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
            if "token_words" in parts:
                rows["token_words"] = pair_rows(
                    parts["token_words"],
                    parts["second_words"],
                    index,
                    self.capacity,
                    self.template,
                    self.truncation,
                    special=0,
                )[0]
            if self.pad_when_cut:
                shape = [None, self.max_length]
                rows["lengths"] = ids.row_lengths()
                ids = ids.to_tensor(0, shape=shape)
                types = types.to_tensor(0, shape=shape)
                if "token_words" in rows:
                    rows["token_words"] = rows["token_words"].to_tensor(
                        0, shape=shape
                    )
            rows["ids"], rows["types"] = ids, types
        elif self.pad_when_cut:
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
        # Per-token targets follow the ids: 0 (not a target) on specials.
        for key in ("token_labels", "token_weights", "token_words"):
            if key not in parts or key in rows:
                continue
            start, end = [0] * len(self.start), [0] * len(self.end)
            if self.pad_when_cut:
                rows[key], _, _ = pad_rows(
                    parts[key],
                    index,
                    self.capacity,
                    start,
                    end,
                    self.max_length,
                )
            else:
                rows[key], _ = select_rows(
                    parts[key], index, self.capacity, start, end
                )
        if "target" in parts:
            target = (parts["target"], index, self.target_capacity)
            if self.pad_when_cut:
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
        if "number" in parts:
            rows["number"] = tf.gather(parts["number"], index)
        if "labels" in parts:
            labels = parts["labels"]
            if self.label_table is not None:
                labels = self._label_ids(labels)
            rows["labels"] = tf.gather(labels, index)
        if not self.skip_empty:
            self._fill_empty(rows)
        rows["truncated"] = truncated
        return rows

    def _fill_empty(self, rows):
        """Rows with no token get the one token `fill_id` (and 0 in the
        other per-token entries), as `export_text_model` serves an empty
        text."""
        ids = rows["ids"]
        if isinstance(ids, tf.RaggedTensor):  # `task="mlm"`: masked later
            empty = tf.cast(tf.equal(ids.row_lengths(), 0), tf.int64)
            count = tf.reduce_sum(empty)
            for key, value in rows.items():
                if not isinstance(value, tf.RaggedTensor):
                    continue
                fill = self.fill_id if key == "ids" else 0
                value = tf.RaggedTensor.from_row_lengths(
                    tf.fill([count], tf.constant(fill, value.dtype)), empty
                )
                rows[key] = tf.concat([rows[key], value], axis=1)
            return
        empty = tf.equal(rows["lengths"], 0)
        first = tf.equal(tf.range(tf.shape(ids)[1]), 0)[None, :]
        rows["ids"] = tf.where(
            empty[:, None] & first, tf.constant(self.fill_id), ids
        )
        rows["lengths"] = tf.maximum(rows["lengths"], 1)

    def pack(self, rows):
        """Packs a chunk's rows into rows of `max_length` (`"pack"` mode)."""
        ids = rows["ids"]
        extra = {}
        if self.masking is not None:
            # What the masks of each token are keyed by: its example's
            # number and its position in the whole example.
            number = tf.gather(rows["number"], ids.value_rowids())
            extra["numbers"] = tf.cast(number, tf.int32)
            extra["offsets"] = tf.cast(
                tf.ragged.range(ids.row_lengths()).flat_values, tf.int32
            )
            if "token_words" in rows:
                extra["token_words"] = tf.cast(
                    rows["token_words"].flat_values, tf.int32
                )
        packed = packing.pack_rows(ids, self.max_length, list(extra.values()))
        return {
            "ids": packed["ids"],
            "example_ids": packed["example_ids"],
            "positions": packed["positions"],
            **dict(zip(extra, packed["extra"])),
            "truncated": tf.zeros([tf.shape(packed["ids"])[0]], tf.bool),
        }

    def lengths(self, rows):
        """The padded length each row needs (its bucket key)."""
        length = rows["ids"].row_lengths()
        if "target" in rows:  # decoder rows are target + 1 long
            length = tf.maximum(length, rows["target"].row_lengths() + 1)
        return length

    # --- Rows of a batch (or chunk) -> (features, labels, weights) ---------
    def finalize(self, rows, length=None, fill=None, epoch=None):
        """Pads rows and builds the features and targets of the task.

        `length`: the padded length (int or scalar tensor), or None for
        the longest row (rows padded in `tokenize` keep their width);
        `fill`: the number of rows to fill up to with all-padding rows, or
        None; `epoch`: `task="mlm"`, the int64 key of this epoch's masks
        (`masking.epoch_values`). Returns `(features, labels, weights,
        number of truncated rows)`; labels and weights are None for
        `encode` without labels.
        """
        if self.masking is not None and epoch is not None:
            rows = self._masked_rows(rows, epoch)
        dense = self._dense(rows, length, fill)
        truncated = tf.reduce_sum(tf.cast(rows["truncated"], tf.int32))
        return (*self.features(dense, epoch), truncated)

    def _masked_rows(self, rows, epoch):
        """`task="mlm"`: `rows` with their ids masked
        (`masking.mask_tokens`), and alongside them `mask_labels`, the
        original ids of the chosen tokens (0 elsewhere), and
        `mask_weights`, 1 on the chosen tokens: ragged or dense as the
        ids. Rows of one example each come ragged (nothing is drawn for
        their padding); packed rows come dense, and each example's run of
        tokens in a row is one example of the masks."""
        ids = rows["ids"]
        words = rows.get("token_words")
        if isinstance(ids, tf.RaggedTensor):
            flat = ids.flat_values
            example = row_ids(ids.row_splits)
            number = rows["number"]
            position = tf.range(tf.size(flat, out_type=tf.int64))
            position -= tf.gather(ids.row_starts(), example)
            real = None
            if words is not None:
                words = words.flat_values
            shaped = ids.with_flat_values
        else:
            flat = tf.reshape(ids, [-1])
            group = tf.reshape(rows["example_ids"], [-1])
            width = tf.shape(ids, out_type=tf.int64)[1]
            index = tf.range(tf.size(flat, out_type=tf.int64))
            starts = tf.equal(tf.math.floormod(index, width), 0)
            starts |= tf.pad(tf.not_equal(group[1:], group[:-1]), [[1, 0]])
            example = tf.cumsum(tf.cast(starts, tf.int32)) - 1
            number = tf.gather(
                tf.reshape(rows["numbers"], [-1]), tf.where(starts)[:, 0]
            )
            position = tf.reshape(rows["offsets"], [-1])
            real = group > 0
            if words is not None:
                words = tf.reshape(words, [-1])

            def shaped(value):
                return tf.reshape(value, tf.shape(ids))

        masked, chosen = masking_module.mask_tokens(
            self.masking, flat, example, number, position, epoch, words, real
        )
        rows = dict(rows)
        rows["ids"] = shaped(masked)
        labels = tf.where(chosen, flat, tf.zeros_like(flat))
        rows["mask_labels"] = shaped(labels)
        rows["mask_weights"] = shaped(tf.cast(chosen, WEIGHT_DTYPE))
        return rows

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
                value = value.to_tensor(0, shape=shape)
                if isinstance(size, int):  # a width known when traced
                    value.set_shape([None, size])
                return value
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
            if key in PER_ROW:
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

    def features(self, dense, epoch=None):
        """`(features, labels, weights)` of dense rows (see `_dense`)."""
        width = tf.shape(dense["ids"], out_type=tf.int64)[1]

        def mask(lengths):
            return tf.sequence_mask(lengths, width, dtype=MASK_DTYPE)

        if self.task == "seq2seq":
            decoder_mask = mask(dense["decoder_lengths"])
            features = {
                "encoder_token_ids": dense["ids"],
                "encoder_padding_mask": mask(dense["lengths"]),
                "decoder_token_ids": dense["decoder_ids"],
                "decoder_padding_mask": decoder_mask,
            }
            # Labels are the target + `<eos>`, one per decoder input.
            weights = tf.cast(decoder_mask, WEIGHT_DTYPE)
            return features, dense["decoder_labels"], weights
        ids = dense["ids"]
        features = {"token_ids": ids}
        example_ids = dense.get("example_ids")
        if example_ids is not None:
            features["padding_mask"] = tf.cast(example_ids > 0, MASK_DTYPE)
        else:
            features["padding_mask"] = mask(dense["lengths"])
        if self.task in ENCODERS:
            features["segment_ids"] = dense.get("types", tf.zeros_like(ids))
        if example_ids is not None:
            features["example_ids"] = example_ids
            features["positions"] = dense["positions"]
        if self.task == "encode":
            if "labels" not in dense:
                return features, None, None
            # Every real row has a token; fill rows have none.
            weights = tf.cast(dense["lengths"] > 0, WEIGHT_DTYPE)
            return features, dense["labels"], weights
        if self.task == "token_classification":
            weights = tf.cast(dense["token_weights"], WEIGHT_DTYPE)
            return features, dense["token_labels"], weights
        if self.task == "question_answering":
            return self._question_features(features, dense)
        if self.task == "mlm":
            return self._masked_features(features, dense, epoch)
        labels, weights = targets.lm_targets(ids, dense["lengths"], example_ids)
        return features, labels, weights

    def _masked_features(self, features, dense, epoch):
        """`task="mlm"`: the ids masked (by `_masked_rows`), labels and
        weights; without an epoch key (served rows) the rows are left as
        they are."""
        if epoch is None:
            return features, None, None
        return features, dense["mask_labels"], dense["mask_weights"]

    def _question_features(self, features, dense):
        """Question answering: the features, plus `example_index` and
        `offsets`; with answers, labels and weights `{"start", "end"}`."""
        features["example_index"] = tf.cast(dense["example"] - 1, "int32")
        offsets = tf.stack([dense["offset_starts"], dense["offset_ends"]], -1)
        features["offsets"] = tf.cast(offsets - 1, "int32")
        if "start_positions" not in dense:
            return features, None, None
        weight = tf.cast(dense["lengths"] > 0, WEIGHT_DTYPE)
        labels = {
            "start": tf.cast(dense["start_positions"], "int32"),
            "end": tf.cast(dense["end_positions"], "int32"),
        }
        return features, labels, {"start": weight, "end": weight}

    # --- Serving -----------------------------------------------------------
    def serve(self, texts, offsets=False):
        """`[N]` strings -> the features of one padded batch, for export.

        One example per row, always (`N` rows out for `N` texts): the rows
        `tokenize` gives in `"longest"` / `"max_length"` mode with
        `skip_empty=False`, with `example_ids` 1 on tokens and `positions`
        from 0 (a packed row holding one example). A text with no token,
        and no special token around it, becomes the one token `fill_id`,
        so that no row is all padding (a masked mean over it would be
        NaN).

        With `offsets`, also `offsets`: int32 `[N, S, 2]`, each position's
        character span in its text (`tokenize_with_offsets(...,
        unit="char")`), -1 on special tokens and padding.
        """
        index = tf.range(tf.size(texts, out_type=tf.int64))

        def padded(values, start, end):
            return pad_rows(
                values, index, self.capacity, start, end, self.max_length
            )

        spans = []
        if offsets:
            ids, starts, ends, _ = self.tokenizer._offset_rows(
                texts, False, "char"
            )
            # + 1, padded with 0 (also on specials), - 1: -1 off the text.
            none = ([0] * len(self.start), [0] * len(self.end))
            for values in (starts, ends):
                values = values.with_flat_values(
                    tf.cast(values.flat_values, tf.int32) + 1
                )
                spans.append(padded(values, *none)[0] - 1)
        else:
            ids = token_ids(self.tokenizer, texts)
        rows = {}
        rows["ids"], rows["lengths"], rows["truncated"] = padded(
            ids, self.start, self.end
        )
        self._fill_empty(rows)
        if self.batching == "longest":
            size = tf.reduce_max(tf.concat([rows["lengths"], [1]], 0))
            rows["ids"] = rows["ids"][:, :size]
            spans = [values[:, :size] for values in spans]
        features = self.features(self._dense(rows, None, None))[0]
        if spans:
            features["offsets"] = tf.stack(spans, axis=-1)
        mask = features["padding_mask"]
        features["example_ids"] = mask
        width = tf.shape(mask)[1]
        features["positions"] = tf.range(width)[None] * mask
        if "segment_ids" not in features:
            features["segment_ids"] = tf.zeros_like(features["token_ids"])
        return features


def cut_to_longest(features, labels=None, weights=None, *rest):
    """Cuts a batch padded to `max_length` to its longest row (at least 1).

    The features of each group (`encoder_*`, `decoder_*`, or the rest) are
    cut by the group's own mask; 2-D labels and weights follow the decoder
    (`seq2seq`) or the tokens (`lm`). `rest` (e.g. a truncation count)
    passes through. Returns `(features, labels, weights, *rest)`.
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
            if group and value.shape.rank > 1:  # not per-row features
                cut[name] = value[:, :size]
    # The last group found is the one the labels follow.
    if isinstance(labels, tf.Tensor) and labels.shape.rank == 2:
        labels, weights = labels[:, :size], weights[:, :size]
    return (cut, labels, weights, *rest)


def _inside_table(label_names):
    """A table label id -> the id of its `I-` form for each `B-` label
    whose `I-` form is named too, and -> itself for every other label; or
    None when no label has both forms."""
    inside = {
        i: label_names["I-" + name[2:]]
        for name, i in label_names.items()
        if name.startswith("B-") and "I-" + name[2:] in label_names
    }
    if not inside:
        return None
    mapping = {i: inside.get(i, i) for i in label_names.values()}
    return lookup_table(
        list(mapping),
        list(mapping.values()),
        -1,
        key_dtype=tf.int32,
        value_dtype=tf.int32,
    )


def _label_table(label_names):
    """A table string label -> int32 id (-1 for a label not in it), or
    None without label names."""
    if not label_names:
        return None
    return lookup_table(
        list(label_names),
        list(label_names.values()),
        -1,
        key_dtype=tf.string,
        value_dtype=tf.int32,
    )
