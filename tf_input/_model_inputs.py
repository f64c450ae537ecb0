"""What a model takes, read from the model: the joint between the
pipeline (or the exported serving graph) and the user's model.

* `input_names(model)`: the names of a functional model's inputs, the
  features it must be fed (`make_dataset(..., features=model)`).
* `input_packer(model)`: a function that builds the model's call argument
  from a dict of features, by name (used by `export_text_model`).
* `check_padding(model, tokenizer)`: the model must not mask a real token
  as padding (id 0 is `"!"` in GPT-2's vocabulary).
"""

from __future__ import annotations

import keras

FUNCTIONAL_HINT = (
    "Wrap a subclassed model: `inputs = {'token_ids': keras.Input((None,), "
    "dtype='int32', name='token_ids')}; keras.Model(inputs, "
    "subclassed(inputs))`."
)


def _structure(model, what):
    structure = getattr(model, "_inputs_struct", None)
    if not isinstance(model, keras.Model) or structure is None:
        raise ValueError(
            f"{what} must be a functional Keras model (built from "
            "`keras.Input`s named after the pipeline's features), or a "
            f"list of feature names. Received: {type(model).__name__}. "
            + FUNCTIONAL_HINT
        )
    return structure


def input_names(model, what="`model`"):
    """The names of `model`'s inputs, in its own order."""
    structure = _structure(model, what)
    if isinstance(structure, dict):
        return list(structure)
    return [tensor.name for tensor in keras.tree.flatten(structure)]


def input_packer(model, what="`model`"):
    """`(names, pack)`: `pack(features)` is the model's call argument."""
    structure = _structure(model, what)
    names = input_names(model, what)
    if isinstance(structure, dict):

        def pack(features):
            return {name: features[name] for name in names}

    else:

        def pack(features):
            return keras.tree.pack_sequence_as(
                structure, [features[name] for name in names]
            )

    return names, pack


def _id_masks(model):
    """`[(layer, padding_id)]`: the layers of `model` that mask the
    positions of one id (`TokenEmbedding`, an `InputBlock` without a
    `padding_mask` input), outermost first."""
    # Imported here: `tf_input.block` imports the layers, which import
    # nothing of the pipeline.
    from tf_input.block import InputBlock
    from tf_input.layers.token_embedding import TokenEmbedding

    found = []
    if not isinstance(model, keras.layers.Layer):
        return found
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if isinstance(layer, InputBlock):
            if layer.padding_id is not None and not layer.padding_mask_input:
                found.append((layer, layer.padding_id))
        elif isinstance(layer, TokenEmbedding):
            if layer.padding_id is not None and not _inside_masked_block(
                model, layer
            ):
                found.append((layer, layer.padding_id))
    return found


def _inside_masked_block(model, layer):
    """Whether `layer` is the token embedding of an `InputBlock` that takes
    the pipeline's `padding_mask` (the block's mask then wins)."""
    from tf_input.block import InputBlock

    for block in model._flatten_layers(include_self=True, recursive=True):
        if isinstance(block, InputBlock) and block.token_embedding is layer:
            return block.padding_mask_input
    return False


def check_padding(model, tokenizer, where):
    """Raises if a layer of `model` masks, as padding, an id that is a real
    token of `tokenizer`'s vocabulary."""
    padding_id = tokenizer.padding_id
    for layer, masked in _id_masks(model):
        if masked == padding_id:
            continue
        if 0 <= masked < tokenizer.vocabulary_size():
            token = repr(tokenizer.id_to_token(masked))
        else:
            token = "outside the vocabulary"
        own = (
            "has no padding token"
            if padding_id is None
            else f"pads with id {padding_id}"
        )
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r} masks id {masked} as "
            f"padding, but in the vocabulary of this "
            f"{type(tokenizer).__name__} id {masked} is {token}, a real "
            f"token (the tokenizer {own}). {where} would hide every such "
            "token from attention. Build the block with "
            "`padding_mask_input=True`, so that it takes the pipeline's "
            "`padding_mask`, or pass "
            f"`padding_id={padding_id}` (the tokenizer's `padding_id`)."
        )
