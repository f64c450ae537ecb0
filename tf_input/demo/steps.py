"""`run`: the demo's steps, 0 to 7, each printed as it goes."""

from __future__ import annotations

import argparse
import pathlib
import textwrap
import time

import numpy as np

from tf_input.demo.model import DECAY_SHARE
from tf_input.demo.model import LEARNING_RATE
from tf_input.demo.model import build_model
from tf_input.demo.model import learning_rate_schedule
from tf_input.demo.model import permutation_check
from tf_input.demo.task import QUESTION_PARTS
from tf_input.demo.task import answer_parts
from tf_input.demo.task import answer_text
from tf_input.demo.task import answers_from
from tf_input.demo.task import generate
from tf_input.demo.task import order_blind_ceiling
from tf_input.demo.task import question_text
from tf_input.demo.training import STOP_AT
from tf_input.demo.training import TARGET
from tf_input.demo.training import EpochReport
from tf_input.demo.training import verdict

SCHEMES = ("none", "sinusoidal", "learned", "rope")
BATCH_SIZE = 64
TRAIN_SIZE = 40_000  # of the 76,000 questions left after the test set
VALIDATION_SIZE = 2_000  # held out from those too: decides when to stop
EPOCHS = 10  # at most
CLIP_NORM = 1.0
MAX_LENGTH = 16  # questions have 9 tokens


def run(
    quick: bool = False,
    output_dir: str | pathlib.Path = "demo_output",
    seed: int = 0,
    print_fn=print,
) -> dict[str, float]:
    """Runs the demo; returns `{scheme: test accuracy}`."""
    from tf_input.viz._figure import new_figure

    started = time.perf_counter()
    # Fail now, not after minutes of training, if matplotlib is missing.
    new_figure()
    output = pathlib.Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    # --quick checks that every step runs; its accuracies mean nothing.
    epochs = 1 if quick else EPOCHS

    _show_tutorials(print_fn)
    _show_why_position(seed, print_fn)
    train, validation, test = _data(seed, quick, print_fn)
    tokenizer = _pipeline(train, test, seed, print_fn)
    models, accuracies, history = _train_schemes(
        tokenizer, train, validation, test, epochs, seed, quick, print_fn
    )
    # 'none' is never the model to keep: it cannot see the order.
    best = max(SCHEMES[1:], key=accuracies.get)
    _export_and_ask(models[best], best, tokenizer, output, quick, print_fn)
    print_fn(f"\n7. Pictures in {output}/")
    _pictures(models, tokenizer, train[0], history, output, print_fn)
    print_fn(f"\nDone in {time.perf_counter() - started:.0f}s.")
    return accuracies


def _dataset(split, tokenizer, seed, shuffle, batch_size=BATCH_SIZE):
    """The batches of `split`, `(questions, results)`, with the answer as
    its sign and digits."""
    from tf_input.data import make_dataset

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
    # `map` keeps the batch count that `make_dataset` counted, so Keras
    # knows the epoch length; sample weights, if any, pass through.
    return batches.map(
        lambda features, labels, *weights: (
            features,
            answer_parts(labels),
            *weights,
        )
    )


def _features(split, tokenizer):
    """The features of all of `split` as one batch: one eager call per
    evaluation."""
    whole = _dataset(split, tokenizer, 0, False, len(split[0]))
    return next(iter(whole))[0]


# === 0 and 1: the tutorials, and why position matters ===
def _show_tutorials(print_fn):
    from tf_input import tutorials

    print_fn("0. The tutorials' numbers, from this code")
    tutorials.print_all(print_fn)


def _show_why_position(seed, print_fn):
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


# === 2 and 3: data, tokenizer and pipeline ===
def _data(seed, quick, print_fn):
    """`(train, validation, test)`, each `(questions, results)`."""
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
    return train, validation, test


def _pipeline(train, test, seed, print_fn):
    """The tokenizer, adapted to the training questions; prints the
    vocabulary, one question's shape trace and a batch's shape."""
    import keras

    import tf_input
    from tf_input.block import InputBlock
    from tf_input.trace import trace

    print_fn("\n3. Tokenizer and pipeline")
    tokenizer = tf_input.VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt(train[0])
    print_fn(f"   vocabulary: {tokenizer.get_vocabulary()}")
    keras.utils.set_random_seed(seed)
    trace(
        test[0][0],
        tokenizer,
        InputBlock(tokenizer.vocabulary_size(), 8),
        print_fn=lambda table: print_fn(textwrap.indent(table, "   ")),
    )
    batch = next(iter(_dataset(train, tokenizer, seed, True)))[0]
    print_fn(
        f"   a training batch: token_ids {tuple(batch['token_ids'].shape)}"
    )
    return tokenizer


# === 4 and 5: training, results ===
def _train_schemes(
    tokenizer, train, validation, test, epochs, seed, quick, print_fn
):
    """Trains one model per scheme; returns `(models, accuracies,
    history)`, the last two `{scheme: ...}`."""
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
    held_out = (_features(validation, tokenizer), validation[1])
    tested = (_features(test, tokenizer), test[1])
    models, seconds, history = {}, {}, {}
    for scheme in SCHEMES:
        history[scheme] = []
        models[scheme], seconds[scheme] = _train(
            scheme,
            tokenizer,
            train,
            epochs * steps_per_epoch,
            EpochReport(scheme, held_out, tested, history[scheme], print_fn),
            epochs=epochs,
            seed=seed,
            quick=quick,
        )
    accuracies = {scheme: history[scheme][-1] for scheme in SCHEMES}
    _show_results(accuracies, history, seconds, seed, quick, print_fn)
    return models, accuracies, history


def _train(
    scheme, tokenizer, train, total_steps, report, *, epochs, seed, quick
):
    """One scheme's model, trained with `report` as its callback, and the
    seconds its training took."""
    import keras

    keras.utils.set_random_seed(seed)
    # A fresh pipeline per scheme: the shuffle order of epoch k is then the
    # same for every scheme. (One shared dataset reshuffles on each new
    # iterator, so a scheme's batches would depend on how many epochs the
    # schemes before it ran.)
    train_ds = _dataset(train, tokenizer, seed, True)
    model = build_model(
        scheme, tokenizer.vocabulary_size(), max_length=MAX_LENGTH
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(
            learning_rate_schedule(total_steps), clipnorm=CLIP_NORM
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        # XLA-compiled steps are faster over the full run, and a tiny
        # model's 16 steps per call cut the Python overhead. --quick runs
        # its few steps eagerly: compiling them would cost more than they.
        jit_compile=not quick,
        steps_per_execution=1 if quick else 16,
        run_eagerly=quick,
    )
    start = time.perf_counter()
    # The pipeline shuffles; `shuffle=False` only tells Keras so.
    model.fit(
        train_ds, epochs=epochs, shuffle=False, verbose=0, callbacks=[report]
    )
    return model, time.perf_counter() - start


def _show_results(accuracies, history, seconds, seed, quick, print_fn):
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


# === 6 and 7: export, pictures ===
def _export_and_ask(model, name, tokenizer, output, quick, print_fn):
    """Exports `model` as a SavedModel of raw strings, reloads it, asks it
    three questions and checks it answers as the trained model does."""
    import tensorflow as tf

    from tf_input.export import export_text_model

    note = " (--quick: the accuracies are noise)" if quick else ""
    print_fn(f"\n6. Export the best model ({name!r}){note} and ask it in text")
    path = output / "arithmetic_savedmodel"
    # The questions carry their own BOS/EOS words: the training pipeline
    # ran with add_special_tokens=False, so the export must too.
    export_text_model(
        model,
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
    rows = _features((questions, np.zeros(3, int)), tokenizer)
    trained = answers_from(model(rows, training=False))
    if not np.array_equal(answers, trained):
        raise RuntimeError(
            "The exported model answers differently from the trained one: "
            f"served {answers.tolist()}, trained {trained.tolist()} on "
            f"{questions}. Its serving rows differ from the training rows."
        )
    for question, answer in zip(questions, answers):
        print_fn(f"   {question}  ->  {answer_text(int(answer))}")


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
    # The questions' lengths and what each batching of the pipeline pads,
    # as the training pipeline reads them (no special tokens added).
    viz.plot_lengths(
        texts=questions[:2000],
        tokenizer=tokenizer,
        batch_size=BATCH_SIZE,
        max_length=MAX_LENGTH,
        add_special_tokens=False,
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


# === Command line ===
def main(argv: list[str] | None = None) -> int:
    """`python -m tf_input.demo`: the demo (`tf-input demo`)."""
    from tf_input import demo

    parser = argparse.ArgumentParser(
        prog="tf-input demo", description=demo.__doc__.split("\n")[0]
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    run(quick=args.quick, output_dir=args.output, seed=args.seed)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (`--quick`, `-o`, `--seed`)."""
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
