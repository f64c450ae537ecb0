import argparse
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import cli

WORDS = "the cat sat on a mat and then it ran to the red barn far away".split()
RNG = np.random.default_rng(0)
ROOT = pathlib.Path(__file__).resolve().parents[1]
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


def test_version(capsys):
    from tf_input.version import __version__

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"tf-input {__version__}"


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_has_help_and_its_default():
    parser = cli.build_parser()
    for command in _parsers(parser):
        text = command.format_help()
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            if isinstance(action, argparse._StoreConstAction):
                continue  # an on/off flag: no default to show
            assert action.help, (command.prog, action.option_strings)
            default = action.default
            if default not in (None, False) and action.dest != "version":
                if isinstance(default, list):
                    default = ",".join(default)
                assert f"(default: {default})" in " ".join(text.split()), (
                    command.prog,
                    action.option_strings,
                )
    # The options the issue named.
    help_text = " ".join(
        cli.build_parser()
        ._subparsers._group_actions[0]
        .choices["plot"]
        ._subparsers._group_actions[0]
        .choices["lengths"]
        .format_help()
        .split()
    )
    assert "rows per batch (default: 32)" in help_text
    assert "each bin holds whole lengths) (default: 50)" in help_text


def test_errors_name_flags_not_python_arguments(tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nthe\ncat\nsat\non\n")
    argv = ["trace", "--vocab", str(vocab), "--position", "learned"]
    code = cli.main(argv + ["--max-length", "3", "the cat sat on"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Raise `--max-length`" in err and "--max-length=3" in err
    assert "max_length" not in err
    # Keras's "Exception encountered when calling ..." wrapper is gone.
    assert "Exception encountered" not in err and "\x1b[" not in err
    argv = ["vocab", "train", "--kind", "bpe", "--size", "0", str(vocab)]
    code = cli.main(argv + ["-o", str(tmp_path / "bpe")])
    assert code == 2
    err = capsys.readouterr().err
    assert "`--size` must be a positive integer" in err
    assert "Received: --size=0" in err


def test_in_flag_names_leaves_ordinary_words():
    names = {"max_length": "--max-length", "length": "--length"}
    message = cli.in_flag_names(
        "Input length 10 exceeds `max_length=8`. Raise `max_length`. "
        "Received: max_length=8, lengths=[1], length=4.",
        names,
    )
    assert message == (
        "Input length 10 exceeds `--max-length=8`. Raise `--max-length`. "
        "Received: --max-length=8, lengths=[1], --length=4."
    )


def test_plain_message_unwraps_keras_call_errors():
    wrapped = ValueError(
        "Exception encountered when calling LearnedPE.call().\n\n"
        "\x1b[1mLearnedPE got positions outside [0, max_length=3).\x1b[0m"
        "\n\nArguments received by LearnedPE.call():\n  • inputs=..."
    )
    assert cli.plain_message(wrapped) == (
        "LearnedPE got positions outside [0, max_length=3)."
    )
    assert cli.plain_message(ValueError("plain")) == "plain"


def test_oversized_sentencepiece_vocabulary_is_a_clear_error(
    tmp_path, corpus, capfd
):
    argv = ["vocab", "train", "--kind", "sentencepiece", "--size", "5000"]
    code = cli.main(argv + [str(corpus), "-o", str(tmp_path / "sp")])
    assert code == 2
    err = capfd.readouterr().err
    assert "tf-input: error: --size 5000 is more pieces than" in err
    assert "Lower --size" in err
    assert "Traceback" not in err and "RuntimeError" not in err


def test_training_output_is_quiet_and_explained(tmp_path, corpus, capfd):
    argv = ["vocab", "train", "--kind", "sentencepiece", "--size", "30"]
    assert cli.main(argv + [str(corpus), "-o", str(tmp_path / "sp")]) == 0
    err = capfd.readouterr().err
    # sentencepiece logged ~80 lines of its settings at level 0.
    assert "trainer_spec" not in err and "normalizer_spec" not in err
    assert len(err.splitlines()) < 10, err
    argv = ["vocab", "train", "--kind", "wordpiece", "--size", "80"]
    assert cli.main(argv + [str(corpus), "-o", str(tmp_path / "wp")]) == 0
    err = capfd.readouterr().err
    assert "Training WordPiece in two passes" in err


def test_tensorflow_start_up_lines_are_not_printed(tmp_path):
    out = tmp_path / "pe.png"
    argv = ["-m", "tf_input.cli", "plot", "pe", "--length", "4"]
    argv += ["--dim", "4", "-o", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert result.stderr == ""
    assert result.stdout.startswith("Wrote the sinusoidal encoding")


def test_quiet_filter_keeps_what_is_not_known_noise():
    from tf_input import _quiet

    noise = (
        "WARNING: All log messages before absl::InitializeLog() is called "
        "are written to STDERR\n"
        "I0000 00:00:1796120001.056963    5358 port.cc:153] oneDNN custom "
        "operations are on.\n"
        "I0000 00:00:1796120001.061374    5358 cudart_stub.cc:31] Could not "
        "find cuda drivers on your machine, GPU will not be used.\n"
        "I0000 00:00:1796120012.654155    5417 cpu_feature_guard.cc:227] This "
        "TensorFlow binary is optimized\n"
        "To enable the following instructions: AVX2 FMA, in other operations,"
        " rebuild TensorFlow with the appropriate compiler flags.\n"
    )
    cuinit = (
        "E0000 00:00:1796120018.163803    5417 cuda_platform.cc:52] failed "
        "call to cuInit: INTERNAL: CUDA error: UNKNOWN ERROR (303)\n"
    )
    other = "E0000 00:00:17.0    1 other.cc:1] something real\nTraceback\n"
    assert _quiet.filter_lines(noise + cuinit + other) == other
    # Without "no CUDA drivers", a failing cuInit is news: it is kept.
    assert _quiet.filter_lines(cuinit) == cuinit


@pytest.mark.parametrize(
    "argv0, want", [("/usr/bin/tf-input", "2"), ("script.py", "unset")]
)
def test_command_line_quiets_tensorflow_s_runtime_logs(argv0, want):
    # TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when it loads: in the
    # tf-input command it defaults to 2 (no XLA info lines, no "Ignoring
    # Assert operator" warnings); a library import leaves it alone.
    code = (
        f"import os, sys; sys.argv = [{argv0!r}]; import tf_input; "
        "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL', 'unset'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert result.stdout.strip() == want
    assert result.stderr == ""


def test_tokenize_help_lists_every_kind_of_file(capsys):
    with pytest.raises(SystemExit):
        cli.main(["tokenize", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for kind in (
        "tokenizer.json",
        "*.tiktoken",
        "tokenizer.model of `base64 rank` lines",
        "vocab.json",
        "merges.txt",
        "vocab.txt",
        "*.model (SentencePiece)",
        "folder holding exactly one",
        "--pattern",
        "--special-tokens",
    ):
        assert kind in shown


def _small_rank_file(path):
    """The first 300 ranks of cl100k: every byte and some merges."""
    lines = data_path("llm", "cl100k", "cl100k_base.tiktoken").read_bytes()
    path.write_bytes(b"\n".join(lines.split(b"\n")[:300]) + b"\n")
    return path


@requires_shared_data
def test_tokenize_a_rank_file_with_pattern_and_special_tokens(tmp_path, capsys):
    rank = _small_rank_file(tmp_path / "small.tiktoken")
    argv = ["tokenize", "--vocab", str(rank), "--pattern", "cl100k"]
    special = ["--special-tokens", "<|endoftext|>=400"]
    assert cli.main([*argv, *special, "the<|endoftext|>"]) == 0
    shown = capsys.readouterr().out
    assert "     400  '<|endoftext|>'" in shown
    # Without it, the special token is text: no id 400.
    assert cli.main([*argv, "the<|endoftext|>"]) == 0
    assert "400" not in capsys.readouterr().out
    # A rank file needs --pattern, said in the command's words.
    assert cli.main(["tokenize", "--vocab", str(rank), "x"]) == 2
    assert "pass `--pattern=`" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:
        cli.main([*argv, "--special-tokens", "<|x|>", "x"])
    assert exit.value.code == 2
    assert "must be TOKEN=ID" in capsys.readouterr().err


@requires_shared_data
def test_tokenize_a_folder_of_several_tokenizers_is_an_error(capsys):
    folder = data_path("llm", "cl100k")
    assert cli.main(["tokenize", "--vocab", str(folder), "x"]) == 2
    err = capsys.readouterr().err
    assert "several tokenizer files" in err
    assert "tokenizer.json" in err and "cl100k_base.tiktoken" in err
    # --pattern is for rank files only, said with the flag's name.
    path = str(folder / "tokenizer.json")
    assert cli.main(["tokenize", "--vocab", path, "--pattern", "gpt2", "x"])
    assert "`--pattern` and `--special-tokens` are for" in (
        capsys.readouterr().err
    )
