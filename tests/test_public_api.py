"""Every public layer: exported, registered, and its config is complete."""

import inspect

import keras
import pytest

import tf_input

# Tokenizers built from model files have their own config round-trip tests.
FROM_FILES = {"BytePairTokenizer", "SentencePieceTokenizer"}
LAYERS = [
    getattr(tf_input, name)
    for name in tf_input.__all__
    if inspect.isclass(getattr(tf_input, name)) and name not in FROM_FILES
]
# One instance of each, with its required arguments.
REQUIRED = {
    "TokenEmbedding": {"vocabulary_size": 10, "embedding_dim": 4},
    "LearnedPE": {"max_length": 8},
    "InputBlock": {"vocabulary_size": 10, "embedding_dim": 4},
    "WordPieceTokenizer": {"vocabulary": ["[PAD]", "[UNK]", "a", "##b"]},
}


def test_all_layers_listed():
    names = {cls.__name__ for cls in LAYERS}
    want = {"TokenEmbedding", "SinusoidalPE", "LearnedPE", "RotaryEmbedding"}
    assert want <= names


@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_registered_under_package_name(cls):
    assert keras.saving.get_registered_name(cls) == f"tf_input>{cls.__name__}"
    assert keras.saving.get_registered_object(f"tf_input>{cls.__name__}") is cls


@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_every_init_argument_is_in_config(cls):
    layer = cls(**REQUIRED.get(cls.__name__, {}))
    config = layer.get_config()
    parameters = inspect.signature(cls.__init__).parameters
    for name, parameter in parameters.items():
        if name == "self" or parameter.kind is parameter.VAR_KEYWORD:
            continue
        assert name in config, f"{cls.__name__}.{name} missing from get_config"


@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_docstring_has_the_sections(cls):
    doc = inspect.getdoc(cls)
    for section in ("Args:", "Call arguments:", "Returns:", "Example:", ">>>"):
        assert section in doc, f"{cls.__name__} docstring lacks {section}"


def test_aliases_are_the_same_classes():
    assert tf_input.SinusoidalPositionEmbedding is tf_input.SinusoidalPE
    assert tf_input.LearnedPositionEmbedding is tf_input.LearnedPE
