"""The joints between the parts, combined as a user combines them.

tokenizer -> make_dataset -> a functional model with dict inputs -> fit ->
export_text_model -> reload in a fresh process, with the numbers compared
at each joint; and the four traps that gave silently wrong results before
(issue "From text to model to server with no silent traps").
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import SHARED_DATA
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import BytePairTokenizer
from tf_input import InputBlock
from tf_input import TokenEmbedding
from tf_input import VocabularyTokenizer
from tf_input import WordPieceTokenizer
from tf_input.data import SkippedExamplesWarning
from tf_input.data import make_dataset
from tf_input.data import segment_attention_mask
from tf_input.export import export_text_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXTS = [
    "the cat sat on the mat",
    "a dog ran far away from the cat",
    "the mat",
    "a cat and a dog sat on a mat",
    "dog",
    "the dog ran on the mat and sat",
] * 4


@pytest.fixture(scope="module")
def vocab():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(TEXTS)
    return tokenizer


@pytest.fixture(scope="module")
def gpt2():
    # Only the GPT-2 cases need the real vocabulary; the others run anywhere.
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return BytePairTokenizer.from_files(
        data_path("gpt2", "vocab.json"), data_path("gpt2", "merges.txt")
    )


def int_inputs(*names):
    return {n: keras.Input((None,), dtype="int32", name=n) for n in names}


# --- Trap 1: a dict model fed the wrong tensor ---
def identity_model(names):
    inputs = int_inputs(*names)
    return keras.Model(inputs, {n: t * 1 for n, t in inputs.items()})


@pytest.mark.parametrize("features", [None, "model"])
def test_dict_model_gets_its_own_tensors_in_predict(vocab, features):
    """Before: `predict` returned the padding mask as `token_ids`."""
    model = identity_model(["token_ids"])
    ds = make_dataset(
        TEXTS,
        vocab,
        task="encode",
        batch_size=4,
        max_length=8,
        features=model if features else None,
    )
    got = model.predict(ds, verbose=0)["token_ids"]
    want = np.concatenate([f["token_ids"].numpy() for f in ds])
    np.testing.assert_array_equal(got, want)


def test_features_model_gives_exactly_its_inputs(vocab):
    model = identity_model(["token_ids", "positions", "example_ids"])
    ds = make_dataset(
        TEXTS,
        vocab,
        batch_size=4,
        max_length=16,
        batching="pack",
        features=model,
    )
    features = next(iter(ds))[0]
    assert sorted(features) == ["example_ids", "positions", "token_ids"]
    full = next(
        iter(
            make_dataset(
                TEXTS, vocab, batch_size=4, max_length=16, batching="pack"
            )
        )
    )[0]
    out = model.predict(ds.take(1), verbose=0)
    for name in features:
        np.testing.assert_array_equal(out[name], full[name].numpy())
    # A names list works the same way.
    listed = make_dataset(
        TEXTS, vocab, batch_size=4, max_length=16, features=["padding_mask"]
    )
    assert list(listed.element_spec[0]) == ["padding_mask"]


@pytest.mark.parametrize("features", [None, "model"])
def test_three_input_dict_model_in_pack_mode(vocab, features):
    """Before: the mask went to `token_ids`, and `positions` and the
    packing numbers were swapped."""
    model = identity_model(["token_ids", "example_ids", "positions"])
    ds = make_dataset(
        TEXTS,
        vocab,
        batch_size=4,
        max_length=16,
        batching="pack",
        features=model if features else None,
    )
    out = model.predict(ds, verbose=0)
    for name in ("token_ids", "example_ids", "positions"):
        want = np.concatenate([f[name].numpy() for f, *_ in ds])
        np.testing.assert_array_equal(out[name], want)


def tiny_lm(vocabulary_size, packed):
    """InputBlock -> one causal attention layer -> logits. Packed rows:
    positions from the pipeline, attention kept inside each example."""
    names = ["token_ids", "padding_mask"]
    if packed:
        names += ["example_ids", "positions"]
    inputs = int_inputs(*names)
    hidden = InputBlock(
        vocabulary_size,
        8,
        position="learned",
        max_length=16,
        padding_mask_input=True,
        positions_input=packed,
    )({k: v for k, v in inputs.items() if k != "example_ids"})
    if packed:
        mask = segment_attention_mask(inputs["example_ids"], causal=True)
    else:
        mask = segment_attention_mask(inputs["padding_mask"], causal=True)
    attention = keras.layers.MultiHeadAttention(2, 4)
    hidden = hidden + attention(hidden, hidden, attention_mask=mask)
    return keras.Model(inputs, keras.layers.Dense(vocabulary_size)(hidden))


def nll_by_hand(model, features, labels):
    """-log p(label) of every position, in float64, from the logits."""
    logits = np.asarray(model.predict_on_batch(features), np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    return log_z - picked


@pytest.mark.parametrize(
    "batching", ["longest", "max_length", "bucket", "pack", "stream"]
)
def test_fit_loss_is_the_mean_over_exactly_the_real_targets(vocab, batching):
    """The loss `fit` and `evaluate` report for one batch equals the mean
    negative log-likelihood over the positions whose label is the next
    token of the same example (of the stream), computed by hand; Keras's
    default reduction is the same sum over all positions."""
    keras.utils.set_random_seed(4)
    model = tiny_lm(vocab.vocabulary_size(), packed=batching == "pack")
    ds = make_dataset(
        TEXTS,
        vocab,
        batch_size=4,
        max_length=16,
        batching=batching,
        features=model,
    ).take(1)
    features, labels, weights = next(iter(ds))
    labels, weights = labels.numpy(), weights.numpy()
    # The targets, read from the features alone: the next token where the
    # next position is of the same example (the whole row in "stream").
    example = features.get("example_ids", features["padding_mask"]).numpy()
    same = (np.pad(example[:, 1:], [(0, 0), (0, 1)]) == example) & (example > 0)
    ids = features["token_ids"].numpy()
    if batching == "stream":
        same[:, -1] = True  # the next row goes on with the stream
        assert features["padding_mask"].numpy().all()
        np.testing.assert_array_equal(labels.ravel()[:-1], ids.ravel()[1:])
    np.testing.assert_array_equal(weights, same.astype("float32"))
    np.testing.assert_array_equal(
        labels[:, :-1][same[:, :-1]], ids[:, 1:][same[:, :-1]]
    )
    nll = nll_by_hand(model, features, labels)
    want = (nll * weights).sum() / weights.sum()
    for reduction, expected in [
        ("mean_with_sample_weight", want),
        ("sum_over_batch_size", (nll * weights).sum() / weights.size),
    ]:
        model.compile(
            optimizer=keras.optimizers.SGD(0.0),
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=reduction
            ),
        )
        history = model.fit(ds, epochs=1, verbose=0)
        np.testing.assert_allclose(history.history["loss"][0], expected, 1e-5)
        np.testing.assert_allclose(
            model.evaluate(ds, verbose=0), expected, 1e-5
        )


def test_features_errors(vocab):
    with pytest.raises(ValueError, match=r"produces the features.*'positions'"):
        make_dataset(
            TEXTS, vocab, batch_size=4, max_length=8, features=["positions"]
        )
    with pytest.raises(ValueError, match=r"come with batching=\"pack\""):
        make_dataset(
            TEXTS,
            vocab,
            batch_size=4,
            max_length=8,
            features=identity_model(["token_ids", "example_ids"]),
        )
    with pytest.raises(ValueError, match=r"come with task=\"encode\""):
        make_dataset(
            TEXTS,
            vocab,
            batch_size=4,
            max_length=8,
            features=identity_model(["token_ids", "segment_ids"]),
        )
    with pytest.raises(TypeError, match=r"`features` must be None"):
        make_dataset(TEXTS, vocab, batch_size=4, max_length=8, features="ids")
    # Packed rows into a model that cannot keep their examples apart.
    with pytest.raises(
        ValueError,
        match=r"takes only \['token_ids', 'padding_mask'\]: without "
        r"`example_ids` its packed examples would attend to each other.*"
        r"positions that run across the whole row.*batching=\"stream\".*"
        r"segment_attention_mask",
    ):
        make_dataset(
            TEXTS,
            vocab,
            batch_size=4,
            max_length=8,
            batching="pack",
            features=identity_model(["token_ids", "padding_mask"]),
        )


# --- Trap 2: export serves what training saw ---
def test_export_defaults_match_make_dataset_defaults(vocab, tmp_path):
    """Before: training added <sos>/<eos>, the export did not."""
    model = identity_model(["token_ids", "padding_mask"])
    module = export_text_model(model, vocab, str(tmp_path / "m"), max_length=8)
    ds = make_dataset(TEXTS, vocab, task="encode", batch_size=4, max_length=8)
    for i, batch in enumerate(ds):
        served = module.serve(tf.constant(TEXTS[4 * i : 4 * i + 4]))
        for name in ("token_ids", "padding_mask"):
            np.testing.assert_array_equal(
                served[name].numpy(), batch[name].numpy().astype("int32")
            )


def pooled_model(vocabulary_size, **block):
    inputs = int_inputs("token_ids", "padding_mask")
    hidden = InputBlock(vocabulary_size, 8, **block)(inputs)
    mask = keras.ops.cast(inputs["padding_mask"], "float32")[..., None]
    pooled = keras.ops.sum(hidden * mask, 1) / keras.ops.sum(mask, 1)
    return keras.Model(inputs, pooled)


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_empty_string_is_never_nan(vocab, tmp_path, add_special_tokens):
    """Before: without specials "" was an all-padding row, mean-pooled to
    NaN. Now every row holds at least one real token."""
    model = pooled_model(vocab.vocabulary_size(), padding_mask_input=True)
    module = export_text_model(
        model,
        vocab,
        str(tmp_path / "m"),
        max_length=8,
        add_special_tokens=add_special_tokens,
    )
    out = module.serve(tf.constant(["", "   ", "the cat"])).numpy()
    assert np.isfinite(out).all()
    features = module.features(tf.constant(["", "the cat"]))
    sos, eos = vocab.special_tokens["bos"], vocab.special_tokens["eos"]
    cat = vocab.token_to_id("cat")
    the = vocab.token_to_id("the")
    want = (
        [[sos, eos, 0, 0], [sos, the, cat, eos]]
        if add_special_tokens
        else [[eos, 0], [the, cat]]
    )
    np.testing.assert_array_equal(features["token_ids"].numpy(), want)
    np.testing.assert_array_equal(
        features["padding_mask"].numpy(), np.asarray(want) != 0
    )


# --- Trap 3: id 0 is a real token ---
def test_gpt2_has_no_padding_id_and_the_pipeline_mask_is_right(gpt2):
    assert gpt2.padding_id is None
    assert gpt2.id_to_token(0) == "!"
    ds = make_dataset(
        ["Hi! Hello!"],
        gpt2,
        task="encode",
        batch_size=1,
        max_length=16,
        add_special_tokens=False,
    )
    features = next(iter(ds))
    ids = features["token_ids"].numpy()
    assert ids.tolist() == [[17250, 0, 18435, 0]]
    assert features["padding_mask"].numpy().all()
    # The block with the pipeline's mask keeps every "!".
    block = InputBlock(gpt2.vocabulary_size(), 8, padding_mask_input=True)
    out = block(features)
    assert out._keras_mask.numpy().all()
    # Masking by id: "!" between real tokens is an error, not a silent mask.
    with pytest.raises(ValueError, match=r"masks id 0 as padding.*real token"):
        InputBlock(gpt2.vocabulary_size(), 8)(ids)
    with pytest.raises(ValueError, match=r"masks id 0 as padding.*real token"):
        TokenEmbedding(gpt2.vocabulary_size(), 8).compute_mask(ids)
    graph = tf.function(InputBlock(gpt2.vocabulary_size(), 8))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"masks id 0"):
        graph(tf.constant(ids))


def test_joints_refuse_a_model_that_masks_a_real_token(gpt2, tmp_path):
    model = pooled_model(gpt2.vocabulary_size())  # masks id 0, "!"
    with pytest.raises(ValueError, match=r"masks id 0 as padding.*'!'"):
        make_dataset(
            ["Hi! Hello!"],
            gpt2,
            task="encode",
            batch_size=1,
            max_length=16,
            features=model,
        )
    with pytest.raises(ValueError, match=r"Serving it would hide"):
        export_text_model(model, gpt2, str(tmp_path / "m"), max_length=16)
    # Right for WordPiece, where id 0 is [PAD].
    wordpiece = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    assert wordpiece.padding_id == 0
    export_text_model(
        pooled_model(5), wordpiece, str(tmp_path / "wp"), max_length=8
    )


def test_padding_mask_input_arguments():
    block = InputBlock(10, 8, padding_mask_input=True)
    assert block.padding_id is None
    assert block.input_names == ("token_ids", "padding_mask")
    again = InputBlock.from_config(block.get_config())
    assert again.padding_mask_input and again.padding_id is None
    with pytest.raises(ValueError, match=r"leave `padding_id` at \"auto\""):
        InputBlock(10, 8, padding_mask_input=True, padding_id=0)
    with pytest.raises(TypeError, match=r"`padding_mask_input` must be"):
        InputBlock(10, 8, padding_mask_input=1)


# --- Trap 4: empty data ---
def test_empty_sources_are_an_error_naming_the_source(vocab, tmp_path):
    with pytest.raises(ValueError, match=r"a list of 3 examples\) has no"):
        make_dataset(["", "  ", "\t"], vocab, batch_size=2, max_length=8)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    with pytest.raises(ValueError, match=r"blank.txt'\) has no example"):
        make_dataset(str(blank), vocab, batch_size=2, max_length=8)
    dataset = tf.data.Dataset.from_tensor_slices(["", " "])
    for batching in ("longest", "pack", "bucket"):
        with pytest.raises(ValueError, match=r"a tf.data.Dataset\) has no"):
            make_dataset(
                dataset, vocab, batch_size=2, max_length=8, batching=batching
            )
    pairs = [("the cat", ""), ("", "a dog")]
    with pytest.raises(ValueError, match=r"one side at least"):
        make_dataset(
            pairs,
            vocab,
            task="seq2seq",
            batch_size=2,
            max_length=8,
            add_special_tokens=False,
        )


# --- fit knows the epoch length ---
@pytest.mark.parametrize(
    "batching", ["longest", "max_length", "bucket", "pack", "stream"]
)
def test_list_sources_know_their_length(vocab, batching):
    with pytest.warns(SkippedExamplesWarning, match=r"^1 of the 25 "):
        ds = make_dataset(
            TEXTS + [""],
            vocab,
            batch_size=5,
            max_length=16,
            batching=batching,
            shuffle=True,
            seed=1,
        )
    sizes = {len(list(ds)) for _ in range(3)}  # reshuffled each epoch
    assert sizes == {int(ds.cardinality())}


def test_fit_sees_the_epoch_length(vocab):
    model = pooled_model(vocab.vocabulary_size(), padding_mask_input=True)
    model = keras.Model(model.inputs, keras.layers.Dense(1)(model.output))
    model.compile(optimizer="sgd", loss="mse")
    texts = TEXTS[:10]
    ds = make_dataset(
        list(zip(texts, np.ones(10, "float32"))),
        vocab,
        task="encode",
        batch_size=4,
        max_length=8,
        features=model,
    )
    assert int(ds.cardinality()) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(ds, epochs=2, verbose=0)
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "ran out of data" in m], messages
    assert not [m for m in messages if "doesn't match" in m], messages


# --- segment_attention_mask in a functional model ---
def test_segment_attention_mask_on_symbolic_inputs():
    example_ids = keras.Input((None,), dtype="int32", name="example_ids")
    model = keras.Model(
        example_ids,
        [
            segment_attention_mask(example_ids),
            segment_attention_mask(example_ids, causal=True),
        ],
    )
    full, causal = model(np.array([[1, 1, 2, 2, 0]]))
    want = np.array(
        [
            [1, 1, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [0, 0, 1, 1, 0],
            [0, 0, 1, 1, 0],
            [0, 0, 0, 0, 0],
        ],
        bool,
    )
    np.testing.assert_array_equal(full.numpy()[0], want)
    np.testing.assert_array_equal(causal.numpy()[0], np.tril(want))


# --- The whole path, as a user combines it ---
RELOAD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    jobs = json.loads(sys.argv[1])
    if any(job["helper"] for job in jobs):
        from tf_input.export import load_text_model
    for job in jobs:
        if job["helper"]:
            loaded = load_text_model(job["path"])
        else:
            loaded = tf.saved_model.load(job["path"])
        outs = [loaded.serve(tf.constant(b)).numpy() for b in job["batches"]]
        np.save(job["out"], np.concatenate(outs))
        # As TF Serving and the C API run it: the signature in a session.
        graph = tf.Graph()
        with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
            meta = tf.compat.v1.saved_model.loader.load(
                sess, ["serve"], job["path"]
            )
            signature = meta.signature_def["serving_default"]
            texts = signature.inputs["texts"].name
            outputs = signature.outputs["outputs"].name
            outs = [sess.run(outputs, {texts: b}) for b in job["batches"]]
        np.save(job["session_out"], np.concatenate(outs))
    print("done")
    """
)


def classifier(vocabulary_size):
    """InputBlock (the pipeline's mask) -> masked mean -> 2 logits."""
    inputs = int_inputs("token_ids", "padding_mask")
    hidden = InputBlock(
        vocabulary_size,
        16,
        position="learned",
        max_length=24,
        padding_mask_input=True,
        normalization="layer",
    )(inputs)
    mask = keras.ops.cast(inputs["padding_mask"], "float32")[..., None]
    pooled = keras.ops.sum(hidden * mask, 1) / keras.ops.sum(mask, 1)
    return keras.Model(inputs, keras.layers.Dense(2)(pooled))


def train_and_export(tokenizer, texts, path):
    """Trains on the texts (blanks skipped), then predicts on every text,
    blanks included (`skip_empty=False`). Returns (the texts in batches,
    the predictions: one row per text, in order)."""
    keras.utils.set_random_seed(0)
    model = classifier(tokenizer.vocabulary_size())
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    labels = np.array([len(t) % 2 for t in texts], "int32")
    kwargs = dict(task="encode", batch_size=8, max_length=24, features=model)
    with pytest.warns(SkippedExamplesWarning, match=r"were skipped"):
        ds = make_dataset(list(zip(texts, labels)), tokenizer, **kwargs)
    model.fit(ds, epochs=1, verbose=0)
    # `predict` aligns with the inputs: one row per text, blank or not.
    inputs = make_dataset(texts, tokenizer, skip_empty=False, **kwargs)
    want = model.predict(inputs, verbose=0)
    assert len(want) == len(texts)
    batches = [texts[i : i + 8] for i in range(0, len(texts), 8)]
    start, end = tokenizer.start_ids, tokenizer.end_ids
    module = export_text_model(model, tokenizer, path, dataset=ds)
    for batch, features in zip(batches, inputs):
        # Joint 1: tokenizer -> pipeline rows (specials added once, in
        # order; a blank text is its specials alone).
        for text, row, mask in zip(
            batch, features["token_ids"].numpy(), features["padding_mask"]
        ):
            ids = tokenizer(text).numpy().tolist()[: 24 - len(start + end)]
            assert row[mask.numpy() > 0].tolist() == start + ids + end
        # Joint 2: pipeline features -> the export's features.
        served = module.features(tf.constant(batch))
        for name in ("token_ids", "padding_mask"):
            np.testing.assert_array_equal(
                served[name].numpy(), features[name].numpy().astype("int32")
            )
    return batches, want


@requires_shared_data
def test_text_to_model_to_server(tmp_path, gpt2):
    corpus = (data_path("corpora") / "tinyshakespeare.txt").read_text()
    texts = corpus.splitlines()[:80]  # blank lines included
    wordpiece = WordPieceTokenizer.from_vocab_file(
        data_path("bert", "bert-base-uncased-vocab.txt")
    )
    vocabulary = VocabularyTokenizer()
    vocabulary.adapt(texts[:40])  # later lines hold unknown words
    jobs, wants = [], []
    for name, tokenizer in [
        ("wordpiece", wordpiece),
        ("bpe", gpt2),
        ("vocabulary", vocabulary),
    ]:
        path = str(tmp_path / name)
        batches, want = train_and_export(tokenizer, texts, path)
        jobs.append(
            {
                "path": path,
                "batches": batches,
                "out": str(tmp_path / f"{name}.npy"),
                "session_out": str(tmp_path / f"{name}_session.npy"),
                "helper": name == "wordpiece",
            }
        )
        wants.append(want)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", RELOAD, json.dumps(jobs)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Joint 3: model.predict on the pipeline's batches == the reloaded
    # SavedModel on the same texts, blanks included, in a fresh process,
    # loaded by `tf.saved_model.load` and in a session.
    for job, want in zip(jobs, wants):
        for out in (job["out"], job["session_out"]):
            got = np.load(out)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
