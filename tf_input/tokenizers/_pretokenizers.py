"""Former path of `tf_input.tokenizers.hf.pre_tokenizers` (same names)."""

from tf_input.tokenizers.hf.pre_tokenizers import GPT2_PATTERN
from tf_input.tokenizers.hf.pre_tokenizers import SEP
from tf_input.tokenizers.hf.pre_tokenizers import PreTokenizer

__all__ = ["GPT2_PATTERN", "SEP", "PreTokenizer"]
