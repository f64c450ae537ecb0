"""The demo: why a Transformer needs position information.

`tf-input demo` (and `make demo`) runs the whole input path on a task where
word order decides the answer: two-digit signed arithmetic,

    BOS NEGATIVE 30 subtract NEGATIVE 34 EOS   ->   BOS POSITIVE 04 EOS

0. Prints the tutorials' own numbers, computed by this package
   (`tf_input.tutorials`).
1. Shows why position is needed: without it, self-attention gives "cat eats
   fish" and "fish eats cat" the same vectors in another order
   (`permutation_check`).
2. Generates every question of the task (80,000), seeded, and splits them
   into train and test sets. Nothing is downloaded.
3. Builds a `VocabularyTokenizer(split="whitespace_digits")` (numbers become
   digits, so `30` and `03` are the same two tokens in another order) and
   the `tf.data` pipeline, and prints the shape trace of one question.
4. Trains the same tiny Transformer encoder once per position scheme:
   `none`, `sinusoidal`, `learned` and `rope`, printing the test accuracy
   after each epoch. In the `rope` variant the attention below rotates q
   and k with `block.rotary`.
5. Prints the exact-match test accuracy per scheme. Without position
   information self-attention sees a bag of tokens: it cannot tell `30`
   from `03`, so `none` comes out clearly worst.
6. Exports the best model as a SavedModel that takes raw strings, reloads
   it, and answers a few questions typed as text.
7. Writes the pictures to `demo_output/`.

The model reads the question and predicts the answer's sign and its three
digits (|result| <= 198) from the output at `BOS`, which attends to the
whole question. Exact match means all four are right.

Training budget (measured, see the README): every scheme learns the task in
a sudden transition after a plateau whose length varies from run to run
(from about 3 to 7 epochs), and RoPE's plateau tends to be the longest (it
adds nothing to the embeddings; attention has to find positions through the
rotations alone). Four epochs with a constant learning rate stopped RoPE
mid-transition (71% exact match for seed 0, 99.5% after eight). So each
scheme trains for up to `EPOCHS` epochs and stops as soon as it answers
`STOP_AT` of a held-out validation set exactly, or when its validation
accuracy has stalled (less than `STALL_DELTA` gained in `STALL_EPOCHS`
epochs, checked from epoch `STALL_FROM` on); the test set is never used
to decide. The learning rate is held, then decays to zero over the last
`DECAY_SHARE` of the `EPOCHS` (which also stops the late loss spikes a
constant rate gave), and gradients are clipped to norm 1.
"""

from __future__ import annotations

import argparse
import pathlib
import textwrap
import time

import numpy as np

SCHEMES = ("none", "sinusoidal", "learned", "rope")
# The answer's parts: sign (0 = POSITIVE), and the digits of |result| <= 198.
ANSWER_PARTS = {"sign": 2, "hundreds": 2, "tens": 10, "units": 10}
# What each position of a question holds (the learned table's labels).
QUESTION_PARTS = (
    "BOS",
    "sign",
    "tens",
    "units",
    "operation",
    "sign",
    "tens",
    "units",
    "EOS",
)
BATCH_SIZE = 64
TRAIN_SIZE = 40_000  # of the 76,000 questions left after the test set
VALIDATION_SIZE = 2_000  # held out from those too: decides when to stop
EPOCHS = 10  # at most
STOP_AT = 0.99  # validation exact match that ends a scheme's training
# ... or, from epoch STALL_FROM on, a validation accuracy that rose less
# than STALL_DELTA over the last STALL_EPOCHS epochs (Keras's patience
# rule). Every plateau measured rose by 1 to 9 points in 3 epochs before
# its transition, and all transitions came by epoch 5; 'none' rises ~0.5.
STALL_FROM = 6
STALL_EPOCHS = 3
STALL_DELTA = 0.005
LEARNING_RATE = 1e-3
WARMUP_SHARE = 0.03  # of the steps: linear warm-up
DECAY_SHARE = 0.35  # of the steps, at the end: linear decay to 0
CLIP_NORM = 1.0
TARGET = 0.95  # every scheme with position information should reach it
MAX_LENGTH = 16  # questions have 9 tokens


# === Data ===
def _operand(sign, magnitude):
    """`NEGATIVE 04` for sign=-1, magnitude=4."""
    return f"{'NEGATIVE' if sign < 0 else 'POSITIVE'} {magnitude:02d}"


def question_text(a, operation, b):
    """`BOS POSITIVE 30 add NEGATIVE 04 EOS` for a=30, b=-4."""
    left = _operand(-1 if a < 0 else 1, abs(a))
    right = _operand(-1 if b < 0 else 1, abs(b))
    return f"BOS {left} {operation} {right} EOS"


def answer_text(result):
    """`BOS NEGATIVE 04 EOS` for -4."""
    return f"BOS {_operand(-1 if result < 0 else 1, abs(result))} EOS"


def generate(seed=0, test_size=4000):
    """Every question of the task, shuffled; returns (train, test).

    Each split is `(questions, results)`: a list of str and an int array.
    Operands run over -99 ... 99, and zero appears with both signs
    (`POSITIVE 00`, `NEGATIVE 00`), as the task's format allows.
    """
    questions, results = [], []
    for a_sign in (1, -1):
        for a in range(100):
            for operation in ("add", "subtract"):
                for b_sign in (1, -1):
                    for b in range(100):
                        right = (
                            b_sign * b if operation == "add" else -b_sign * b
                        )
                        questions.append(
                            f"BOS {_operand(a_sign, a)} {operation} "
                            f"{_operand(b_sign, b)} EOS"
                        )
                        results.append(a_sign * a + right)
    order = np.random.default_rng(seed).permutation(len(questions))
    questions = [questions[i] for i in order]
    results = np.asarray(results, "int32")[order]
    test = (questions[:test_size], results[:test_size])
    train = (questions[test_size:], results[test_size:])
    return train, test


# === Model ===
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


def answer_parts(results):
    """Results (ints) -> the targets of the four heads (TensorFlow ops)."""
    import tensorflow as tf

    results = tf.cast(results, "int32")
    magnitude = tf.abs(results)
    return {
        "sign": tf.cast(results < 0, "int32"),
        "hundreds": magnitude // 100,
        "tens": magnitude // 10 % 10,
        "units": magnitude % 10,
    }


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


def answers_from(outputs):
    """The four heads' logits -> results (ints)."""
    digit = {name: np.argmax(outputs[name], axis=-1) for name in ANSWER_PARTS}
    magnitude = 100 * digit["hundreds"] + 10 * digit["tens"] + digit["units"]
    return np.where(digit["sign"] == 1, -magnitude, magnitude)


def order_blind_ceiling(questions, results):
    """The best exact match any model blind to word order can reach.

    A model without position information sees each question as a bag
    (multiset) of tokens: `POSITIVE 30 add POSITIVE 04` and `POSITIVE 03
    add POSITIVE 40` are the same bag. Knowing every question's answer,
    the best it can do is answer each bag with its most common result. The
    ceiling is that share of the questions (digits split as the tokenizer
    splits them).

    Returns:
        float in [0, 1].

    Example:

    >>> from tf_input import demo
    >>> demo.order_blind_ceiling(
    ...     ["BOS POSITIVE 30 add POSITIVE 04 EOS",
    ...      "BOS POSITIVE 03 add POSITIVE 40 EOS"], [34, 43])
    0.5
    """
    import collections

    answers = collections.defaultdict(collections.Counter)
    for question, result in zip(questions, results):
        tokens = []
        for word in question.split():
            tokens.extend(word if word.isdigit() else [word])
        answers[tuple(sorted(tokens))][int(result)] += 1
    best = sum(counts.most_common(1)[0][1] for counts in answers.values())
    return best / max(1, len(questions))


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
    from tf_input.tokenizers.vocabulary import VocabularyTokenizer

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


# === Demo ===
def run(quick=False, output_dir="demo_output", seed=0, print_fn=print):
    """Runs the demo; returns `{scheme: test accuracy}`."""
    import keras
    import tensorflow as tf

    import tf_input
    from tf_input import tutorials
    from tf_input import viz
    from tf_input.block import InputBlock
    from tf_input.data import make_dataset
    from tf_input.export import export_text_model
    from tf_input.trace import trace

    started = time.perf_counter()
    # Fail now, not after minutes of training, if matplotlib is missing.
    viz._new_figure()
    output = pathlib.Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    # --quick checks that every step runs; its accuracies mean nothing.
    epochs = 1 if quick else EPOCHS

    print_fn("0. The tutorials' numbers, from this code")
    tutorials.print_all(print_fn)

    print_fn(
        '\n1. Why position? "cat eats fish" and "fish eats cat" through an '
        "InputBlock and one attention layer"
    )
    print_fn(
        "   largest difference between the outputs, once put back in the "
        "same order:"
    )
    for scheme in SCHEMES:
        difference = permutation_check(scheme, seed=seed)
        note = (
            "the same vectors, only permuted: attention cannot see the order"
            if scheme == "none"
            else "order changes the vectors"
        )
        print_fn(f"   {scheme:<12}{difference:>11.2e}   {note}")

    everything, test = generate(seed)
    size = 512 if quick else TRAIN_SIZE
    held = 256 if quick else VALIDATION_SIZE
    train = (everything[0][:size], everything[1][:size])
    validation = (
        everything[0][size : size + held],
        everything[1][size : size + held],
    )
    if quick:
        test = (test[0][:256], test[1][:256])
    print_fn("\n2. Data")
    print_fn(
        f"   {len(train[0]):,} training, {len(validation[0]):,} validation "
        f"and {len(test[0]):,} test questions (seed {seed})"
    )
    for question, result in zip(train[0][:3], train[1][:3]):
        print_fn(f"   {question}  ->  {answer_text(int(result))}")

    print_fn("\n3. Tokenizer and pipeline")
    tokenizer = tf_input.VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt(train[0])
    print_fn(f"   vocabulary: {tokenizer.get_vocabulary()}")

    def dataset(split, shuffle, batch_size=BATCH_SIZE):
        batches = make_dataset(
            list(zip(split[0], split[1].tolist())),
            tokenizer,
            task="encode",
            batch_size=batch_size,
            max_length=MAX_LENGTH,
            add_special_tokens=False,
            shuffle=len(split[0]) if shuffle else None,
            seed=seed,
            # The block derives the padding mask from the ids (padding id
            # 0 is `<pad>` here), so the model takes the ids alone.
            features=["token_ids"],
        )
        # The answer as its sign and digits; `map` keeps the batch count
        # that `make_dataset` counted, so Keras knows the epoch length.
        # "longest" batches have no fill rows: every row's weight is 1.
        return batches.map(lambda x, y, weights: (x, answer_parts(y)))

    # The whole test and validation sets as one batch each: one eager call
    # per evaluation.
    (test_features, _) = next(iter(dataset(test, False, len(test[0]))))
    held_out = dataset(validation, False, len(validation[0]))
    (validation_features, _) = next(iter(held_out))
    keras.utils.set_random_seed(seed)
    trace(
        test[0][0],
        tokenizer,
        InputBlock(tokenizer.vocabulary_size(), 8),
        print_fn=lambda table: print_fn(textwrap.indent(table, "   ")),
    )
    batch_shape = tuple(next(iter(dataset(train, True)))[0]["token_ids"].shape)
    print_fn(f"   a training batch: token_ids {batch_shape}")

    steps_per_epoch = -(-len(train[0]) // BATCH_SIZE)
    print_fn(
        f"\n4. Training: the same model per scheme, at most {epochs} "
        f"epoch{'s' if epochs > 1 else ''} of {steps_per_epoch} steps, "
        f"stopping once {STOP_AT:.0%} of the validation questions are right "
        "or when it stalls"
    )
    print_fn(
        f"   learning rate {LEARNING_RATE:g} held, then decayed to 0 over the "
        f"last {DECAY_SHARE:.0%} of the {epochs} epochs; gradients clipped "
        f"to norm {CLIP_NORM:g}"
    )
    accuracies, models, seconds, history = {}, {}, {}, {}
    for scheme in SCHEMES:
        keras.utils.set_random_seed(seed)
        # A fresh pipeline per scheme: the shuffle order of epoch k is then
        # the same for every scheme. (One shared dataset reshuffles on each
        # new iterator, so a scheme's batches would depend on how many
        # epochs the schemes before it ran.)
        train_ds = dataset(train, True)
        model = build_model(
            scheme, tokenizer.vocabulary_size(), max_length=MAX_LENGTH
        )
        model.compile(
            optimizer=keras.optimizers.AdamW(
                learning_rate_schedule(epochs * steps_per_epoch),
                clipnorm=CLIP_NORM,
            ),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            # XLA steps are ~1.5x faster here. A tiny model: 16 steps per
            # call cut the Python overhead. --quick runs its few steps
            # eagerly: tracing the train step alone takes ~11 s.
            jit_compile=not quick,
            steps_per_execution=1 if quick else 16,
            run_eagerly=quick,
        )
        history[scheme] = []
        report = _EpochReport(
            scheme,
            (validation_features, validation[1]),
            (test_features, test[1]),
            history[scheme],
            print_fn,
        )
        start = time.perf_counter()
        # The pipeline shuffles; `shuffle=False` only tells Keras so.
        model.fit(
            train_ds,
            epochs=epochs,
            shuffle=False,
            verbose=0,
            callbacks=[report],
        )
        seconds[scheme] = time.perf_counter() - start
        accuracies[scheme] = history[scheme][-1]
        models[scheme] = model

    print_fn("\n5. Results: exact-match accuracy on unseen questions")
    print_fn(
        f"   {'position':<12}{'accuracy':>10}{'epochs':>8}{'train time':>13}"
    )
    for scheme in SCHEMES:
        print_fn(
            f"   {scheme:<12}{accuracies[scheme]:>10.1%}"
            f"{len(history[scheme]):>8}{seconds[scheme]:>12.0f}s"
        )
    for line in verdict(accuracies, history, quick=quick):
        print_fn(f"   {line}")
    if not quick:
        train_pool, test_set = generate(seed)
        ceiling = order_blind_ceiling(
            train_pool[0] + test_set[0],
            np.concatenate([train_pool[1], test_set[1]]),
        )
        print_fn(
            "   No model blind to word order can beat "
            f"{ceiling:.1%} on this task: that is what answering each bag "
            "of tokens with its most common result gets, over all 80,000 "
            "questions."
        )

    # 'none' is never the model to keep: it cannot see the order.
    best = max(SCHEMES[1:], key=accuracies.get)
    note = " (--quick: the accuracies are noise)" if quick else ""
    print_fn(f"\n6. Export the best model ({best!r}){note} and ask it in text")
    path = output / "arithmetic_savedmodel"
    # The questions carry their own BOS/EOS words: the training pipeline
    # ran with add_special_tokens=False, so the export must too.
    export_text_model(
        models[best],
        tokenizer,
        str(path),
        max_length=MAX_LENGTH,
        add_special_tokens=False,
    )
    reloaded = tf.saved_model.load(str(path))
    questions = [
        question_text(-30, "subtract", -34),
        question_text(57, "add", 38),
        question_text(-8, "add", 3),
    ]
    answers = answers_from(reloaded.serve(tf.constant(questions)))
    # The joint checked: served from raw text, the reloaded model answers
    # what the trained model answers on the pipeline's rows.
    rows, _ = next(iter(dataset((questions, np.zeros(3, int)), False, 3)))
    trained = answers_from(models[best](rows, training=False))
    if not np.array_equal(answers, trained):
        raise RuntimeError(
            "The exported model answers differently from the trained one: "
            f"served {answers.tolist()}, trained {trained.tolist()} on "
            f"{questions}. Its serving rows differ from the training rows."
        )
    for question, answer in zip(questions, answers):
        print_fn(f"   {question}  ->  {answer_text(int(answer))}")

    print_fn(f"\n7. Pictures in {output}/")
    _pictures(models, tokenizer, train[0], history, output, print_fn)
    print_fn(f"\nDone in {time.perf_counter() - started:.0f}s.")
    return accuracies


class _EpochReport:
    """A Keras callback: after each epoch, validation and test accuracy,
    printed; test accuracy kept in `history`; training stopped once the
    validation accuracy reaches `STOP_AT`, or has stalled (`stalled`)."""

    def __new__(cls, scheme, validation, test, history, print_fn):
        import keras

        held_out_history = []

        class Report(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                held_out = _accuracy(self.model, *validation)
                accuracy = _accuracy(self.model, *test)
                held_out_history.append(held_out)
                history.append(accuracy)
                loss = (logs or {}).get("loss", float("nan"))
                print_fn(
                    f"   {scheme:<12}epoch {epoch + 1}: loss {loss:.3f}, "
                    f"validation {held_out:.1%}, test {accuracy:.1%}"
                )
                if held_out >= STOP_AT:
                    self.model.stop_training = True
                elif stalled(held_out_history):
                    print_fn(
                        f"   {scheme:<12}stopped: validation accuracy rose "
                        f"less than {STALL_DELTA * 100:.1f} points in "
                        f"{STALL_EPOCHS} epochs"
                    )
                    self.model.stop_training = True

        return Report()


def stalled(accuracies):
    """Whether training has stalled: from epoch `STALL_FROM` on, the best
    accuracy so far beats the best of `STALL_EPOCHS` epochs before by less
    than `STALL_DELTA`.

    Example:

    >>> from tf_input import demo
    >>> demo.stalled([0.02, 0.03, 0.049, 0.05, 0.051, 0.053])
    True
    >>> demo.stalled([0.06, 0.09, 0.10, 0.14, 0.80, 0.93])
    False
    """
    if len(accuracies) < max(STALL_FROM, STALL_EPOCHS + 1):
        return False
    before = max(accuracies[:-STALL_EPOCHS])
    return max(accuracies) - before < STALL_DELTA


def verdict(accuracies, history, *, quick=False, target=TARGET):
    """What the table shows, in a few sentences (a list of str).

    'none' is clearly worst when it is 10 points below every other scheme.
    A scheme with position information below `target` is reported with its
    measured reason: still rising at the end (it needed more steps), or
    not.
    """
    if quick:
        return ["--quick trains on a few batches: these accuracies are noise."]
    lines = []
    others = [s for s in accuracies if s != "none"]
    if accuracies["none"] < min(accuracies[s] for s in others) - 0.1:
        lines.append(
            "'none' is clearly worst: without position information, "
            "attention sees a bag of tokens. `3 0` and `0 3` are the same "
            "bag, so it cannot tell 30 from 03."
        )
    low = [s for s in others if accuracies[s] < target]
    if not low:
        spread = max(accuracies[s] for s in others) - min(
            accuracies[s] for s in others
        )
        lines.append(
            f"Every scheme with position information reaches {target:.0%} "
            f"(within {spread * 100:.1f} points of each other): here they "
            "all do the job."
        )
    for scheme in low:
        curve = history[scheme]
        rise = curve[-1] - curve[-2] if len(curve) > 1 else 0.0
        if rise > 0.02:
            lines.append(
                f"{scheme!r} reached {accuracies[scheme]:.1%}, below "
                f"{target:.0%}, and was still rising ({rise * 100:+.1f} "
                "points in the last epoch): it needed more steps than the "
                "budget, not another scheme."
            )
        else:
            lines.append(
                f"{scheme!r} reached {accuracies[scheme]:.1%}, below "
                f"{target:.0%}, and had stopped improving "
                f"({rise * 100:+.1f} points in the last epoch)."
            )
    return lines


def _accuracy(model, features, results):
    """Exact match: sign and every digit right, over one batch.

    A plain call: `model.predict` would compile another XLA program, which
    takes longer than the whole test set.
    """
    predicted = answers_from(model(features, training=False))
    return float(np.mean(predicted == results))


def _pictures(models, tokenizer, questions, history, output, print_fn):
    from tf_input import viz
    from tf_input.data import make_dataset
    from tf_input.layers.learned_pe import LearnedPE

    viz.plot_accuracy(
        history,
        target=TARGET,
        title="Test accuracy after each epoch, per position scheme",
        path=output / "accuracy.png",
    )
    viz.plot_sinusoidal_encoding(64, 64, path=output / "pe.png")
    viz.plot_rope_scores(
        head_dim=64,
        max_distance=4096,
        original_max_position_embeddings=1024,
        factor=4.0,
        path=output / "rope.png",
    )
    learned = [
        layer
        for layer in models["learned"]
        .get_layer("input_block")
        ._flatten_layers()
        if isinstance(layer, LearnedPE)
    ]
    if learned:
        # Only the 9 positions of a question are ever trained.
        viz.plot_position_similarity(
            learned[0],
            max_positions=len(QUESTION_PARTS),
            labels=QUESTION_PARTS,
            groups={"first operand": (2, 3), "second operand": (6, 7)},
            path=output / "learned_similarity.png",
        )
    lengths = [len(row) for row in tokenizer(questions[:2000]).to_list()]
    viz.plot_lengths(
        lengths,
        batch_size=BATCH_SIZE,
        max_length=MAX_LENGTH,
        path=output / "lengths.png",
    )
    # Questions packed three to a row of 32: segments and their mask.
    packed = make_dataset(
        questions[:64],
        tokenizer,
        batch_size=8,
        max_length=32,
        batching="pack",
        add_special_tokens=False,
    )
    features = next(iter(packed))[0]
    viz.plot_packed_batch(
        {name: value.numpy() for name, value in features.items()},
        path=output / "packed_batch.png",
    )
    for name in sorted(p.name for p in output.glob("*.png")):
        print_fn(f"   {name}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="tf-input demo", description=__doc__.split("\n")[0]
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    run(quick=args.quick, output_dir=args.output, seed=args.seed)
    return 0


def add_arguments(parser):
    parser.add_argument(
        "--quick",
        action="store_true",
        help="check every step on a few batches (seconds; the accuracies "
        "mean nothing)",
    )
    parser.add_argument(
        "-o", "--output", default="demo_output", help="where the pictures go"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seeds the data split, the weights and the shuffling",
    )


if __name__ == "__main__":
    raise SystemExit(main())
