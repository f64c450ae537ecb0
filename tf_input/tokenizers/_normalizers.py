"""Former path of `tf_input.tokenizers.hf.normalizers` (same names)."""

from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.normalizers import reference_normalize

__all__ = ["Normalizer", "reference_normalize"]
