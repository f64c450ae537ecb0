"""tf_input: the input side of a Transformer for TensorFlow and Keras 3.

Raw text -> tokens -> ids -> batches -> token embeddings -> position
information -> the tensor the first attention block reads.
"""

import os

# tf_input is built on TensorFlow ops (tf.data, tf.strings); Keras must use
# the TensorFlow backend. Respect an explicit choice, and fail clearly below.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from tf_input import _quiet  # noqa: E402

_quiet.load_tensorflow()  # without its start-up chatter on stderr

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        "tf_input needs Keras with the TensorFlow backend. "
        f"Received: KERAS_BACKEND={keras.backend.backend()!r}. "
        "Set KERAS_BACKEND=tensorflow before importing keras."
    )

from tf_input import _keras_compat  # noqa: E402

_keras_compat.install()

from tf_input import data  # noqa: E402
from tf_input import viz  # noqa: E402
from tf_input.block import InputBlock  # noqa: E402
from tf_input.export import export_text_model  # noqa: E402
from tf_input.export import load_text_model  # noqa: E402
from tf_input.layers import LearnedPE  # noqa: E402
from tf_input.layers import LearnedPositionEmbedding  # noqa: E402
from tf_input.layers import RotaryEmbedding  # noqa: E402
from tf_input.layers import SinusoidalPE  # noqa: E402
from tf_input.layers import SinusoidalPositionEmbedding  # noqa: E402
from tf_input.layers import TokenEmbedding  # noqa: E402
from tf_input.layers import sinusoidal_encoding  # noqa: E402
from tf_input.tokenizers import BytePairTokenizer  # noqa: E402
from tf_input.tokenizers import SentencePieceTokenizer  # noqa: E402
from tf_input.tokenizers import VocabularyTokenizer  # noqa: E402
from tf_input.tokenizers import WordPieceTokenizer  # noqa: E402
from tf_input.tokenizers import load_tokenizer  # noqa: E402
from tf_input.trace import trace  # noqa: E402
from tf_input.version import __version__  # noqa: E402

__all__ = [
    "BytePairTokenizer",
    "InputBlock",
    "LearnedPE",
    "LearnedPositionEmbedding",
    "RotaryEmbedding",
    "SentencePieceTokenizer",
    "SinusoidalPE",
    "SinusoidalPositionEmbedding",
    "TokenEmbedding",
    "VocabularyTokenizer",
    "WordPieceTokenizer",
    "__version__",
    "data",
    "export_text_model",
    "load_text_model",
    "load_tokenizer",
    "sinusoidal_encoding",
    "trace",
    "viz",
]
