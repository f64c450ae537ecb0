"""Keras 3 layers for the input side of a Transformer."""

from tf_input.layers.learned_pe import LearnedPE
from tf_input.layers.rotary_embedding import RotaryEmbedding
from tf_input.layers.sinusoidal_pe import SinusoidalPE
from tf_input.layers.sinusoidal_pe import sinusoidal_encoding
from tf_input.layers.token_embedding import TokenEmbedding

# Spelled-out aliases: the same classes under longer names.
SinusoidalPositionEmbedding = SinusoidalPE
LearnedPositionEmbedding = LearnedPE

__all__ = [
    "LearnedPE",
    "LearnedPositionEmbedding",
    "RotaryEmbedding",
    "SinusoidalPE",
    "SinusoidalPositionEmbedding",
    "TokenEmbedding",
    "sinusoidal_encoding",
]
