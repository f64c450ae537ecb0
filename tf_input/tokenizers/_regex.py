"""Former path of `tf_input.tokenizers.hf.regex` (same names)."""

from tf_input.tokenizers.hf.regex import *  # noqa: F403
from tf_input.tokenizers.hf.regex import __all__  # noqa: F401
