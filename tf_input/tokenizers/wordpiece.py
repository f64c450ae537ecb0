"""Re-exports `WordPieceTokenizer` from its module, for code that imports it
from this path."""

from tf_input.tokenizers.word_piece_tokenizer import WordPieceTokenizer

__all__ = ["WordPieceTokenizer"]
