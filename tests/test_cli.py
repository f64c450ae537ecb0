import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tf_input import cli

WORDS = "the cat sat on a mat and then it ran to the red barn far away".split()
RNG = np.random.default_rng(0)
LINES = [" ".join(RNG.choice(WORDS, size=12)) for _ in range(300)]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "kind, size, written",
    [
        ("wordpiece", 80, "vocab.txt"),
        ("bpe", 300, "merges.txt, vocab.json"),
        ("sentencepiece", 30, "spm.model"),
    ],
)
def test_vocab_train_then_tokenize(
    tmp_path, corpus, capsys, kind, size, written
):
    out = tmp_path / "vocab"
    code = cli.main(
        [
            "vocab",
            "train",
            "--kind",
            kind,
            "--size",
            str(size),
            str(corpus),
            "-o",
            str(out),
        ]
    )
    assert code == 0
    assert f"wrote {written}" in capsys.readouterr().out
    assert cli.main(["tokenize", "--vocab", str(out), "the red cat"]) == 0
    shown = capsys.readouterr().out
    assert "tokens" in shown
    # Plain output when not a terminal: no colour codes.
    assert "\x1b[" not in shown


def test_tokenize_missing_vocab_is_a_clear_error(tmp_path, capsys):
    code = cli.main(["tokenize", "--vocab", str(tmp_path / "none.txt"), "x"])
    assert code == 2
    assert "not found" in capsys.readouterr().err


def test_console_script_is_installed():
    # `pip install` puts the `tf-input` script beside the interpreter.
    script = pathlib.Path(sys.executable).parent / "tf-input"
    result = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, check=True
    )
    assert "vocab" in result.stdout and "tokenize" in result.stdout
