"""Generate ``data/hf_rope_goldens.json`` from Hugging Face transformers.

This is NOT a test (pytest does not collect it: the name does not start
with ``test_``). It needs torch and transformers, which the test suite
must not import, so run it once, by hand, in a throwaway environment:

    python3 -m venv /tmp/hfenv
    /tmp/hfenv/bin/pip install torch==2.13.0 transformers numpy
    /tmp/hfenv/bin/python tests/layers/make_hf_rope_goldens.py

(from the repository root). It loads no model weights and needs no
network. For every case it builds a tiny config, calls the transformers
RoPE init function (``ROPE_INIT_FUNCTIONS[rope_type]``, or the model's
``compute_default_rope_parameters`` for the default type, which
transformers v5 no longer keeps in ``ROPE_INIT_FUNCTIONS``) and runs the
model's rotary embedding module on a few positions. See the
``schema`` entry of the output for what each field means.
"""

import copy
import json
import os
import platform
import sys

POSITIONS = [0, 1, 7, 100, 1000, 4095]
DYNAMIC_POSITIONS = [0, 1, 7, 100, 1000, 4095, 16383]
DYNAMIC_SHORT_POSITIONS = [0, 1, 7, 100, 1000]

OUT_PATH = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "data", "hf_rope_goldens.json"
)
COMMAND = "/tmp/hfenv/bin/python tests/layers/make_hf_rope_goldens.py"

SCHEMA = {
    "cases[].name": "unique case id",
    "cases[].description": "what the case exercises",
    "cases[].layer_args.max_wavelength": "rope_theta (RoPE base)",
    "cases[].layer_args.rotary_dim": (
        "number of rotated features = int(head_dim * partial_rotary_factor); "
        "len(inv_freq) == rotary_dim // 2"
    ),
    "cases[].layer_args.scaling": (
        "the legacy `rope_scaling` dict exactly as a HF config.json would "
        "hold it (null for plain RoPE); it holds no rope_theta and no "
        "partial_rotary_factor"
    ),
    "cases[].layer_args.seq_len": (
        "dynamic only: the seq_len given to the init function, i.e. "
        "max(position_ids) + 1 of the positions below"
    ),
    "cases[].hf_config": (
        "the config fields that matter: model_type, head_dim, "
        "max_position_embeddings, rope_theta, partial_rotary_factor "
        "(all top-level legacy fields, as a v4 config.json has them)"
    ),
    "cases[].hf_rope_parameters": (
        "config.rope_parameters after transformers standardized it (the "
        "transformers v5 form: legacy keys kept, rope_type, rope_theta, "
        "partial_rotary_factor, original_max_position_embeddings added)"
    ),
    "cases[].hf_init_function": "the transformers function that was called",
    "cases[].hf_factor_used": (
        "scaling factor the init function actually used (linear, dynamic, "
        "yarn, llama3); for yarn: rope_parameters['factor'], or "
        "max_position_embeddings / original_max_position_embeddings when "
        "factor is null"
    ),
    "cases[].hf_ignored_scaling_keys": (
        "keys of `scaling` that this transformers version does not read "
        "for that rope type"
    ),
    "cases[].inv_freq": (
        "init function's inverse frequencies, float32, written as the "
        "shortest decimal that round-trips to that float32: compare after "
        "casting to float32"
    ),
    "cases[].attention_factor": (
        "init function's attention factor (python float); transformers "
        "multiplies cos and sin by it"
    ),
    "cases[].positions": "position ids given to the rotary module",
    "cases[].cos, cases[].sin": (
        "float32 output of <Model>RotaryEmbedding(config)(x, position_ids) "
        "with x float32 and position_ids = [positions]; shape "
        "[len(positions), rotary_dim]; layout is rotate-half: "
        "emb = concat(freqs, freqs), freqs = position * inv_freq, "
        "cos = cos(emb) * attention_factor, sin = sin(emb) * "
        "attention_factor"
    ),
    "cases[].module_inv_freq": (
        "dynamic only: the inv_freq buffer the module actually used for "
        "cos/sin (a fresh module; transformers recomputes it in forward "
        "from seq_len = max(position_ids) + 1 as a torch tensor, so it "
        "may differ from inv_freq in the last bits)"
    ),
    "cases[].module_attention_scaling": (
        "the attention scaling the module used for cos/sin"
    ),
}


def _case(
    name,
    description,
    *,
    model="llama",
    head_dim=64,
    theta=10000.0,
    scaling=None,
    max_position_embeddings=4096,
    partial_rotary_factor=None,
    positions=POSITIONS,
    ignored=(),
):
    return dict(
        name=name,
        description=description,
        model=model,
        head_dim=head_dim,
        theta=theta,
        scaling=scaling,
        max_position_embeddings=max_position_embeddings,
        partial_rotary_factor=partial_rotary_factor,
        positions=list(positions),
        ignored=list(ignored),
    )


CASES = [
    _case("default_theta1e4_dim64", "plain RoPE, rope_scaling null"),
    _case(
        "default_theta5e5_dim128",
        "plain RoPE, Llama-3 base",
        head_dim=128,
        theta=500000.0,
        max_position_embeddings=8192,
    ),
    _case(
        "linear_f4_dim64",
        "linear (position interpolation), factor 4",
        scaling={"type": "linear", "factor": 4.0},
    ),
    _case(
        "dynamic_f2_max2048_type",
        "dynamic NTK, legacy `type` key, seq_len 16384 > 2048",
        scaling={"type": "dynamic", "factor": 2.0},
        max_position_embeddings=2048,
        positions=DYNAMIC_POSITIONS,
    ),
    _case(
        "dynamic_f2_max2048_rope_type",
        "dynamic NTK, `rope_type` key, seq_len 16384 > 2048",
        scaling={"rope_type": "dynamic", "factor": 2.0},
        max_position_embeddings=2048,
        positions=DYNAMIC_POSITIONS,
    ),
    _case(
        "dynamic_f8_max4096_type",
        "dynamic NTK, legacy `type` key, seq_len 16384 > 4096",
        scaling={"type": "dynamic", "factor": 8.0},
        max_position_embeddings=4096,
        positions=DYNAMIC_POSITIONS,
    ),
    _case(
        "dynamic_f8_max4096_rope_type_with_original_max",
        "dynamic NTK, `rope_type` key, seq_len 16384 > 4096; the dict also "
        "carries original_max_position_embeddings (= max_position_embeddings"
        "), which transformers ignores for dynamic: the original length is "
        "config.max_position_embeddings",
        scaling={
            "rope_type": "dynamic",
            "factor": 8.0,
            "original_max_position_embeddings": 4096,
        },
        max_position_embeddings=4096,
        positions=DYNAMIC_POSITIONS,
        ignored=["original_max_position_embeddings"],
    ),
    _case(
        "dynamic_f2_max2048_short",
        "dynamic NTK whose seq_len (1001) stays within 2048: no scaling, "
        "equals plain RoPE",
        scaling={"type": "dynamic", "factor": 2.0},
        max_position_embeddings=2048,
        positions=DYNAMIC_SHORT_POSITIONS,
    ),
    _case(
        "yarn_f4_orig4096",
        "YaRN factor 4, original 4096, beta_fast 32, beta_slow 1, "
        "attention_factor inferred (0.1 ln 4 + 1), truncate default (True)",
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
        },
        max_position_embeddings=16384,
    ),
    _case(
        "yarn_f4_orig4096_attention_factor",
        "YaRN factor 4 with an explicit attention_factor 1.25",
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "attention_factor": 1.25,
        },
        max_position_embeddings=16384,
    ),
    _case(
        "yarn_f4_orig4096_mscale",
        "YaRN factor 4 with mscale 1.0 and mscale_all_dim 0.5: "
        "attention_factor = (0.1*1.0*ln4+1) / (0.1*0.5*ln4+1)",
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 0.5,
        },
        max_position_embeddings=16384,
    ),
    _case(
        "yarn_deepseek_v3",
        "DeepSeek-V3 rope_scaling (legacy `type`): factor 40, original "
        "4096, mscale 1.0 = mscale_all_dim 1.0 -> attention_factor 1.0; "
        "qk_rope_head_dim 64",
        scaling={
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
        max_position_embeddings=163840,
    ),
    _case(
        "yarn_f4_orig4096_no_truncate",
        "YaRN factor 4 with truncate false (gpt-oss style): the correction "
        "range is not floored/ceiled",
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
        },
        max_position_embeddings=16384,
    ),
    _case(
        "yarn_qwen_style_defaults",
        "Qwen2.5 style YaRN (legacy `type`, no beta keys -> 32/1): factor 4, "
        "original 32768, theta 1e6, head_dim 128",
        head_dim=128,
        theta=1000000.0,
        scaling={
            "type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 32768,
        },
        max_position_embeddings=131072,
    ),
    _case(
        "llama3_f8_dim128",
        "Llama 3.1: factor 8, low_freq_factor 1, high_freq_factor 4, "
        "original 8192, theta 500000",
        head_dim=128,
        theta=500000.0,
        scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        max_position_embeddings=131072,
    ),
    _case(
        "partial_default_head64_rot32",
        "plain RoPE on half of a 64-wide head (Phi, partial_rotary_factor "
        "0.5): rotary_dim 32, exponent divides by 32",
        model="phi",
        partial_rotary_factor=0.5,
    ),
    _case(
        "partial_yarn_head64_rot32",
        "YaRN factor 4 / original 4096 on half of a 64-wide head: "
        "rotary_dim 32 is the `dim` of every YaRN formula",
        model="phi",
        partial_rotary_factor=0.5,
        scaling={
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
        },
        max_position_embeddings=16384,
    ),
]


def _f32(values):
    """Shortest decimals that round-trip each float32 value."""
    import numpy as np

    out = []
    for v in np.asarray(values, dtype=np.float32).reshape(-1):
        text = str(v)
        if not np.isfinite(v) or np.float32(float(text)) != v:
            raise ValueError(f"cannot write {v!r} exactly")
        out.append(float(text))
    return out


def _build(spec):
    import torch
    from transformers import LlamaConfig
    from transformers import PhiConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    from transformers.models.phi.modeling_phi import PhiRotaryEmbedding

    head_dim = spec["head_dim"]
    heads = 4
    kwargs = dict(
        hidden_size=head_dim * heads,
        num_attention_heads=heads,
        num_hidden_layers=1,
        intermediate_size=64,
        vocab_size=32,
        max_position_embeddings=spec["max_position_embeddings"],
        rope_theta=spec["theta"],
    )
    if spec["scaling"] is not None:
        # transformers mutates the dict it is given: pass a copy.
        kwargs["rope_scaling"] = copy.deepcopy(spec["scaling"])
    if spec["model"] == "llama":
        config = LlamaConfig(head_dim=head_dim, **kwargs)
        module_cls = LlamaRotaryEmbedding
    else:
        kwargs["partial_rotary_factor"] = spec["partial_rotary_factor"]
        config = PhiConfig(**kwargs)
        module_cls = PhiRotaryEmbedding

    rope_params = config.rope_parameters
    rope_type = rope_params["rope_type"]
    if rope_type == "default":
        init_fn = module_cls.compute_default_rope_parameters
        init_name = f"{module_cls.__name__}.compute_default_rope_parameters"
    else:
        init_fn = ROPE_INIT_FUNCTIONS[rope_type]
        init_name = f"modeling_rope_utils.{init_fn.__name__}"

    positions = spec["positions"]
    seq_len = max(positions) + 1
    if rope_type == "dynamic":
        inv_freq, attention_factor = init_fn(config, seq_len=seq_len)
    else:
        inv_freq, attention_factor = init_fn(config)

    module = module_cls(config)
    x = torch.zeros((1, len(positions), head_dim), dtype=torch.float32)
    position_ids = torch.tensor([positions], dtype=torch.int64)
    with torch.no_grad():
        cos, sin = module(x, position_ids)
    module_inv_freq = module.inv_freq.detach().to(torch.float32)

    rotary_dim = int(head_dim * (spec["partial_rotary_factor"] or 1.0))
    assert inv_freq.shape == (rotary_dim // 2,), inv_freq.shape
    assert cos.shape == (1, len(positions), rotary_dim), cos.shape
    assert cos.dtype == torch.float32 and inv_freq.dtype == torch.float32

    layer_args = {
        "max_wavelength": spec["theta"],
        "rotary_dim": rotary_dim,
        "scaling": spec["scaling"],
    }
    if rope_type == "dynamic":
        layer_args["seq_len"] = seq_len

    factor_used = None
    if rope_type in ("linear", "dynamic", "llama3"):
        factor_used = rope_params["factor"]
    elif rope_type == "yarn":
        factor_used = rope_params["factor"]
        if factor_used is None:
            factor_used = (
                config.max_position_embeddings
                / rope_params["original_max_position_embeddings"]
            )
        # The golden is only meaningful if the implicit ratio agrees.
        implicit = (
            config.max_position_embeddings
            / rope_params["original_max_position_embeddings"]
        )
        assert implicit == factor_used, (implicit, factor_used)

    record = {
        "name": spec["name"],
        "description": spec["description"],
        "layer_args": layer_args,
        "hf_config": {
            "model_type": config.model_type,
            "head_dim": head_dim,
            "max_position_embeddings": config.max_position_embeddings,
            "rope_theta": spec["theta"],
            "partial_rotary_factor": spec["partial_rotary_factor"],
        },
        "hf_rope_parameters": dict(rope_params),
        "hf_init_function": init_name,
        "hf_factor_used": factor_used,
        "hf_ignored_scaling_keys": spec["ignored"],
        "inv_freq": _f32(inv_freq.numpy()),
        "attention_factor": float(attention_factor),
        "positions": positions,
    }
    if rope_type == "dynamic":
        record["module_inv_freq"] = _f32(module_inv_freq.numpy())
    record["module_attention_scaling"] = float(module.attention_scaling)
    n = len(positions)
    record["cos"] = [_f32(row) for row in cos[0].numpy().reshape(n, -1)]
    record["sin"] = [_f32(row) for row in sin[0].numpy().reshape(n, -1)]
    return record


def _dump(obj, indent=0):
    """JSON with one case field (or one cos/sin row) per line."""
    pad = " " * indent
    flat = json.dumps(obj, separators=(", ", ": "))
    nested = isinstance(obj, dict) and any(
        isinstance(v, (dict, list)) and v for v in obj.values()
    )
    if isinstance(obj, dict) and (
        (nested and len(flat) > 78) or len(flat) > 200
    ):
        items = [
            f"{pad} {json.dumps(k)}: {_dump(v, indent + 1).lstrip()}"
            for k, v in obj.items()
        ]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if (
        isinstance(obj, list)
        and obj
        and all(isinstance(v, (dict, list)) for v in obj)
    ):
        items = [_dump(v, indent + 1) for v in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + flat


def main():
    import numpy
    import torch
    import transformers

    torch.set_num_threads(1)
    cases = [_build(spec) for spec in CASES]
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    out = {
        "generator": "tests/layers/make_hf_rope_goldens.py",
        "command": COMMAND,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "numpy_version": numpy.__version__,
        "python_version": platform.python_version(),
        "schema": SCHEMA,
        "cases": cases,
    }
    text = _dump(out) + "\n"
    json.loads(text)
    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    with open(OUT_PATH, "w") as f:
        f.write(text)
    print(f"wrote {len(cases)} cases, {len(text)} bytes to {OUT_PATH}")


if __name__ == "__main__":
    sys.exit(main())
