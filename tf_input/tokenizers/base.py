"""The common API of every tf_input tokenizer.

A tokenizer is a Keras layer that maps strings to int32 ids with TensorFlow
ops, so it runs in `tf.data.Dataset.map`, in `tf.function` and in a
SavedModel:

* `tokenize(text)` (also `tokenizer(text)`): a scalar string gives a 1-D
  int32 tensor; a `[N]` batch gives a `tf.RaggedTensor` `[N, None]`.
* `detokenize(ids)`: 1-D ids give a scalar string; `[N, None]` ragged or
  `[N, S]` dense ids give `[N]` strings (trailing padding ids of a dense
  batch are dropped).
* `id_to_token`, `token_to_id`, `vocabulary_size()`, `get_vocabulary()` and
  `special_tokens` (name -> id) are plain Python, for inspection.

* `tokenize_with_offsets(text)`: the ids and where each token is in the
  text (its span, in bytes or in characters), and optionally the index
  of the word each token came from.

Subclasses implement `_tokenize_batch` (`[N]` strings -> ragged ids, no
special tokens), `_detokenize_batch` (ragged ids -> `[N]` strings),
`get_vocabulary`, `special_tokens`, and set `_start_ids` / `_end_ids`, the
ids that `add_special_tokens=True` puts around each sequence. Those with
offsets implement `_tokenize_with_offsets_batch` (`[N]` strings -> ragged
ids, byte starts, byte ends and word indices, no special tokens); a
family that finds character spans more cheaply than by converting the
byte spans also overrides `_tokenize_with_character_offsets_batch`.
"""

from __future__ import annotations

import numbers

import keras
import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input._validation import check_bool
from tf_input._validation import check_type
from tf_input._validation import checked_indices
from tf_input.tokenizers import _offsets
from tf_input.tokenizers import chat

OFFSET_UNITS = ("byte", "char")


class Untracked:
    """A plain holder, out of Keras' and `tf.Module`'s attribute tracking:
    traced functions (a SavedModel holds only those its exporter
    defines) and large Python data (vocabularies of 50k entries)."""


class TracedOnce:
    """`function` traced once, on first use, for `specs`, and called as
    that concrete function from then on (eagerly or inside another graph).

    A concrete function is called directly, not through a `tf.function`:
    TensorFlow counts the traces of a `tf.function` by its Python code,
    not by instance, so a process that builds five tokenizers (each with
    its own function of the same code) and calls each eagerly would be
    told "5 out of the last 5 calls ... triggered tf.function retracing";
    and a direct call also skips the argument matching of every call.
    `autograph=False`: the graph code uses `tf.cond` / `tf.while_loop`
    itself, and converting it would only slow down tracing.
    """

    def __init__(self, function, *specs):
        self._function = function
        self._specs = specs
        self._concrete = None

    def __call__(self, *args):
        if self._concrete is None:
            self._concrete = tf.function(
                self._function, autograph=False
            ).get_concrete_function(*self._specs)
        return self._concrete(*args)


def traced_graphs(tokenize_graph, detokenize_graph):
    """The `_tokenize_batch` / `_detokenize_batch` graphs of a tokenizer,
    each traced once (`[N]` strings -> int32 `[N, None]`; those ids ->
    `[N]` strings), as the `tokenize` and `detokenize` of an `Untracked`."""
    graphs = Untracked()
    graphs.tokenize = TracedOnce(
        tokenize_graph, tf.TensorSpec([None], tf.string)
    )
    graphs.detokenize = TracedOnce(
        detokenize_graph,
        tf.RaggedTensorSpec([None, None], tf.int32, 1, tf.int64),
    )
    return graphs


class _EagerPath:
    """How eager `tokenize` calls run: one traced graph, not dozens of
    eager ops, which cost many times more per call (see
    benchmarks/README.md). An empty batch needs no graph call: its result
    is always `[0, None]`.

    A plain object, so that Keras and `tf.Module` do not track the
    functions (a SavedModel holds only those its exporter defines). One
    trace per `add_special_tokens` value, so setting that attribute after
    a call is honoured; `_tokenize_batch` must depend on nothing else
    that changes after construction. Also holds the special-id mask of
    `detokenize(..., skip_special_tokens=True)`, built on first use.
    """

    def __init__(self):
        self._graphs = {}
        self._offset_graphs = {}
        self._empty = None
        self.special_mask = None

    def tokenize_with_offsets(self, tokenizer, batch, unit, specials):
        """`Tokenizer._offset_rows` as one traced graph per
        (`add_special_tokens`, `unit`)."""
        key = (specials, unit)
        graph = self._offset_graphs.get(key)
        if graph is None:

            def offsets(batch):
                return tokenizer._offset_rows(batch, *key)

            graph = TracedOnce(offsets, tf.TensorSpec([None], tf.string))
            self._offset_graphs[key] = graph
        return graph(batch)

    def tokenize_plain(self, tokenizer, batch):
        """`[N]` strings -> ragged ids without the start and end tokens
        whatever `add_special_tokens` says (a rendered chat has them)."""
        graph = self._graphs.get("plain")
        if graph is None:

            def tokenize(batch):
                return tokenizer._tokenize_rows(batch, False)

            graph = TracedOnce(tokenize, tf.TensorSpec([None], tf.string))
            self._graphs["plain"] = graph
        return graph(batch)

    def tokenize(self, tokenizer, batch):
        if batch.shape[0] == 0:
            if self._empty is None:
                self._empty = tf.RaggedTensor.from_row_splits(
                    tf.zeros([0], tf.int32),
                    tf.zeros([1], tf.int64),
                    validate=False,
                )
            return self._empty
        flag = tokenizer.add_special_tokens
        graph = self._graphs.get(flag)
        if graph is None:

            def tokenize(batch):
                # A batch of only empty strings skips the tokenizer's graph
                # (the unigram graph is much slower than sentencepiece on
                # them): an empty string has no ids, so its row is the
                # special tokens alone (checked for every family by
                # tests/tokenizers/test_eager_calls.py).
                return tf.cond(
                    tf.reduce_any(tf.strings.length(batch) > 0),
                    lambda: tokenizer._tokenize_rows(batch, flag),
                    lambda: tokenizer._special_rows(tf.size(batch), flag),
                )

            graph = TracedOnce(tokenize, tf.TensorSpec([None], tf.string))
            self._graphs[flag] = graph
        return graph(batch)


class Tokenizer(keras.layers.Layer):
    """Base class: strings in, int32 ids out, inside the TensorFlow graph.

    Args:
        add_special_tokens: bool. Put the tokenizer's start and end ids
            (e.g. `[CLS]`/`[SEP]`, `<s>`/`</s>`) around every sequence.
            Defaults to `False`.
        chat_template: str, dict from name to str, or None. The model's
            chat template (Jinja), for `apply_chat_template`; a dict holds
            named templates (`"default"`, `"tool_use"`). Defaults to
            `None` (`load_tokenizer` reads the file's own).
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.
    """

    # String ops cannot be compiled by XLA: keep tokenizers outside
    # `jit_compile` (in tf.data, or a separate tf.function).
    supports_jit = False

    def __init__(
        self, *, add_special_tokens: bool = False, chat_template=None, **kwargs
    ):
        super().__init__(**kwargs)
        self.add_special_tokens = check_bool(
            "add_special_tokens", add_special_tokens
        )
        # Out of Keras's tracking: a dict of templates stays a plain dict.
        self._chat = Untracked()
        self._chat.template = chat.check_template(chat_template)
        self._start_ids = []
        self._end_ids = []
        self._token_index = None
        self._eager = _EagerPath()

    # --- To implement -------------------------------------------------------
    def _check_ready(self):
        """Raises if the tokenizer cannot tokenize yet (a layer made by
        `from_config` that waits for its vocabulary asset)."""

    def _tokenize_batch(self, texts):
        raise NotImplementedError

    def _detokenize_batch(self, ids):
        raise NotImplementedError

    def get_vocabulary(self) -> list[str]:
        """All tokens, in id order, as a list of Python strings."""
        raise NotImplementedError

    @property
    def special_tokens(self) -> dict[str, int]:
        """Dict from role (`"pad"`, `"unk"`, `"cls"`, ...) to id."""
        raise NotImplementedError

    @property
    def uses_core_ops_only(self) -> bool:
        """True if the tokenizer's graph uses core TensorFlow ops only.

        A SavedModel holding it then loads with a plain `import
        tensorflow` (TF Serving, the C API); otherwise the loading process
        must `import tensorflow_text` first, which registers TF Text's ops.
        """
        raise NotImplementedError

    # --- Common API ---------------------------------------------------------
    @property
    def padding_id(self) -> int | None:
        """The id of the vocabulary's padding token, or None if it has none.

        GPT-2's, Llama 3's and Qwen's vocabularies have no padding token
        (id 0 is `"!"`, a real token): `padding_id` is then None, and a
        mask derived from `token_ids != 0` would hide real tokens. Use the
        pipeline's `padding_mask` instead.
        """
        return self.special_tokens.get("pad")

    @property
    def start_ids(self) -> list[int]:
        """The ids that `add_special_tokens=True` puts before a sequence.

        E.g. `[101]` (`[CLS]`) for BERT, `[128000]` for Llama 3, `[]` for a
        tokenizer whose template adds nothing in front (Qwen). The pipeline
        and `export_text_model` add these same ids.
        """
        return list(self._start_ids)

    @property
    def end_ids(self) -> list[int]:
        """The ids that `add_special_tokens=True` puts after a sequence."""
        return list(self._end_ids)

    def templates(self) -> dict[str, list]:
        """The special-token templates, `{"single": [...], "pair": [...]}`.

        Each item is `(piece, type_id)`: `piece` is an int (a special id) or
        `"$A"` / `"$B"` (the first / second text); `type_id` is the token
        type given to it (BERT's sentence A = 0, B = 1). The default is
        `start $A end` and `start $A end $B end`, with type 1 from `$B` on;
        tokenizers loaded from a `tokenizer.json` give its post-processor's.
        """
        if getattr(self, "_templates", None) is not None:
            return {k: list(v) for k, v in self._templates.items()}
        start = [(i, 0) for i in self._start_ids]
        end = [(i, 0) for i in self._end_ids]
        return {
            "single": [*start, ("$A", 0), *end],
            "pair": [
                *start,
                ("$A", 0),
                *end,
                ("$B", 1),
                *[(i, 1) for i in self._end_ids],
            ],
        }

    def __call__(self, inputs, *args, **kwargs):
        # Keras takes only tensors positionally; accept str and lists too.
        if isinstance(inputs, (str, bytes, list, tuple)):
            inputs = tf.convert_to_tensor(inputs, tf.string)
        if (
            not args
            and not kwargs
            and tf.executing_eagerly()
            and isinstance(inputs, tf.Tensor)
            and inputs.dtype == tf.string
            and inputs.shape.as_list() == [0]
        ):
            # The empty request: its answer is a constant, without the
            # Python of Keras's `__call__` (~0.3 ms, the whole cost).
            return self.tokenize(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        return self.tokenize(inputs)

    def tokenize(self, text) -> tf.Tensor | tf.RaggedTensor:
        """Tokenizes a scalar string (-> 1-D ids) or a `[N]` batch (-> ragged).

        Args:
            text: str, list of str, or string tensor of rank 0 or 1.

        Returns:
            int32 tensor `[S]` for a scalar, `tf.RaggedTensor` `[N, None]`
            for a batch.
        """
        self._check_ready()
        batch, rank = self._batch_of(text, "tokenize")
        if tf.executing_eagerly():
            ids = self._eager.tokenize(self, batch)
        else:
            ids = self._tokenize_rows(batch, self.add_special_tokens)
        return ids[0] if rank == 0 else ids

    def _batch_of(self, text, method):
        """`text` as a `[N]` string tensor, and its rank (0 or 1)."""
        text = tf.convert_to_tensor(text)
        if text.dtype != tf.string:
            raise TypeError(
                f"{type(self).__name__}.{method} expects strings. "
                f"Received: text with dtype {text.dtype.name}."
            )
        rank = text.shape.rank
        if rank not in (0, 1):
            raise ValueError(
                f"{type(self).__name__}.{method} expects a scalar string or "
                f"a 1-D batch [N]. Received: text with shape {text.shape}. "
                "Reshape to [N] first, e.g. `tf.reshape(text, [-1])`."
            )
        return (text[None] if rank == 0 else text), rank

    def tokenize_with_offsets(
        self,
        text,
        unit: str = "byte",
        return_word_ids: bool = False,
        is_split_into_words: bool = False,
    ) -> tuple:
        """Tokenizes, and says where in the text each token is.

        The ids are those of `tokenize`. Each token also gets a span
        `[start, end)` of the input: in bytes of its UTF-8 (`unit="byte"`,
        TF Text's `tokenize_with_offsets` convention), or in characters
        (`unit="char"`, code points: Hugging Face's `encoding.offsets`
        for a Python `str`). A token holding only part of a character (a
        byte-level token inside an emoji) gets its own bytes, and in
        characters the whole character, as HF gives it. Through a
        normalizer a token gets the span that HF's alignments give it
        (NFC composing `e` + U+0301 into `é` aligns it with the `e`).
        Special tokens added by `add_special_tokens` get `(0, 0)`.
        Invalid UTF-8 is read as `bytes.decode("utf-8", "replace")` reads
        it: byte spans are in the bytes given (a U+FFFD of the repair
        covers the bytes it replaced), and characters count one per
        replaced run.

        Args:
            text: str, list of str, or string tensor of rank 0 or 1.
            unit: `"byte"` or `"char"`. Defaults to `"byte"`.
            return_word_ids: bool. Also return, per token, the index of
                the word it comes from in its text (the pieces of the
                pre-tokenizer, an added token being one: HF's
                `encoding.word_ids`), -1 for a special token added by
                `add_special_tokens`. Defaults to `False`.
            is_split_into_words: bool. `text` is words: a list of str (one
                text), a list of lists of str or a string tensor `[N,
                None]` (a batch). Each word is tokenized alone, its spans
                are in the word, and a token's word id is the index of
                its word in the input (Hugging Face's
                `is_split_into_words=True`). Defaults to `False`.

        Returns:
            `(ids, starts, ends)`, or `(ids, starts, ends, word_ids)`:
            int32 ids as `tokenize` gives them (`[S]` for a scalar,
            `tf.RaggedTensor` `[N, None]` for a batch), and int64
            offsets and word indices of the same shape.

        Example:

        >>> vocab = {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5,
        ...          "abc": 6, "<|endoftext|>": 7}
        >>> tokenizer = tf_input.tokenizers.BytePairTokenizer(
        ...     vocab, ["a b", "Ġ ab", "ab c"])
        >>> ids, starts, ends, words = tokenizer.tokenize_with_offsets(
        ...     "abc abc", return_word_ids=True)
        >>> ids.numpy(), starts.numpy(), ends.numpy(), words.numpy()
        (array([6, 5, 2], dtype=int32), array([0, 3, 6]), array([3, 6, 7]), array([0, 1, 1]))
        >>> _, starts, ends = tokenizer.tokenize_with_offsets(
        ...     ["ab", "€ ab"], unit="char")
        >>> starts.to_list(), ends.to_list()
        ([[0], [1]], [[2], [4]])

        (The toy vocabulary has no symbol for the bytes of "€", which are
        dropped, as HF does without an unknown token; " ab" is at
        characters 1 to 4 of "€ ab", 3 to 6 of its bytes.)
        """  # noqa: E501
        self._check_ready()
        if unit not in OFFSET_UNITS:
            raise ValueError(
                f"`unit` must be one of {OFFSET_UNITS}. Received: "
                f"unit={unit!r}."
            )
        return_word_ids = check_bool("return_word_ids", return_word_ids)
        if check_bool("is_split_into_words", is_split_into_words):
            outputs, rank = self._offsets_of_words(text, unit)
        else:
            batch, rank = self._batch_of(text, "tokenize_with_offsets")
            outputs = self._offsets_of_texts(
                batch, unit, self.add_special_tokens
            )
        if rank == 0:
            outputs = tuple(x[0] for x in outputs)
        return tuple(outputs) if return_word_ids else tuple(outputs[:3])

    def _offsets_of_texts(self, batch, unit, add_special_tokens):
        if tf.executing_eagerly():
            return self._eager.tokenize_with_offsets(
                self, batch, unit, add_special_tokens
            )
        return self._offset_rows(batch, add_special_tokens, unit)

    def _offsets_of_words(self, words, unit):
        """`tokenize_with_offsets(..., is_split_into_words=True)`: every
        word tokenized alone, the rows of a text's words joined, word ids
        the words' indices. Returns `(outputs, rank)`: rank 0 for one
        text (a list of words), 1 for a batch."""
        words, rank = _words_of(words)
        ids, starts, ends, _ = self._offsets_of_texts(
            words.flat_values, unit, False
        )
        word = ids.value_rowids()  # the flat index of each token's word
        first = tf.gather(words.row_splits, words.value_rowids())
        word_ids = word - tf.gather(first, word)
        splits = tf.gather(ids.row_splits, words.row_splits)
        outputs = [
            tf.RaggedTensor.from_row_splits(x, splits, validate=False)
            for x in (ids.flat_values, starts.flat_values, ends.flat_values)
        ]
        outputs.append(outputs[0].with_flat_values(word_ids))
        if self.add_special_tokens and (self._start_ids or self._end_ids):
            outputs = [
                self._wrap(x, fill)
                for x, fill in zip(outputs, [None, 0, 0, -1])
            ]
        return outputs, rank

    def _tokenize_with_offsets_batch(self, texts):
        raise NotImplementedError(
            f"{type(self).__name__} does not give offsets: "
            "`tokenize_with_offsets` needs `_tokenize_with_offsets_batch`, "
            "which every tokenizer family of tf_input implements; a "
            "subclass of `Tokenizer` implements it to give them."
        )

    def _tokenize_with_character_offsets_batch(self, texts):
        """`_tokenize_with_offsets_batch` with the spans in code points
        (`bytes.decode("utf-8", "replace")`'s): by default the byte spans,
        converted."""
        ids, starts, ends, words = self._tokenize_with_offsets_batch(texts)
        starts = tf.cast(starts, tf.int64).with_row_splits_dtype(tf.int64)
        first, last = _offsets.to_characters(
            texts,
            starts.flat_values,
            tf.cast(ends.flat_values, tf.int64),
            row_ids(starts.row_splits),
        )
        return (
            ids,
            starts.with_flat_values(first),
            starts.with_flat_values(last),
            words,
        )

    def _offset_rows(self, batch, add_special_tokens, unit):
        ids, starts, ends, words = (
            self._tokenize_with_character_offsets_batch(batch)
            if unit == "char"
            else self._tokenize_with_offsets_batch(batch)
        )
        ids = tf.cast(ids, "int32").with_row_splits_dtype(tf.int64)
        starts = tf.cast(starts, tf.int64).with_row_splits_dtype(tf.int64)
        ends = tf.cast(ends, tf.int64).with_row_splits_dtype(tf.int64)
        words = tf.cast(words, tf.int64).with_row_splits_dtype(tf.int64)
        if add_special_tokens and (self._start_ids or self._end_ids):
            ids = self._wrap(ids)
            starts = self._wrap(starts, 0)
            ends = self._wrap(ends, 0)
            words = self._wrap(words, -1)
        return ids, starts, ends, words

    def _tokenize_rows(self, batch, add_special_tokens):
        ids = tf.cast(self._tokenize_batch(batch), "int32")
        if add_special_tokens and (self._start_ids or self._end_ids):
            ids = self._wrap(ids)
        return ids.with_row_splits_dtype(tf.int64)

    def _special_rows(self, nrows, add_special_tokens):
        """`nrows` rows of what an empty string gives: its special tokens."""
        ids = self._start_ids + self._end_ids if add_special_tokens else []
        row = tf.constant(ids, tf.int32, shape=[len(ids)])
        return tf.RaggedTensor.from_row_lengths(
            tf.tile(row, [nrows]),
            tf.fill([nrows], tf.constant(len(ids), tf.int64)),
            validate=False,
        )

    def _wrap(self, ids, fill=None):
        """Puts `_start_ids` before and `_end_ids` after every row (or as
        many `fill` values, for offsets and word indices)."""

        def constant_rows(values):
            row = tf.constant(values, ids.dtype)[None]
            return tf.RaggedTensor.from_tensor(tf.tile(row, [ids.nrows(), 1]))

        start, end = self._start_ids, self._end_ids
        if fill is not None:
            start, end = [fill] * len(start), [fill] * len(end)
        parts = [ids]
        if start:
            parts.insert(0, constant_rows(start))
        if end:
            parts.append(constant_rows(end))
        return tf.concat(parts, axis=1)

    def detokenize(self, ids, skip_special_tokens: bool = False) -> tf.Tensor:
        """Turns ids back into text.

        Args:
            ids: 1-D int tensor `[S]`, dense `[N, S]` (trailing padding ids
                are dropped), or `tf.RaggedTensor` `[N, None]`.
            skip_special_tokens: bool. Leave out the special tokens (HF's
                `decode(ids, skip_special_tokens=True)`: a `tokenizer.json`'s
                added tokens marked special; otherwise the ids of
                `special_tokens`). Defaults to `False`.

        Returns:
            A scalar string tensor for 1-D ids, else `[N]` strings.
        """
        self._check_ready()
        skip_special_tokens = check_bool(
            "skip_special_tokens", skip_special_tokens
        )
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            raise TypeError(
                f"{type(self).__name__}.detokenize expects integer ids. "
                f"Received: ids with dtype {ids.dtype.name}."
            )
        scalar = not isinstance(ids, tf.RaggedTensor) and ids.shape.rank == 1
        if scalar:
            ids = tf.RaggedTensor.from_tensor(ids[None])
        elif not isinstance(ids, tf.RaggedTensor):
            if ids.shape.rank != 2:
                raise ValueError(
                    f"{type(self).__name__}.detokenize expects ids of shape "
                    f"[S], [N, S] or ragged [N, None]. Received: ids with "
                    f"shape {ids.shape}."
                )
            pad = self.special_tokens.get("pad")
            ids = tf.RaggedTensor.from_tensor(ids, padding=pad)
        # Checked in their own dtype, then cast: an int64 id of 2**32 + 5
        # is an error, never id 5.
        checked, _ = checked_indices(
            ids.flat_values,
            self.vocabulary_size(),
            f"{type(self).__name__}.detokenize got ids outside "
            f"[0, vocabulary_size={self.vocabulary_size()}).",
            what="id",
        )
        ids = ids.with_flat_values(checked)
        if skip_special_tokens:
            keep = ~tf.gather(self._special_id_mask(), ids.flat_values)
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(keep))
        text = self._detokenize_batch(ids)
        return text[0] if scalar else text

    def _special_ids(self):
        """The ids `detokenize(..., skip_special_tokens=True)` leaves out:
        those of `special_tokens`. A `tokenizer.json` tokenizer gives its
        added tokens marked special instead."""
        return sorted(set(self.special_tokens.values()))

    def _special_id_mask(self):
        """bool `[vocabulary_size]`, True at `_special_ids()`; built once,
        outside any graph, so every graph captures the same constant."""
        if self._eager.special_mask is None:
            mask = np.zeros(self.vocabulary_size(), bool)
            mask[list(self._special_ids())] = True
            with tf.init_scope():
                self._eager.special_mask = tf.constant(mask)
        return self._eager.special_mask

    def vocabulary_size(self) -> int:
        """Number of ids, `max id + 1`."""
        return len(self.get_vocabulary())

    def _index(self):
        if self._token_index is None:
            self._token_index = {
                token: i for i, token in enumerate(self.get_vocabulary())
            }
        return self._token_index

    def id_to_token(self, id: int) -> str:
        """The token string of `id` (Python int)."""
        vocabulary = self.get_vocabulary()
        check_type("id", id, numbers.Integral, "an integer")
        if not 0 <= id < len(vocabulary):
            raise ValueError(
                f"`id` must be in [0, vocabulary_size={len(vocabulary)}). "
                f"Received: id={id!r}."
            )
        return vocabulary[int(id)]

    def token_to_id(self, token: str) -> int:
        """The id of `token` (Python str); an error if it is not a token."""
        index = self._index()
        if token not in index:
            raise ValueError(
                f"{token!r} is not in the vocabulary of this "
                f"{type(self).__name__} ({len(index)} tokens)."
            )
        return index[token]

    def __repr__(self):
        # A repr never raises: a layer that waits for its vocabulary (or a
        # `VocabularyTokenizer` before `adapt`) says so instead.
        family = type(self).__name__
        try:
            size = self.vocabulary_size()
            special = self.special_tokens
        except ValueError:
            return f"<{family} name={self.name!r}, no vocabulary yet>"
        return (
            f"<{family} name={self.name!r}, vocabulary_size={size}, "
            f"special_tokens={special}, "
            f"core_ops_only={self.uses_core_ops_only}>"
        )

    def compute_output_spec(self, inputs):
        # Keras gives shapes as tuples here, not `tf.TensorShape`.
        if len(inputs.shape) == 0:
            return keras.KerasTensor((None,), dtype="int32")
        return keras.KerasTensor(
            (inputs.shape[0], None), dtype="int32", ragged=True
        )

    # --- Chat templates ------------------------------------------------------
    @property
    def chat_template(self):
        """The chat template (Jinja str), a dict of named templates, or
        None. Settable; saved in the config."""
        return self._chat.template

    @chat_template.setter
    def chat_template(self, value):
        self._chat.template = chat.check_template(value)

    def chat_variables(self) -> dict[str, str]:
        """The special tokens a chat template sees, as `transformers`
        passes them: `bos_token`, `eos_token`, `unk_token`, `pad_token`,
        ... (the token strings of `special_tokens`' roles)."""
        vocabulary = self.get_vocabulary()
        return {
            chat.TOKEN_VARIABLES[role]: vocabulary[i]
            for role, i in self.special_tokens.items()
            if role in chat.TOKEN_VARIABLES
        }

    def apply_chat_template(
        self,
        messages,
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        tools=None,
        documents=None,
        chat_template=None,
        **template_kwargs,
    ):
        """Renders a conversation with the model's chat template, and
        tokenizes it.

        The same text and ids as `transformers`' `apply_chat_template(
        messages, tokenize=True)`: the template is rendered by Jinja in a
        sandbox as `transformers` renders it (see `tf_input.tokenizers.
        chat`), with the tokenizer's special tokens (`bos_token`,
        `eos_token`, ...; `template_kwargs` of the same names win), and
        the text is tokenized without the tokenizer's own start and end
        tokens (the template writes them). Special tokens in the text
        (`<|im_start|>`) become their ids.

        Args:
            messages: a conversation (list of `{"role", "content", ...}`
                dicts, or a `{"messages": [...]}` record), or a list of
                conversations.
            add_generation_prompt: bool. End with the header of an
                assistant turn (the prompt of a generation). Defaults to
                `False`.
            tokenize: bool. Return ids; `False` returns the text.
                Defaults to `True`.
            tools: list of JSON-schema dicts, or None. Given to the
                template as `tools`.
            documents: list of dicts, or None. Given as `documents`.
            chat_template: str or None. A template, or the name of one
                of the tokenizer's named templates, instead of its own.
            **template_kwargs: more variables for the template (e.g.
                `enable_thinking=False` for Qwen 3).

        Returns:
            For one conversation: int32 ids `[S]` (or a Python str with
            `tokenize=False`); for a list of conversations: a
            `tf.RaggedTensor` `[N, None]` (or a list of str).

        Raises:
            ChatTemplateError: (a `ValueError`) the tokenizer has no
                template, or the template refuses the conversation (its
                `raise_exception` message is quoted).
            ImportError: `jinja2` is not installed (the `chat` extra).
        """
        texts, batched = self._render_chat(
            messages,
            add_generation_prompt=add_generation_prompt,
            tools=tools,
            documents=documents,
            chat_template=chat_template,
            **template_kwargs,
        )
        if not check_bool("tokenize", tokenize):
            return texts if batched else texts[0]
        self._check_ready()
        ids = self._eager.tokenize_plain(self, tf.constant(texts, tf.string))
        return ids if batched else ids[0]

    def _render_chat(
        self,
        messages,
        *,
        add_generation_prompt=False,
        tools=None,
        documents=None,
        chat_template=None,
        **template_kwargs,
    ):
        """`([text], batched)`: the rendered conversations."""
        add_generation_prompt = check_bool(
            "add_generation_prompt", add_generation_prompt
        )
        template = chat.pick_template(self.chat_template, chat_template, tools)
        batched = (
            isinstance(messages, (list, tuple))
            and len(messages) > 0
            and (
                isinstance(messages[0], (list, tuple))
                or (isinstance(messages[0], dict) and "messages" in messages[0])
            )
        )
        conversations = messages if batched else [messages]
        variables = {**self.chat_variables(), **template_kwargs}
        texts = []
        for conversation in conversations:
            normalized = chat.normalize_conversation(conversation)
            if not normalized:
                raise ValueError(
                    "Cannot apply a chat template to an empty conversation: "
                    "give at least one message."
                )
            texts.append(
                chat.render(
                    template,
                    normalized,
                    add_generation_prompt=add_generation_prompt,
                    tools=tools,
                    documents=documents,
                    variables=variables,
                )
            )
        return texts, batched

    def get_config(self):
        config = {
            **super().get_config(),
            "add_special_tokens": self.add_special_tokens,
        }
        if self.chat_template is not None:
            config["chat_template"] = self.chat_template
        return config


def _words_of(words):
    """`tokenize_with_offsets`'s `is_split_into_words` input -> (string
    ragged `[N, None]`, rank): rank 0 for one text's words (a list of str
    or a 1-D tensor), 1 for a batch (a list of lists, a ragged or dense
    2-D tensor)."""
    what = (
        "With `is_split_into_words=True`, `text` is words: a list of str "
        "(one text), a list of lists of str or a string tensor [N, None] (a "
        "batch)."
    )
    if isinstance(words, (str, bytes)):
        raise ValueError(f"{what} Received the string {words!r}.")
    if isinstance(words, (list, tuple)):
        nested = [isinstance(w, (list, tuple)) for w in words]
        if any(nested) and not all(nested):
            raise ValueError(f"{what} Received a list mixing words and lists.")
        if all(nested) and words:
            flat = [w for text in words for w in text]
            lengths = [len(text) for text in words]
            rank = 1
        else:
            flat, lengths, rank = list(words), [len(words)], 0
        if not all(isinstance(w, (str, bytes)) for w in flat):
            bad = next(w for w in flat if not isinstance(w, (str, bytes)))
            raise ValueError(f"{what} Received a word {bad!r}.")
        values = tf.constant(flat, tf.string, shape=[len(flat)])
        return tf.RaggedTensor.from_row_lengths(
            values, tf.constant(lengths, tf.int64)
        ), rank
    if isinstance(words, tf.RaggedTensor):
        ragged = words
    else:
        ragged = tf.convert_to_tensor(words)
    if ragged.dtype != tf.string or ragged.shape.rank not in (1, 2):
        raise ValueError(
            f"{what} Received a {ragged.dtype.name} tensor of shape "
            f"{ragged.shape}."
        )
    if ragged.shape.rank == 1:
        if isinstance(ragged, tf.RaggedTensor):
            raise ValueError(f"{what} Received a ragged tensor of rank 1.")
        return tf.RaggedTensor.from_tensor(ragged[None]), 0
    if not isinstance(ragged, tf.RaggedTensor):
        ragged = tf.RaggedTensor.from_tensor(ragged)
    return ragged.with_row_splits_dtype(tf.int64), 1
