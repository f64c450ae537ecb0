"""SavedModels that take raw strings: tokenizer + padding + model in one graph.

Keras 3 cannot build a functional model from `keras.Input(dtype="string")`,
and a subclassed model cannot go through `model.export`. So the exported
object is a `tf.Module` that holds the tokenizer and the model (their
variables, lookup tables and assets are saved with it) and one
`tf.function`, `serve(texts)`, saved for a batch of texts `[None]` and for
one text `[]`, plus the `serving_default` signature (a batch).

Which tokenizers load with plain TensorFlow: every tokenizer whose
`uses_core_ops_only` is true (all of them, except a
`SentencePieceTokenizer` running a unigram model on TF Text's ops, its
default when `tensorflow_text` is installed, or a BPE model with a
precompiled charsmap), so `tf.saved_model.load(path)` works in a process
that imports nothing but `tensorflow`. The others hold `tensorflow_text`
ops; TensorFlow checks every op when it loads the graph,
so a process that has not run `import tensorflow_text` fails inside
`tf.saved_model.load` with "Op type not registered", before any code of the
SavedModel can run. `load_text_model(path)` reads the list of such ops that
`export_text_model` writes next to the model, imports `tensorflow_text`
when needed, and says what to install if it is missing.
"""

from __future__ import annotations

import json
import os

import keras
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.saved_model import fingerprinting_utils

from tf_input._feature_names import SERVED_FEATURES
from tf_input._model_inputs import check_padding
from tf_input._model_inputs import input_packer
from tf_input._validation import check_bool
from tf_input._validation import check_one_of
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input.data.cutting import check_tokenizer
from tf_input.data.rows import Rows
from tf_input.tokenizers.base import Untracked

# How served rows are padded: one text per row, as in these two modes.
SERVED_BATCHINGS = ("longest", "max_length")
# Written by `export_text_model`, read by `load_text_model`. `assets.extra`
# is the SavedModel folder for files TensorFlow itself does not read.
REQUIREMENTS_FILE = os.path.join("assets.extra", "tf_input.json")
# What `serve` takes: a batch of texts, or one text.
SERVED_TEXTS = tf.TensorSpec([None], tf.string, name="texts")
SERVED_TEXT = tf.TensorSpec([], tf.string, name="texts")
# TensorFlow's control-flow ops that run a function per branch or loop.
_CONTROL_FLOW = ("If", "StatelessIf", "While", "StatelessWhile", "Case")
_LOWERING = "_lower_using_switch_merge"


def _model_inputs(model):
    """`(names, pack)`: the feature names the model takes and a function
    that builds its call argument from a dict of features."""
    names, pack = input_packer(model)
    unknown = [name for name in names if name not in SERVED_FEATURES]
    if "token_ids" not in names or unknown:
        raise ValueError(
            "`model` must take `token_ids`, and may also take "
            f"{SERVED_FEATURES[1:]}, as named inputs: the features of "
            "`tf_input.data.make_dataset`. Received: a model with inputs "
            f"{names} (unknown: {unknown}). Name each `keras.Input` after "
            "the feature it receives."
        )
    return names, pack


def _non_core_ops(concrete_function):
    """Op types in the function (and the functions it calls) that are not
    core TensorFlow ops (e.g. `tensorflow_text` ops)."""
    graph_def = concrete_function.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types.update(node.op for node in function.node_def)
    library = {f.signature.name for f in graph_def.library.function}
    return sorted(
        t for t in types if t not in library and not hasattr(tf.raw_ops, t)
    )


class _TextModel(tf.Module):
    """Tokenizer, truncation, special tokens, padding and model in a graph.

    The rows are `tf_input.data.rows.Rows.serve`'s: the same code that
    makes `make_dataset`'s rows.
    """

    def __init__(
        self, model, tokenizer, *, max_length, batching, specials, offsets
    ):
        super().__init__(name="text_model")
        # The model is not tracked; its variables are, as the TensorFlow
        # variables that hold them. Tracked as objects, Keras variables
        # are saved twice (the variable and a copy for its wrapper), and a
        # session (TF Serving, the C API) restores only the copy, which the
        # graph does not read: "Could not find variable ...".
        self._keras = Untracked()
        self._keras.model = model
        self.model_variables = [_tf_variable(v) for v in model.variables]
        self.tokenizer = tokenizer
        self._offsets = offsets
        self._names, self._pack = _model_inputs(model)
        self._rows = Rows(
            task="encode",
            batching=batching,
            max_length=max_length,
            tokenizer=tokenizer,
            add_special_tokens=specials,
        )

    @property
    def model(self):
        """The Keras model (this process only: a SavedModel holds its
        variables and `serve`, not the Keras object)."""
        return self._keras.model

    def features(self, texts):
        """`[N]` strings -> the dict of padded `[N, S]` features (and
        `offsets` with `return_offsets`)."""
        return self._rows.serve(texts, offsets=self._offsets)

    def answer(self, texts):
        """`[N]` strings -> the model's outputs for them (a dict with the
        offsets as well, with `return_offsets`)."""
        features = self.features(texts)
        outputs = self._keras.model(self._pack(features), training=False)
        if not self._offsets:
            return outputs
        return {**_output_dict(outputs), "offsets": features["offsets"]}

    @tf.function
    def serve(self, texts):
        # Traced twice by `export_text_model`, the two concrete functions
        # of the SavedModel: a batch `[None]`, and one text `[]`, answered
        # as a batch of one without its batch axis.
        texts = tf.convert_to_tensor(texts)
        if texts.dtype != tf.string or texts.shape.rank not in (0, 1):
            raise ValueError(
                "`texts` must be a batch of strings, shape [N] (or one "
                "string, shape []). Received: texts with dtype "
                f"{texts.dtype.name} and shape {texts.shape}. Reshape to "
                "[N] first, e.g. `tf.reshape(texts, [-1])`."
            )
        if texts.shape.rank == 0:
            outputs = self.answer(texts[None])
            return tf.nest.map_structure(lambda tensor: tensor[0], outputs)
        return self.answer(texts)

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="texts")]
    )
    def serving_default(self, texts):
        outputs = self.serve(texts)
        return _output_dict(outputs)


def _tf_variable(variable):
    """The `tf.Variable` behind a Keras variable (or `variable` itself)."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    if not isinstance(value, tf.Variable):
        raise TypeError(
            "`model`'s variables must be TensorFlow variables to be saved: "
            f"{variable.path!r} holds a {type(value).__name__}. Build the "
            "model with the TensorFlow backend (KERAS_BACKEND=tensorflow)."
        )
    return value


def _output_dict(outputs):
    """A model's outputs as a dict: as they are, `{"outputs": ...}` for
    one tensor, or `{"output_0": ..., ...}`."""
    if isinstance(outputs, dict):
        return outputs
    flat = tf.nest.flatten(outputs)
    if len(flat) == 1:
        return {"outputs": flat[0]}
    return {f"output_{i}": tensor for i, tensor in enumerate(flat)}


def _row_arguments(tokenizer, dataset, max_length, batching, specials):
    """`max_length`, `batching` and `add_special_tokens`: as given, or from
    the training pipeline's record, which an argument must agree with."""
    if dataset is None:
        if max_length is None:
            raise ValueError(
                "`export_text_model` needs `max_length` (the value given to "
                "`make_dataset`), or `dataset=` the training dataset. "
                "Received neither."
            )
        return (
            max_length,
            "longest" if batching is None else batching,
            True if specials is None else specials,
        )
    from tf_input.data.info import PipelineInfo
    from tf_input.data.info import pipeline_info

    info = dataset if isinstance(dataset, PipelineInfo) else None
    if info is None and isinstance(dataset, tf.data.Dataset):
        info = pipeline_info(dataset)
    if info is None:
        raise ValueError(
            "`dataset` must be the dataset `make_dataset` returned (not "
            "one transformed afterwards: pass `pipeline_info(ds)` of the "
            "original) or a `PipelineInfo`. "
            f"Received: dataset={dataset!r}."
        )
    if info.tokenizer is not None and info.tokenizer is not tokenizer:
        raise ValueError(
            "`tokenizer` must be the tokenizer the training pipeline used: "
            "`dataset` was made with another one, so the served ids would "
            "not be the trained ones."
        )
    padded = "max_length" if info.batching == "max_length" else "longest"
    for name, given, trained in (
        ("max_length", max_length, info.max_length),
        ("batching", batching, padded),
        ("add_special_tokens", specials, info.add_special_tokens),
    ):
        if given is not None and given != trained:
            raise ValueError(
                f"`{name}` must agree with the training pipeline given as "
                f"`dataset`, which has {name}={trained!r} (leave it out to "
                f"take that value). Received: {name}={given!r}."
            )
    return info.max_length, padded, info.add_special_tokens


def export_text_model(
    model,
    tokenizer,
    path,
    *,
    max_length=None,
    batching=None,
    add_special_tokens=None,
    dataset=None,
    return_offsets=False,
):
    """Saves `model` as a SavedModel whose serving function takes raw text.

    The SavedModel's `serve` function and its `serving_default` signature
    take `texts`, a `tf.string` batch `[None]`, and run in one graph:

    1. the tokenizer (without special tokens);
    2. truncation to `max_length` minus the number of special tokens, then
       the tokenizer's start and end tokens (`tokenizer.start_ids` /
       `end_ids`, e.g. `[CLS]`/`[SEP]`), if `add_special_tokens` (the
       default, as in `tf_input.data.make_dataset`) — the same tokens,
       truncation and order as `make_dataset` with the same arguments, so
       a model is served the rows it was trained on;
    3. padding with id 0, to the longest row (`batching="longest"`) or to
       `max_length` (`"max_length"`);
    4. the model, called with `training=False` on the features it declares
       as inputs, by name: `token_ids` (int32 `[B, S]`) and optionally
       `padding_mask` (int32 `[B, S]`, 1 on tokens), `segment_ids` (BERT's
       token types: 0, each text is sentence A), `example_ids` and
       `positions` (a packed row holding one example, as
       `make_dataset(batching="pack")` gives them: `example_ids` 1 on
       tokens and 0 on padding, `positions` `0..length-1` on tokens).

    With `return_offsets=True`, `serve` also says where each row position
    is in its text, for a model with per-token outputs (a tagger): it
    returns a dict, the model's outputs (`{"outputs": ...}` for a single
    output) and `offsets`, int32 `[B, S, 2]`, each position's character
    span `[start, end)` in its text (`text[start:end]` in Python, as
    `tokenize_with_offsets(..., unit="char")` gives it), -1 on special
    tokens and padding: the spans Hugging Face's token-classification
    pipeline answers with. The tokenizer must give offsets
    (`tokenize_with_offsets`).

    Otherwise `serve(texts)` returns the model's outputs as they are; the
    `serving_default` signature returns a dict (`{"outputs": ...}` for a
    single output). `serve` also takes one text, a scalar string, and
    answers as for a batch of one without the batch axis:
    `serve(tf.constant("a text"))` equals `serve(tf.constant(["a
    text"]))[0]` (for each output); another shape is an error that names
    the two it takes. The signature takes a batch only.

    Every row holds at least one real token: an empty
    string gives a row of only the special tokens, or, without special
    tokens, one token (the tokenizer's end token, else its unknown token,
    else its padding id, else 0) marked real in `padding_mask`, so that no
    output is NaN (`make_dataset` skips empty texts instead). The
    model must not mask, as padding, an id that is a real token of the
    tokenizer (id 0 is `"!"` in GPT-2's vocabulary): that is an error here
    (use `InputBlock(..., padding_mask_input=True)`). The tokenizer's
    vocabulary and the model's weights are saved in `path`, so the folder
    can be moved: reloaded in a fresh process from another folder it
    returns exactly what the original returned.

    Loading: a SavedModel whose tokenizer's `uses_core_ops_only` is true
    loads with `tf.saved_model.load(path)` in a process that imports only
    `tensorflow`. Otherwise (a `SentencePieceTokenizer` on TF Text's ops)
    the graph holds `tensorflow_text` ops: run `import tensorflow_text` before
    `tf.saved_model.load`, or use `tf_input.export.load_text_model(path)`,
    which does it (TensorFlow itself fails with "Op type not registered"
    otherwise, before any code of the SavedModel runs). The op types that
    need an import are written to `assets.extra/tf_input.json`.

    Args:
        model: a functional `keras.Model` whose inputs are named after the
            features above (e.g. an `InputBlock` followed by the rest of
            the network).
        tokenizer: a `tf_input` tokenizer.
        path: str. Folder to write the SavedModel to.
        max_length: int. Longest row, special tokens included; longer texts
            are truncated. Required unless `dataset` is given.
        batching: str, `"longest"` or `"max_length"`. Defaults to
            `"longest"` (with `dataset`: `"max_length"` if the training
            batches were padded to `max_length`, else `"longest"`).
        add_special_tokens: bool. Add the tokenizer's start and end
            tokens, as `make_dataset` does by default; pass the value given
            to `make_dataset` for training. Defaults to `True` (with
            `dataset`: the training pipeline's value).
        dataset: optional, the `tf.data.Dataset` that `make_dataset`
            returned for training (or its `tf_input.data.pipeline_info`).
            The export then takes `max_length`, `add_special_tokens` and
            the padding from it, so serving cannot drift from training; an
            argument given as well must agree with it, and `tokenizer`
            must be the pipeline's.
        return_offsets: bool. Also return each position's character span
            (see above). Defaults to `False`.

    Returns:
        The `tf.Module` that was saved (its `serve` works in this process).

    Example:

    >>> tokenizer = tf_input.VocabularyTokenizer()
    >>> tokenizer.adapt(["the cat sat", "a dog"])
    >>> token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    >>> model = keras.Model(token_ids, token_ids * 10)
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = tf_input.export.export_text_model(
    ...     model, tokenizer, folder, max_length=4)
    >>> reloaded = tf.saved_model.load(folder)
    >>> reloaded.serve(tf.constant(["the cat sat down", "a"])).numpy()
    array([[10, 40, 50, 20],
           [10, 70, 20,  0]], dtype=int32)
    """
    check_tokenizer("tokenizer", tokenizer)
    max_length, batching, add_special_tokens = _row_arguments(
        tokenizer, dataset, max_length, batching, add_special_tokens
    )
    max_length = check_positive_int("max_length", max_length)
    batching = check_one_of("batching", batching, SERVED_BATCHINGS)
    check_bool("add_special_tokens", add_special_tokens)
    check_padding(model, tokenizer, "Serving it")
    check_type("path", path, (str, os.PathLike), "a folder path")
    check_bool("return_offsets", return_offsets)
    module = _TextModel(
        model,
        tokenizer,
        max_length=max_length,
        batching=batching,
        specials=add_special_tokens,
        offsets=return_offsets,
    )
    if return_offsets and "offsets" in model.output_names:
        raise ValueError(
            "`return_offsets=True` adds an output named `offsets`, but the "
            "model has an output of that name already. Rename it."
        )
    concrete = module.serve.get_concrete_function(SERVED_TEXTS)
    module.serve.get_concrete_function(SERVED_TEXT)
    signature = module.serving_default.get_concrete_function()
    path = os.fspath(path)
    tf.saved_model.save(module, path, signatures={"serving_default": signature})
    _keep_control_flow_functional(path)
    requirements = {
        "format": 1,
        "tokenizer": type(tokenizer).__name__,
        "non_core_ops": _non_core_ops(concrete),
    }
    requirements["needs_tensorflow_text"] = bool(requirements["non_core_ops"])
    os.makedirs(os.path.join(path, "assets.extra"), exist_ok=True)
    with open(os.path.join(path, REQUIREMENTS_FILE), "w") as file:
        json.dump(requirements, file, indent=2)
    return module


def _keep_control_flow_functional(path):
    """Marks every `If` / `While` of the SavedModel at `path` to run as
    it is written, not lowered to `Switch` / `Merge` / `Enter` / `Exit`
    when the graph is instantiated (TensorFlow's default for graphs it
    traces, through the `_lower_using_switch_merge` attribute).

    The results are the same; a request runs fewer ops: the tokenizers'
    conds and loops are most of a small request's graph, and a served
    batch of one text takes 4-24% less time (benchmarks/README.md).
    Every runtime runs functional control flow (TF Serving, the C API:
    it is how TensorFlow runs it under XLA and the single-threaded
    executor). Done on the saved file, so functions traced before the
    export (a tokenizer's graph, traced at its first eager call) are
    marked too; the fingerprint is then written again. `tf.data` keeps
    TensorFlow's default: there the lowered graph starts faster.
    """
    file = os.path.join(path, "saved_model.pb")
    saved = saved_model_pb2.SavedModel()
    with open(file, "rb") as stream:
        saved.ParseFromString(stream.read())
    for meta_graph in saved.meta_graphs:
        graph = meta_graph.graph_def
        for nodes in [
            graph.node,
            *(f.node_def for f in graph.library.function),
        ]:
            for node in nodes:
                if node.op in _CONTROL_FLOW:
                    node.attr[_LOWERING].b = False
    with open(file, "wb") as stream:
        stream.write(saved.SerializeToString(deterministic=True))
    if os.path.exists(os.path.join(path, "fingerprint.pb")):
        fingerprinting_utils.write_fingerprint(path)


def load_text_model(path):
    """Loads a SavedModel written by `export_text_model`.

    The same as `tf.saved_model.load(path)`, except that it first imports
    `tensorflow_text` when the model's tokenizer needs it
    (`WordPieceTokenizer`, `SentencePieceTokenizer`), and replaces
    TensorFlow's bare "Op type not registered" error with one that says
    what to install. `VocabularyTokenizer` and `BytePairTokenizer` models
    need no import at all.

    Args:
        path: str. The SavedModel folder.

    Returns:
        The loaded object; call `loaded.serve(texts)` or
        `loaded.signatures["serving_default"](texts=texts)`.
    """
    path = os.fspath(path)
    requirements = {}
    requirements_path = os.path.join(path, REQUIREMENTS_FILE)
    if os.path.exists(requirements_path):
        with open(requirements_path) as file:
            requirements = json.load(file)
    ops = requirements.get("non_core_ops", [])
    problem = None
    if ops:
        try:
            import tensorflow_text  # noqa: F401  (registers its ops)
        except ImportError as error:
            problem = error
    try:
        if problem is None:
            return tf.saved_model.load(path)
    except tf.errors.NotFoundError as error:
        if "Op type not registered" not in str(error):
            raise
        problem = error
    raise ImportError(
        f"The SavedModel at {path!r} uses TensorFlow ops that are not part "
        f"of core TensorFlow (from its tokenizer, "
        f"{requirements.get('tokenizer', 'unknown')}): "
        f"{ops or 'see the error above'}. They come from `tensorflow_text`: "
        '`pip install "tf_input[text]"` (or `pip install tensorflow-text`, '
        f"the version matching TensorFlow {tf.__version__}) and `import "
        "tensorflow_text` before `tf.saved_model.load`. (Exported with "
        "`SentencePieceTokenizer(..., tf_text_unigram=False)`, a unigram "
        "model needs no TF Text.)"
    ) from problem
