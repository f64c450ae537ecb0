"""A fix for a Keras bug that feeds dict models the wrong tensors.

Keras up to 3.15.1 (keras-team/keras#23258, fixed upstream by #23261 but
not released as of 3.15.1): a functional model built with a dict of inputs,
`keras.Model({"token_ids": ids}, ...)`, called on a dict with *extra* keys
(`{"token_ids": ..., "padding_mask": ...}`, what `make_dataset` yields)
flattens every value of the dict in sorted key order and pairs them with
its inputs by position. The model then reads `padding_mask` as its
`token_ids`, after only a `UserWarning`, and trains on garbage.

`install()` makes such a call keep only the model's own keys, by name, the
upstream behaviour. It changes nothing when the keys already match, when a
declared key is missing (Keras's own error follows), or for non-dict
inputs, so it is harmless on Keras versions that carry the fix. It is
installed when `tf_input` is imported. The patched methods are private
Keras API: if a Keras release renames them, `install()` does nothing and
`tests/test_keras_compat.py` (which checks the behaviour, not the patch)
fails, so the gap cannot go unnoticed.
"""

from __future__ import annotations

import functools

_INSTALLED = False


def _declared_keys(model):
    structure = getattr(model, "_inputs_struct", None)
    if isinstance(structure, dict):
        return set(structure)
    return None


def _keep_declared(model, value):
    """`value` without the keys the model does not declare, when it is a
    dict holding every declared key and more; else `value` itself."""
    keys = _declared_keys(model)
    if keys is None or not isinstance(value, dict):
        return value
    if not keys < set(value):
        return value
    return {key: value[key] for key in value if key in keys}


def install():
    """Patches Keras's Functional model to select dict inputs by name."""
    global _INSTALLED
    if _INSTALLED:
        return
    try:
        # Private on purpose: the bug lives in this class, and Keras exports
        # no public path to it (`keras.Model` builds a Functional, but
        # `keras.models` exports only Model, Sequential and functions).
        from keras.src.models.functional import Functional
    except ImportError:  # pragma: no cover - a Keras without this module
        return
    call = getattr(Functional, "call", None)
    output_spec = getattr(Functional, "compute_output_spec", None)
    if call is None or output_spec is None:  # pragma: no cover
        return

    @functools.wraps(call)
    def patched_call(self, inputs, training=None, mask=None, **kwargs):
        inputs = _keep_declared(self, inputs)
        mask = _keep_declared(self, mask)
        return call(self, inputs, training=training, mask=mask, **kwargs)

    @functools.wraps(output_spec)
    def patched_output_spec(self, inputs, training=None, mask=None):
        inputs = _keep_declared(self, inputs)
        mask = _keep_declared(self, mask)
        return output_spec(self, inputs, training=training, mask=mask)

    Functional.call = patched_call
    Functional.compute_output_spec = patched_output_spec
    _INSTALLED = True
