"""BERT-style inputs: sentence pairs, segment ids and learned positions.

Uses the real BERT uncased vocabulary from ../shared/data (or
$TF_INPUT_SHARED_DATA) when it is there; otherwise it says so and exits
without error. No downloads.

(sentence A, sentence B) pairs -> make_dataset(task="encode") ->
[CLS] A [SEP] B [SEP] as token_ids, segment_ids (0 for A, 1 for B) and
padding_mask, cut by Hugging Face's "longest_first" rule -> InputBlock(
num_segments=2, position="learned", padding_mask_input=True) -> [B, S, D]
with the padding mask.

Run: python examples/bert_inputs.py
"""

import os
import pathlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# tf_input first: importing it loads TensorFlow without its start-up lines.
import tf_input  # noqa: E402, F401

# isort: split
import keras  # noqa: E402

from tf_input.block import InputBlock  # noqa: E402
from tf_input.data import make_dataset  # noqa: E402
from tf_input.tokenizers import WordPieceTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
VOCAB = SHARED / "bert" / "bert-base-uncased-vocab.txt"
PAIRS = [
    ("I love deep learning.", "Position information matters."),
    ("How old are you?", "I am six."),
    ("The cat sat on the mat.", "It was warm."),
]
MAX_LENGTH = 24
EMBEDDING_DIM = 32


def main():
    if not VOCAB.is_file():
        print(
            f"Skipped: the BERT vocabulary is not at {VOCAB}. Set "
            "TF_INPUT_SHARED_DATA to the folder that holds bert/."
        )
        return
    keras.utils.set_random_seed(0)
    tokenizer = WordPieceTokenizer.from_vocab_file(VOCAB)
    block = InputBlock(
        tokenizer.vocabulary_size(),
        EMBEDDING_DIM,
        position="learned",
        max_length=MAX_LENGTH,
        num_segments=2,
        normalization="layer",
        dropout=0.1,
        padding_mask_input=True,
    )
    batches = make_dataset(
        PAIRS,
        tokenizer,
        task="encode",
        batch_size=len(PAIRS),
        max_length=MAX_LENGTH,
        features=block,  # exactly the block's inputs, by name
    )
    features = next(iter(batches))
    out = block(features)
    token_ids, segment_ids = features["token_ids"], features["segment_ids"]
    first = token_ids[0].numpy().tolist()
    print("pair 0 tokens:", [tokenizer.id_to_token(i) for i in first if i])
    print("token_ids  ", tuple(token_ids.shape), first)
    print("segment_ids", tuple(segment_ids.shape), segment_ids[0].numpy())
    print("output     ", tuple(out.shape), out.dtype.name)
    print("mask       ", out._keras_mask[0].numpy().astype(int))
    print(
        f"InputBlock: {block.count_params():,} weights "
        f"(tokens {tokenizer.vocabulary_size()} x {EMBEDDING_DIM}, "
        f"segments 2 x {EMBEDDING_DIM}, positions {MAX_LENGTH} x "
        f"{EMBEDDING_DIM}, layer norm)"
    )


if __name__ == "__main__":
    main()
