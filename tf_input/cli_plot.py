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

import numpy as np

_CHUNK_LINES = 4096  # lines tokenized per call in `plot lengths`


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer, got {text!r}"
        )
    return value


def _positive_even_int(text):
    value = _positive_int(text)
    if value % 2:
        raise argparse.ArgumentTypeError(
            f"must be even (sine/cosine or rotated pairs), got {text!r}"
        )
    return value


def _image_path(text):
    from tf_input import viz

    try:
        viz.image_format(text)
    except ValueError as error:
        message = str(error).replace("`path` must", "must")
        raise argparse.ArgumentTypeError(
            message.replace("Received: path=", "Received: ")
        ) from None
    return text


def _scalings(text):
    from tf_input import viz

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in viz.ROPE_SCALINGS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            "must be a comma-separated list of "
            f"{', '.join(viz.ROPE_SCALINGS)}; got {text!r}"
        )
    return names


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


def read_lines(files):
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


def token_lengths(tokenizer, lines, special_tokens=0):
    """Tokens per non-empty line, plus `special_tokens` for each.

    Lines without any token (blank or whitespace-only) are left out, as
    `tf_input.data.make_dataset` skips them.

    Returns:
        int64 array, one length per non-empty line.
    """
    counts = [
        tokenizer.tokenize(lines[start : start + _CHUNK_LINES])
        .row_lengths()
        .numpy()
        for start in range(0, len(lines), _CHUNK_LINES)
    ]
    counts = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    return counts[counts > 0].astype(np.int64) + special_tokens


def _cmd_plot_lengths(args):
    from tf_input import viz
    from tf_input.tokenizers.loading import load_for_command_line

    tokenizer = load_for_command_line(args.vocab, args.merges, args.cased)
    lengths = token_lengths(
        tokenizer, read_lines(args.files), args.special_tokens
    )
    if lengths.size == 0:
        raise ValueError(
            "No line of the text files has any token. "
            f"Received: files={args.files!r}."
        )
    figure = viz.plot_lengths(
        lengths,
        batch_size=args.batch_size,
        max_length=args.max_length,
        num_buckets=args.num_buckets,
        bins=args.bins,
        log=args.log,
        path=args.output,
    )
    efficiencies = viz.padding_efficiencies(
        lengths,
        batch_size=args.batch_size,
        max_length=args.max_length,
        num_buckets=args.num_buckets,
    )
    print(
        f"{lengths.size:,} examples, {int(lengths.sum()):,} tokens "
        f"(mean {lengths.mean():.1f}, max {int(lengths.max())}; "
        f"{int(np.sum(lengths > args.max_length)):,} over max_length="
        f"{args.max_length})"
    )
    print("padding efficiency (NumPy model, see tf_input.viz):")
    for mode, value in efficiencies.items():
        note = (
            "  (ideal bound: all tokens end to end)" if mode == "pack" else ""
        )
        print(f"  {mode:<10}  {value:.1%}{note}")
    print(f"Wrote {args.output}")
    return figure


def add_plot_parser(subparsers):
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

    def output(command):
        command.add_argument(
            "-o",
            "--output",
            required=True,
            type=_image_path,
            help="image file to write; the suffix sets the format "
            "(.png, .jpg, .svg, .pdf, ...)",
        )

    pe = commands.add_parser(
        "pe",
        help="sinusoidal position encoding heatmap",
        description="The sinusoidal position encoding as a heatmap (sin and "
        "cos columns marked) next to a few of its columns against position.",
    )
    pe.add_argument(
        "--length",
        type=_positive_int,
        default=128,
        help="number of positions (rows)",
    )
    pe.add_argument(
        "--dim",
        type=_positive_even_int,
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
    output(pe)
    pe.set_defaults(run=_cmd_plot_pe, flag_names={"embedding_dim": "--dim"})

    rope = commands.add_parser(
        "rope",
        help="RoPE query-key score vs relative distance",
        description="RoPE's query-key score against relative distance, one "
        "curve per scaling, and how much each scaling slows each rotary "
        "pair.",
    )
    rope.add_argument(
        "--dim",
        type=_positive_even_int,
        default=128,
        help="head_dim, the rotated dimension (even)",
    )
    rope.add_argument(
        "--max-distance",
        type=_positive_int,
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
        type=_positive_int,
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
    output(rope)
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

    lengths = commands.add_parser(
        "lengths",
        help="token length histogram and padding efficiency per batching",
        description="Tokenize every non-empty line of FILES and draw the "
        "histogram of their lengths and the padding efficiency of each "
        "batching mode of make_dataset.",
    )
    lengths.add_argument(
        "files", nargs="+", help="text files, one example a line"
    )
    lengths.add_argument(
        "--vocab",
        required=True,
        help="vocab.txt (WordPiece), vocab.json (BPE), *.model "
        "(SentencePiece), or a folder holding one",
    )
    lengths.add_argument(
        "--merges", help="merges.txt for BPE (default: beside vocab.json)"
    )
    lengths.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
    lengths.add_argument(
        "--batch-size", type=_positive_int, default=32, help="rows per batch"
    )
    lengths.add_argument(
        "--max-length",
        type=_positive_int,
        default=512,
        help="truncation length (the packed row length for pack)",
    )
    lengths.add_argument(
        "--num-buckets",
        type=_positive_int,
        default=8,
        help="most buckets for bucket batching",
    )
    lengths.add_argument(
        "--special-tokens",
        type=int,
        default=2,
        choices=(0, 1, 2),
        help="special tokens added to each example (2: start and end, as "
        "make_dataset adds)",
    )
    lengths.add_argument(
        "--bins",
        type=_positive_int,
        default=50,
        help="most histogram bins (each bin holds whole lengths)",
    )
    lengths.add_argument(
        "--log",
        action="store_true",
        help="logarithmic count axis, to see a long thin tail",
    )
    output(lengths)
    lengths.set_defaults(run=_cmd_plot_lengths)
    return plot
