"""The `tf-input` command line.

tf-input vocab train --kind wordpiece --size 8000 corpus.txt -o vocab/
tf-input tokenize --vocab vocab/vocab.txt "I love deep learning."
tf-input plot pe|rope|lengths ... -o out.png
tf-input trace --vocab vocab/vocab.txt "I love deep learning."
tf-input demo [--quick]

`python -m tf_input.cli` runs the same command. The commands live in
`commands` (tokenize, vocab, trace, demo) and `plot`; `messages` puts the
library's errors in the command's words.
"""

from __future__ import annotations

import argparse
import sys

from tf_input.cli.commands import add_demo_parser
from tf_input.cli.commands import add_tokenize_parser
from tf_input.cli.commands import add_trace_parser
from tf_input.cli.commands import add_vocab_parser
from tf_input.cli.messages import HelpFormatter
from tf_input.cli.messages import flag_names
from tf_input.cli.messages import in_flag_names
from tf_input.cli.messages import plain_message
from tf_input.cli.messages import set_formatter
from tf_input.cli.plot import add_plot_parser

__all__ = [
    "HelpFormatter",
    "add_plot_parser",
    "build_parser",
    "flag_names",
    "in_flag_names",
    "main",
    "plain_message",
]


def build_parser() -> argparse.ArgumentParser:
    """The `tf-input` parser, with every command."""
    from tf_input.version import __version__

    parser = argparse.ArgumentParser(
        prog="tf-input",
        description="The input side of a Transformer, in TensorFlow.",
        epilog="`tf-input COMMAND --help` describes each command.",
    )
    parser.add_argument(
        "--version", action="version", version=f"tf-input {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND"
    )
    add_tokenize_parser(commands)
    add_vocab_parser(commands)
    add_plot_parser(commands)
    add_trace_parser(commands)
    add_demo_parser(commands)
    set_formatter(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs `tf-input` with `argv` (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0, or 2 after printing a library error (a bad
        value, a missing file or package) in the command's words. The
        command's arguments have their types from argparse, so a
        `TypeError` is a fault of the program and keeps its traceback.
    """
    # TensorFlow's log level is set when `import tf_input` loads it (see
    # tf_input._quiet), before this runs.
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (FileNotFoundError, ImportError, ValueError) as error:
        message = in_flag_names(plain_message(error), flag_names(parser, args))
        print(f"tf-input: error: {message}", file=sys.stderr)
        return 2
    return 0
