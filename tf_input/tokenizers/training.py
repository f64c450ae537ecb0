"""Train WordPiece, byte-level BPE and SentencePiece vocabularies.

The training itself is done by the maintained trainers: Hugging Face
`tokenizers` (WordPiece, BPE) and `sentencepiece`. This module feeds them
text from files, Python iterables or `tf.data` datasets, writes the standard
files (`vocab.txt`; `vocab.json` + `merges.txt`; `spm.model`) and returns a
ready tf_input tokenizer built from them. Both trainers are in the `train`
extra: `pip install "tf_input[train]"`.

Training is deterministic: the same text and arguments give the same files
(checked by the tests).
"""

from __future__ import annotations

import io
import os
import pathlib
import sys
from typing import Iterable
from typing import Iterator

import keras
import tensorflow as tf

from tf_input._validation import check_positive_int

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _require(module):
    try:
        return __import__(module)
    except ImportError as error:  # pragma: no cover - depends on the env
        raise ImportError(
            f"Training needs the `{module}` package. Install it with "
            '`pip install "tf_input[train]"`.'
        ) from error


def _is_path(item) -> bool:
    return isinstance(item, os.PathLike) or (
        isinstance(item, str) and os.path.isfile(item)
    )


def _texts(source) -> Iterator[str]:
    """Yields the strings of `source`.

    `source` is a `tf.data.Dataset` of scalar strings; a path, or a list of
    paths (`os.PathLike`, or str naming existing files), one example a line;
    or any other iterable of str.
    """
    if isinstance(source, tf.data.Dataset):
        for value in source.as_numpy_iterator():
            yield value.decode("utf-8", errors="replace")
        return
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    if (
        isinstance(source, (list, tuple))
        and source
        and all(map(_is_path, source))
    ):
        for path in source:
            with open(path, encoding="utf-8", errors="replace") as file:
                for line in file:
                    yield line.rstrip("\r\n")
        return
    for text in source:
        if not isinstance(text, str):
            raise TypeError(
                "`source` must hold strings (or be file paths, or a "
                "tf.data.Dataset of strings). Received an item of type "
                f"{type(text).__name__}."
            )
        yield text


def _check_source(source):
    paths = [source] if isinstance(source, (str, os.PathLike)) else []
    if isinstance(source, (list, tuple)):
        paths = [x for x in source if isinstance(x, os.PathLike)]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Training text file not found: {str(path)!r}. Pass file "
                "paths, an iterable of strings, or a tf.data.Dataset."
            )


def _with_progress(texts: Iterable[str], show_progress: bool, what: str):
    """Counts the lines fed to a trainer on a Keras progress bar."""
    if not show_progress:
        yield from texts
        return
    print(f"Reading text for {what}:", file=sys.stderr)
    bar = keras.utils.Progbar(None, unit_name="line")
    count = 0
    for count, text in enumerate(texts, 1):
        if count % 1000 == 0:
            bar.update(count)
        yield text
    bar.update(count, finalize=True)


def train_wordpiece(
    source,
    vocabulary_size,
    *,
    lowercase=True,
    strip_accents=None,
    min_frequency=2,
    special_tokens=BERT_SPECIALS,
    output_dir=None,
    show_progress=True,
):
    """Trains a BERT WordPiece vocabulary; returns a `WordPieceTokenizer`.

    Uses Hugging Face `tokenizers`' `WordPieceTrainer` with BERT's
    normalization and pre-tokenization, so the vocabulary fits the
    tokenizer's rules exactly.

    Args:
        source: file path(s) (one example a line), an iterable of str, or a
            `tf.data.Dataset` of strings.
        vocabulary_size: int. Size of the vocabulary, specials included.
        lowercase: bool. Defaults to `True`.
        strip_accents: bool or None (follows `lowercase`).
        min_frequency: int. Minimum count of a merged pair. Defaults to `2`.
        special_tokens: sequence of str, placed first. Defaults to
            `("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")`.
        output_dir: str or None. Where to write `vocab.txt`.
        show_progress: bool. Defaults to `True`.

    Returns:
        A `WordPieceTokenizer` with the trained vocabulary.
    """
    tokenizers = _require("tokenizers")
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers
    from tokenizers import trainers

    from tf_input.tokenizers.word_piece_tokenizer import WordPieceTokenizer

    vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
    _check_source(source)
    special_tokens = list(special_tokens)

    def train(texts, fixed_tokens):
        model = tokenizers.Tokenizer(
            tokenizers.models.WordPiece(unk_token="[UNK]")
        )
        model.normalizer = normalizers.BertNormalizer(
            lowercase=lowercase, strip_accents=strip_accents
        )
        model.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocabulary_size,
            min_frequency=min_frequency,
            special_tokens=special_tokens + fixed_tokens,
            show_progress=show_progress,
        )
        model.train_from_iterator(texts, trainer)
        return [
            token
            for token, _ in sorted(
                model.get_vocab().items(), key=lambda x: x[1]
            )
        ]

    # The trainer numbers the word-continuation characters ("##e") in the
    # order of a randomly seeded hash map, and breaks ties between merges of
    # equal count by those numbers: the same text gave different vocabularies
    # from run to run (14 of 8,000 tokens differed on tinyshakespeare). A
    # first pass finds the continuation characters; the second pass gets
    # them, sorted, as fixed tokens, so every id and tie is reproducible.
    # Doubles the training time.
    texts = list(_texts(source))
    first = train(texts, [])
    continuations = sorted(
        t for t in first if t.startswith("##") and len(t) == 3
    )
    trained = train(texts, continuations)
    # Canonical order: specials, characters, "##" characters, then the
    # merged tokens in the order the trainer learned them.
    fixed = set(special_tokens) | set(continuations)
    rest = [t for t in trained if t not in fixed]
    vocabulary = (
        special_tokens
        + [t for t in rest if len(t) == 1]
        + continuations
        + [t for t in rest if len(t) != 1]
    )
    if output_dir is not None:
        folder = pathlib.Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "vocab.txt").write_text(
            "".join(token + "\n" for token in vocabulary), encoding="utf-8"
        )
    return WordPieceTokenizer(
        vocabulary, lowercase=lowercase, strip_accents=strip_accents
    )


def train_bpe(
    source,
    vocabulary_size,
    *,
    min_frequency=2,
    special_tokens=("<|endoftext|>",),
    output_dir=None,
    show_progress=True,
):
    """Trains a byte-level BPE vocabulary; returns a `BytePairTokenizer`.

    Uses Hugging Face `tokenizers`' `BpeTrainer` with GPT-2's byte-level
    pre-tokenization and all 256 bytes in the alphabet, so any text can be
    encoded without an unknown token.

    Args:
        source: file path(s), an iterable of str, or a `tf.data.Dataset`.
        vocabulary_size: int. Size of the vocabulary (256 bytes + merges +
            specials).
        min_frequency: int. Minimum count of a merged pair. Defaults to `2`.
        special_tokens: sequence of str kept whole. Defaults to
            `("<|endoftext|>",)`.
        output_dir: str or None. Where to write `vocab.json` and
            `merges.txt`.
        show_progress: bool. Defaults to `True`.

    Returns:
        A `BytePairTokenizer` with the trained vocabulary and merges.
    """
    tokenizers = _require("tokenizers")
    from tokenizers import decoders
    from tokenizers import pre_tokenizers
    from tokenizers import trainers

    from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer

    vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
    _check_source(source)
    model = tokenizers.Tokenizer(tokenizers.models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocabulary_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=show_progress,
    )
    model.train_from_iterator(_texts(source), trainer)
    folder = pathlib.Path(output_dir) if output_dir is not None else None
    with _maybe_temporary(folder) as target:
        vocab_json, merges_txt = model.model.save(str(target))
        return BytePairTokenizer.from_files(
            vocab_json, merges_txt, special_tokens=list(special_tokens)
        )


def train_sentencepiece(
    source,
    vocabulary_size,
    *,
    model_type="unigram",
    character_coverage=1.0,
    output_dir=None,
    show_progress=True,
    **options,
):
    """Trains a SentencePiece model; returns a `SentencePieceTokenizer`.

    Uses the `sentencepiece` trainer on every input line (no sampling, no
    shuffling) with one thread, so the result is deterministic.

    Args:
        source: file path(s), an iterable of str, or a `tf.data.Dataset`.
        vocabulary_size: int. Number of pieces.
        model_type: str, `"unigram"`, `"bpe"`, `"char"` or `"word"`.
            Defaults to `"unigram"`.
        character_coverage: float. Share of characters covered by the
            alphabet (0.9995 is usual for CJK). Defaults to `1.0`.
        output_dir: str or None. Where to write `spm.model`.
        show_progress: bool. Progress bar over the lines read, and the
            trainer's own log. Defaults to `True`.
        **options: further `sentencepiece` trainer options, e.g.
            `byte_fallback=True`, `pad_id=3`.

    Returns:
        A `SentencePieceTokenizer` with the trained model.
    """
    spm = _require("sentencepiece")
    from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer

    vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
    _check_source(source)
    texts = _with_progress(_texts(source), show_progress, "SentencePiece")
    proto = io.BytesIO()
    settings = {
        "num_threads": 1,
        "input_sentence_size": 0,
        "shuffle_input_sentence": False,
        "minloglevel": 0 if show_progress else 2,
        **options,
    }
    spm.SentencePieceTrainer.train(
        sentence_iterator=(t for t in texts if t),
        model_writer=proto,
        vocab_size=vocabulary_size,
        model_type=model_type,
        character_coverage=character_coverage,
        **settings,
    )
    data = proto.getvalue()
    if output_dir is not None:
        folder = pathlib.Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "spm.model").write_bytes(data)
    return SentencePieceTokenizer(data)


class _maybe_temporary:
    """`folder` itself (created), or a temporary folder removed at exit."""

    def __init__(self, folder):
        self.folder = folder

    def __enter__(self):
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            return self.folder
        import tempfile

        self._temporary = tempfile.TemporaryDirectory()
        return pathlib.Path(self._temporary.name)

    def __exit__(self, *exc):
        if self.folder is None:
            self._temporary.cleanup()
        return False
