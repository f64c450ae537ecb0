"""What every tokenizer class offers (`base.Tokenizer`): a `repr` that
says what it is, and `uses_core_ops_only` defined by the class itself
(each family's contract checks its value against its SavedModel)."""

import inspect

import numpy as np
import pytest

import tf_input
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import Tokenizer
from tf_input.tokenizers import VocabularyTokenizer
from tf_input.tokenizers import WordPieceTokenizer

TOKENIZERS = [
    getattr(tf_input.tokenizers, name)
    for name in tf_input.tokenizers.__all__
    if inspect.isclass(getattr(tf_input.tokenizers, name))
    and issubclass(getattr(tf_input.tokenizers, name), Tokenizer)
    and getattr(tf_input.tokenizers, name) is not Tokenizer
]


def test_every_tokenizer_class_is_listed():
    names = {cls.__name__ for cls in TOKENIZERS}
    assert {"BytePairTokenizer", "WordPieceTokenizer"} <= names
    assert {"SentencePieceTokenizer", "VocabularyTokenizer"} <= names


@pytest.mark.parametrize("cls", TOKENIZERS, ids=lambda c: c.__name__)
def test_uses_core_ops_only_is_defined_by_every_class(cls):
    assert isinstance(cls.uses_core_ops_only, property)
    assert cls.uses_core_ops_only is not Tokenizer.uses_core_ops_only


@pytest.mark.parametrize(
    "tokenizer, want",
    [
        (
            lambda: WordPieceTokenizer(
                ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"], name="wp"
            ),
            "<WordPieceTokenizer name='wp', vocabulary_size=5, "
            "special_tokens={'pad': 0, 'unk': 1, 'cls': 2, 'sep': 3}, "
            "core_ops_only=True>",
        ),
        (
            lambda: BytePairTokenizer(
                {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3},
                ["a b"],
                name="bpe",
            ),
            "<BytePairTokenizer name='bpe', vocabulary_size=4, "
            "special_tokens={'bos': 3, 'eos': 3}, core_ops_only=True>",
        ),
        (
            lambda: VocabularyTokenizer(name="v"),
            "<VocabularyTokenizer name='v', no vocabulary yet>",
        ),
    ],
)
def test_repr_says_family_size_special_tokens_and_ops(tokenizer, want):
    assert repr(tokenizer()) == want


def test_repr_of_a_layer_waiting_for_its_asset():
    tokenizer = WordPieceTokenizer(["[UNK]", "a"], name="wp")
    config = {**tokenizer.get_config(), "vocabulary_sha256": "0" * 64}
    waiting = WordPieceTokenizer.from_config(config)
    assert repr(waiting) == "<WordPieceTokenizer name='wp', no vocabulary yet>"


def test_type_mistakes_in_calls_are_type_errors():
    tokenizer = VocabularyTokenizer(["<pad>", "<sos>", "<eos>", "<unk>", "a"])
    with pytest.raises(TypeError, match=r"`skip_special_tokens` must be.*'no'"):
        tokenizer.detokenize([4], skip_special_tokens="no")
    with pytest.raises(TypeError, match=r"`id` must be an integer.*id=True"):
        tokenizer.id_to_token(True)
    with pytest.raises(TypeError, match=r"id='4' \(of type str\)"):
        tokenizer.id_to_token("4")
    with pytest.raises(
        ValueError, match=r"vocabulary_size=5\). Received: id=5"
    ):
        tokenizer.id_to_token(5)
    assert tokenizer.id_to_token(np.int64(4)) == "a"
    assert tokenizer.detokenize([4], skip_special_tokens=np.True_) == b"a"
