"""keras-hub models fed `make_dataset`'s batches directly, with no remapping.

Each model gets exactly the tensors it declares: `evaluate` on the dataset
as it comes equals `evaluate` on the same batches with the inputs picked
by hand, and one `fit` step runs. (Before, `GPT2CausalLM` on `"pack"`
batches read the wrong tensors: the extra `segment_ids` / `positions` keys
of a dict sorted before its own, keras-team/keras#23258.)
"""

import keras
import keras_hub
import numpy as np
import pytest

from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tf_input import BytePairTokenizer
from tf_input import WordPieceTokenizer
from tf_input.data import make_dataset

pytestmark = requires_shared_data


@pytest.fixture(scope="module")
def lines():
    corpus = read_lines(data_path("corpora", "tinyshakespeare.txt"))
    return [line for line in corpus[:200] if line.strip()][:48]


def picked(dataset, names):
    """The same batches with only `names` kept, by hand."""
    return dataset.map(lambda f, y: ({n: f[n] for n in names}, y))


def check_fed_directly(model, dataset):
    names = list(model.input)  # the backbone's dict of inputs
    as_it_comes = model.evaluate(dataset, verbose=0, return_dict=True)
    by_hand = model.evaluate(
        picked(dataset, names), verbose=0, return_dict=True
    )
    for key in by_hand:
        np.testing.assert_allclose(as_it_comes[key], by_hand[key], rtol=1e-6)
    history = model.fit(dataset.take(1), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    return as_it_comes


@pytest.fixture(scope="module")
def wordpiece():
    return WordPieceTokenizer.from_vocab_file(
        data_path("bert", "bert-base-uncased-vocab.txt")
    )


def bert_classifier(vocabulary_size):
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
    )
    model = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=None
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


@pytest.mark.parametrize("pairs", [True, False])
def test_bert_text_classifier(wordpiece, lines, pairs):
    labels = np.arange(len(lines)) % 2
    if pairs:
        source = list(zip(lines, lines[1:] + lines[:1], labels))
    else:
        source = list(zip(lines, labels))
    model = bert_classifier(wordpiece.vocabulary_size())
    assert sorted(model.input) == ["padding_mask", "segment_ids", "token_ids"]
    ds = make_dataset(
        source, wordpiece, task="encode", batch_size=8, max_length=64
    )
    features, _ = next(iter(ds))
    assert features["segment_ids"].numpy().any() == pairs
    check_fed_directly(model, ds)


@pytest.fixture(scope="module")
def gpt2():
    return BytePairTokenizer.from_files(
        data_path("gpt2", "vocab.json"), data_path("gpt2", "merges.txt")
    )


@pytest.mark.parametrize("batching", ["pack", "max_length"])
def test_gpt2_causal_lm(gpt2, lines, batching):
    keras.utils.set_random_seed(2)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=gpt2.vocabulary_size(),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
    )
    model = keras_hub.models.GPT2CausalLM(backbone, preprocessor=None)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["accuracy"],
    )
    ds = make_dataset(
        lines, gpt2, batch_size=4, max_length=64, batching=batching
    )
    features, _ = next(iter(ds))
    if batching == "pack":  # keys the model does not take come too
        assert {"example_ids", "positions"} <= set(features)
    check_fed_directly(model, ds)
    # And with `features=model`, exactly the model's inputs.
    exact = make_dataset(
        lines,
        gpt2,
        batch_size=4,
        max_length=64,
        batching=batching,
        features=model,
    )
    assert sorted(exact.element_spec[0]) == ["padding_mask", "token_ids"]


@pytest.fixture(scope="module")
def qwen():
    from tf_input import load_tokenizer

    return load_tokenizer(data_path("llm", "qwen3"))


@pytest.mark.parametrize(
    "batching",
    # "max_length" (no extra keys) is the easy case, checked for GPT-2 in the
    # default suite; here it runs with the slow tests (19 s).
    ["pack", pytest.param("max_length", marks=pytest.mark.slow)],
)
def test_qwen3_causal_lm_with_its_own_tokenizer_file(qwen, lines, batching):
    """A third causal LM, with a vocabulary from `load_tokenizer`: Qwen 3's
    `tokenizer.json` (151,669 ids; id 0 is "!", so only the pipeline's
    `padding_mask` tells padding apart)."""
    assert qwen.start_ids == [] and qwen.end_ids == []  # its template
    keras.utils.set_random_seed(3)
    backbone = keras_hub.models.Qwen3Backbone(
        vocabulary_size=qwen.vocabulary_size(),
        num_layers=1,
        num_query_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        hidden_dim=16,
        intermediate_dim=32,
    )
    model = keras_hub.models.Qwen3CausalLM(backbone, preprocessor=None)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["accuracy"],
    )
    ds = make_dataset(
        lines, qwen, batch_size=4, max_length=64, batching=batching
    )
    check_fed_directly(model, ds)
