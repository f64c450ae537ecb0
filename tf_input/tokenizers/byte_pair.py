"""Re-exports `BytePairTokenizer` and its helpers from their modules, for
code that imports them from this path."""

from tf_input.tokenizers._byte_level import ALPHABET as _ALPHABET  # noqa: F401
from tf_input.tokenizers._byte_level import byte_level  # noqa: F401
from tf_input.tokenizers._byte_level import token_to_bytes as _token_bytes  # noqa: F401
from tf_input.tokenizers._utf8 import to_valid_utf8 as _to_valid_utf8  # noqa: F401
from tf_input.tokenizers.byte_pair_tokenizer import BytePairTokenizer  # noqa: F401
from tf_input.tokenizers.engines.merge import lookup_or_merge  # noqa: F401
from tf_input.tokenizers.engines.merge import merge_sequences  # noqa: F401
