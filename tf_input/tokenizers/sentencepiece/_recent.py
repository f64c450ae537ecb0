"""Re-exports the bounded memory of model files by digest (`_assets`), for
code that imports it from this path."""

from tf_input.tokenizers._assets import KEPT  # noqa: F401
from tf_input.tokenizers._assets import Recent  # noqa: F401
