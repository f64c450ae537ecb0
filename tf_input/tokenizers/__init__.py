"""In-graph tokenizers: strings to int32 ids with TensorFlow ops."""

from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from tf_input.tokenizers.loading import load_tokenizer
from tf_input.tokenizers.metaspace_byte_pair_tokenizer import (
    MetaspaceBytePairTokenizer,
)
from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
from tf_input.tokenizers.training import train_bpe
from tf_input.tokenizers.training import train_sentencepiece
from tf_input.tokenizers.training import train_wordpiece
from tf_input.tokenizers.unigram_tokenizer import UnigramTokenizer
from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer
from tf_input.tokenizers.word_piece_tokenizer import WordPieceTokenizer

__all__ = [
    "BytePairTokenizer",
    "MetaspaceBytePairTokenizer",
    "SentencePieceTokenizer",
    "Tokenizer",
    "UnigramTokenizer",
    "VocabularyTokenizer",
    "WordPieceTokenizer",
    "load_tokenizer",
    "train_bpe",
    "train_sentencepiece",
    "train_wordpiece",
]
