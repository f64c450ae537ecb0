"""Which features a batch carries: `make_dataset(..., features=...)`.

A list of feature names, or a functional Keras model whose inputs are read
by name: the batches then carry exactly those features. A model is also
checked against what it would be fed: it must not mask a real token of
the tokenizer as padding, and a model fed packed rows must take
`example_ids`, or its packed examples would attend to each other.
"""

from __future__ import annotations

import keras

from tf_input._feature_names import ENCODE_FEATURES
from tf_input._feature_names import EXAMPLE_IDS
from tf_input._feature_names import LM_FEATURES
from tf_input._feature_names import PACK_EXTRA
from tf_input._feature_names import QA_EXTRA
from tf_input._feature_names import SEGMENT_IDS
from tf_input._feature_names import SEQ2SEQ_FEATURES
from tf_input._model_inputs import check_padding
from tf_input._model_inputs import input_names


def feature_names(task, batching):
    """The features a task and batching produce, in order."""
    if task == "seq2seq":
        return SEQ2SEQ_FEATURES
    if task == "question_answering":
        return ENCODE_FEATURES + QA_EXTRA
    encoders = ("encode", "token_classification", "mlm")
    names = ENCODE_FEATURES if task in encoders else LM_FEATURES
    if batching == "pack":
        names = names + PACK_EXTRA
    return names


def select_features(features, *, task, batching, tokenizer):
    """The feature names to emit, in the pipeline's order (None: all)."""
    if features is None:
        return None
    available = feature_names(task, batching)
    if isinstance(features, keras.Model):
        check_padding(features, tokenizer, "Training it on these batches")
        names = input_names(features, "`features`")
        source = f"the model {features.name!r} takes"
        if batching == "pack":
            _check_packed_model(features, names)
    elif isinstance(features, (list, tuple)) and all(
        isinstance(name, str) for name in features
    ):
        names = list(features)
        source = "`features` asks for"
    else:
        raise TypeError(
            "`features` must be None (every feature), a list of feature "
            "names, or the functional Keras model to feed (its input names "
            f"are read). Received: features={features!r}."
        )
    missing = [name for name in names if name not in available]
    if missing or not names or len(set(names)) != len(names):
        hints = []
        if set(missing) & set(PACK_EXTRA):
            hints.append(
                '`example_ids` and `positions` come with batching="pack".'
            )
        if SEGMENT_IDS in missing:
            hints.append('`segment_ids` (token types) come with task="encode".')
        raise ValueError(
            f"{source} {names}, but task={task!r} with batching={batching!r} "
            f"produces the features {available} (each at most once). "
            f"Unknown or unavailable: {missing}. {' '.join(hints)} Name each "
            "`keras.Input` after the feature it receives."
        )
    return [name for name in available if name in names]


def _check_packed_model(model, names):
    """Packed rows hold several examples: a model fed them must keep them
    apart (take `example_ids`), or they attend to each other."""
    if EXAMPLE_IDS in names:
        return
    raise ValueError(
        'batching="pack" puts several examples in each row, but the model '
        f"{model.name!r} takes only {names}: without `example_ids` its "
        "packed examples would attend to each other, and without "
        "`positions` each would see positions that run across the whole "
        'row. Use batching="stream" for a model with no notion of example '
        "boundaries (e.g. keras-hub's GPT2CausalLM, Llama, Qwen, Gemma "
        "backbones), or build the model with `InputBlock(..., "
        "positions_input=True)` and `tf_input.data.segment_attention_mask("
        "example_ids, causal=True)` in its attention layers, taking "
        "`example_ids` and `positions` as inputs."
    )
