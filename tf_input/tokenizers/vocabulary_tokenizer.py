"""The tutorials' tokenizer: split text, look each piece up in a vocabulary."""

from __future__ import annotations

import collections

import keras
import tensorflow as tf

from tf_input._ragged import repeat
from tf_input._ragged import row_ids
from tf_input._validation import check_bool
from tf_input._validation import check_one_of
from tf_input._validation import check_type
from tf_input.tokenizers._assets import FROM_ASSETS
from tf_input.tokenizers._assets import TokenListAsset
from tf_input.tokenizers._offsets import char_spans
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers.base import Tokenizer

SPLITS = ("whitespace", "character", "whitespace_digits")
# Python's str.split() splits on Unicode whitespace; RE2's \s lacks \v,
# so add the Unicode separators (\p{Z}) and the other White_Space controls.
_WHITESPACE = r"[\s\x{0b}\p{Z}\x{85}\x{1c}-\x{1f}]+"


@keras.saving.register_keras_serializable(package="tf_input")
class VocabularyTokenizer(TokenListAsset, Tokenizer):
    """Splits text into words or characters and maps each to its id.

    The tokenizer of the "write a Transformer by hand" tutorials, in the
    graph. `split` chooses the pieces:

    * `"whitespace"`: words separated by any Unicode whitespace.
    * `"character"`: every Unicode character except whitespace (e.g. for
      Chinese).
    * `"whitespace_digits"`: words, but a word that is not in the vocabulary
      and is a number (ASCII digits only) is split into its digits:
      `"BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"` ->
      `BOS NEGATIVE 3 0 subtract NEGATIVE 3 4 EOS`.

    `adapt(texts)` builds the vocabulary: the four `specials` first (ids 0 to
    3), then every piece in the order it is first seen (with
    `"whitespace_digits"`, numbers contribute their digits). A piece not in
    the vocabulary maps to the unknown token. `detokenize` joins the pieces
    with a space (with `""` for `"character"`), so split numbers come back as
    separate digits.

    A `.keras` file keeps the vocabulary as an asset (`vocabulary.json`;
    the config holds its SHA-256). A tokenizer saved before `adapt` has
    no vocabulary in its config or its file (its digest is None), and is
    loaded without one.

    Args:
        vocabulary: list of str or None. All tokens in id order, which must
            contain the four `specials`; None to build it later with
            `adapt`. Defaults to `None`.
        split: str, one of `"whitespace"`, `"character"`,
            `"whitespace_digits"`. Defaults to `"whitespace"`.
        specials: tuple of 4 str, the padding, start, end and unknown tokens,
            in that order. Defaults to `("<pad>", "<sos>", "<eos>", "<unk>")`.
        lowercase: bool. Lowercase the text first. Defaults to `False`.
        add_special_tokens: bool. Wrap every sequence in the start and end
            tokens. Defaults to `False`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a scalar string or a `[N]` batch of strings.

    Returns:
        int32 ids `[S]` for a scalar, `tf.RaggedTensor` `[N, None]` for a
        batch.

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer(split="whitespace_digits")
    >>> tokenizer.adapt(["BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"])
    >>> tokenizer.get_vocabulary()[4:]
    ['BOS', 'NEGATIVE', '3', '0', 'subtract', '4', 'EOS']
    >>> tokenizer("BOS NEGATIVE 30 subtract NEGATIVE 34 EOS").numpy().tolist()
    [4, 5, 6, 7, 8, 5, 6, 9, 10]
    >>> tokenizer.detokenize([4, 5, 6, 7, 2]).numpy().decode()
    'BOS NEGATIVE 3 0 <eos>'
    """

    def __init__(
        self,
        vocabulary: list[str] | None = None,
        *,
        split: str = "whitespace",
        specials: tuple[str, str, str, str] = (
            "<pad>",
            "<sos>",
            "<eos>",
            "<unk>",
        ),
        lowercase: bool = False,
        add_special_tokens: bool = False,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        self.split = check_one_of("split", split, SPLITS)
        self.specials = _checked_specials(specials)
        self.lowercase = check_bool("lowercase", lowercase)
        self._init_asset()
        self._vocabulary = None
        # `FROM_ASSETS`: `from_config` of a config that names the
        # vocabulary by digest (or of one taken before `adapt`).
        if vocabulary is not None and vocabulary is not FROM_ASSETS:
            self.set_vocabulary(vocabulary)

    # --- Vocabulary ---------------------------------------------------------
    def set_vocabulary(self, vocabulary: list[str]) -> None:
        """Sets the vocabulary: all tokens in id order, specials included."""
        check_type(
            "vocabulary", vocabulary, (list, tuple), "a list of token strings"
        )
        for i, token in enumerate(vocabulary):
            check_type(f"vocabulary[{i}]", token, str, "a token string")
        vocabulary = list(vocabulary)
        missing = [s for s in self.specials if s not in vocabulary]
        counts = collections.Counter(vocabulary)
        duplicates = sorted(t for t, n in counts.items() if n > 1)
        if missing or duplicates:
            raise ValueError(
                "`vocabulary` must contain each of the specials "
                f"{self.specials} and no token twice. Missing: {missing}. "
                f"Duplicated: {duplicates[:10]}."
            )
        self._vocabulary = vocabulary
        self._token_index = None
        self._lookup = lookup_table(
            vocabulary,
            range(len(vocabulary)),
            self._index()[self.specials[3]],
            key_dtype=tf.string,
            value_dtype=tf.int32,
        )
        self._tokens = tf.constant(vocabulary)
        roles = dict(zip(("pad", "bos", "eos", "unk"), self.specials))
        self._start_ids = [self._index()[roles["bos"]]]
        self._end_ids = [self._index()[roles["eos"]]]
        self._vocabulary_changed()

    def adapt(self, texts, batch_size: int = 1024) -> None:
        """Builds the vocabulary from texts: specials, then first-seen order.

        Args:
            texts: an iterable of str, a `[N]` string array, or a
                `tf.data.Dataset` of scalar strings.
            batch_size: int. Strings split per TensorFlow call.
        """
        if isinstance(texts, tf.data.Dataset):
            batches = texts.batch(batch_size).as_numpy_iterator()
        else:
            texts = [texts] if isinstance(texts, str) else list(texts)
            batches = (
                texts[i : i + batch_size]
                for i in range(0, len(texts), batch_size)
            )
        # A dict keeps first-seen order; fromkeys/update run in C.
        seen = dict.fromkeys(s.encode("utf-8") for s in self.specials)
        for batch in batches:
            pieces = self._pieces(tf.constant(batch, tf.string), known=None)
            seen.update(dict.fromkeys(pieces.flat_values.numpy().tolist()))
        self.set_vocabulary([token.decode("utf-8") for token in seen])

    def get_vocabulary(self) -> list[str]:
        self._check_ready()
        if self._vocabulary is None:
            raise ValueError(self._no_vocabulary())
        return list(self._vocabulary)

    def vocabulary_size(self) -> int:
        return len(self.get_vocabulary())

    @property
    def special_tokens(self) -> dict[str, int]:
        index = self._index()
        roles = ("pad", "bos", "eos", "unk")
        return {r: index[s] for r, s in zip(roles, self.specials)}

    @property
    def uses_core_ops_only(self) -> bool:
        """True: splitting and lookup are core TensorFlow ops."""
        return True

    def _no_vocabulary(self):
        return (
            "This VocabularyTokenizer has no vocabulary yet. Pass "
            "`vocabulary=[...]` or call `adapt(texts)` first."
        )

    # --- Graph --------------------------------------------------------------
    def _pieces(self, texts, known):
        """`[N]` strings -> ragged `[N, None]` string pieces.

        `known` is a lookup table (numbers in it stay whole) or None (adapt:
        every number is split).
        """
        if self.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        if self.split == "character":
            # One regex pass per line, not one match per character.
            texts = tf.strings.regex_replace(texts, _WHITESPACE, "")
            return tf.strings.unicode_split(texts, "UTF-8", errors="replace")
        words = tf.strings.split(
            tf.strings.strip(tf.strings.regex_replace(texts, _WHITESPACE, " "))
        )
        if self.split == "whitespace":
            return words
        flat = words.flat_values
        number = tf.strings.regex_full_match(flat, "[0-9]+")
        if known is not None:
            unknown = known.lookup(flat) == known.default_value
            number = tf.logical_and(number, unknown)
        # "30" -> "3 0 " for numbers to split, then split every word on " ".
        spaced = tf.strings.regex_replace(flat, "([0-9])", r"\1 ")
        flat = tf.where(number, spaced, flat)
        return words.with_flat_values(tf.strings.split(flat)).merge_dims(1, 2)

    def _tokenize_batch(self, texts):
        if self._vocabulary is None:
            raise ValueError(self._no_vocabulary())
        pieces = self._pieces(texts, known=self._lookup)
        return tf.ragged.map_flat_values(self._lookup.lookup, pieces)

    def _tokenize_with_offsets_batch(self, texts):
        """`tokenize`'s ids, and the byte span of each piece in the text.

        The spans come from the text's characters: a piece is a run of
        characters that are not whitespace (`"whitespace"`), one digit of
        a number it splits (`"whitespace_digits"`), or one character
        (`"character"`; lowercasing that gives two characters for one,
        `"İ"` -> `"i̇"`, gives both its span). A word is a run of
        non-whitespace characters (one character for `"character"`).
        """
        if self._vocabulary is None:
            raise ValueError(self._no_vocabulary())
        ids = self._tokenize_batch(texts)
        starts, ends, splits = char_spans(texts, replace=True)
        rows = row_ids(splits)
        chars = tf.strings.substr(tf.gather(texts, rows), starts, ends - starts)
        kept = ~tf.strings.regex_full_match(chars, _WHITESPACE)
        if self.split == "character":
            count = tf.ones_like(starts)
            if self.lowercase:
                lowered = tf.strings.lower(chars, encoding="utf-8")
                count = tf.strings.length(lowered, unit="UTF8_CHAR")
            count = tf.where(kept, tf.cast(count, tf.int64), 0)
            pieces = tf.repeat(tf.range(tf.size(starts, tf.int64)), count)
            piece_starts = tf.gather(starts, pieces)
            piece_ends = tf.gather(ends, pieces)
            piece_rows = tf.gather(rows, pieces)
            # Each character is a word: its index among the row's kept ones.
            before = tf.cumsum(tf.cast(kept, tf.int64), exclusive=True)
            words = tf.gather(before, pieces) - tf.gather(
                before, tf.gather(splits, piece_rows)
            )
        else:
            piece_starts, piece_ends, piece_rows, words = self._word_spans(
                texts, starts, ends, rows, kept
            )
        counts = tf.math.unsorted_segment_sum(
            tf.ones_like(piece_rows), piece_rows, tf.size(texts)
        )
        with tf.control_dependencies(
            [
                tf.debugging.assert_equal(
                    counts,
                    ids.row_lengths(),
                    message="VocabularyTokenizer: the offsets found a "
                    "different number of pieces than the ids",
                )
            ]
        ):
            piece_splits = tf.concat([[0], tf.cumsum(counts)], 0)
        return tuple(
            tf.RaggedTensor.from_row_splits(
                values, piece_splits, validate=False
            )
            for values in (ids.flat_values, piece_starts, piece_ends, words)
        )

    def _word_spans(self, texts, starts, ends, rows, kept):
        """Pieces of `"whitespace"` and `"whitespace_digits"`: the runs of
        kept characters, numbers split into their digits where asked."""
        same_row_before = tf.concat([[False], rows[1:] == rows[:-1]], 0)
        same_row_after = tf.concat([rows[1:] == rows[:-1], [False]], 0)
        kept_before = tf.concat([[False], kept[:-1]], 0) & same_row_before
        kept_after = tf.concat([kept[1:], [False]], 0) & same_row_after
        word_starts = tf.boolean_mask(starts, kept & ~kept_before)
        word_ends = tf.boolean_mask(ends, kept & ~kept_after)
        word_rows = tf.boolean_mask(rows, kept & ~kept_before)
        # A word's index in its row.
        row_first = tf.concat([[True], word_rows[1:] != word_rows[:-1]], 0)
        index = tf.range(tf.size(word_rows, tf.int64))
        words = index - tf.gather(
            tf.boolean_mask(index, row_first),
            tf.cumsum(tf.cast(row_first, tf.int64)) - 1,
        )
        if self.split == "whitespace":
            return word_starts, word_ends, word_rows, words
        text = tf.strings.substr(
            tf.gather(texts, word_rows), word_starts, word_ends - word_starts
        )
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")
        split = tf.strings.regex_full_match(text, "[0-9]+")
        split &= self._lookup.lookup(text) == self._lookup.default_value
        count = tf.where(split, word_ends - word_starts, 1)
        pieces = repeat(index, count)
        digit = tf.range(tf.size(pieces, tf.int64)) - tf.gather(
            tf.cumsum(count, exclusive=True), pieces
        )
        is_digit = tf.gather(split, pieces)
        piece_starts = tf.gather(word_starts, pieces) + digit
        piece_ends = tf.where(
            is_digit, piece_starts + 1, tf.gather(word_ends, pieces)
        )
        return (
            piece_starts,
            piece_ends,
            tf.gather(word_rows, pieces),
            tf.gather(words, pieces),
        )

    def _detokenize_batch(self, ids):
        tokens = tf.ragged.map_flat_values(tf.gather, self._tokens, ids)
        separator = "" if self.split == "character" else " "
        return tf.strings.reduce_join(tokens, axis=-1, separator=separator)

    def get_config(self):
        return {
            **super().get_config(),
            # Saved as an asset, named by `vocabulary_sha256` (`_assets`).
            "vocabulary": None,
            "split": self.split,
            "specials": list(self.specials),
            "lowercase": self.lowercase,
            **self._asset_config(),
        }

    # --- The vocabulary as a Keras asset (`_assets`) -------------------------
    def _waiting_for_asset(self):
        # A config without a digest is one taken before `adapt`: such a
        # layer waits for nothing.
        expected = self._asset_state.expected_sha256
        return self._vocabulary is None and expected is not None

    def _token_list(self):
        return self._vocabulary

    def _set_token_list(self, tokens):
        self.set_vocabulary(tokens)


def _checked_specials(specials):
    """`specials` as a tuple of 4 distinct non-empty strings."""
    expected = (
        "4 distinct non-empty strings: the padding, start, end and unknown "
        "tokens"
    )
    check_type("specials", specials, (list, tuple), expected)
    for i, token in enumerate(specials):
        check_type(f"specials[{i}]", token, str, "a non-empty string")
    specials = tuple(specials)
    if len(specials) != 4 or not all(specials) or len(set(specials)) != 4:
        raise ValueError(
            f"`specials` must be {expected}. Received: specials={specials!r}."
        )
    return specials
