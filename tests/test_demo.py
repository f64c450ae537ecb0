import re

import numpy as np

from tf_input import cli
from tf_input import demo


def _value(sign, digits):
    return (-1 if sign == "NEGATIVE" else 1) * int(digits)


def test_task_data_is_complete_and_correct():
    train, test = demo.generate(seed=0, test_size=4000)
    questions = train[0] + test[0]
    results = np.concatenate([train[1], test[1]])
    assert len(questions) == len(set(questions)) == 80_000
    assert len(test[0]) == 4000
    pattern = re.compile(
        r"BOS (POSITIVE|NEGATIVE) (\d\d) (add|subtract) "
        r"(POSITIVE|NEGATIVE) (\d\d) EOS"
    )
    for question, result in zip(questions, results):
        a_sign, a, operation, b_sign, b = pattern.fullmatch(question).groups()
        left, right = _value(a_sign, a), _value(b_sign, b)
        want = left + right if operation == "add" else left - right
        assert result == want, question
    # Seeded: the same split every time, a different one for another seed.
    assert demo.generate(seed=0)[1][0] == test[0]
    assert demo.generate(seed=1)[1][0] != test[0]


def test_the_issue_example():
    assert (
        demo.question_text(-30, "subtract", -34)
        == "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"
    )
    assert demo.answer_text(-30 - -34) == "BOS POSITIVE 04 EOS"
    assert demo.answer_text(-170) == "BOS NEGATIVE 170 EOS"


def test_quick_demo_runs_every_step(tmp_path, capsys):
    accuracies = demo.run(quick=True, output_dir=tmp_path)
    assert set(accuracies) == set(demo.SCHEMES)
    assert all(0.0 <= a <= 1.0 for a in accuracies.values())
    shown = capsys.readouterr().out
    for heading in ("1. Data", "2. Tokenizer", "3. Training", "4. Results"):
        assert heading in shown
    assert "token embedding [B, S, D]" in shown  # the shape trace
    # The exported model answered the typed questions.
    assert "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS  ->  BOS " in shown
    assert (tmp_path / "arithmetic_savedmodel" / "saved_model.pb").is_file()
    for name in ("pe.png", "rope.png", "learned_similarity.png", "lengths.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_trace(capsys, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\ni\nlove\ndeep\nlearn\n##ing\n.\n")
    code = cli.main(["trace", "--vocab", str(vocab), "I love deep learning."])
    assert code == 0
    shown = capsys.readouterr().out
    assert "ids [S]" in shown and "[2, 3, 4, 5, 6, 7]" in shown
    assert "+ position (sinusoidal)" in shown


def test_answer_heads_round_trip():
    results = np.arange(-198, 199)
    parts = demo.answer_parts(results)
    logits = {
        name: np.eye(size)[np.asarray(parts[name])]
        for name, size in demo.ANSWER_PARTS.items()
    }
    np.testing.assert_array_equal(demo.answers_from(logits), results)
