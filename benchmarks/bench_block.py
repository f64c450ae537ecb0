"""A training step of a small model on InputBlock next to keras-hub's.

Both models are the same but for their first layer:

* ours: `InputBlock(V, D, position="learned", max_length=S, scale=False)`;
* keras-hub: `TokenAndPositionEmbedding(V, S, D, mask_zero=True)`;

then `Dense(D, relu)`, masked `GlobalAveragePooling1D`, `Dense(2)`. keras-hub
has no `sqrt(D)` scale, so ours runs with `scale=False`; both compute the
padding mask of id 0. Our weights are copied into theirs and the outputs are
checked to agree before timing.

A step is `loss = sparse CE(model(ids))`, its gradients and one SGD update,
in one `tf.function`, plain graph and XLA (`jit_compile=True`). Each
repetition makes `--calls` calls of ours and of theirs, interleaved call by
call, and gives each side's mean ms per call; the table gives the median
over repetitions and the ratio of the medians (ours / keras-hub, target
<= 1.0). Everything runs in one process.

XLA programs over the bucket pipeline: one epoch of
`tf_input.data.make_dataset(..., batching="bucket")` through the XLA step;
each distinct batch shape is one XLA compilation (XLA caches programs by
input shape), which must be at most the number of buckets.

Run `python benchmarks/bench_block.py [--quick] [--repeats N] [--calls N]`.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf_input.block import InputBlock  # noqa: E402


def build(first_layer, seq_len):
    token_ids = keras.Input((seq_len,), dtype="int32", name="token_ids")
    hidden = first_layer(token_ids)
    hidden = keras.layers.Dense(hidden.shape[-1], activation="relu")(hidden)
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    return keras.Model(token_ids, keras.layers.Dense(2)(pooled))


def models(vocabulary_size, seq_len, dim):
    keras.utils.set_random_seed(0)
    block = InputBlock(
        vocabulary_size,
        dim,
        position="learned",
        max_length=seq_len,
        scale=False,
    )
    ours = build(block, seq_len)
    hub_layer = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size, seq_len, dim, mask_zero=True
    )
    theirs = build(hub_layer, seq_len)
    hub_layer.token_embedding.embeddings.assign(
        block.token_embedding.embeddings
    )
    hub_layer.position_embedding.position_embeddings.assign(
        block.position_embedding.position_embeddings
    )
    for mine, other in zip(ours.layers[2:], theirs.layers[2:]):
        for a, b in zip(mine.weights, other.weights):
            b.assign(a)
    return ours, theirs


def make_step(model, jit_compile):
    optimizer = keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(jit_compile=jit_compile)
    def step(ids, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(ids, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return step


def time_pair(steps, inputs, repeats, calls):
    for step in steps:  # warm-up: trace and compile
        step(*inputs).numpy()
    times = [[], []]
    for _ in range(repeats):
        spent = [0.0, 0.0]
        for _ in range(calls):
            for side, step in enumerate(steps):
                start = time.perf_counter()
                step(*inputs).numpy()
                spent[side] += time.perf_counter() - start
        for side in (0, 1):
            times[side].append(1000 * spent[side] / calls)
    return statistics.median(times[0]), statistics.median(times[1])


def xla_programs_over_buckets(num_buckets, quick):
    """(distinct batch shapes = XLA compilations, tracings, num batches)."""
    import tf_input.data
    from tf_input.tokenizers import VocabularyTokenizer

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    lines = [
        " ".join(rng.choice(words, size=rng.integers(3, 120)))
        for _ in range(400 if quick else 2000)
    ]
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(lines)
    ds = tf_input.data.make_dataset(
        lines,
        tokenizer,
        task="encode",
        batch_size=16,
        max_length=128,
        batching="bucket",
        num_buckets=num_buckets,
    )
    block = InputBlock(tokenizer.vocabulary_size(), 32)
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    pooled = keras.layers.GlobalAveragePooling1D()(block(token_ids))
    model = keras.Model(token_ids, keras.layers.Dense(2)(pooled))
    step = make_step(model, jit_compile=True)
    shapes = set()
    batches = 0
    for features in ds:
        ids = features["token_ids"]
        shapes.add(tuple(ids.shape))
        step(ids, tf.zeros([tf.shape(ids)[0]], "int32")).numpy()
        batches += 1
    return len(shapes), step.experimental_get_tracing_count(), batches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    calls = args.calls or (5 if args.quick else 20)
    batch, seq_len, dim, vocabulary_size = (
        (8, 64, 64, 5000) if args.quick else (32, 128, 256, 30522)
    )
    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocabulary_size, size=(batch, seq_len))
    ids[:, seq_len * 3 // 4 :] = 0  # a quarter of padding
    inputs = (tf.constant(ids, "int32"), tf.constant(rng.integers(0, 2, batch)))
    print(
        f"B={batch} S={seq_len} D={dim} V={vocabulary_size}; TF "
        f"{tf.__version__}, Keras {keras.__version__}, keras-hub "
        f"{keras_hub.__version__}; {repeats} repetitions x {calls} calls"
    )
    print()
    print("| mode | InputBlock ms | keras-hub ms | ratio |")
    print("|---|---:|---:|---:|")
    for jit_compile in (False, True):
        ours, theirs = models(vocabulary_size, seq_len, dim)
        np.testing.assert_allclose(
            ours(inputs[0]).numpy(), theirs(inputs[0]).numpy(), atol=1e-5
        )
        steps = [make_step(ours, jit_compile), make_step(theirs, jit_compile)]
        mine, other = time_pair(steps, inputs, repeats, calls)
        mode = "XLA" if jit_compile else "graph"
        print(f"| {mode} | {mine:.2f} | {other:.2f} | {mine / other:.2f} |")
    num_buckets = 4
    programs, tracings, batches = xla_programs_over_buckets(
        num_buckets, args.quick
    )
    print()
    print(
        f"XLA over one epoch of the bucket pipeline ({num_buckets} buckets, "
        f"{batches} batches): {programs} distinct shapes = XLA "
        f"compilations, {tracings} tracings "
        f"({'OK' if programs <= num_buckets else 'TOO MANY'}: "
        f"<= {num_buckets})."
    )


if __name__ == "__main__":
    main()
