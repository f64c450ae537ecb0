"""The journey of one sentence through the input side of a Transformer.

"I love deep learning" -> tokens -> ids [S] -> batch [1, S] -> token
embedding [1, S, D] (x sqrt(D)) -> + sinusoidal position encoding [1, S, D]
-> the output of `InputBlock`, with its padding mask.

Every step prints its shape, dtype and a few values (`tf_input.trace`). The
vocabulary is a toy one, made from the sentence itself; `tf_input.tokenizers`
brings real ones.

Run: python examples/shape_journey.py
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# tf_input first: importing it loads TensorFlow without its start-up lines.
import tf_input  # noqa: E402

# isort: split
import keras  # noqa: E402

from tf_input.block import InputBlock  # noqa: E402
from tf_input.trace import trace  # noqa: E402

SENTENCE = "I love deep learning"
EMBEDDING_DIM = 8


def main():
    keras.utils.set_random_seed(0)
    # A toy vocabulary: <pad>=0, <sos>=1, <eos>=2, <unk>=3, then the words.
    tokenizer = tf_input.VocabularyTokenizer(
        lowercase=True, add_special_tokens=True
    )
    tokenizer.adapt([SENTENCE])
    print(f"vocabulary: {tokenizer.get_vocabulary()}")
    block = InputBlock(tokenizer.vocabulary_size(), EMBEDDING_DIM)
    rows = trace(SENTENCE, tokenizer, block)
    out = rows[-1]
    print("-" * 80)
    print(
        f"'{SENTENCE}' became a {out.shape} {out.dtype} tensor: what the "
        "first Transformer block reads."
    )


if __name__ == "__main__":
    main()
