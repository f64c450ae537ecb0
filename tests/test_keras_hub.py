"""keras-hub models fed `make_dataset`'s batches directly, with no remapping.

Each model gets exactly the tensors it declares and the batches as Keras's
`(features, labels, sample_weight)`: `evaluate` on the dataset as it comes
equals `evaluate` on the same batches with the inputs picked by hand; the
loss `fit` reports for one batch is the mean negative log-likelihood over
exactly the weighted targets, computed by hand; and the targets are the
reference's. Causal LMs take `"stream"` batches (they have no notion of
example boundaries); `"pack"` into them is an error.
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
    return dataset.map(lambda f, y, w: ({n: f[n] for n in names}, y, w))


def nll_by_hand(model, features, labels):
    """-log p(label) at every position (or row), float64, from the logits."""
    logits = np.asarray(model.predict_on_batch(features), np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    return log_z - picked


def check_fed_directly(model, dataset):
    """`evaluate` as it comes == with the inputs picked by hand; `fit`'s
    loss on the first batch == the mean NLL over its weighted targets."""
    names = list(model.input)  # the backbone's dict of inputs
    as_it_comes = model.evaluate(dataset, verbose=0, return_dict=True)
    by_hand = model.evaluate(
        picked(dataset, names), verbose=0, return_dict=True
    )
    for key in by_hand:
        np.testing.assert_allclose(as_it_comes[key], by_hand[key], rtol=1e-6)
    features, labels, weights = next(iter(dataset))
    weights = weights.numpy()
    picked_features = {n: features[n] for n in names}
    nll = nll_by_hand(model, picked_features, labels.numpy())
    want = (nll * weights).sum() / weights.sum()
    history = model.fit(dataset.take(1), epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], want, rtol=1e-4)
    return as_it_comes


def compile_for_targets(model):
    """The loss as the mean over the weighted targets; metrics weighted."""
    model.compile(
        optimizer=keras.optimizers.SGD(0.0),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=["accuracy"],
    )


def check_stream_targets(tokenizer, lines, dataset, separator):
    """Every batch of a `"stream"` dataset against the stream by hand:
    each line's ids then the separator, cut into rows; each label the next
    token of the stream; weight 0 only past its last token."""
    stream = []
    for line in lines:
        ids = tokenizer(line).numpy().tolist()
        if ids:
            stream += ids + [separator]
    ids, labels, weights, mask = [], [], [], []
    for features, label, weight in dataset:
        ids.append(features["token_ids"].numpy().ravel())
        mask.append(features["padding_mask"].numpy().ravel())
        labels.append(label.numpy().ravel())
        weights.append(weight.numpy().ravel())
    ids, labels, weights, mask = map(
        np.concatenate, (ids, labels, weights, mask)
    )
    count = len(stream)
    np.testing.assert_array_equal(ids[:count], stream)
    assert mask[:count].all() and not mask[count:].any()
    np.testing.assert_array_equal(labels[: count - 1], stream[1:])
    assert weights[: count - 1].all() and not weights[count - 1 :].any()


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
        dropout=0.0,  # so that `fit`'s loss is the hand-computed one
    )
    model = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=None, dropout=0.0
    )
    compile_for_targets(model)
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
    features = next(iter(ds))[0]
    assert features["segment_ids"].numpy().any() == pairs
    check_fed_directly(model, ds)


def test_bert_text_classifier_with_string_labels(wordpiece, lines):
    """Labels named by strings, turned into ids by `label_vocabulary`; the
    last partial batch's fill rows weigh 0, so they change nothing."""
    names = ["negative", "positive"]
    source = [(line, names[i % 2]) for i, line in enumerate(lines[:20])]
    model = bert_classifier(wordpiece.vocabulary_size())
    ds = make_dataset(
        source,
        wordpiece,
        task="encode",
        batch_size=8,
        max_length=64,
        batching="max_length",
        label_vocabulary=names,
    )
    batches = list(ds)
    labels = np.concatenate([y.numpy() for _, y, _ in batches])
    weights = np.concatenate([w.numpy() for *_, w in batches])
    assert labels[:20].tolist() == [i % 2 for i in range(20)]
    assert weights.tolist() == [1.0] * 20 + [0.0] * 4  # 4 fill rows
    check_fed_directly(model, ds)
    # The same labels as a dict name -> id, and as pairs with labels.
    pairs = [(a, b, label) for (a, label), (b, _) in zip(source, source[1:])]
    ds = make_dataset(
        pairs,
        wordpiece,
        task="encode",
        batch_size=8,
        max_length=64,
        label_vocabulary={"negative": 0, "positive": 1},
    )
    features, got, _ = next(iter(ds))
    assert got.numpy().tolist() == [i % 2 for i in range(8)]
    assert features["segment_ids"].numpy().any()


@pytest.fixture(scope="module")
def gpt2():
    return BytePairTokenizer.from_files(
        data_path("gpt2", "vocab.json"), data_path("gpt2", "merges.txt")
    )


def gpt2_lm(vocabulary_size):
    keras.utils.set_random_seed(2)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=vocabulary_size,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
        dropout=0.0,  # so that `fit`'s loss is the hand-computed one
    )
    model = keras_hub.models.GPT2CausalLM(backbone, preprocessor=None)
    compile_for_targets(model)
    return model


@pytest.mark.parametrize("batching", ["stream", "max_length"])
def test_gpt2_causal_lm(gpt2, lines, batching):
    model = gpt2_lm(gpt2.vocabulary_size())
    ds = make_dataset(
        lines,
        gpt2,
        batch_size=4,
        max_length=64,
        batching=batching,
        features=model,  # exactly the model's inputs
    )
    assert sorted(ds.element_spec[0]) == ["padding_mask", "token_ids"]
    if batching == "stream":  # joined by <|endoftext|>, its end token
        check_stream_targets(gpt2, lines, ds, gpt2.special_tokens["eos"])
    check_fed_directly(model, ds)


def test_gpt2_causal_lm_refuses_packed_rows(gpt2, lines):
    """Its packed examples would attend to each other, with positions
    running across the row: an error that names the way out."""
    model = gpt2_lm(gpt2.vocabulary_size())
    with pytest.raises(
        ValueError,
        match=r"model 'gpt2_causal_lm\w*' takes only \['token_ids', "
        r"'padding_mask'\].*batching=\"stream\"",
    ):
        make_dataset(
            lines,
            gpt2,
            batch_size=4,
            max_length=64,
            batching="pack",
            features=model,
        )


@pytest.fixture(scope="module")
def qwen():
    from tf_input import load_tokenizer

    return load_tokenizer(data_path("llm", "qwen3"))


@pytest.mark.parametrize(
    "batching",
    # "max_length" is checked for GPT-2 in the default suite; here it runs
    # with the slow tests.
    ["stream", pytest.param("max_length", marks=pytest.mark.slow)],
)
def test_qwen3_causal_lm_with_its_own_tokenizer_file(qwen, lines, batching):
    """A second causal LM, with a vocabulary from `load_tokenizer`: Qwen 3's
    `tokenizer.json` (151,669 ids; id 0 is "!", so only the weights tell
    the targets apart)."""
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
    compile_for_targets(model)
    ds = make_dataset(
        lines,
        qwen,
        batch_size=4,
        max_length=64,
        batching=batching,
        features=model,
    )
    if batching == "stream":  # joined by its end token, <|im_end|>
        check_stream_targets(qwen, lines, ds, qwen.special_tokens["eos"])
    check_fed_directly(model, ds)
