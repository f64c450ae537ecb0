"""`InputBlock`'s arguments: checked once, before any layer is made."""

from __future__ import annotations

import dataclasses
import numbers

from tf_input._validation import check_bool
from tf_input._validation import check_one_of
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_int
from tf_input._validation import check_type

POSITIONS = ("sinusoidal", "learned", "rope", "none")
NORMALIZATIONS = (None, "layer", "rms")
# `rope=` takes RotaryEmbedding's arguments, and Hugging Face's config names
# for two of them.
ROPE_KEYS = (
    "max_wavelength",
    "layout",
    "rotary_dim",
    "scaling",
    "sequence_axis",
    "feature_axis",
)
ROPE_ALIASES = {"rope_theta": "max_wavelength", "rope_scaling": "scaling"}
LAYER_NORM_EPSILON = 1e-6


def _check_rope(rope, position):
    if rope is None:
        return None
    if position != "rope":
        raise ValueError(
            "`rope` configures the rotary embedding and only applies with "
            f"position='rope'. Received: rope={rope!r} with "
            f"position={position!r}. Remove `rope` or set position='rope'."
        )
    check_type(
        "rope",
        rope,
        dict,
        "None or a dict of `RotaryEmbedding` arguments, e.g. "
        "{'max_wavelength': 500000.0, 'scaling': {'rope_type': 'linear', "
        "'factor': 4.0}}",
    )
    config = {}
    for key, value in rope.items():
        name = ROPE_ALIASES.get(key, key)
        if name not in ROPE_KEYS or name in config:
            raise ValueError(
                f"`rope` takes the keys {ROPE_KEYS} (or the Hugging Face "
                f"names {tuple(ROPE_ALIASES)}), each once. Received: "
                f"rope={rope!r}."
            )
        config[name] = value
    return config


@dataclasses.dataclass
class Arguments:
    """`InputBlock`'s arguments, checked (see `InputBlock` for each)."""

    vocabulary_size: int
    embedding_dim: int
    position: str
    max_length: int | None
    num_segments: int
    dropout: float
    normalization: str | None
    padding_id: int | None
    scale: bool
    rope: dict | None
    positions_input: bool
    padding_mask_input: bool

    @classmethod
    def checked(cls, **arguments):
        args = cls(**arguments)
        args.vocabulary_size = check_positive_int(
            "vocabulary_size", args.vocabulary_size
        )
        args.embedding_dim = check_positive_int(
            "embedding_dim", args.embedding_dim
        )
        args.position = check_one_of("position", args.position, POSITIONS)
        args.max_length = check_optional_int("max_length", args.max_length, 1)
        if args.position == "learned" and args.max_length is None:
            raise ValueError(
                "position='learned' needs `max_length`, the number of rows "
                "of the position table (the longest input). Received: "
                "max_length=None. Pass e.g. max_length=512, or use "
                "position='sinusoidal', which has no length limit."
            )
        args.num_segments = (
            check_optional_int("num_segments", args.num_segments, 0) or 0
        )
        args.dropout = _check_dropout(args.dropout)
        args.normalization = check_one_of(
            "normalization", args.normalization, NORMALIZATIONS
        )
        args.rope = _check_rope(args.rope, args.position)
        args.scale = check_bool("scale", args.scale)
        args.positions_input = check_bool(
            "positions_input", args.positions_input
        )
        args.padding_mask_input = check_bool(
            "padding_mask_input", args.padding_mask_input
        )
        if args.positions_input and args.position not in (
            "sinusoidal",
            "learned",
        ):
            raise ValueError(
                "`positions_input=True` feeds explicit positions to an "
                "additive position encoding, so it needs position "
                "'sinusoidal' or 'learned'. Received: "
                f"position={args.position!r}. With 'rope', pass the "
                "positions to `block.rotary(q, positions=...)` in attention "
                "instead."
            )
        args.padding_id = _padding_id(args.padding_id, args.padding_mask_input)
        return args


def _check_dropout(dropout):
    expected = "a number in [0, 1)"
    check_type("dropout", dropout, numbers.Real, expected)
    if not 0 <= dropout < 1:
        raise ValueError(
            f"`dropout` must be {expected}. Received: dropout={dropout!r}."
        )
    return float(dropout)


def _padding_id(padding_id, padding_mask_input):
    """`padding_id` with `"auto"` resolved: 0, or None with the mask input."""
    if padding_id == "auto":
        return None if padding_mask_input else 0
    if padding_mask_input and padding_id is not None:
        raise ValueError(
            "With `padding_mask_input=True` the mask is the "
            "`padding_mask` input, so no id is masked: leave "
            '`padding_id` at "auto" (or None). Received: '
            f"padding_id={padding_id!r} with padding_mask_input=True."
        )
    return padding_id  # checked by TokenEmbedding
