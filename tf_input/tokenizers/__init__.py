"""In-graph tokenizers: strings to int32 ids with TensorFlow ops."""

from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.vocabulary import VocabularyTokenizer

__all__ = ["Tokenizer", "VocabularyTokenizer"]
