"""The contract every tf_input layer passes (modelled on Keras's own).

`run_layer_test` checks, for one layer class and one input:

* `get_config` -> `from_config` gives the same config, and Keras's
  `serialize_keras_object` / `deserialize_keras_object` round trip works under
  the registered name `tf_input>ClassName`;
* eager, symbolic (with a dynamic sequence length) and `compute_output_shape`
  agree on the output shape, and the mask is what the layer promises;
* `tf.function(jit_compile=True)` equals eager;
* a traced function with an unknown sequence length runs on two lengths;
* a `.keras` save and load gives the same class and identical outputs;
* one `fit` step runs (XLA-compiled), and trainable weights change;
* under `mixed_float16` and `mixed_bfloat16` the output has the compute dtype.

`run_tokenizer_test` is the contract of every tokenizer (modelled on
keras-hub's `run_preprocessing_layer_test`), for one tokenizer and a batch
of texts:

* `repr` names the class and the vocabulary size;
* the registered name is `tf_input>ClassName`; `get_config` is JSON, and
  `from_config` and Keras's `serialize_keras_object` /
  `deserialize_keras_object` round trip give the same config and ids;
* a direct call on the batch gives int32 ragged ids `[N, None]`, each
  text alone gives its row, an empty batch gives `[0, None]`;
* `ds.map` on unbatched and on batched data, and a `tf.function` with an
  unknown batch size, give the direct call's ids;
* `detokenize` of the batch, of one row and inside a `tf.function` agree;
* a `.keras` file and a SavedModel (tokenize and detokenize signatures),
  saved into one folder that is then moved, reload with the same ids and
  texts, in this process and in other Python processes (one per pytest
  worker, kept for all contracts): there the SavedModel loads with
  `import tensorflow` alone (plus `import tensorflow_text` unless
  `uses_core_ops_only`), and the `.keras` file gets its vocabulary from its
  assets (that process forgets the files it loaded before).

`text_lines` is the one hypothesis strategy for fuzzing tokenizers, and
`sentencepiece_model` trains the small models of the SentencePiece tests.
"""

import base64
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st
from tensorflow.core.protobuf import saved_model_pb2

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    *,
    call_kwargs=None,
    expected_mask=None,
    num_trainable_weights=0,
):
    call_kwargs = call_kwargs or {}
    input_data = np.asarray(input_data)
    input_dtype = input_data.dtype.name

    # Config and serialization round trips.
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    assert layer_cls.from_config(config).get_config() == config
    registered = keras.saving.get_registered_name(layer_cls)
    assert registered == f"tf_input>{layer_cls.__name__}"
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    assert type(restored) is layer_cls
    assert restored.get_config() == config

    # Eager call, output shape, mask.
    eager = layer(input_data, **call_kwargs)
    assert tuple(eager.shape) == tuple(
        layer.compute_output_shape(input_data.shape)
    )
    assert len(layer.trainable_weights) == num_trainable_weights
    if expected_mask is not None:
        mask = layer.compute_mask(input_data, None)
        np.testing.assert_array_equal(np.asarray(mask), expected_mask)

    # Symbolic call with an unknown sequence length.
    dynamic_shape = (None,) + input_data.shape[2:]
    symbolic_input = keras.Input(dynamic_shape, dtype=input_dtype)
    symbolic = layer_cls(**init_kwargs)(symbolic_input, **call_kwargs)
    expected = layer.compute_output_shape((None,) + dynamic_shape)
    assert tuple(symbolic.shape) == tuple(expected)

    # XLA equals eager.
    xla = tf.function(lambda x: layer(x, **call_kwargs), jit_compile=True)
    np.testing.assert_allclose(xla(input_data), eager, rtol=1e-6, atol=1e-6)

    # A traced function serves two sequence lengths.
    spec = tf.TensorSpec((None, None) + input_data.shape[2:], input_dtype)
    traced = tf.function(
        lambda x: layer(x, **call_kwargs), input_signature=[spec]
    )
    np.testing.assert_allclose(traced(input_data), eager, rtol=1e-6, atol=1e-6)
    shorter = input_data[:, : max(1, input_data.shape[1] - 1)]
    assert traced(shorter).shape[1] == shorter.shape[1]

    # .keras round trip: same type, identical outputs.
    inputs = keras.Input(input_data.shape[1:], dtype=input_dtype)
    model = keras.Model(inputs, layer_cls(**init_kwargs)(inputs, **call_kwargs))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    assert type(loaded.layers[-1]) is layer_cls
    np.testing.assert_array_equal(
        loaded(input_data).numpy(), model(input_data).numpy()
    )

    # One XLA-compiled fit step; trainable weights move.
    x = keras.layers.Dense(1)(model.outputs[0])
    trainer = keras.Model(inputs, x)
    trainer.compile(
        optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=True
    )
    before = [w.numpy().copy() for w in trainer.layers[1].trainable_weights]
    targets = np.ones(trainer.compute_output_shape(input_data.shape), "float32")
    trainer.fit(
        input_data, targets, epochs=1, batch_size=len(input_data), verbose=0
    )
    after = [w.numpy() for w in trainer.layers[1].trainable_weights]
    for old, new in zip(before, after):
        assert not np.array_equal(old, new)

    # Mixed precision: outputs in the compute dtype.
    for policy in ("mixed_float16", "mixed_bfloat16"):
        mixed = layer_cls(**init_kwargs, dtype=policy)
        out = mixed(input_data, **call_kwargs)
        assert out.dtype == keras.DTypePolicy(policy).compute_dtype, policy
        for weight in mixed.weights:
            assert weight.dtype == "float32"


# --- Tokenizers ---------------------------------------------------------------
class ExportedTokenizer(tf.Module):
    """A SavedModel of a tokenizer: `__call__` (`[N]` strings -> int32
    ragged ids) and `detokenize` (those ids -> `[N]` strings)."""

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, texts):
        return self.tokenizer(texts)

    @tf.function(
        input_signature=[
            tf.RaggedTensorSpec([None, None], tf.int32, 1, tf.int64)
        ]
    )
    def detokenize(self, ids):
        return self.tokenizer.detokenize(ids)


def text_lines(pieces=(), *, alphabet="", max_pieces=6, max_size=12):
    """Hypothesis strategy: lines joined from up to `max_pieces` pieces,
    each any text (no surrogates: a tokenizer's input is UTF-8), text from
    `alphabet` (characters that matter to the tokenizer under test) or
    one of `pieces` (its special tokens and hard cases)."""
    options = [st.text(st.characters(codec="utf-8"), max_size=max_size)]
    if alphabet:
        options.append(st.text(st.sampled_from(alphabet), max_size=max_size))
    if pieces:
        options.append(st.sampled_from(list(pieces)))
    return st.lists(st.one_of(*options), max_size=max_pieces).map("".join)


def sentencepiece_model(lines, **options):
    """The `.model` bytes that `sentencepiece` trains on `lines` with
    `SentencePieceTrainer.train` `options` (logging off)."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        **{"minloglevel": 2, **options},
    )
    return model.getvalue()


def _as_bytes(texts):
    return [
        t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in texts
    ]


def _ids(ragged):
    assert isinstance(ragged, tf.RaggedTensor), type(ragged)
    assert ragged.dtype == tf.int32, ragged.dtype
    return [[int(i) for i in row] for row in ragged.to_list()]


def _difference(got, want, inputs):
    """The first row where `got` and `want` differ, for a failure message."""
    if len(got) != len(want):
        return f"{len(got)} rows, expected {len(want)}"
    for text, a, b in zip(inputs, got, want):
        if a != b:
            return f"on {text!r}: got {a!r}, expected {b!r}"
    return "no difference"


def _texts(strings):
    return [bytes(x) for x in strings.numpy().tolist()]


# One long-lived Python process per pytest worker and kind answers the
# reload requests of every contract: `import tensorflow` (and a process's
# start) costs seconds, paid once instead of once per tokenizer. The
# "saved_model" kind never imports tf_input, keras-hub or (unless asked)
# tensorflow_text, and reports which of them a load pulled in; the "keras"
# kind imports tf_input, which registers the layers.
_SERVER = textwrap.dedent(
    """
    import base64, json, sys, traceback
    import tensorflow as tf
    kind, tensorflow_text = sys.argv[1], sys.argv[2] == "1"
    if tensorflow_text:
        import tensorflow_text  # noqa: F401  (registers its ops)
    if kind == "keras":
        import keras
        import tf_input  # registers the layers
        import tf_input.tokenizers._assets
    encode = lambda xs: [base64.b64encode(x).decode() for x in xs]

    def answer(request):
        texts = tf.constant([base64.b64decode(t) for t in request["inputs"]])
        if kind == "keras":
            # Forget the files earlier requests loaded: the vocabulary must
            # come from this file's assets, as in a fresh process.
            tf_input.tokenizers._assets.KNOWN._files.clear()
            model = keras.saving.load_model(request["keras"]).layers[0]
        else:
            model = tf.saved_model.load(request["saved_model"])
        ids = model(texts)
        return {
            "ids": ids.to_list(),
            "texts": encode(model.detokenize(ids).numpy().tolist()),
            "modules": sorted(m for m in sys.modules if m.split(".")[0] in (
                "tf_input", "tensorflow_text", "keras_hub"
            )),
        }

    for line in sys.stdin:
        try:
            out = answer(json.loads(line))
        except Exception:
            out = {"error": traceback.format_exc()}
        print("@answer " + json.dumps(out), flush=True)
    """
)
_SERVERS = {}


class _Server:
    """A Python process running `_SERVER`, asked one request at a time."""

    def __init__(self, kind, tensorflow_text):
        self.log = tempfile.TemporaryFile(mode="w+")
        env = {
            **os.environ,
            "KERAS_BACKEND": "tensorflow",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "PYTHONPATH": str(ROOT),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, kind, str(int(tensorflow_text))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )

    def ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("@answer "):
                out = json.loads(line[len("@answer ") :])
                assert "error" not in out, out["error"]
                return out
        self.log.seek(0)
        raise AssertionError(
            f"the reload process ended: {self.log.read()[-3000:]}"
        )


def _ask_server(kind, tensorflow_text, request):
    key = (kind, tensorflow_text)
    server = _SERVERS.get(key)
    if server is None or server.process.poll() is not None:
        server = _SERVERS[key] = _Server(kind, tensorflow_text)
    return server.ask(request)


def _ops_outside_core_tensorflow(saved_model):
    """The op types of a SavedModel's graphs that core TensorFlow lacks
    (`tf.raw_ops` holds every core op; TF Text's ops are not there)."""
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((saved_model / "saved_model.pb").read_bytes())
    ops = set()
    for graph in proto.meta_graphs:
        ops.update(node.op for node in graph.graph_def.node)
        for function in graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    return sorted(ops - set(dir(tf.raw_ops)))


def _run_fresh_process(folder, inputs, tensorflow_text):
    """The ids and texts of the moved SavedModel and `.keras` file,
    reloaded in other Python processes (see `_SERVER`)."""
    request = {
        "saved_model": str(folder / "saved_model"),
        "keras": str(folder / "tokenizer.keras"),
        "inputs": [base64.b64encode(t).decode() for t in inputs],
    }
    out = _ask_server("saved_model", tensorflow_text, request)
    keras_out = _ask_server("keras", tensorflow_text, request)
    out["keras_ids"] = keras_out["ids"]
    out["keras_texts"] = keras_out["texts"]
    for key in ("texts", "keras_texts"):
        out[key] = [base64.b64decode(t) for t in out[key]]
    return out


def run_tokenizer_test(
    tokenizer,
    inputs,
    *,
    expected_ids=None,
    expected_detokenized=None,
    fresh_process=True,
):
    """The contract every tf_input tokenizer passes (see the module doc).

    Args:
        tokenizer: the tokenizer under test (a `tf_input` `Tokenizer`).
        inputs: list of str or bytes, at least two texts.
        expected_ids: None, or the reference's ids of `inputs` (lists).
        expected_detokenized: None, or what `detokenize` gives for the ids
            of `inputs` (str or bytes each), e.g. `inputs` for a tokenizer
            whose round trip is exact.
        fresh_process: bool. Also reload the moved files in other Python
            processes (see `_SERVER`).

    Returns:
        The ids of `tokenizer(inputs)`, as lists.
    """
    cls = type(tokenizer)
    inputs = _as_bytes(inputs)
    assert len(inputs) >= 2, "give the contract at least two texts"
    batch = tf.constant(inputs, tf.string)

    # Direct calls: the batch, each text alone, an empty batch.
    want = _ids(tokenizer(batch))
    if expected_ids is not None:
        expected_ids = [list(row) for row in expected_ids]
        assert want == expected_ids, _difference(want, expected_ids, inputs)
    for text, row in zip(inputs, want):
        one = tokenizer(tf.constant(text))
        assert one.dtype == tf.int32 and one.shape.rank == 1
        assert one.numpy().tolist() == row, text
    empty = tokenizer(tf.constant([], tf.string))
    assert empty.shape.as_list() == [0, None]

    # What it is, in one line.
    text = repr(tokenizer)
    assert text.startswith(f"<{cls.__name__} name="), text
    assert f"vocabulary_size={tokenizer.vocabulary_size()}," in text, text

    # Config and serialization round trips.
    registered = keras.saving.get_registered_name(cls)
    assert registered == f"tf_input>{cls.__name__}"
    config = tokenizer.get_config()
    config = json.loads(json.dumps(config))  # plain JSON
    restored = cls.from_config(config)
    assert type(restored) is cls
    assert restored.get_config() == tokenizer.get_config()
    assert _ids(restored(batch)) == want
    revived = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(keras.saving.serialize_keras_object(tokenizer)))
    )
    assert type(revived) is cls
    assert _ids(revived(batch)) == want

    # tf.data, unbatched and batched, and a traced function.
    dataset = tf.data.Dataset.from_tensor_slices(batch)
    unbatched = [x.numpy().tolist() for x in dataset.map(tokenizer)]
    assert unbatched == want
    batched = dataset.batch(3).map(
        tokenizer, num_parallel_calls=tf.data.AUTOTUNE
    )
    assert [row for b in batched for row in _ids(b)] == want
    traced = tf.function(
        tokenizer, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    assert _ids(traced(batch)) == want
    assert _ids(traced(batch[:1])) == want[:1]

    # Detokenize: the batch, one row, and inside a traced function.
    ids = tokenizer(batch)
    texts = _texts(tokenizer.detokenize(ids))
    if expected_detokenized is not None:
        expected = _as_bytes(expected_detokenized)
        assert texts == expected, _difference(texts, expected, inputs)
    one = tokenizer.detokenize(tf.constant(want[0], tf.int32))
    assert one.shape.rank == 0 and one.numpy() == texts[0]
    traced_detokenize = tf.function(
        tokenizer.detokenize,
        input_signature=[
            tf.RaggedTensorSpec([None, None], tf.int32, 1, tf.int64)
        ],
    )
    assert _texts(traced_detokenize(ids)) == texts

    # A `.keras` file and a SavedModel in one folder, which is then moved.
    with tempfile.TemporaryDirectory() as root:
        first = pathlib.Path(root, "first")
        first.mkdir()
        keras.Sequential([tokenizer]).save(first / "tokenizer.keras")
        tf.saved_model.save(
            ExportedTokenizer(tokenizer), str(first / "saved_model")
        )
        moved = pathlib.Path(root, "moved")
        shutil.move(first, moved)

        layer = keras.saving.load_model(moved / "tokenizer.keras").layers[0]
        assert type(layer) is cls
        assert _ids(layer(batch)) == want
        assert _texts(layer.detokenize(ids)) == texts
        loaded = tf.saved_model.load(str(moved / "saved_model"))
        assert _ids(loaded(batch)) == want
        assert _texts(loaded.detokenize(ids)) == texts
        # `uses_core_ops_only` says whether the graph has TF Text ops.
        core = tokenizer.uses_core_ops_only
        assert isinstance(core, bool)
        outside = _ops_outside_core_tensorflow(moved / "saved_model")
        assert core == (not outside), outside

        if fresh_process:
            out = _run_fresh_process(moved, inputs, tensorflow_text=not core)
            assert out["ids"] == want
            assert out["texts"] == texts
            # Loading the SavedModel imported neither tf_input nor (for a
            # core-ops tokenizer) tensorflow_text.
            expected_modules = [] if core else ["tensorflow_text"]
            assert {m.split(".")[0] for m in out["modules"]} == set(
                expected_modules
            )
            assert out["keras_ids"] == want
            assert out["keras_texts"] == texts
    return want
