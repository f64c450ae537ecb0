"""Former path of `tf_input.tokenizers.hf.added_tokens` (same names)."""

from tf_input.tokenizers.hf.added_tokens import SEP
from tf_input.tokenizers.hf.added_tokens import Extractor
from tf_input.tokenizers.hf.added_tokens import check_added_tokens
from tf_input.tokenizers.hf.added_tokens import is_placeholder
from tf_input.tokenizers.hf.added_tokens import placeholder

__all__ = [
    "SEP",
    "Extractor",
    "check_added_tokens",
    "is_placeholder",
    "placeholder",
]
