"""The demo's model: an `InputBlock`, self-attention, four classifiers.

The same architecture for every position scheme; only the block's
`position` differs. `permutation_check` shows why it matters: without
position information, self-attention is blind to word order.
"""

from __future__ import annotations

import numpy as np

from tf_input.demo.task import ANSWER_PARTS

LEARNING_RATE = 1e-3
WARMUP_SHARE = 0.03  # of the steps: linear warm-up
DECAY_SHARE = 0.35  # of the steps, at the end: linear decay to 0


def _attention_layer():
    import keras
    from keras import ops

    class SelfAttention(keras.layers.Layer):
        """Multi-head self-attention; rotates q and k when given `rotary`."""

        def __init__(self, num_heads, dim, rotary=None, **kwargs):
            super().__init__(**kwargs)
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.rotary = rotary
            self.qkv = keras.layers.Dense(3 * dim, name="qkv")
            self.out = keras.layers.Dense(dim, name="out")
            self.supports_masking = True

        def build(self, input_shape):
            self.qkv.build(input_shape)
            self.out.build(input_shape)

        def call(self, x, mask=None):
            batch, length = ops.shape(x)[0], ops.shape(x)[1]
            qkv = ops.reshape(
                self.qkv(x), (batch, length, 3, self.num_heads, self.head_dim)
            )
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [B, S, H, Dh]
            if self.rotary is not None:
                q, k = self.rotary(q), self.rotary(k)
            scores = ops.einsum("bqhd,bkhd->bhqk", q, k)
            scores = scores / np.sqrt(self.head_dim)
            if mask is not None:  # padded keys get no attention
                keep = ops.cast(mask, scores.dtype)[:, None, None, :]
                scores = scores + (1.0 - keep) * -1e9
            weights = ops.softmax(scores, axis=-1)
            mixed = ops.einsum("bhqk,bkhd->bqhd", weights, v)
            mixed = ops.reshape(
                mixed, (batch, length, self.num_heads * self.head_dim)
            )
            return self.out(mixed)

    return SelfAttention


def build_model(
    scheme,
    vocabulary_size,
    *,
    max_length,
    dim=64,
    num_heads=4,
    num_layers=2,
):
    """`InputBlock(position=scheme)`, pre-norm encoder layers, a classifier.

    The same architecture for every scheme; only the position information
    differs.
    """
    import keras

    from tf_input.block import InputBlock

    SelfAttention = _attention_layer()
    block = InputBlock(
        vocabulary_size,
        dim,
        position=scheme,
        max_length=max_length,
        name="input_block",
    )
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    x = block(token_ids)  # [B, S, D]
    for i in range(num_layers):
        h = keras.layers.LayerNormalization(name=f"norm_{i}a")(x)
        x = x + SelfAttention(
            num_heads, dim, rotary=block.rotary, name=f"attention_{i}"
        )(h)
        h = keras.layers.LayerNormalization(name=f"norm_{i}b")(x)
        h = keras.layers.Dense(4 * dim, activation="gelu", name=f"ff_{i}a")(h)
        x = x + keras.layers.Dense(dim, name=f"ff_{i}b")(h)
    x = keras.layers.LayerNormalization(name="final_norm")(x)
    # The answer is read at BOS (position 0), which attends to everything:
    # its sign, hundreds, tens and units digit, one softmax each.
    h = keras.layers.Dense(4 * dim, activation="gelu", name="head")(x[:, 0])
    outputs = {
        name: keras.layers.Dense(size, name=name)(h)
        for name, size in ANSWER_PARTS.items()
    }
    return keras.Model(
        {"token_ids": token_ids}, outputs, name=f"arithmetic_{scheme}"
    )


def learning_rate_schedule(total_steps, peak=LEARNING_RATE):
    """Warm-up, hold, then linear decay to 0: the demo's learning rate.

    `WARMUP_SHARE` of the steps rise linearly to `peak`, which is held
    until the last `DECAY_SHARE` of the steps, over which it falls linearly
    to 0. Holding the peak through the plateau matters: a cosine decay from
    the start (measured: 10% exact match for RoPE after four epochs) lowers
    the rate before the transition happens.

    Returns:
        a `keras.optimizers.schedules.LearningRateSchedule`.
    """
    import keras
    from keras import ops

    class HoldThenDecay(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            step = ops.cast(step, "float32") + 1.0
            warm = step / max(1.0, WARMUP_SHARE * total_steps)
            decay = (total_steps - step) / max(1.0, DECAY_SHARE * total_steps)
            return peak * ops.clip(ops.minimum(warm, decay), 0.0, 1.0)

        def get_config(self):
            return {"total_steps": total_steps, "peak": peak}

    return HoldThenDecay()


# === Why position? ===
def permutation_check(
    scheme,
    sentence="cat eats fish",
    reordered="fish eats cat",
    *,
    embedding_dim=16,
    num_heads=2,
    seed=0,
):
    """How much word order changes what attention makes of the words.

    Feeds `sentence` and `reordered` (the same words in another order)
    through a fresh `InputBlock(position=scheme)` and one self-attention
    layer (rotating q and k with `block.rotary` for `"rope"`), puts the
    output vectors of `reordered` back in the order of `sentence`, and
    returns the largest difference. Without position information
    (`"none"`), self-attention is permutation-equivariant: the outputs are
    the same vectors in permuted order, and the difference is 0 up to
    float32 rounding. With any position scheme the same word at another
    position gets another vector.

    Args:
        scheme: str, one of `SCHEMES`.
        sentence: str. Whitespace-separated words, each once.
        reordered: str. The same words in another order.
        embedding_dim: int. Defaults to `16`.
        num_heads: int. Defaults to `2`.
        seed: int. Seeds the weights. Defaults to `0`.

    Returns:
        float, `max |out(sentence) - unpermute(out(reordered))|`.

    Example:

    >>> from tf_input import demo
    >>> demo.permutation_check("none") < 1e-5
    True
    >>> demo.permutation_check("sinusoidal") > 0.1
    True
    """
    import keras

    from tf_input.block import InputBlock
    from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer

    words, other = sentence.split(), reordered.split()
    if sorted(words) != sorted(other) or len(set(words)) != len(words):
        raise ValueError(
            "`reordered` must hold the words of `sentence` in another order, "
            "each word once. Received: "
            f"sentence={sentence!r}, reordered={reordered!r}."
        )
    keras.utils.set_random_seed(seed)
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt([sentence])
    block = InputBlock(
        tokenizer.vocabulary_size(),
        embedding_dim,
        position=scheme,
        max_length=len(words),
    )
    attention = _attention_layer()(
        num_heads, embedding_dim, rotary=block.rotary
    )
    ids = tokenizer([sentence, reordered]).to_tensor()  # [2, S]
    outputs = np.asarray(attention(block(ids)), np.float64)  # [2, S, D]
    where = [other.index(word) for word in words]
    unpermuted = outputs[1][where]
    return float(np.max(np.abs(outputs[0] - unpermuted)))
