import math
import re

import numpy as np
import pytest

from tests import references
from tf_input import cli
from tf_input import demo
from tf_input import tutorials


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
    for heading in (
        "0. The tutorials' numbers",
        "1. Why position?",
        "2. Data",
        "3. Tokenizer",
        "4. Training",
        "5. Results",
        "6. Export",
        "7. Pictures",
    ):
        assert heading in shown
    assert "token embedding [B, S, D]" in shown  # the shape trace
    assert "none        epoch 1: loss" in shown  # training as it goes
    assert "these accuracies are noise" in shown
    # The model kept is never 'none', which cannot see the order.
    exported = re.search(r"6\. Export the best model \('(\w+)'\)", shown)
    assert exported and exported.group(1) != "none"
    # The exported model answered the typed questions.
    assert "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS  ->  BOS " in shown
    assert (tmp_path / "arithmetic_savedmodel" / "saved_model.pb").is_file()
    for name in (
        "accuracy.png",
        "pe.png",
        "rope.png",
        "learned_similarity.png",
        "lengths.png",
        "packed_batch.png",
    ):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_permutation_check():
    # Without position, self-attention is permutation-equivariant: the
    # same vectors come out, permuted (float32 rounding only).
    assert demo.permutation_check("none") < 1e-5
    for scheme in ("sinusoidal", "learned", "rope"):
        assert demo.permutation_check(scheme) > 0.05, scheme
    # Another sentence and seed, the same lesson.
    assert demo.permutation_check("none", "a b c d", "d c a b", seed=3) < 1e-5
    with pytest.raises(ValueError, match=r"`reordered` must hold the words"):
        demo.permutation_check("none", "cat eats fish", "cat eats dog")


def test_learning_rate_warms_up_holds_and_decays_to_zero():
    schedule = demo.learning_rate_schedule(1000, peak=1e-3)
    rates = np.array([float(schedule(step)) for step in range(1000)])
    warm = round(demo.WARMUP_SHARE * 1000)
    np.testing.assert_allclose(
        rates[:warm], 1e-3 * np.arange(1, warm + 1) / warm, rtol=1e-5
    )
    held = rates[warm : round(1000 * (1 - demo.DECAY_SHARE)) - 1]
    np.testing.assert_allclose(held, 1e-3, rtol=1e-6)
    assert rates[-1] == pytest.approx(0.0, abs=1e-9)
    assert np.all(np.diff(rates[-300:]) < 0)


def test_verdict_explains_the_table():
    history = {
        "none": [0.05, 0.06],
        "sinusoidal": [0.5, 0.99],
        "learned": [0.9, 0.995],
        "rope": [0.97, 0.985],
    }
    final = {scheme: curve[-1] for scheme, curve in history.items()}
    lines = demo.verdict(final, history)
    assert lines[0].startswith("'none' is clearly worst")
    assert "Every scheme with position information reaches 95%" in lines[1]
    # Below the target and still rising: it needed more steps.
    history["rope"] = [0.4, 0.7]
    final["rope"] = 0.7
    lines = demo.verdict(final, history)
    assert any(
        "'rope' reached 70.0%" in line and "still rising" in line
        for line in lines
    )
    history["rope"] = [0.7, 0.7]
    lines = demo.verdict(final, history)
    assert any("had stopped improving" in line for line in lines)


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


# --- Step 0: the tutorials' numbers ------------------------------------------


def test_shape_table():
    assert tutorials.shape_table() == [
        ("token_ids", (32, 128)),
        ("token embedding x sqrt(512)", (32, 128, 512)),
        ("+ sinusoidal position", (32, 128, 512)),
        ("dropout(0.1)", (32, 128, 512)),
    ]


def test_sinusoid_table_is_the_tutorials():
    table = tutorials.sinusoid_table(4, 8)
    np.testing.assert_allclose(
        table, references.sinusoid(np.arange(4), 8), atol=1e-6
    )
    # The tutorial's row, to its two or three printed digits.
    printed = [0.84, 0.54, 0.10, 0.99, 0.01, 1.0, 0.001, 1.0]
    np.testing.assert_allclose(table[1], printed, atol=0.006)


def test_other_tutorial_table_and_its_exponent():
    table = tutorials.other_tutorial_table()
    want = references.sinusoid(np.arange(3), 4, layout="concat")
    np.testing.assert_allclose(table["formula"], want, atol=1e-6)
    assert table["formula"][1, 1] == pytest.approx(math.sin(0.01), abs=1e-7)
    assert table["exponent"] == pytest.approx(1.0, abs=1e-3)
    # Exponent 4i/D reproduces what the tutorial printed, to its digits,
    # but for the sign of cos(2).
    implied, printed = table["implied"], table["printed"]
    agree = np.isclose(implied, printed, atol=0.006)
    assert agree.sum() == 11 and not agree[2, 2]
    assert implied[2, 2] == pytest.approx(-printed[2, 2], abs=0.005)


def test_rounding_bug_frequencies():
    rows = tutorials.rounding_bug_frequencies(8)
    correct = [row[2] for row in rows]
    np.testing.assert_allclose(correct, 10000.0 ** (-np.arange(4) / 4))
    assert [row[3] for row in rows] == [0, 0, 0, 0]
    assert [row[4] for row in rows] == [1.0] * 4
    # With D=16 it is the same: 2i < D, so 2i // D is always 0.
    assert {row[4] for row in tutorials.rounding_bug_frequencies(16)} == {1.0}


def test_scale_check():
    check = tutorials.scale_check()
    assert check["expected_unscaled"] == pytest.approx(1 / math.sqrt(512))
    assert check["unscaled"] == pytest.approx(1 / math.sqrt(512), rel=0.05)
    assert check["scaled"] == pytest.approx(1.0, rel=0.05)
    assert check["scaled"] / check["unscaled"] == pytest.approx(
        math.sqrt(512), rel=1e-5
    )


def test_arithmetic_tokens():
    assert tutorials.arithmetic_tokens() == [
        "BOS",
        "NEGATIVE",
        "3",
        "0",
        "subtract",
        "NEGATIVE",
        "3",
        "4",
        "EOS",
    ]


def test_collate_batches_are_the_tutorials_collate_fn():
    batches = tutorials.collate_batches()
    assert len(batches) == 3  # five pairs in batches of two
    start = 0
    for batch in batches:
        size = len(batch["src_batch"])
        pairs = tutorials.TRANSLATION_PAIRS[start : start + size]
        src, tgt = tutorials.collate_reference(
            pairs, batch["source"], batch["target"]
        )
        np.testing.assert_array_equal(batch["src_batch"], src)
        np.testing.assert_array_equal(batch["tgt_batch"], tgt)
        # Decoder input tgt[:, :-1] (the <eos> of shorter rows as padding)
        # and labels tgt[:, 1:].
        decoder = np.where(tgt[:, :-1] == 2, 0, tgt[:, :-1])
        np.testing.assert_array_equal(batch["decoder_token_ids"], decoder)
        np.testing.assert_array_equal(batch["labels"], tgt[:, 1:])
        start += size
    assert batches[0]["tgt_batch"][:, 0].tolist() == [1, 1]  # <sos>


def test_print_all(capsys):
    tutorials.print_all()
    shown = capsys.readouterr().out
    assert "token embedding x sqrt(512)  [32, 128, 512]" in shown
    assert "pos=1: [ 0.841,  0.540,  0.100,  0.995,  0.010" in shown
    assert "it used the exponent 4i/D" in shown
    assert "2i//D" in shown
    assert "-> [BOS, NEGATIVE, 3, 0, subtract, NEGATIVE, 3, 4, EOS]" in shown
    assert "src_batch" in shown and "tgt_batch" in shown


def test_order_blind_ceiling():
    train, test = demo.generate(seed=0)
    questions = train[0] + test[0]
    results = np.concatenate([train[1], test[1]])
    # Independently: a question's bag is its sorted characters of digits
    # and its other words; group and keep each bag's most common answer.
    groups = {}
    for question, result in zip(questions, results):
        words = question.split()
        key = " ".join(sorted(w for w in words if not w.isdigit()))
        key += "|" + "".join(sorted("".join(w for w in words if w.isdigit())))
        groups.setdefault(key, []).append(int(result))
    best = sum(max(g.count(r) for r in set(g)) for g in groups.values())
    ceiling = demo.order_blind_ceiling(questions, results)
    assert ceiling == pytest.approx(best / len(questions), abs=1e-12)
    assert 0.1 < ceiling < 0.2  # measured: 14.8%


def test_stalled_stops_only_a_flat_curve():
    # 'none' in the demo (seed 0, validation): flat from epoch 3 on.
    flat = [0.024, 0.031, 0.049, 0.050, 0.051, 0.053]
    assert demo.stalled(flat)
    assert not demo.stalled(flat[:5])  # never before epoch STALL_FROM
    # A plateau creeping up before its transition is not stalled.
    plateau = [0.061, 0.100, 0.096, 0.154, 0.596, 0.922]
    assert not demo.stalled(plateau)
    assert not demo.stalled([0.055, 0.088, 0.112, 0.147, 0.150, 0.160])
