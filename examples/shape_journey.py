"""The journey of one sentence through the input side of a Transformer.

"I love deep learning" -> tokens -> ids [S] -> batch [1, S] -> token
embedding [1, S, D] (x sqrt(D)) -> + sinusoidal position encoding [1, S, D].

Every step prints its shape, dtype and a few values. The vocabulary is a toy
one, made from the sentence itself; `tf_input.tokenizers` brings real ones.

Run: python examples/shape_journey.py
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_input  # noqa: E402

SENTENCE = "I love deep learning"
EMBEDDING_DIM = 8


def show(step, value, note=""):
    value = tf.convert_to_tensor(value)
    flat = tf.reshape(value, [-1])[:6].numpy()
    if value.dtype.is_floating:
        sample = np.array2string(flat, precision=4, suppress_small=True)
    else:
        sample = str(flat.tolist())
    print(f"{step:<28} {str(value.shape):<14} {value.dtype.name:<8} {sample}")
    if note:
        print(f"{'':<28} {note}")


def main():
    keras.utils.set_random_seed(0)
    print(f"{'step':<28} {'shape':<14} {'dtype':<8} first values")
    print("-" * 80)
    text = tf.constant(SENTENCE)
    show("raw string", text)

    # 1. Tokens: lowercase and split on whitespace (a toy tokenizer).
    tokens = tf.strings.split(tf.strings.lower(text))
    show("tokens [S]", tokens)

    # 2. Ids: a toy vocabulary, 0 reserved for padding and 1 for unknowns.
    vocabulary = ["<pad>", "<unk>"] + sorted(set(SENTENCE.lower().split()))
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            vocabulary, tf.range(len(vocabulary), dtype="int32")
        ),
        default_value=1,
    )
    ids = table.lookup(tokens)
    show("ids [S]", ids, f"vocabulary: {vocabulary}")

    # 3. A batch of one, padded by two to show the mask.
    batch = tf.pad(ids[None, :], [[0, 0], [0, 2]])
    show("batch [B, S]", batch, "two padding ids (0) added at the end")

    # 4. Token embedding: one row of E [V, D] per id, times sqrt(D).
    embedding = tf_input.TokenEmbedding(len(vocabulary), EMBEDDING_DIM)
    x = embedding(batch)
    show(
        "token embedding [B, S, D]",
        x,
        f"E is {tuple(embedding.embeddings.shape)}, scaled by "
        f"sqrt({EMBEDDING_DIM}) = {np.sqrt(EMBEDDING_DIM):.4f}",
    )
    mask = embedding.compute_mask(batch)
    show("padding mask [B, S]", mask)

    # 5. Position: add the fixed sine/cosine encoding.
    encoding = tf_input.sinusoidal_encoding(batch.shape[1], EMBEDDING_DIM)
    show("sinusoidal PE [S, D]", encoding, "position 0 is (0, 1, 0, 1, ...)")
    show("PE at position 1", encoding[1])
    out = tf_input.SinusoidalPE()(x)
    show("embedding + PE [B, S, D]", out, "what the first block reads")
    print("-" * 80)
    print(
        f"'{SENTENCE}' became a {tuple(out.shape)} {out.dtype.name} tensor "
        f"and a {tuple(mask.shape)} mask."
    )


if __name__ == "__main__":
    main()
