"""BERT-style inputs: sentence pairs, segment ids and learned positions.

Uses the real BERT uncased vocabulary from ../shared/data (or
$TF_INPUT_SHARED_DATA) when it is there; otherwise it says so and exits
without error. No downloads.

[CLS] sentence A [SEP] sentence B [SEP] -> token_ids, segment_ids (0 for A,
1 for B), padding 0 -> InputBlock(num_segments=2, position="learned")
-> [B, S, D] with the padding mask.

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
import tensorflow as tf  # noqa: E402

from tf_input.block import InputBlock  # noqa: E402
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


def encode_pairs(tokenizer, pairs, max_length):
    """[CLS] A [SEP] B [SEP], cut from the longer side, padded with 0."""
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    first = tokenizer.tokenize([a for a, _ in pairs]).to_list()
    second = tokenizer.tokenize([b for _, b in pairs]).to_list()
    rows, segments = [], []
    for a, b in zip(first, second):
        while len(a) + len(b) > max_length - 3:  # BERT's truncation rule
            (a if len(a) > len(b) else b).pop()
        rows.append([cls] + a + [sep] + b + [sep])
        segments.append([0] * (len(a) + 2) + [1] * (len(b) + 1))
    length = max(len(row) for row in rows)
    pad = [0] * length
    token_ids = [(row + pad)[:length] for row in rows]
    segment_ids = [(seg + pad)[:length] for seg in segments]
    return tf.constant(token_ids, "int32"), tf.constant(segment_ids, "int32")


def main():
    if not VOCAB.is_file():
        print(
            f"Skipped: the BERT vocabulary is not at {VOCAB}. Set "
            "TF_INPUT_SHARED_DATA to the folder that holds bert/."
        )
        return
    keras.utils.set_random_seed(0)
    tokenizer = WordPieceTokenizer.from_vocab_file(VOCAB)
    token_ids, segment_ids = encode_pairs(tokenizer, PAIRS, MAX_LENGTH)
    block = InputBlock(
        tokenizer.vocabulary_size(),
        EMBEDDING_DIM,
        position="learned",
        max_length=MAX_LENGTH,
        num_segments=2,
        normalization="layer",
        dropout=0.1,
    )
    out = block({"token_ids": token_ids, "segment_ids": segment_ids})
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
