"""`tf-input plot`: the `tf_input.viz` pictures from the command line.

tf-input plot pe --length 128 --dim 64 -o pe.png
tf-input plot rope --dim 128 --max-distance 8192 --scaling none,llama3 -o r.png
tf-input plot lengths corpus.txt --vocab vocab.txt --max-length 128 -o l.png

The image format follows the suffix of `-o` (`.png`, `.jpg`, `.svg`,
`.pdf`, ...); an unknown suffix is an error.

`add_plot_parser(subparsers)` adds the sub-command to the `tf-input` parser
(`tf_input.cli.build_parser`); each command stores its handler as `run`.
"""

from __future__ import annotations

import argparse
import pathlib

from tf_input.cli.arguments import add_tokenizer_arguments
from tf_input.cli.arguments import image_path
from tf_input.cli.arguments import load_tokenizer
from tf_input.cli.arguments import positive_even_int
from tf_input.cli.arguments import positive_int


def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Adds `plot pe|rope|lengths` to the `tf-input` sub-commands.

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The `plot` parser. Each of its commands sets `run=handler`, a
        function of the parsed arguments.
    """
    plot = subparsers.add_parser(
        "plot",
        help="draw position encodings, RoPE scores or length histograms "
        "(needs matplotlib)",
        description="Draw one of the tf_input.viz pictures into an image "
        "file (format from the suffix of -o).",
    )
    commands = plot.add_subparsers(
        dest="plot_command", required=True, metavar="PICTURE"
    )
    _add_pe_parser(commands)
    _add_rope_parser(commands)
    _add_lengths_parser(commands)
    return plot


def _add_output(command):
    command.add_argument(
        "-o",
        "--output",
        required=True,
        type=image_path,
        help="image file to write; the suffix sets the format "
        "(.png, .jpg, .svg, .pdf, ...)",
    )


# === plot pe ===
def _add_pe_parser(commands):
    pe = commands.add_parser(
        "pe",
        help="sinusoidal position encoding heatmap",
        description="The sinusoidal position encoding as a heatmap (sin and "
        "cos columns marked) next to a few of its columns against position.",
    )
    pe.add_argument(
        "--length",
        type=positive_int,
        default=128,
        help="number of positions (rows)",
    )
    pe.add_argument(
        "--dim",
        type=positive_even_int,
        default=64,
        help="embedding_dim D, the number of features (even)",
    )
    pe.add_argument(
        "--max-wavelength",
        type=float,
        default=10_000.0,
        help="the sinusoid base (10000 in the paper)",
    )
    pe.add_argument(
        "--layout",
        choices=("interleaved", "concat"),
        default="interleaved",
        help="interleaved: sin, cos, sin, ... (the paper); concat: all sines "
        "then all cosines (tensor2tensor)",
    )
    _add_output(pe)
    pe.set_defaults(run=_cmd_plot_pe, flag_names={"embedding_dim": "--dim"})


def _cmd_plot_pe(args):
    from tf_input import viz

    figure = viz.plot_sinusoidal_encoding(
        args.length,
        args.dim,
        max_wavelength=args.max_wavelength,
        layout=args.layout,
        path=args.output,
    )
    print(
        f"Wrote the sinusoidal encoding of {args.length} positions x "
        f"{args.dim} features to {args.output}"
    )
    return figure


# === plot rope ===
def _scalings(text):
    from tf_input.viz import ROPE_SCALINGS

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ROPE_SCALINGS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            "must be a comma-separated list of "
            f"{', '.join(ROPE_SCALINGS)}; got {text!r}"
        )
    return names


def _add_rope_parser(commands):
    rope = commands.add_parser(
        "rope",
        help="RoPE query-key score vs relative distance",
        description="RoPE's query-key score against relative distance, one "
        "curve per scaling, and how much each scaling slows each rotary "
        "pair.",
    )
    rope.add_argument(
        "--dim",
        type=positive_even_int,
        default=128,
        help="head_dim, the rotated dimension (even)",
    )
    rope.add_argument(
        "--max-distance",
        type=positive_int,
        default=4096,
        help="largest relative distance drawn",
    )
    rope.add_argument(
        "--scaling",
        type=_scalings,
        default=["none", "linear", "dynamic", "yarn", "llama3"],
        help="comma-separated scalings to draw, among "
        "none,linear,dynamic,yarn,llama3",
    )
    rope.add_argument(
        "--factor", type=float, default=4.0, help="scaling factor"
    )
    rope.add_argument(
        "--original-length",
        "--original-max-position-embeddings",
        dest="original_length",
        type=positive_int,
        default=1024,
        help="the trained context (original_max_position_embeddings)",
    )
    rope.add_argument(
        "--max-wavelength",
        type=float,
        default=10_000.0,
        help="the RoPE base (rope_theta)",
    )
    rope.add_argument(
        "--log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="logarithmic distance axis (--no-log: linear)",
    )
    rope.add_argument(
        "--smooth",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw each curve's local mean over its faint raw scores",
    )
    _add_output(rope)
    rope.set_defaults(
        run=_cmd_plot_rope,
        flag_names={
            "head_dim": "--dim",
            "original_max_position_embeddings": "--original-length",
            "scalings": "--scaling",
            "rope_type": "--scaling",
            "log_distance": "--log",
        },
    )


def _cmd_plot_rope(args):
    from tf_input import viz

    figure = viz.plot_rope_scores(
        args.dim,
        args.max_distance,
        scalings=args.scaling,
        factor=args.factor,
        original_max_position_embeddings=args.original_length,
        max_wavelength=args.max_wavelength,
        log_distance=args.log,
        smooth=args.smooth,
        path=args.output,
    )
    print(
        f"Wrote RoPE scores up to distance {args.max_distance} "
        f"({', '.join(args.scaling)}) to {args.output}"
    )
    return figure


# === plot lengths ===
def _removed_special_tokens(text):
    raise argparse.ArgumentTypeError(
        "is gone: the special tokens are the tokenizer's own (its start "
        "and end tokens, as make_dataset adds them); pass "
        f"--no-special-tokens to add none. Received: {text!r}"
    )


def _add_lengths_parser(commands):
    lengths = commands.add_parser(
        "lengths",
        help="token length histogram and padding efficiency per batching",
        description="Tokenize every line of FILES and draw the histogram of "
        "their lengths and the padding efficiency of each batching mode, "
        "measured by make_dataset and stats on those lines.",
    )
    lengths.add_argument(
        "files", nargs="+", help="text files, one example a line"
    )
    # `--special-tokens` is the removed option below: no rank files here.
    add_tokenizer_arguments(lengths, rank_files=False)
    lengths.add_argument(
        "--batch-size", type=positive_int, default=32, help="rows per batch"
    )
    lengths.add_argument(
        "--max-length",
        type=positive_int,
        default=512,
        help="truncation length (the packed row length for pack)",
    )
    lengths.add_argument(
        "--num-buckets",
        type=positive_int,
        default=8,
        help="most buckets for bucket batching",
    )
    lengths.add_argument(
        "--no-special-tokens",
        dest="add_special_tokens",
        action="store_false",
        help="add no start and end tokens to the examples (by default "
        "those of the tokenizer, as make_dataset adds them)",
    )
    lengths.add_argument(
        "--special-tokens",
        type=_removed_special_tokens,
        help=argparse.SUPPRESS,
    )
    lengths.add_argument(
        "--bins",
        type=positive_int,
        default=50,
        help="most histogram bins (each bin holds whole lengths)",
    )
    lengths.add_argument(
        "--log",
        action="store_true",
        help="logarithmic count axis, to see a long thin tail",
    )
    _add_output(lengths)
    lengths.set_defaults(run=_cmd_plot_lengths)


def read_lines(files) -> list[str]:
    """The lines of UTF-8 text files (invalid bytes replaced), in order."""
    lines = []
    for name in files:
        path = pathlib.Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"Text file not found: {str(path)!r}.")
        text = path.read_text(encoding="utf-8", errors="replace")
        for line in text.split("\n"):
            lines.append(line[:-1] if line.endswith("\r") else line)
        if text.endswith("\n"):
            lines.pop()
    return lines


def _cmd_plot_lengths(args):
    from tf_input import viz

    tokenizer = load_tokenizer(args)
    lines = read_lines(args.files)
    report = viz.length_report(
        texts=lines,
        tokenizer=tokenizer,
        batch_size=args.batch_size,
        max_length=args.max_length,
        num_buckets=args.num_buckets,
        add_special_tokens=args.add_special_tokens,
    )
    figure = viz.plot_length_report(
        report, bins=args.bins, log=args.log, path=args.output
    )
    print(report)
    print(f"Wrote {args.output}")
    return figure
