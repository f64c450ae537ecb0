import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.core.protobuf.fingerprint_pb2 import (
    FingerprintDef as fingerprint_def,
)
from tensorflow.python.saved_model.pywrap_saved_model import fingerprinting

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import sentencepiece_model
from tf_input.block import InputBlock
from tf_input.data import make_dataset
from tf_input.export import export_text_model
from tf_input.export import load_text_model
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import SentencePieceTokenizer
from tf_input.tokenizers import VocabularyTokenizer
from tf_input.tokenizers import WordPieceTokenizer
from tf_input.tokenizers import train_bpe

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ["the cat sat on the mat", "a dog ran", "the dog sat on a cat"]
TEXTS = [
    "the cat sat on the mat and the dog ran far away",
    "a dog",
    "",
    "  ",
    "Ünïcödé 猫 🐈 text, with punctuation!",
    "the",
]


def vocabulary_tokenizer(**kwargs):
    tokenizer = VocabularyTokenizer(**kwargs)
    tokenizer.adapt(CORPUS)
    return tokenizer


def feature_model(names):
    """A model that returns the features it receives (as int32)."""
    inputs = {
        name: keras.Input(
            (None,),
            dtype="int32",
            name=name,
        )
        for name in names
    }
    outputs = {
        name: keras.ops.cast(tensor, "int32") for name, tensor in inputs.items()
    }
    return keras.Model(inputs, outputs)


def block_model(vocabulary_size):
    """InputBlock -> dense -> masked mean: per-token and pooled outputs."""
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
    positions = keras.Input((None,), dtype="int32", name="positions")
    block = InputBlock(
        vocabulary_size,
        16,
        position="learned",
        max_length=16,
        positions_input=True,
        padding_mask_input=True,  # id 0 is a real token in GPT-2's vocab
        normalization="layer",
        dropout=0.3,  # off at serving time: outputs are deterministic
    )
    hidden = block(
        {
            "token_ids": token_ids,
            "positions": positions,
            "padding_mask": padding_mask,
        }
    )
    hidden = keras.layers.Dense(16, activation="tanh")(hidden)
    mask = keras.ops.cast(padding_mask, hidden.dtype)[..., None]
    pooled = keras.ops.sum(hidden * mask, 1) / keras.ops.maximum(
        keras.ops.sum(mask, 1), 1.0
    )
    inputs = {
        "token_ids": token_ids,
        "padding_mask": padding_mask,
        "positions": positions,
    }
    return keras.Model(inputs, {"hidden": hidden, "pooled": pooled})


# --- In-graph features -------------------------------------------------------
@pytest.mark.parametrize("batching", ["longest", "max_length"])
def test_features_match_the_pipeline(tmp_path, batching):
    tokenizer = vocabulary_tokenizer()
    names = ["token_ids", "padding_mask"]
    module = export_text_model(
        feature_model(names),
        tokenizer,
        str(tmp_path / "m"),
        max_length=6,
        batching=batching,
        add_special_tokens=True,
    )
    texts = [t for t in TEXTS if t.strip()]  # the pipeline skips empty ones
    got = module.serve(tf.constant(texts))
    ds = make_dataset(
        texts,
        tokenizer,
        task="encode",
        batch_size=len(texts),
        max_length=6,
        batching=batching,
    )
    want = next(iter(ds))
    for name in names:
        np.testing.assert_array_equal(
            got[name].numpy(), np.asarray(want[name]).astype("int32")
        )
    assert got["token_ids"].shape[1] == 6  # longest row is truncated to 6


@pytest.mark.parametrize(
    "batching, specials",
    [("longest", False), ("max_length", False), ("pack", True)],
)
def test_the_training_dataset_sets_the_rows(tmp_path, batching, specials):
    """`dataset=` serves the rows the training pipeline made, whatever its
    arguments; without it, the defaults (special tokens added) would serve
    other rows to a model trained with `add_special_tokens=False`."""
    tokenizer = vocabulary_tokenizer()
    texts = [t for t in TEXTS if t.strip()]
    ds = make_dataset(
        texts,
        tokenizer,
        task="encode",
        batch_size=len(texts) if batching != "pack" else 1,
        max_length=6,
        batching=batching,
        add_special_tokens=specials,
    )
    model = feature_model(["token_ids", "padding_mask"])
    module = export_text_model(
        model, tokenizer, str(tmp_path / "m"), dataset=ds
    )
    got = module.serve(tf.constant(texts))
    same = make_dataset(
        texts,
        tokenizer,
        task="encode",
        batch_size=len(texts),
        max_length=6,
        batching="longest" if batching == "pack" else batching,
        add_special_tokens=specials,
    )
    want = next(iter(same))
    for name in ("token_ids", "padding_mask"):
        np.testing.assert_array_equal(
            got[name].numpy(), np.asarray(want[name]).astype("int32")
        )
    # The record of the original dataset does the same.
    from tf_input.data import pipeline_info

    again = export_text_model(
        model, tokenizer, str(tmp_path / "n"), dataset=pipeline_info(ds)
    )
    np.testing.assert_array_equal(
        again.serve(tf.constant(texts))["token_ids"], got["token_ids"]
    )
    if not specials:  # the trap `dataset=` closes
        default = export_text_model(
            model, tokenizer, str(tmp_path / "d"), max_length=6
        )
        served = default.serve(tf.constant(texts))["token_ids"].numpy()
        assert served.shape != got["token_ids"].shape or not np.array_equal(
            served, got["token_ids"].numpy()
        )


def test_the_training_dataset_is_checked(tmp_path):
    tokenizer = vocabulary_tokenizer()
    texts = [t for t in TEXTS if t.strip()]
    ds = make_dataset(
        texts, tokenizer, batch_size=2, max_length=6, add_special_tokens=False
    )
    model = feature_model(["token_ids"])
    path = str(tmp_path / "m")
    cases = [
        (
            {"add_special_tokens": True},
            r"`add_special_tokens` must agree with the training pipeline.*"
            r"add_special_tokens=False.*Received: add_special_tokens=True",
        ),
        ({"max_length": 8}, r"`max_length` must agree.*max_length=6"),
        ({"batching": "max_length"}, r"`batching` must agree.*'longest'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            export_text_model(model, tokenizer, path, dataset=ds, **kwargs)
    # Agreeing arguments are fine.
    export_text_model(
        model,
        tokenizer,
        path,
        dataset=ds,
        max_length=6,
        add_special_tokens=False,
    )
    with pytest.raises(ValueError, match=r"transformed afterwards"):
        export_text_model(
            model, tokenizer, path, dataset=ds.map(lambda *batch: batch)
        )
    with pytest.raises(ValueError, match=r"tokenizer the training pipeline"):
        export_text_model(model, vocabulary_tokenizer(), path, dataset=ds)
    with pytest.raises(ValueError, match=r"needs `max_length`.*`dataset=`"):
        export_text_model(model, tokenizer, path)


def test_truncation_keeps_the_special_tokens(tmp_path):
    tokenizer = vocabulary_tokenizer(add_special_tokens=True)
    names = [
        "token_ids",
        "padding_mask",
        "segment_ids",
        "example_ids",
        "positions",
    ]
    module = export_text_model(
        feature_model(names), tokenizer, str(tmp_path / "m"), max_length=5
    )
    got = module.serve(tf.constant(["the cat sat on the mat", "a", ""]))
    sos, eos = 1, 2
    the, cat, sat, a = (
        tokenizer.token_to_id(t) for t in "the cat sat a".split()
    )
    np.testing.assert_array_equal(
        got["token_ids"].numpy(),
        [[sos, the, cat, sat, eos], [sos, a, eos, 0, 0], [sos, eos, 0, 0, 0]],
    )
    mask = [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]
    np.testing.assert_array_equal(got["padding_mask"].numpy(), mask)
    # One packed example per row; token types of sentence A.
    np.testing.assert_array_equal(got["example_ids"].numpy(), mask)
    assert not got["segment_ids"].numpy().any()
    np.testing.assert_array_equal(
        got["positions"].numpy(),
        [[0, 1, 2, 3, 4], [0, 1, 2, 0, 0], [0, 1, 0, 0, 0]],
    )
    # Without specials: plain truncation; an empty batch has a shape too.
    plain = export_text_model(
        feature_model(["token_ids"]),
        tokenizer,
        str(tmp_path / "plain"),
        max_length=2,
        add_special_tokens=False,
    )
    out = plain.serve(tf.constant(["the cat sat"]))["token_ids"].numpy()
    np.testing.assert_array_equal(out, [[the, cat]])
    empty = plain.serve(tf.constant([], tf.string))["token_ids"]
    assert tuple(empty.shape) == (0, 1)


def test_token_types_for_a_block_with_segments(tmp_path):
    """`segment_ids` that feed an InputBlock's token-type embedding (BERT)
    are 0 on every position: one text is sentence A. A model without such
    a block gets the packed-row convention (1 on tokens), tested above."""
    tokenizer = vocabulary_tokenizer()
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    segment_ids = keras.Input((None,), dtype="int32", name="segment_ids")
    block = InputBlock(tokenizer.vocabulary_size(), 8, num_segments=2)
    inputs = {"token_ids": token_ids, "segment_ids": segment_ids}
    model = keras.Model(inputs, block(inputs))
    module = export_text_model(
        model,
        tokenizer,
        str(tmp_path / "m"),
        max_length=8,
        add_special_tokens=True,
    )
    texts = ["the cat sat on the mat", "a dog"]
    got = module.serve(tf.constant(texts)).numpy()
    features = next(
        iter(
            make_dataset(
                texts, tokenizer, task="encode", batch_size=2, max_length=8
            )
        )
    )
    ids = features["token_ids"]
    sentence_a = model({"token_ids": ids, "segment_ids": tf.zeros_like(ids)})
    sentence_b = model({"token_ids": ids, "segment_ids": tf.ones_like(ids)})
    np.testing.assert_array_equal(got, sentence_a.numpy())
    assert not np.allclose(got, sentence_b.numpy())


def test_single_and_list_inputs(tmp_path):
    tokenizer = vocabulary_tokenizer()
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    single = keras.Model(token_ids, keras.ops.sum(token_ids, 1))
    module = export_text_model(
        single,
        tokenizer,
        str(tmp_path / "single"),
        max_length=8,
        add_special_tokens=False,
    )
    a, dog, the = (tokenizer.token_to_id(t) for t in ("a", "dog", "the"))
    np.testing.assert_array_equal(
        module.serve(tf.constant(["a dog", "the"])).numpy(), [a + dog, the]
    )
    mask = keras.Input((None,), dtype="bool", name="padding_mask")
    listed = keras.Model(
        [mask, token_ids],
        keras.ops.sum(token_ids * keras.ops.cast(mask, "int32"), 1),
    )
    module = export_text_model(
        listed,
        tokenizer,
        str(tmp_path / "listed"),
        max_length=8,
        add_special_tokens=False,
    )
    np.testing.assert_array_equal(
        module.serve(tf.constant(["a dog"])).numpy(), [a + dog]
    )
    loaded = tf.saved_model.load(str(tmp_path / "listed"))
    out = loaded.signatures["serving_default"](texts=tf.constant(["a dog"]))
    np.testing.assert_array_equal(out["outputs"].numpy(), [a + dog])


def test_one_text_gets_the_answer_without_the_batch_axis(tmp_path):
    # `serve(tf.constant("one text"))` answers as `serve([text])[0]`: the
    # model's outputs for a batch of one, without the batch axis (as
    # `tokenizer("text")` gives 1-D ids where a batch gives rows).
    tokenizer = vocabulary_tokenizer()
    model = feature_model(["token_ids", "padding_mask"])
    path = str(tmp_path / "m")
    module = export_text_model(model, tokenizer, path, max_length=6)
    loaded = tf.saved_model.load(path)
    for served in (module, loaded):
        batch = served.serve(tf.constant(["a dog"]))
        one = served.serve(tf.constant("a dog"))
        assert one["token_ids"].shape.as_list() == [4]
        for name in ("token_ids", "padding_mask"):
            np.testing.assert_array_equal(one[name], batch[name][0])
        # An empty text is answered too: its special tokens.
        assert served.serve(tf.constant(""))["token_ids"].shape == [2]
    with pytest.raises(ValueError, match=r"shape \[N\].*shape \(1, 1\)"):
        module.serve(tf.constant([["a dog"]]))
    # The SavedModel holds the batch and the one-text functions; another
    # shape is TensorFlow's error, which names both.
    with pytest.raises(ValueError, match=r"(?s)shape=\(None,\).*shape=\(\)"):
        loaded.serve(tf.constant([["a dog"]]))
    # The signature of TF Serving takes a batch only.
    signature = loaded.signatures["serving_default"]
    assert signature.structured_input_signature[1]["texts"].shape == [None]


@pytest.mark.parametrize(
    "batching, offsets", [("longest", True), ("max_length", False)]
)
def test_an_empty_batch_has_the_graphs_shapes(tmp_path, batching, offsets):
    # No texts: every output with no rows, the shapes and dtypes the graph
    # gives (in this process, reloaded, and through the signature).
    tokenizer = WordPieceTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "a", "dog"],
        add_special_tokens=True,
    )
    model = block_model(tokenizer.vocabulary_size())
    path = str(tmp_path / "m")
    module = export_text_model(
        model,
        tokenizer,
        path,
        max_length=6,
        batching=batching,
        return_offsets=offsets,
    )
    empty = tf.constant([], tf.string)
    ran = tf.function(module.answer)(empty)  # the graph, on no rows
    ran = {name: (tuple(t.shape), t.dtype) for name, t in ran.items()}
    assert ran["hidden"][0] == (0, 6 if batching == "max_length" else 1, 16)
    loaded = tf.saved_model.load(path)
    for got in (
        module.serve(empty),
        loaded.serve(empty),
        loaded.signatures["serving_default"](texts=empty),
    ):
        assert {n: (tuple(t.shape), t.dtype) for n, t in got.items()} == ran
    texts = tf.constant(["the cat sat", "a dog"])
    np.testing.assert_allclose(
        loaded.serve(texts)["pooled"], module.answer(texts)["pooled"], atol=1e-6
    )


# --- Errors ------------------------------------------------------------------
class Subclassed(keras.Model):
    def call(self, inputs):
        return inputs["token_ids"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_length": 0}, r"`max_length` must be a positive integer"),
        (
            {"batching": "pack"},
            r"`batching` must be one of \('longest', 'max_length'\)",
        ),
        (
            {"max_length": 2, "add_special_tokens": True},
            r"room for the 2 special tokens.*max_length=2",
        ),
        (
            {"model": Subclassed()},
            r"must be a functional Keras model.*Subclassed",
        ),
        (
            {"model": feature_model(["token_ids", "mask"])},
            r"inputs \['token_ids', 'mask'\] \(unknown: \['mask'\]\)",
        ),
        (
            {"model": feature_model(["positions"])},
            r"`model` must take `token_ids`",
        ),
    ],
)
def test_bad_arguments(tmp_path, kwargs, message):
    arguments = {
        "model": feature_model(["token_ids"]),
        "tokenizer": vocabulary_tokenizer(),
        "path": str(tmp_path / "m"),
        "max_length": 8,
        **kwargs,
    }
    with pytest.raises(ValueError, match=message):
        export_text_model(**arguments)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tokenizer": "vocab.txt"}, r"`tokenizer` must be a tf_input"),
        (
            {"add_special_tokens": "yes"},
            r"`add_special_tokens` must be True or False",
        ),
        ({"path": 3}, r"`path` must be a folder path"),
    ],
)
def test_bad_argument_types(tmp_path, kwargs, message):
    arguments = {
        "model": feature_model(["token_ids"]),
        "tokenizer": vocabulary_tokenizer(),
        "path": str(tmp_path / "m"),
        "max_length": 8,
        **kwargs,
    }
    with pytest.raises(TypeError, match=message):
        export_text_model(**arguments)


def test_specials_needed_but_absent(tmp_path):
    tokenizer = vocabulary_tokenizer()

    class NoSpecials(VocabularyTokenizer):
        @property
        def special_tokens(self):
            return {"pad": 0, "unk": 3}

        @property
        def start_ids(self):
            return []

        @property
        def end_ids(self):
            return []

    tokenizer = NoSpecials()
    tokenizer.adapt(CORPUS)
    with pytest.raises(ValueError, match="needs start and end tokens"):
        export_text_model(
            feature_model(["token_ids"]),
            tokenizer,
            str(tmp_path / "m"),
            max_length=8,
            add_special_tokens=True,
        )


def test_load_text_model_explains_unregistered_ops(tmp_path, monkeypatch):
    path = tmp_path / "m"
    export_text_model(
        feature_model(["token_ids"]),
        vocabulary_tokenizer(),
        str(path),
        max_length=8,
    )
    requirements = json.loads((path / "assets.extra/tf_input.json").read_text())
    assert requirements["non_core_ops"] == []
    assert requirements["needs_tensorflow_text"] is False

    def unregistered(_):
        raise tf.errors.NotFoundError(
            None, None, "Op type not registered 'WordpieceTokenizeWithOffsets'"
        )

    monkeypatch.setattr(tf.saved_model, "load", unregistered)
    with pytest.raises(ImportError, match=r"pip install tensorflow-text"):
        load_text_model(str(path))


# --- Fresh process, other folder ---------------------------------------------
RELOAD_SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import sys

    os.environ["KERAS_BACKEND"] = "tensorflow"
    jobs = json.loads(sys.argv[1])
    import numpy as np
    import tensorflow as tf

    if any(job["loader"] == "helper" for job in jobs):
        from tf_input.export import load_text_model


    def session_outputs(path, texts):
        # As TF Serving and the C API run a SavedModel: its signature in a
        # session.
        graph = tf.Graph()
        with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
            meta = tf.compat.v1.saved_model.loader.load(
                session, ["serve"], path
            )
            signature = meta.signature_def["serving_default"]
            fetches = {k: v.name for k, v in signature.outputs.items()}
            feed = {signature.inputs["texts"].name: texts}
            return session.run(fetches, feed)


    report = {"tensorflow_text_imported": [], "errors": {}}
    for job in jobs:
        if job["loader"] == "session":
            try:
                outputs = session_outputs(job["path"], job["texts"])
            except Exception as error:
                message = f"{type(error).__name__}: {error}"
                report["errors"][job["path"]] = message
                continue
            np.savez(
                job["out"],
                **{f"{kind}_{k}": v for k, v in outputs.items()
                   for kind in ("serve", "sig")},
            )
            continue
        texts = tf.constant(job["texts"])
        try:
            if job["loader"] == "plain":
                loaded = tf.saved_model.load(job["path"])
            else:
                loaded = load_text_model(job["path"])
        except Exception as error:
            report["errors"][job["path"]] = f"{type(error).__name__}: {error}"
            continue
        outputs = loaded.serve(texts)
        signature = loaded.signatures["serving_default"](texts=texts)
        arrays = {f"serve_{k}": v.numpy() for k, v in outputs.items()}
        arrays.update({f"sig_{k}": v.numpy() for k, v in signature.items()})
        np.savez(job["out"], **arrays)
    report["tensorflow_text_imported"] = "tensorflow_text" in sys.modules
    print(json.dumps(report))
    """
)


def reload_in_fresh_process(jobs):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", RELOAD_SCRIPT, json.dumps(jobs)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def export_and_move(tokenizer, tmp_path, name, batching, specials=True):
    model = block_model(tokenizer.vocabulary_size())
    first = tmp_path / "first" / name
    module = export_text_model(
        model,
        tokenizer,
        str(first),
        max_length=12,
        batching=batching,
        add_special_tokens=specials,
    )
    assert module.model is model
    want = module.serve(tf.constant(TEXTS))
    want = {k: v.numpy() for k, v in want.items()}
    # The direct call of the Keras model agrees with the SavedModel.
    features = module.features(tf.constant(TEXTS))
    features = {
        k: features[k] for k in ("token_ids", "padding_mask", "positions")
    }
    direct = model(features, training=False)
    np.testing.assert_array_equal(direct["pooled"].numpy(), want["pooled"])
    moved = tmp_path / "moved" / name
    moved.parent.mkdir(exist_ok=True)
    shutil.move(str(first), str(moved))
    return str(moved), want


def check_reloaded(out, want):
    got = np.load(out)
    for key, value in want.items():
        assert got[f"serve_{key}"].dtype == value.dtype
        np.testing.assert_array_equal(got[f"serve_{key}"], value)
        np.testing.assert_array_equal(got[f"sig_{key}"], value)


def tiny_sentencepiece():
    """A small unigram SentencePiece model: it runs TF Text's op."""
    lines = ["the cat sat on the mat", "a dog ran, the cats sat!"] * 20
    proto = sentencepiece_model(
        lines, model_type="unigram", vocab_size=40, hard_vocab_limit=False
    )
    tokenizer = SentencePieceTokenizer(proto)
    assert not tokenizer.uses_core_ops_only
    return tokenizer


def check_core_loads_plain_and_tf_text_needs_the_helper(
    tmp_path, core, tf_text
):
    """`core` = (path, want) of a core-ops export; `tf_text` likewise for
    an export that runs TF Text ops.

    In a process that imports only TensorFlow, the core export loads and
    the TF Text one fails with TF's error; `load_text_model` loads it.
    """
    (core_path, core_want), (wp_path, wp_want) = core, tf_text
    outs = {n: str(tmp_path / f"{n}.npz") for n in ("core", "wp", "wp_plain")}
    job = {"texts": TEXTS, "loader": "plain"}
    plain = reload_in_fresh_process(
        [
            {**job, "path": core_path, "out": outs["core"]},
            {**job, "path": wp_path, "out": outs["wp_plain"]},
        ]
    )
    assert plain["tensorflow_text_imported"] is False
    assert core_path not in plain["errors"]
    check_reloaded(outs["core"], core_want)
    assert "Op type not registered" in plain["errors"][wp_path]
    helped = reload_in_fresh_process(
        [{**job, "loader": "helper", "path": wp_path, "out": outs["wp"]}]
    )
    assert helped["errors"] == {}
    check_reloaded(outs["wp"], wp_want)


def test_reload_in_a_fresh_process_from_another_folder(tmp_path):
    # VocabularyTokenizer: plain TensorFlow loads it. A (tiny) unigram
    # SentencePiece model: plain TensorFlow fails at load time,
    # load_text_model works.
    vocabulary = export_and_move(
        vocabulary_tokenizer(), tmp_path, "vocab", "max_length"
    )
    check_core_loads_plain_and_tf_text_needs_the_helper(
        tmp_path,
        vocabulary,
        export_and_move(tiny_sentencepiece(), tmp_path, "sp", "longest"),
    )


CONTROL_FLOW = ("If", "StatelessIf", "While", "StatelessWhile", "Case")


def saved_control_flow(path):
    """`{lowering attribute: count}` over the `If` / `While` nodes of the
    SavedModel at `path` (None: the attribute is absent)."""
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((pathlib.Path(path) / "saved_model.pb").read_bytes())
    counts = {}
    for meta_graph in saved.meta_graphs:
        graph = meta_graph.graph_def
        for nodes in [
            graph.node,
            *(f.node_def for f in graph.library.function),
        ]:
            for node in nodes:
                if node.op in CONTROL_FLOW:
                    attr = node.attr.get("_lower_using_switch_merge")
                    key = None if attr is None else attr.b
                    counts[key] = counts.get(key, 0) + 1
    return counts


def test_the_saved_control_flow_runs_unlowered_in_every_loader(tmp_path):
    # A byte-level BPE: its graph has conds and loops. Called eagerly
    # first, as a user does, so its graph is traced before the export.
    lines = ["the cat sat on the mat", "a dog ran, the cats sat!"] * 20
    tokenizer = train_bpe(lines, vocabulary_size=300, show_progress=False)
    tokenizer(TEXTS)
    path, want = export_and_move(tokenizer, tmp_path, "bpe", "longest")
    # Every If / While keeps its functions (none is lowered to Switch /
    # Merge), and the fingerprint is of the file as rewritten.
    counts = saved_control_flow(path)
    assert counts.get(False, 0) > 0 and set(counts) == {False}, counts
    fingerprint = tf.saved_model.experimental.read_fingerprint(path)
    assert (
        fingerprint.saved_model_checksum
        == fingerprint_def.FromString(
            fingerprinting.CreateFingerprintDef(path)
        ).saved_model_checksum
    )
    # The same answers as the in-process module (traced graphs, lowered)
    # in a fresh process: `tf.saved_model.load` and a v1 session, as TF
    # Serving and the C API run a SavedModel.
    outs = {n: str(tmp_path / f"{n}.npz") for n in ("plain", "session")}
    report = reload_in_fresh_process(
        [
            {"texts": TEXTS, "loader": n, "path": path, "out": outs[n]}
            for n in outs
        ]
    )
    assert report["errors"] == {}
    for out in outs.values():
        check_reloaded(out, want)


@requires_shared_data
def test_every_family_serves_in_plain_tensorflow_and_a_session(tmp_path):
    # One export per tokenizer family, moved, then loaded in a process
    # that imports only TensorFlow, by `tf.saved_model.load` and in a
    # session (as TF Serving and the C API run a SavedModel).
    from tests.tokenizers import unigram_json
    from tf_input.tokenizers import load_tokenizer

    unigram_file, _ = unigram_json.write(tmp_path, "albert", "albert")
    families = {
        "wordpiece": data_path("bert", "bert-base-uncased-vocab.txt"),
        "byte-level BPE": data_path("llm", "qwen3", "tokenizer.json"),
        "metaspace BPE": data_path("llm", "mistral_v1", "tokenizer.json"),
        "sentencepiece BPE": data_path(
            "sentencepiece", "mistral-7b-v0.3-tokenizer.model"
        ),
        "unigram tokenizer.json": unigram_file,
    }
    tokenizers = {n: load_tokenizer(str(p)) for n, p in families.items()}
    tokenizers["sentencepiece unigram"] = SentencePieceTokenizer(
        str(data_path("sentencepiece", "albert-base-v2-spiece.model")),
        tf_text_unigram=False,
    )
    tokenizers["vocabulary"] = vocabulary_tokenizer()
    exported, jobs = {}, []
    for name, tokenizer in tokenizers.items():
        assert tokenizer.uses_core_ops_only, name
        key = name.replace(" ", "_").replace(".", "_")
        # No special tokens: not every file has a start and an end.
        path, want = export_and_move(
            tokenizer, tmp_path, key, "longest", specials=False
        )
        for loader in ("plain", "session"):
            out = str(tmp_path / f"{key}_{loader}.npz")
            exported[out] = want
            jobs.append(
                {"texts": TEXTS, "loader": loader, "path": path, "out": out}
            )
    report = reload_in_fresh_process(jobs)
    assert report["errors"] == {}
    assert report["tensorflow_text_imported"] is False
    for out, want in exported.items():
        check_reloaded(out, want)


@pytest.mark.slow
@requires_shared_data
def test_real_tokenizers_reload_in_a_fresh_process(tmp_path):
    bpe = BytePairTokenizer.from_files(
        data_path("gpt2", "vocab.json"), data_path("gpt2", "merges.txt")
    )
    wordpiece = WordPieceTokenizer.from_vocab_file(
        data_path("bert", "bert-base-uncased-vocab.txt")
    )
    exported = {
        "bpe": export_and_move(bpe, tmp_path, "bpe", "longest"),
        "wp": export_and_move(wordpiece, tmp_path, "wp", "longest"),
    }
    # Both run core ops only: a process that imports only TensorFlow
    # loads them.
    for path, _ in exported.values():
        requirements = json.loads(
            (pathlib.Path(path) / "assets.extra" / "tf_input.json").read_text()
        )
        assert requirements["non_core_ops"] == []
        assert requirements["needs_tensorflow_text"] is False
    # Loaded by `tf.saved_model.load` and in a session (TF Serving).
    loaders = ("plain", "session")
    outs = {
        (n, loader): str(tmp_path / f"{n}_{loader}.npz")
        for n in exported
        for loader in loaders
    }
    plain = reload_in_fresh_process(
        [
            {"texts": TEXTS, "loader": loader, "path": path, "out": out}
            for (n, loader), out in outs.items()
            for path in [exported[n][0]]
        ]
    )
    assert plain["errors"] == {}
    assert plain["tensorflow_text_imported"] is False
    for (name, _), out in outs.items():
        check_reloaded(out, exported[name][1])
