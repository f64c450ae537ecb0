"""The tutorial's five sentence pairs, end to end, with two InputBlocks.

English words -> `VocabularyTokenizer(split="whitespace")`; Chinese
characters -> `VocabularyTokenizer(split="character")`; the `seq2seq`
pipeline gives exactly the tutorial's `collate_fn` tensors (encoder ids
padded with 0; decoder input `<sos>` + target; labels target + `<eos>`).
Each side gets its own `InputBlock`; a tiny encoder-decoder (one attention
layer each way) then learns to copy the five translations, which takes a
few seconds on a CPU. No downloads.

Run: python examples/translation_toy.py
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# tf_input first: importing it loads TensorFlow without its start-up lines.
import tf_input  # noqa: E402

# isort: split
import keras  # noqa: E402
import numpy as np  # noqa: E402

from tf_input.data import make_dataset  # noqa: E402
from tf_input.tutorials import TRANSLATION_PAIRS  # noqa: E402

# The tutorial's five pairs (`tf-input demo` prints their collate_fn
# batches in its step 0, `tf_input.tutorials.collate_batches`).
PAIRS = list(TRANSLATION_PAIRS)
DIM = 32


def build_model(source_vocabulary, target_vocabulary):
    """Encoder: InputBlock + self-attention. Decoder: InputBlock + causal
    self-attention + cross-attention to the encoder. Keras attention layers
    take the padding masks the blocks attach."""
    encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
    encoder_block = tf_input.InputBlock(
        source_vocabulary, DIM, position="sinusoidal", name="encoder_input"
    )
    decoder_block = tf_input.InputBlock(
        target_vocabulary, DIM, position="sinusoidal", name="decoder_input"
    )
    memory = encoder_block(encoder_ids)  # [B, S_src, D]
    memory = memory + keras.layers.MultiHeadAttention(4, DIM // 4)(
        memory, memory
    )
    x = decoder_block(decoder_ids)  # [B, S_tgt, D]
    x = x + keras.layers.MultiHeadAttention(4, DIM // 4)(
        x, x, use_causal_mask=True
    )
    x = x + keras.layers.MultiHeadAttention(4, DIM // 4)(x, memory)
    logits = keras.layers.Dense(target_vocabulary, name="next_character")(x)
    return keras.Model(
        {"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
        logits,
    )


def main():
    keras.utils.set_random_seed(0)
    source = tf_input.VocabularyTokenizer(split="whitespace")
    source.adapt([s for s, _ in PAIRS])
    target = tf_input.VocabularyTokenizer(split="character")
    target.adapt([t for _, t in PAIRS])
    batches = make_dataset(
        PAIRS,
        source,
        target_tokenizer=target,
        task="seq2seq",
        batch_size=2,
        batching="longest",
        max_length=32,
        add_special_tokens=False,
    )
    features, labels, weights = next(iter(batches))
    # The model reads the ids; its own layers mask padding id 0.
    inputs = make_dataset(
        PAIRS,
        source,
        target_tokenizer=target,
        task="seq2seq",
        batch_size=2,
        batching="longest",
        max_length=32,
        add_special_tokens=False,
        features=["encoder_token_ids", "decoder_token_ids"],
    )
    print("The first batch, as the tutorial's collate_fn builds it:")
    shown = {**features, "labels": labels, "sample_weight": weights}
    for name, value in shown.items():
        print(f"  {name:<22} {str(tuple(value.shape)):<8} {value.numpy()[0]}")

    model = build_model(source.vocabulary_size(), target.vocabulary_size())
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        # The batches' sample weights mark the real targets (target +
        # <eos>); the loss is their mean.
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
    )
    model.fit(inputs, epochs=60, shuffle=False, verbose=0)
    print("\nAfter a few seconds of training (teacher forcing, argmax):")
    vocabulary = target.get_vocabulary()
    for x, y, weights in inputs:
        predicted = np.argmax(model(x), axis=-1)
        for row, want, real in zip(predicted, y.numpy(), weights.numpy()):
            kept = real > 0
            text = "".join(vocabulary[i] for i in row[kept][:-1])
            print(f"  {text}  (exact: {bool((row[kept] == want[kept]).all())})")


if __name__ == "__main__":
    main()
