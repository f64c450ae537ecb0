"""`WordPieceTokenizer`: BERT's WordPiece, id for id with Hugging Face.

The Keras layer: its arguments, vocabulary and config. The tokenization
itself (BERT's normalization, split and WordPiece on core TensorFlow ops)
is the engine in `engines/wordpiece.py`.
"""

from __future__ import annotations

import os

import keras

from tf_input._validation import check_bool
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input.tokenizers._assets import FROM_ASSETS
from tf_input.tokenizers._assets import TokenListAsset
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.engines.bert_tables import SPECIAL_TOKENS
from tf_input.tokenizers.engines.bert_tables import TRAILING_WHITESPACE
from tf_input.tokenizers.engines.wordpiece import BertWordPiece
from tf_input.tokenizers.hf.processors import parse_templates
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError


def _read_vocabulary_file(path):
    """The tokens of a `vocab.txt`, one per line, as HF's `read_file` does.

    Each line loses its trailing whitespace (Rust's `trim_end`); empty lines
    are tokens too; a final newline does not start another token.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"WordPieceTokenizer vocabulary file not found: {path!r}. Pass "
            "the path of a BERT `vocab.txt` (one token per line) or a list "
            "of tokens."
        ) from None
    except OSError as error:
        raise OSError(
            f"Could not read the WordPieceTokenizer vocabulary file "
            f"{path!r}: {error}."
        ) from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"The WordPieceTokenizer vocabulary file {path!r} is not valid "
            f"UTF-8 (byte {error.start}: {data[error.start : error.end]!r}). "
            "A `vocab.txt` is UTF-8 text with one token per line."
        ) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(
            f"The WordPieceTokenizer vocabulary file {path!r} is empty. "
            "A `vocab.txt` has one token per line."
        )
    return [line.rstrip(TRAILING_WHITESPACE) for line in lines], path


@keras.saving.register_keras_serializable(package="tf_input")
class WordPieceTokenizer(TokenListAsset, Tokenizer):
    """BERT's WordPiece tokenizer, with the same ids as Hugging Face.

    Gives, for every input, the ids of Hugging Face `tokenizers`'
    `BertWordPieceTokenizer(vocab, lowercase=..., strip_accents=...)`
    (`clean_text=True`, `handle_chinese_chars=True`) with the same vocabulary:
    BERT's text cleanup, spaces around CJK ideographs, accent stripping,
    plain per-character lowercasing (no case folding: `ß`, `ς` and
    full-width punctuation are kept), punctuation splitting, then greedy
    longest-match-first WordPiece with `##` continuations. A word of more
    than `max_word_length` characters, or one the vocabulary cannot cover,
    becomes the unknown token. It is tested id for id against
    `tokenizers` on 36 languages, emoji, Chinese and Japanese novels,
    WikiText and every Unicode code point.

    As in `BertWordPieceTokenizer` (and `transformers`' `BertTokenizerFast`),
    the special tokens `[UNK]`, `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]` found
    in the text itself keep their ids: `"Paris is the [MASK]."` holds id
    103 on bert-base-uncased. The match is case-sensitive and on the raw
    text.

    Invalid UTF-8 is not an error: each bad byte sequence becomes U+FFFD,
    which BERT's cleanup then drops (so `b"ab\\xffc"` tokenizes as `"abc"`).

    `tokenize_with_offsets` also gives each token's span, in bytes or in
    characters, and its word index: the characters and word indices are
    HF's `encoding.offsets` and `encoding.word_ids` (checked on every line
    of the shared corpora): a piece of a word covers its characters, an
    unknown word's `[UNK]` the whole word, a special token its text; a
    character that lowercasing or accent stripping rewrote is covered
    whole ("İ" and "é" are one character of the input).

    Runs in `tf.data.Dataset.map` (map batches, not single lines), in
    `tf.function` and in a SavedModel, on core TensorFlow ops only: a
    process that loads such a SavedModel (TF Serving, the C API) needs
    nothing but TensorFlow.

    `detokenize` follows `tokenizers`' `decode(ids, skip_special_tokens=
    False)`: `##` pieces join the previous piece, other pieces are
    separated by a space, special tokens are kept, and the decoder's
    cleanup removes the space before `.`, `?`, `!` and `,`. Lowercasing and
    accent stripping cannot be undone.

    Args:
        vocabulary: list of str (id = position), or the path of a BERT
            `vocab.txt` (one token per line). A `.keras` file keeps the
            tokens as an asset (`vocabulary.json`; the config holds its
            SHA-256), so saved models need no extra file.
        lowercase: bool. Lowercase the text. Defaults to `True` (uncased
            BERT); use `False` for cased vocabularies.
        strip_accents: bool or None. Decompose (NFD) and drop nonspacing
            marks. `None` follows `lowercase`. Defaults to `None`.
        unknown_token: str. The token for words the vocabulary cannot
            cover; it must be in the vocabulary. Defaults to `"[UNK]"`.
        max_word_length: int. Words with more characters become the unknown
            token. Defaults to `100`, as in BERT.
        add_special_tokens: bool. Put `[CLS]` before and `[SEP]` after each
            sequence; both must be in the vocabulary. Defaults to `False`.
        templates: None or `{"single": [...], "pair": [...]}` with items
            `[piece, type_id]` (`piece` a token id, `"$A"` or `"$B"`), the
            special tokens that `add_special_tokens=True` adds and
            `templates()` returns, as a `tokenizer.json` post-processor
            gives them (`tf_input.load_tokenizer` passes them). None
            (default): `[CLS] $A [SEP]`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a string, a list of strings, or a string tensor of shape
            `[]` or `[N]`.

    Returns:
        int32 ids: a 1-D tensor for a scalar string, a `tf.RaggedTensor`
        of shape `[N, None]` for a batch.

    Example:

    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
    ...               "cat", "##s", "sat", "."]
    >>> tokenizer = tf_input.tokenizers.WordPieceTokenizer(vocabulary)
    >>> tokenizer("The cats sat.").numpy().tolist()
    [5, 6, 7, 8, 9]
    >>> tokenizer(["The Cat", "dogs", "the [MASK] sat"]).to_list()
    [[5, 6], [1], [5, 4, 8]]
    >>> tokenizer.detokenize([5, 6, 7, 8, 9]).numpy().decode()
    'the cats sat.'
    >>> tokenizer.special_tokens
    {'pad': 0, 'unk': 1, 'cls': 2, 'sep': 3, 'mask': 4}
    >>> tf_input.tokenizers.WordPieceTokenizer(
    ...     vocabulary, add_special_tokens=True)("the cat").numpy().tolist()
    [2, 5, 6, 3]
    """

    def __init__(
        self,
        vocabulary: list[str] | str | os.PathLike,
        *,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        unknown_token: str = "[UNK]",
        max_word_length: int = 100,
        add_special_tokens: bool = False,
        templates: dict | None = None,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        self.lowercase = check_bool("lowercase", lowercase)
        self.strip_accents = check_bool(
            "strip_accents", strip_accents, allow_none=True
        )
        check_type("unknown_token", unknown_token, str, "a non-empty string")
        if not unknown_token:
            raise ValueError(
                "`unknown_token` must be a non-empty string. "
                f"Received: unknown_token={unknown_token!r}."
            )
        self.unknown_token = unknown_token
        self.max_word_length = check_positive_int(
            "max_word_length", max_word_length
        )
        self.templates_config = templates
        self._init_asset()
        self.vocabulary = None
        if vocabulary is not FROM_ASSETS:
            self._set_vocabulary(vocabulary)

    def _set_vocabulary(self, vocabulary):
        """Reads and checks the vocabulary and builds the engine (in
        `__init__`, or in `load_assets` for a `.keras` file)."""
        vocabulary = self._checked_vocabulary(vocabulary)
        self._token_index = {t: i for i, t in enumerate(vocabulary)}
        unknown_token = self.unknown_token
        if unknown_token not in self._token_index:
            raise SpecError(
                f"The unknown token {unknown_token!r} is not in the "
                f"vocabulary ({len(vocabulary)} tokens). Add it, or "
                "pass the vocabulary's own unknown token as `unknown_token`."
            )
        self._unknown_id = self._token_index[unknown_token]
        self._set_special_ids(len(vocabulary))
        self._engine = BertWordPiece(
            vocabulary,
            unknown_token=unknown_token,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            max_word_length=self.max_word_length,
        )
        self.vocabulary = vocabulary

    def _set_special_ids(self, size):
        """What `add_special_tokens=True` adds: the templates' ids, else
        [CLS] and [SEP]."""
        templates = self.templates_config
        missing = [t for t in ("[CLS]", "[SEP]") if t not in self._token_index]
        if templates is not None:
            parsed, self._start_ids, self._end_ids = parse_templates(
                templates, size
            )
            self._templates = parsed
            return
        if self.add_special_tokens and missing:
            raise ValueError(
                "`add_special_tokens=True` puts [CLS] and [SEP] around "
                f"each sequence, but the vocabulary has no {missing}. "
                "Use add_special_tokens=False."
            )
        if not missing:
            self._start_ids = [self._token_index["[CLS]"]]
            self._end_ids = [self._token_index["[SEP]"]]

    @classmethod
    def from_vocab_file(
        cls, path: str | os.PathLike, **kwargs
    ) -> WordPieceTokenizer:
        """Reads a BERT `vocab.txt` (one token per line, id = line number).

        Args:
            path: str or path-like.
            **kwargs: the other `WordPieceTokenizer` arguments.
        """
        return cls(vocabulary=os.fspath(path), **kwargs)

    # --- Setup --------------------------------------------------------------
    def _checked_vocabulary(self, vocabulary):
        source = "the vocabulary"
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary, path = _read_vocabulary_file(vocabulary)
            source = f"the vocabulary file {path!r}"
        elif isinstance(vocabulary, (list, tuple)):
            bad = [t for t in vocabulary if not isinstance(t, str)]
            if bad:
                raise SpecTypeError(
                    "`vocabulary` must be a list of strings or the path of a "
                    f"vocab.txt. Received a list holding {bad[0]!r} (of type "
                    f"{type(bad[0]).__name__})."
                )
            vocabulary = list(vocabulary)
        else:
            raise TypeError(
                "`vocabulary` must be a list of strings or the path of a "
                f"vocab.txt. Received: vocabulary of type "
                f"{type(vocabulary).__name__}."
            )
        if not vocabulary:
            raise SpecError(
                "`vocabulary` is empty. Pass a list of tokens or the path "
                "of a BERT vocab.txt."
            )
        seen = {}
        for i, token in enumerate(vocabulary):
            try:
                token.encode("utf-8")
            except UnicodeEncodeError:
                raise SpecError(
                    f"Token {token!r} (id {i}) in {source} is not valid "
                    "Unicode text: it holds a lone surrogate."
                ) from None
            if token in seen:
                raise SpecError(
                    f"Every token in {source} must be unique, because ids "
                    f"are positions. {token!r} is at ids {seen[token]} and "
                    f"{i}."
                )
            seen[token] = i
        return vocabulary

    # --- Graph ----------------------------------------------------------------
    def _tokenize_batch(self, texts):
        return self._engine.tokenize(texts)

    def _tokenize_with_offsets_batch(self, texts):
        return self._engine.tokenize_with_offsets(texts)

    def _tokenize_with_character_offsets_batch(self, texts):
        return self._engine.tokenize_with_offsets(texts, unit="char")

    def _detokenize_batch(self, ids):
        return self._engine.detokenize(ids)

    # --- Inspection ---------------------------------------------------------
    def get_vocabulary(self) -> list[str]:
        self._check_ready()
        return list(self.vocabulary)

    def vocabulary_size(self) -> int:
        self._check_ready()
        return len(self.vocabulary)

    @property
    def uses_core_ops_only(self) -> bool:
        """True: every op is a core TensorFlow op (no TF Text)."""
        return True

    @property
    def special_tokens(self) -> dict[str, int]:
        self._check_ready()
        out = {
            name: self._token_index[token]
            for name, token in SPECIAL_TOKENS.items()
            if token in self._token_index
        }
        out["unk"] = self._unknown_id
        return dict(sorted(out.items(), key=lambda item: item[1]))

    def get_config(self):
        return {
            **super().get_config(),
            # Saved as an asset, named by `vocabulary_sha256` (`_assets`).
            "vocabulary": None,
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
            "unknown_token": self.unknown_token,
            "max_word_length": self.max_word_length,
            "templates": self.templates_config,
            **self._asset_config(),
        }

    # --- The vocabulary as a Keras asset (`_assets`) -------------------------
    def _waiting_for_asset(self):
        return self.vocabulary is None

    def _token_list(self):
        return self.vocabulary

    def _set_token_list(self, tokens):
        self._set_vocabulary(tokens)
