"""`tf-input plot`: argument parsing and the three handlers."""

import argparse

import pytest

from tests.pictures import bar_heights
from tests.pictures import pipeline_efficiencies
from tests.shared_data import data_path
from tests.shared_data import read_lines as read_shared_lines
from tests.shared_data import requires_shared_data
from tf_input import viz
from tf_input.cli.plot import add_plot_parser
from tf_input.cli.plot import read_lines

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + (
    "the cat sat on a mat dog ran".split()
)


def parse(argv):
    parser = argparse.ArgumentParser(prog="tf-input")
    commands = parser.add_subparsers(dest="command", required=True)
    add_plot_parser(commands)
    return parser.parse_args(argv)


def run(argv):
    args = parse(argv)
    return args.run(args)


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 10_000


@pytest.fixture()
def vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return path


def test_plot_pe(tmp_path, capsys):
    out = tmp_path / "pe.png"
    figure = run(
        ["plot", "pe", "--length", "40", "--dim", "16", "-o", str(out)]
    )
    assert figure.axes[0].images[0].get_array().shape == (40, 16)
    assert_png(out)
    assert str(out) in capsys.readouterr().out


def test_plot_rope_with_chosen_scalings(tmp_path):
    out = tmp_path / "rope.png"
    argv = ["plot", "rope", "--dim", "16", "--max-distance", "200"]
    argv += ["--scaling", "none,llama3", "--original-length", "50"]
    figure = run(argv + ["-o", str(out)])
    assert figure.axes[0].get_xscale() == "symlog"  # the default
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels == [
        "_none (raw)",
        "none",
        "_llama3 (factor 4) (raw)",
        "llama3 (factor 4)",
        "original context (50)",
    ]
    assert figure.axes[0].get_lines()[0].get_ydata()[0] == pytest.approx(1.0)
    assert_png(out)
    linear = run(argv + ["--no-log", "--no-smooth", "-o", str(out)])
    assert linear.axes[0].get_xscale() == "linear"
    assert [line.get_label() for line in linear.axes[0].get_lines()] == [
        "none",
        "llama3 (factor 4)",
        "original context (50)",
    ]


def test_plot_rope_defaults_to_all_scalings():
    args = parse(["plot", "rope", "-o", "x.png"])
    assert args.scaling == list(viz.ROPE_SCALINGS)
    assert (args.dim, args.max_distance, args.factor) == (128, 4096, 4.0)
    assert args.log is True and args.smooth is True


@pytest.mark.slow  # the command itself: test_plot_lengths_log_axis
def test_plot_lengths_tokenizes_files(tmp_path, vocab, capsys):
    import tf_input

    first = tmp_path / "a.txt"
    first.write_text("the cat sat\n\n  \nthe dog\r\n", encoding="utf-8")
    second = tmp_path / "b.txt"
    second.write_text("a mat on the mat ran", encoding="utf-8")
    out = tmp_path / "lengths.png"
    argv = ["plot", "lengths", str(first), str(second), "--vocab", str(vocab)]
    argv += ["--batch-size", "2", "--max-length", "6", "-o", str(out)]
    figure = run(argv)
    # Non-empty lines: 3, 2 and 6 tokens, plus [CLS] and [SEP], the
    # tokenizer's start and end tokens.
    lengths = [5, 4, 8]
    tokenizer = tf_input.load_tokenizer(vocab)
    want = pipeline_efficiencies(
        ["the cat sat", "the dog", "a mat on the mat ran"],
        tokenizer,
        batch_size=2,
        max_length=6,
    )
    assert bar_heights(figure) == pytest.approx(want, abs=1e-12)
    from_lengths = viz.padding_efficiencies(lengths, batch_size=2, max_length=6)
    # A stream puts [SEP] alone between texts: one token fewer each.
    joined = [n - 1 for n in lengths]
    from_lengths["stream"] = viz.padding_efficiencies(
        joined, batch_size=2, max_length=6
    )["stream"]
    assert from_lengths == pytest.approx(want, abs=1e-12)
    counts = [bar.get_height() for bar in figure.axes[0].patches]
    assert sum(counts) == 3
    assert_png(out)
    shown = capsys.readouterr().out
    assert "3 examples, 17 tokens" in shown
    assert "1 over max_length=6" in shown
    assert "2 empty examples skipped" in shown
    assert f"longest     {want['longest']:.1%}" in shown
    # Without special tokens: 2 tokens fewer each.
    bare = run(argv + ["--no-special-tokens"])
    assert sum(p.get_height() for p in bare.axes[0].patches) == 3
    assert bare.axes[0].get_title().startswith("3 examples (2 empty skipped)")
    assert "mean 3.7, max 6" in bare.axes[0].get_title()  # 3, 2, 6 tokens


@requires_shared_data
@pytest.mark.slow  # test_viz checks the same figures on WikiText
def test_plot_lengths_equals_the_pipeline_on_tinyshakespeare(tmp_path):
    """Qwen 3 adds no special token; the bars are make_dataset's own."""
    import tf_input

    path = data_path("llm", "qwen3", "tokenizer.json")
    lines = read_shared_lines(data_path("corpora", "tinyshakespeare.txt"))
    lines = [line for line in lines if line.strip()][:300]
    corpus = tmp_path / "lines.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["plot", "lengths", str(corpus), "--vocab", str(path)]
    argv += ["--batch-size", "16", "--max-length", "64"]
    figure = run(argv + ["-o", str(tmp_path / "lengths.png")])
    tokenizer = tf_input.load_tokenizer(path)
    want = pipeline_efficiencies(lines, tokenizer, batch_size=16, max_length=64)
    assert bar_heights(figure) == pytest.approx(want, abs=0.005)
    # The histogram: every line, its tokens and no special token.
    lengths = [len(ids) for ids in tokenizer(lines).to_list()]
    histogram = [bar.get_height() for bar in figure.axes[0].patches]
    assert sum(histogram) == len(lines)
    title = figure.axes[0].get_title()
    assert f"mean {sum(lengths) / len(lengths):.1f}, max {max(lengths)}" in (
        title
    )


def test_read_lines_keeps_blank_lines_and_drops_final_newline(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"one\r\n\ntwo \xff\n")
    assert read_lines([path]) == ["one", "", "two \ufffd"]


def test_plot_lengths_errors(tmp_path, vocab):
    out = str(tmp_path / "x.png")
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        run(["plot", "lengths", missing, "--vocab", str(vocab), "-o", out])
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="at least one example with a token"):
        run(["plot", "lengths", str(blank), "--vocab", str(vocab), "-o", out])


@pytest.mark.parametrize(
    "argv",
    [
        ["plot", "pe", "--dim", "0", "-o", "x.png"],
        ["plot", "pe", "--length", "ten", "-o", "x.png"],
        ["plot", "pe"],  # no -o
        ["plot", "rope", "--scaling", "none,ntk", "-o", "x.png"],
        ["plot", "rope", "--scaling", ",", "-o", "x.png"],
        ["plot", "lengths", "a.txt", "--max-length", "-3", "-o", "x.png"],
        ["plot", "lengths", "a.txt", "-o", "x.png"],  # no --vocab
        # The count of special tokens is the tokenizer's, not a flag's.
        ["plot", "lengths", "a.txt", "--vocab", "v", "--special-tokens", "2"],
        ["plot", "pe", "-o", "x.bmp2"],  # no such image format
        ["plot"],
    ],
)
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_odd_dim_is_a_usage_error(capsys):
    for command in ("pe", "rope"):
        with pytest.raises(SystemExit):
            parse(["plot", command, "--dim", "7", "-o", "x.png"])
        assert "--dim: must be even" in capsys.readouterr().err


def test_bad_factor_is_a_clear_value_error(tmp_path):
    argv = ["plot", "rope", "--dim", "8", "--factor", "-2"]
    with pytest.raises(ValueError, match=r"`factor` must be .*factor=-2.0"):
        run(argv + ["-o", str(tmp_path / "r.png")])


@pytest.mark.parametrize(
    "name, signature",
    [
        ("pe.jpg", b"\xff\xd8\xff"),
        ("pe.JPEG", b"\xff\xd8\xff"),
        ("pe.svg", b"<?xml"),
        ("pe.pdf", b"%PDF"),
        ("pe", PNG_SIGNATURE),
    ],
)
def test_output_format_follows_the_suffix(tmp_path, name, signature):
    out = tmp_path / name
    run(["plot", "pe", "--length", "8", "--dim", "4", "-o", str(out)])
    assert out.read_bytes().startswith(signature)


def test_unknown_image_suffix_names_the_formats(capsys):
    with pytest.raises(SystemExit):
        parse(["plot", "pe", "-o", "x.bmp2"])
    err = capsys.readouterr().err
    assert "argument -o/--output: must end in an image format" in err
    assert ".png" in err and ".jpg" in err and "Received: 'x.bmp2'" in err


def test_plot_lengths_log_axis(tmp_path, vocab):
    first = tmp_path / "a.txt"
    first.write_text("the cat sat\nthe dog\n", encoding="utf-8")
    argv = ["plot", "lengths", str(first), "--vocab", str(vocab), "--log"]
    figure = run(argv + ["-o", str(tmp_path / "l.png")])
    assert figure.axes[0].get_yscale() == "log"
