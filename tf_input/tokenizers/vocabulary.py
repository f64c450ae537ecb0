"""Re-exports `VocabularyTokenizer` from its module, for code that imports
it from this path."""

from tf_input.tokenizers.vocabulary_tokenizer import SPLITS  # noqa: F401
from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer

__all__ = ["VocabularyTokenizer"]
