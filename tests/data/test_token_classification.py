"""`make_dataset(task="token_classification")` against Hugging Face.

The reference is `tokenize_and_align_labels` of Hugging Face's
token-classification examples (`run_ner.py`), run on `tokenizers`' own
`encode(words, is_pretokenized=True)` with truncation to `max_length`,
which is what a fast tokenizer called with `is_split_into_words=True`
does: the label of a word on its first token, -100 (here: weight 0) on
its other tokens and on the special tokens.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.test_export import reload_in_fresh_process
from tf_input.data import make_dataset
from tf_input.data import read_conll
from tf_input.export import export_text_model
from tf_input.tokenizers import load_tokenizer

pytestmark = requires_shared_data

UD = "zh_gsdsimp-ud-test.conllu"
TOKENIZERS = {"bert": "bert_uncased", "qwen3": "qwen3"}


def hf_aligned(hf, sentences, names, max_length, label_all_tokens=False):
    """`(ids, labels)` per sentence, as `tokenize_and_align_labels` gives
    them (-100: not a target)."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_str(hf.to_str())
    hf.enable_truncation(max_length)
    b_to_i = {
        i: names.index("I-" + name[2:])
        for i, name in enumerate(names)
        if name.startswith("B-") and "I-" + name[2:] in names
    }
    out = []
    for words, tags in sentences:
        encoding = hf.encode(words, is_pretokenized=True)
        labels, previous = [], None
        for word in encoding.word_ids:
            if word is None:
                labels.append(-100)
            elif word != previous:
                labels.append(names.index(tags[word]))
            elif label_all_tokens:
                label = names.index(tags[word])
                labels.append(b_to_i.get(label, label))
            else:
                labels.append(-100)
            previous = word
        out.append((encoding.ids, labels))
    return out


def ours(dataset):
    """`(ids, labels)` per row of every batch, -100 where the weight is 0."""
    out = []
    for features, labels, weights in dataset:
        ids, mask = features["token_ids"].numpy(), features["padding_mask"]
        labels, weights = labels.numpy(), weights.numpy()
        for row in range(ids.shape[0]):
            size = int(np.sum(mask[row]))
            if size == 0:
                continue
            row_labels = np.where(weights[row] > 0, labels[row], -100)
            out.append((ids[row, :size].tolist(), row_labels[:size].tolist()))
    return out


def load(name):
    from tokenizers import Tokenizer

    path = data_path("llm", TOKENIZERS[name], "tokenizer.json")
    return load_tokenizer(path, add_special_tokens=False), Tokenizer.from_file(
        str(path)
    )


@pytest.fixture(scope="module")
def ud():
    sentences = list(read_conll(data_path("corpora", UD)))
    names = sorted({tag for _, tags in sentences for tag in tags})
    return sentences, names


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_ud_file_aligned_as_hugging_face(ud, name):
    sentences, names = ud
    tokenizer, hf = load(name)
    max_length = 48  # short enough that many sentences are cut
    ds = make_dataset(
        sentences,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=32,
        max_length=max_length,
    )
    want = hf_aligned(hf, sentences, names, max_length)
    assert len(want) == len(sentences) == 500
    assert sum(len(ids) == max_length for ids, _ in want) > 40
    assert ours(ds) == want


def test_label_all_tokens_turns_b_into_i(ud):
    tokenizer, hf = load("bert")
    # BIO tags over the UD words: a noun phrase's first word B-, the rest I-.
    sentences = []
    for words, tags in ud[0][:200]:
        bio, previous = [], None
        for tag in tags:
            if tag in ("NOUN", "PROPN"):
                bio.append(("I-" if previous == tag else "B-") + tag)
            else:
                bio.append("O")
            previous = tag
        sentences.append((words, bio))
    names = ["O", "B-NOUN", "I-NOUN", "B-PROPN", "I-PROPN"]
    ds = make_dataset(
        sentences,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        label_all_tokens=True,
        batch_size=16,
        max_length=64,
    )
    want = hf_aligned(hf, sentences, names, 64, label_all_tokens=True)
    got = ours(ds)
    assert got == want
    # Words of several tokens are there, so the B -> I rule was exercised.
    assert any(
        b in labels and names.index("I-" + names[b][2:]) in labels
        for _, labels in want
        for b in (1, 3)
    )


@pytest.mark.parametrize("batching", ["max_length", "bucket"])
def test_every_batching_gives_the_same_rows(ud, batching):
    sentences, names = ud
    tokenizer, _ = load("bert")

    def rows(**kwargs):
        return sorted(
            map(
                repr,
                ours(
                    make_dataset(
                        sentences[:120],
                        tokenizer,
                        task="token_classification",
                        label_vocabulary=names,
                        batch_size=16,
                        max_length=40,
                        **kwargs,
                    )
                ),
            )
        )

    assert rows(batching=batching) == rows()


def test_integer_labels_and_a_dataset_source(ud):
    sentences, names = ud
    tokenizer, hf = load("bert")
    numbered = [(w, [names.index(t) for t in tags]) for w, tags in sentences]
    source = tf.data.Dataset.from_generator(
        lambda: iter(numbered),
        output_signature=(
            tf.TensorSpec([None], tf.string),
            tf.TensorSpec([None], tf.int32),
        ),
    )
    ds = make_dataset(
        source,
        tokenizer,
        task="token_classification",
        batch_size=32,
        max_length=64,
    )
    assert ours(ds) == hf_aligned(hf, sentences, names, 64)
    # A list of integer labels, no label_vocabulary.
    ds = make_dataset(
        numbered[:50],
        tokenizer,
        task="token_classification",
        batch_size=8,
        max_length=64,
    )
    assert ours(ds) == hf_aligned(hf, sentences[:50], names, 64)


def test_weights_are_zero_on_specials_padding_and_fill_rows(ud):
    sentences, names = ud
    tokenizer, _ = load("bert")
    ds = make_dataset(
        sentences[:10],
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=4,
        max_length=32,
        batching="max_length",
    )
    batches = list(ds)
    assert len(batches) == 3
    features, labels, weights = batches[-1]
    assert weights.shape == labels.shape == (4, 32)
    assert weights.dtype == tf.float32 and labels.dtype == tf.int32
    mask = features["padding_mask"].numpy()
    assert not mask[2:].any() and not weights.numpy()[2:].any()
    ids = features["token_ids"].numpy()
    specials = np.isin(
        ids, [tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]")]
    )
    assert not weights.numpy()[specials].any()
    assert set(features) == {"token_ids", "padding_mask", "segment_ids"}


def test_bad_sources_say_what_is_wrong(ud):
    tokenizer, _ = load("bert")
    kwargs = dict(task="token_classification", batch_size=2, max_length=16)
    with pytest.raises(ValueError, match=r"source\[1\].*2 words and 3 labels"):
        make_dataset(
            [(["a"], ["X"]), (["b", "c"], ["X", "Y", "Z"])],
            tokenizer,
            label_vocabulary=["X", "Y", "Z"],
            **kwargs,
        )
    with pytest.raises(ValueError, match="needs .words, labels. pairs"):
        make_dataset(["a text"], tokenizer, **kwargs)
    with pytest.raises(ValueError, match='batching="pack"'):
        make_dataset([(["a"], [1])], tokenizer, batching="pack", **kwargs)
    with pytest.raises(ValueError, match="label_all_tokens"):
        make_dataset(
            ["a"], tokenizer, batch_size=2, max_length=8, label_all_tokens=True
        )
    # Found when the dataset is made: the counting pass reads the labels.
    with pytest.raises(tf.errors.InvalidArgumentError, match="nope"):
        make_dataset(
            [(["a"], ["X"]), (["b"], ["nope"])],
            tokenizer,
            label_vocabulary=["X"],
            **kwargs,
        )
    source = tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant([["a", "b"]]), tf.ragged.constant([[1]]))
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number"):
        list(make_dataset(source, tokenizer, **kwargs))


def test_a_keras_hub_bert_tagger_learns_the_ud_tags_and_is_served(ud, tmp_path):
    """A small BERT backbone with a per-token head, fed the batches as
    they are: the loss over the first tokens of words falls, and the
    tagger beats tagging every word with the most common tag. Exported
    with `return_offsets=True` and reloaded in a fresh process, it
    answers raw text with the logits of the model in memory and each
    token's character span, Hugging Face's offsets."""
    import keras
    import keras_hub

    sentences, names = ud
    tokenizer, _ = load("bert")
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=64,
    )
    logits = keras.layers.Dense(len(names))(backbone.output["sequence_output"])
    model = keras.Model(backbone.input, logits)
    ds = make_dataset(
        sentences,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=16,
        max_length=64,
        batching="bucket",
        shuffle=True,
        seed=0,
        features=model,
    )
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=["accuracy"],
    )
    history = model.fit(ds, epochs=6, verbose=0).history
    assert history["loss"][-1] < 0.8 * history["loss"][0]
    tags = [tag for _, labels in sentences for tag in labels]
    majority = max(tags.count(name) for name in names) / len(tags)
    assert history["accuracy"][-1] > majority + 0.1

    texts = corpora_texts()[:6] + ["Héllo WÖRLD, İstanbul!", ""]
    module = export_text_model(
        model, tokenizer, tmp_path / "tagger", dataset=ds, return_offsets=True
    )
    want = {k: v.numpy() for k, v in module.serve(tf.constant(texts)).items()}
    assert set(want) == {"outputs", "offsets"}
    features = module.features(tf.constant(texts))
    direct = model({k: features[k] for k in model.input}).numpy()
    np.testing.assert_allclose(want["outputs"], direct, rtol=1e-5, atol=1e-5)
    _, hf = load("bert")
    hf.enable_truncation(64)
    check_served_offsets(want, texts, hf, tmp_path)


# Slow: a Mistral export and a fresh-process reload (1-2 min); the BERT
# tagger above serves offsets through the same code in the fast suite.
@pytest.mark.slow
def test_a_mistral_tagger_is_served_with_hugging_face_offsets(tmp_path):
    """A SentencePiece-style BPE `tokenizer.json` (Mistral v0.1: `Prepend`
    and `Replace` normalizers, byte fallback) served with
    `return_offsets=True` and reloaded in a process that imports only
    TensorFlow: HF's character spans, special tokens (-1, -1)."""
    import keras
    from tokenizers import Tokenizer

    path = data_path("llm", "mistral_v1", "tokenizer.json")
    tokenizer = load_tokenizer(path, add_special_tokens=True)
    keras.utils.set_random_seed(2)
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    hidden = keras.layers.Embedding(tokenizer.vocabulary_size(), 4)(token_ids)
    model = keras.Model(token_ids, keras.layers.Dense(3)(hidden))
    texts = corpora_texts()[:4] + [
        "Héllo  WÖRLD,\tİstanbul! 🤷🏽‍♀️ naïve",
        "x" * 70,  # truncated at max_length
        "",
    ]
    module = export_text_model(
        model,
        tokenizer,
        tmp_path / "tagger",
        max_length=48,
        return_offsets=True,
    )
    want = {k: v.numpy() for k, v in module.serve(tf.constant(texts)).items()}
    hf = Tokenizer.from_file(str(path))
    hf.enable_truncation(48)
    check_served_offsets(want, texts, hf, tmp_path)


def check_served_offsets(want, texts, hf, tmp_path):
    """The offsets `want` that the tagger under `tmp_path / "tagger"`
    served for `texts` are HF's (`hf`, truncation on; special tokens
    (-1, -1), padding -1), and the SavedModel reloaded in a process that
    imports only TensorFlow answers `want` exactly."""
    for row, encoding in enumerate(hf.encode_batch(texts)):
        spans = [
            [-1, -1] if special else list(span)
            for span, special in zip(
                encoding.offsets, encoding.special_tokens_mask
            )
        ]
        size = len(spans)
        assert want["offsets"][row, :size].tolist() == spans, texts[row]
        assert (want["offsets"][row, size:] == -1).all()
    out = tmp_path / "served.npz"
    report = reload_in_fresh_process(
        [
            {
                "loader": "plain",
                "path": str(tmp_path / "tagger"),
                "texts": texts,
                "out": str(out),
            }
        ]
    )
    assert not report["errors"]
    served = np.load(out)
    for key, value in want.items():
        np.testing.assert_array_equal(served[f"serve_{key}"], value)
        np.testing.assert_array_equal(served[f"sig_{key}"], value)


def corpora_texts():
    """The raw sentences of the UD file (its `# text = ` lines)."""
    return corpora()[UD]


def bio_reference(hf, examples, names, max_length):
    """B-, I-, O tags of each token from HF's offsets: a token is in a
    span when their characters overlap; the span's first token is B-."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_str(hf.to_str())
    hf.enable_truncation(max_length)
    out = []
    for text, spans in examples:
        encoding = hf.encode(text)
        labels, previous = [], None
        for (start, end), special in zip(
            encoding.offsets, encoding.special_tokens_mask
        ):
            if special:
                labels.append(-100)
                continue
            hit = [
                k for k, (a, b, _) in enumerate(spans) if start < b and end > a
            ]
            if not hit:
                labels.append(names.index("O"))
                previous = None
                continue
            kind = "I-" if hit[0] == previous else "B-"
            labels.append(names.index(kind + spans[hit[0]][2]))
            previous = hit[0]
        out.append((encoding.ids, labels))
    return out


@pytest.mark.parametrize(
    "name", ["bert", pytest.param("qwen3", marks=pytest.mark.slow)]
)
def test_character_spans_become_bio_tags_by_the_offsets(name):
    """Spans over capitalised words and over random characters (inside
    tokens, across words) of WikiText lines, tagged by the offsets."""
    import random

    rng = random.Random(0)
    lines = [x for x in corpora()["wikitext-2-raw-test.txt"] if len(x) > 80]
    examples = []
    for text in lines[:150]:
        spans, at = [], 0
        while True:
            start = at + rng.randrange(0, 60)
            end = start + rng.randrange(1, 25)
            if end > len(text):
                break
            spans.append((start, end, rng.choice(["PER", "LOC"])))
            at = end + rng.randrange(0, 3)
        examples.append((text, spans))
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    tokenizer, hf = load(name)
    ds = make_dataset(
        examples,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=16,
        max_length=48,
    )
    want = bio_reference(hf, examples, names, 48)
    assert ours(ds) == want
    assert sum(2 in labels or 4 in labels for _, labels in want) > 100
    # A chunk with no span at all.
    none = [(text, []) for text, _ in examples[:3]]
    ds = make_dataset(
        none,
        tokenizer,
        task="token_classification",
        label_vocabulary=names,
        batch_size=4,
        max_length=48,
    )
    assert ours(ds) == bio_reference(hf, none, names, 48)


def test_character_spans_must_be_in_order_and_named():
    tokenizer, _ = load("bert")
    kwargs = dict(task="token_classification", batch_size=2, max_length=16)
    with pytest.raises(ValueError, match="in order and apart"):
        make_dataset(
            [("Ada met Bob", [(4, 11, "PER"), (0, 3, "PER")])],
            tokenizer,
            label_vocabulary=["O", "B-PER", "I-PER"],
            **kwargs,
        )
    with pytest.raises(ValueError, match="must name the tags, `O`"):
        make_dataset(
            [("Ada met Bob", [(0, 3, "PER")])],
            tokenizer,
            label_vocabulary=["B-PER", "I-PER"],
            **kwargs,
        )
    source = tf.data.Dataset.from_tensor_slices(
        (
            tf.constant(["Ada met Bob"]),
            tf.ragged.constant([[4, 0]], tf.int64),
            tf.ragged.constant([[11, 3]], tf.int64),
            tf.ragged.constant([["PER", "PER"]]),
        )
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="in order and apart"
    ):
        make_dataset(
            source,
            tokenizer,
            label_vocabulary=["O", "B-PER", "I-PER"],
            **kwargs,
        )
    with pytest.raises(tf.errors.InvalidArgumentError, match="B-LOC"):
        make_dataset(
            [("Ada met Bob", [(0, 3, "LOC")])],
            tokenizer,
            label_vocabulary=["O", "B-PER", "I-PER"],
            **kwargs,
        )
