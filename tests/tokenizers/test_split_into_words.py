"""`tokenize_with_offsets(..., is_split_into_words=True)` against Hugging
Face's `encode_batch(words, is_pretokenized=True)`: ids, character
offsets (in each word) and word ids (the index of the input word), with
and without the special tokens, for a WordPiece, a byte-level BPE and a
SentencePiece-style BPE file, on the words of the shared UD treebank and
on corpus lines split at whitespace."""

import functools
import random

import pytest
import tensorflow as tf
import tokenizers as hf_tokenizers

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.tokenizers.offsets_testing import as_rows
from tf_input.data.conll import read_conll
from tf_input.tokenizers import load_tokenizer

pytestmark = requires_shared_data

NAMES = ("bert_uncased", "qwen3", "mistral_v1")


@functools.cache
def pair(name, add_special_tokens):
    path = data_path("llm", name, "tokenizer.json")
    tokenizer = load_tokenizer(path, add_special_tokens=add_special_tokens)
    return tokenizer, hf_tokenizers.Tokenizer.from_file(str(path))


def sentences():
    ud = [
        words
        for words, _ in read_conll(
            data_path("corpora", "zh_gsdsimp-ud-test.conllu")
        )
    ]
    rng = random.Random(0)
    lines = [
        line.split()
        for _, corpus in sorted(corpora().items())
        for line in rng.sample(corpus, min(8, len(corpus)))
    ]
    return [list(w) for w in rng.sample(ud, 60)] + lines + [[], ["a"], [" "]]


@pytest.mark.parametrize("add_special_tokens", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_words_match_hf_is_pretokenized(name, add_special_tokens):
    tokenizer, reference = pair(name, add_special_tokens)
    batch = sentences()
    got = as_rows(
        tokenizer.tokenize_with_offsets(
            batch, unit="char", return_word_ids=True, is_split_into_words=True
        )
    )
    want = [
        (e.ids, [tuple(o) for o in e.offsets], e.word_ids)
        for e in reference.encode_batch(
            batch, is_pretokenized=True, add_special_tokens=add_special_tokens
        )
    ]
    # HF gives special tokens no word (None); ours is -1.
    want = [
        (i, o, [-1 if w is None else w for w in words]) for i, o, words in want
    ]
    bad = [(b, g, w) for b, g, w in zip(batch, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(batch)} differ, first: {bad[0]!r}"


def test_one_text_a_batch_and_a_tensor_agree():
    tokenizer, _ = pair("qwen3", False)
    words = ["Hello", "wörld", "😀"]
    one = tokenizer.tokenize_with_offsets(
        words, return_word_ids=True, is_split_into_words=True
    )
    batch = tokenizer.tokenize_with_offsets(
        [words, ["x"]], return_word_ids=True, is_split_into_words=True
    )
    ragged = tokenizer.tokenize_with_offsets(
        tf.ragged.constant([words, ["x"]]),
        return_word_ids=True,
        is_split_into_words=True,
    )

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.string)])
    def traced(words):
        return tokenizer.tokenize_with_offsets(
            words, return_word_ids=True, is_split_into_words=True
        )

    graph = traced(tf.ragged.constant([words, ["x"]]))
    for a, b, c, d in zip(one, batch, ragged, graph):
        assert a.numpy().tolist() == b[0].numpy().tolist()
        assert b.to_list() == c.to_list() == d.to_list()
    # Byte spans are in each word's own bytes.
    _, starts, ends = tokenizer.tokenize_with_offsets(
        words, is_split_into_words=True
    )
    assert ends.numpy().max() == len("wörld".encode())


@pytest.mark.parametrize(
    "words, match",
    [
        ("a b", "Received the string"),
        (["a", ["b"]], "mixing words and lists"),
        ([["a", 1]], "Received a word 1"),
        (tf.constant([[1]]), "int32 tensor"),
    ],
)
def test_bad_words_are_errors(words, match):
    tokenizer, _ = pair("qwen3", False)
    with pytest.raises(ValueError, match=match):
        tokenizer.tokenize_with_offsets(words, is_split_into_words=True)
