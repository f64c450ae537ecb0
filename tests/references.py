"""Independent float64 NumPy references, written from the published formulas.

None of these call tf_input: each is a direct transcription of the paper or
of the reference implementation's documented rule, with loops where a loop
is clearer than a vectorised trick.
"""

import math

import numpy as np


def sinusoid(positions, dim, max_wavelength=10000.0, layout="interleaved"):
    """Vaswani et al. (2017), section 3.5: PE[p, 2i] = sin(p / w^(2i/D))."""
    positions = np.asarray(positions, dtype=np.float64)
    out = np.zeros(positions.shape + (dim,), np.float64)
    for i in range(dim // 2):
        angle = positions / max_wavelength ** (2 * i / dim)
        if layout == "interleaved":
            out[..., 2 * i] = np.sin(angle)
            out[..., 2 * i + 1] = np.cos(angle)
        else:
            out[..., i] = np.sin(angle)
            out[..., dim // 2 + i] = np.cos(angle)
    return out


def rope_frequencies(dim, base=10000.0, scaling=None, length=None):
    """Inverse frequencies and attention factor of RoPE and its variants.

    Transcribed from the papers (Su et al. 2021; Chen et al. 2023; Peng et
    al. 2023) and Meta's Llama 3.1 `apply_scaling`, one dimension at a time.
    """
    w = [base ** (-2 * i / dim) for i in range(dim // 2)]
    kind = (
        None
        if scaling is None
        else scaling.get("rope_type", scaling.get("type"))
    )
    if kind is None:
        return np.array(w), 1.0
    factor = scaling["factor"]
    if kind == "linear":
        return np.array([x / factor for x in w]), 1.0
    if kind == "dynamic":
        original = scaling["original_max_position_embeddings"]
        length = max(length, original)
        new_base = base * (factor * length / original - (factor - 1)) ** (
            dim / (dim - 2)
        )
        return np.array(
            [new_base ** (-2 * i / dim) for i in range(dim // 2)]
        ), 1.0
    if kind == "llama3":
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        original = scaling["original_max_position_embeddings"]
        out = []
        for x in w:
            wavelength = 2 * math.pi / x
            if wavelength < original / high:
                out.append(x)
            elif wavelength > original / low:
                out.append(x / factor)
            else:
                s = (original / wavelength - low) / (high - low)
                out.append((1 - s) * x / factor + s * x)
        return np.array(out), 1.0
    if kind == "yarn":
        original = scaling["original_max_position_embeddings"]
        beta_fast = scaling.get("beta_fast", 32)
        beta_slow = scaling.get("beta_slow", 1)

        def dim_for(rotations):  # YaRN eq. (the "correction dim")
            return (
                dim
                * math.log(original / (rotations * 2 * math.pi))
                / (2 * math.log(base))
            )

        lo, hi = dim_for(beta_fast), dim_for(beta_slow)
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if hi == lo:
            hi += 0.001
        out = []
        for i, x in enumerate(w):
            ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
            out.append(x * (1 - ramp) + (x / factor) * ramp)

        def mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        attention = scaling.get("attention_factor")
        if attention is None:
            if scaling.get("mscale") and scaling.get("mscale_all_dim"):
                attention = mscale(factor, scaling["mscale"]) / mscale(
                    factor, scaling["mscale_all_dim"]
                )
            else:
                attention = mscale(factor)
        return np.array(out), attention
    raise ValueError(kind)


def rope(
    x, positions, frequencies, attention=1.0, layout="half", rotary_dim=None
):
    """Rotates x [..., S, (H,) D] feature pair by pair, in float64.

    `x` has the sequence on axis 1 and features last; `positions` is [S] or
    [B, S].
    """
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    r = rotary_dim or d
    positions = np.asarray(positions, np.float64)
    if positions.ndim == 1:
        positions = np.broadcast_to(positions, (x.shape[0], x.shape[1]))
    out = x.copy()
    extra = (None,) * (x.ndim - 3)  # heads axis, if any
    for j in range(r // 2):
        angle = positions * frequencies[j]  # [B, S]
        c = (np.cos(angle) * attention)[(...,) + extra]
        s = (np.sin(angle) * attention)[(...,) + extra]
        a, b = (j, j + r // 2) if layout == "half" else (2 * j, 2 * j + 1)
        out[..., a] = x[..., a] * c - x[..., b] * s
        out[..., b] = x[..., b] * c + x[..., a] * s
    return out
