"""RoPE frequency scaling for long contexts, read from Hugging Face configs.

`scaling` takes the `rope_scaling` dict exactly as a Hugging Face model config
has it, with the key `rope_type` or the legacy `type`. Every variant changes
the inverse frequencies `w_i = max_wavelength ** (-2i / dim)` and some also
scale cos and sin by an "attention factor":

* `linear`, position interpolation (Chen et al., 2023,
  https://arxiv.org/abs/2306.15595): `w_i / factor`.
* `dynamic`, dynamic NTK (bloc97, as in transformers): the base is raised
  from the current length `L = max(max(positions) + 1, original)`:
  `base' = base * (factor * L / original - (factor - 1)) ** (dim / (dim - 2))`.
  It depends on the positions, so it is computed in the graph.
* `yarn` (Peng et al., 2023, https://arxiv.org/abs/2309.00071): a linear ramp
  between interpolated (`w_i / factor`) and original frequencies over the
  dimensions whose wavelengths lie between `beta_fast` and `beta_slow`
  rotations of the original context, and an attention factor
  `0.1 * ln(factor) + 1` multiplying cos and sin.
* `llama3` (Meta's Llama 3.1): low frequencies divided by `factor`, high
  ones kept, and a smooth blend between `low_freq_factor` and
  `high_freq_factor`.

The functions return float64 NumPy values; `RotaryEmbedding` turns them into
angles with `position_math.angles`.
"""

from __future__ import annotations

import math

import numpy as np

from tf_input._validation import check_bool
from tf_input._validation import check_type
from tf_input.layers.position_math import inverse_frequencies

# For each type: (required keys, optional keys). `factor` is common to all.
_KEYS = {
    "linear": ({"factor"}, set()),
    "dynamic": ({"factor", "original_max_position_embeddings"}, set()),
    "yarn": (
        {"factor", "original_max_position_embeddings"},
        {
            "beta_fast",
            "beta_slow",
            "attention_factor",
            "mscale",
            "mscale_all_dim",
            "truncate",
        },
    ),
    "llama3": (
        {
            "factor",
            "low_freq_factor",
            "high_freq_factor",
            "original_max_position_embeddings",
        },
        set(),
    ),
}
SCALING_TYPES = tuple(_KEYS)


def parse_scaling(scaling: dict | None) -> dict | None:
    """Validates a `rope_scaling` dict; returns it normalised, or None.

    The result always has the key `rope_type` (never the legacy `type`) and
    holds plain Python numbers, so it can go into `get_config` as it is.
    """
    if scaling is None:
        return None
    check_type(
        "scaling",
        scaling,
        dict,
        "None or a dict like Hugging Face's `rope_scaling`, e.g. "
        "{'rope_type': 'linear', 'factor': 4.0}",
    )
    config = dict(scaling)
    legacy = config.pop("type", None)
    rope_type = config.pop("rope_type", legacy)
    if legacy is not None and legacy != rope_type:
        raise ValueError(
            "`scaling` has both `rope_type` and `type` and they disagree. "
            f"Received: scaling={scaling!r}."
        )
    if rope_type == "default" and not config:
        return None
    if rope_type not in _KEYS:
        raise ValueError(
            f"`scaling['rope_type']` must be one of {SCALING_TYPES} (or "
            f"'default' with no other keys). Received: scaling={scaling!r}."
        )
    required, optional = _KEYS[rope_type]
    missing = sorted(required - set(config))
    unknown = sorted(set(config) - required - optional)
    if missing or unknown:
        raise ValueError(
            f"`scaling` of type {rope_type!r} takes the keys "
            f"{sorted(required)} (required) and {sorted(optional)} "
            f"(optional). Missing: {missing}. Unknown: {unknown}. "
            f"Received: scaling={scaling!r}."
        )
    for key, value in config.items():
        if key == "truncate":
            check_bool("scaling['truncate']", value)
        elif value is not None:
            check_type(
                f"scaling[{key!r}]", value, (int, float), "a positive number"
            )
            if not value > 0:
                raise ValueError(
                    f"`scaling[{key!r}]` must be a positive number. "
                    f"Received: scaling={scaling!r}."
                )
    if config["factor"] < 1 and rope_type != "linear":
        raise ValueError(
            f"`scaling['factor']` must be >= 1 for {rope_type!r}. "
            f"Received: scaling={scaling!r}."
        )
    if rope_type == "llama3" and not (
        config["high_freq_factor"] > config["low_freq_factor"]
    ):
        raise ValueError(
            "`scaling['high_freq_factor']` must be greater than "
            f"`low_freq_factor`. Received: scaling={scaling!r}."
        )
    return {"rope_type": rope_type, **config}


def scaled_frequencies(dim, max_wavelength, scaling):
    """Static inverse frequencies and attention factor for `scaling`.

    Args:
        dim: int, the rotated dimension (even).
        max_wavelength: float, the RoPE base.
        scaling: a dict from `parse_scaling`, or None.

    Returns:
        `(frequencies, attention_factor)`: float64 array `[dim // 2]` and a
        float. For `dynamic` the frequencies are those at the original
        length; the layer recomputes them from the positions.
    """
    frequencies = inverse_frequencies(dim, max_wavelength)
    rope_type = None if scaling is None else scaling["rope_type"]
    if rope_type is None or rope_type == "dynamic":
        return frequencies, 1.0
    factor = float(scaling["factor"])
    if rope_type == "linear":
        return frequencies / factor, 1.0
    if rope_type == "llama3":
        return _llama3(frequencies, scaling), 1.0
    return _yarn(frequencies, dim, max_wavelength, scaling)


def _llama3(frequencies, scaling):
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    wavelengths = 2 * math.pi / frequencies
    # Long wavelengths (> original / low) are interpolated, short ones
    # (< original / high) kept, and those between blended smoothly.
    smooth = (original / wavelengths - low) / (high - low)
    blended = (1 - smooth) * frequencies / factor + smooth * frequencies
    return np.where(
        wavelengths > original / low,
        frequencies / factor,
        np.where(wavelengths < original / high, frequencies, blended),
    )


def _yarn_mscale(factor, mscale=1.0):
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0


def _yarn(frequencies, dim, base, scaling):
    factor = float(scaling["factor"])
    original = scaling["original_max_position_embeddings"]
    beta_fast = scaling.get("beta_fast") or 32.0
    beta_slow = scaling.get("beta_slow") or 1.0
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        mscale, mscale_all_dim = (
            scaling.get("mscale"),
            scaling.get("mscale_all_dim"),
        )
        if mscale and mscale_all_dim:
            attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(
                factor, mscale_all_dim
            )
        else:
            attention_factor = _yarn_mscale(factor)

    def correction_dim(rotations):
        # The dimension whose wavelength fits `rotations` times in `original`.
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (
            2 * math.log(base)
        )

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoids a division by zero, as transformers does
    ramp = np.clip(
        (np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1
    )
    # ramp 0: high frequency, extrapolate (keep); ramp 1: interpolate.
    return (
        frequencies * (1 - ramp) + frequencies / factor * ramp,
        float(attention_factor),
    )
