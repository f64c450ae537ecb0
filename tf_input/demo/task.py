"""The demo's task: two-digit signed arithmetic, as text.

    BOS NEGATIVE 30 subtract NEGATIVE 34 EOS   ->   BOS POSITIVE 04 EOS

Every question of the task (80,000), its answer as the four parts the model
predicts (sign, hundreds, tens, units), and the best any model blind to
word order can do.
"""

from __future__ import annotations

import collections

import numpy as np

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
    answers = collections.defaultdict(collections.Counter)
    for question, result in zip(questions, results):
        tokens = []
        for word in question.split():
            tokens.extend(word if word.isdigit() else [word])
        answers[tuple(sorted(tokens))][int(result)] += 1
    best = sum(counts.most_common(1)[0][1] for counts in answers.values())
    return best / max(1, len(questions))
