"""In-graph tokenizers: strings to int32 ids with TensorFlow ops."""

from tf_input.tokenizers.base import Tokenizer

__all__ = ["Tokenizer"]
