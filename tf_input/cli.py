"""The `tf-input` command line.

tf-input vocab train --kind wordpiece --size 8000 corpus.txt -o vocab/
tf-input tokenize --vocab vocab/vocab.txt "I love deep learning."
tf-input plot pe|rope|lengths ... -o out.png
tf-input trace --vocab vocab/vocab.txt "I love deep learning."
tf-input demo [--quick]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

from tf_input.cli_plot import add_plot_parser
from tf_input.demo import add_arguments as add_demo_arguments

# Background colours for tokens in a terminal, cycled.
_COLOURS = (
    "\x1b[48;5;153m",
    "\x1b[48;5;223m",
    "\x1b[48;5;194m",
    "\x1b[48;5;225m",
)
_RESET = "\x1b[0m"


def _show_tokens(tokenizer, text, colour):
    ids = tokenizer.tokenize(text).numpy().tolist()
    pieces = [tokenizer.id_to_token(i) for i in ids]
    if colour:
        line = "".join(
            f"{_COLOURS[i % len(_COLOURS)]}\x1b[30m{p}{_RESET}"
            for i, p in enumerate(pieces)
        )
        print(line)
    for piece, id_ in zip(pieces, ids):
        print(f"{id_:>8}  {piece!r}")
    print(f"{len(ids)} tokens")


def _cmd_tokenize(args):
    from tf_input.tokenizers.loading import load_for_command_line

    tokenizer = load_for_command_line(args.vocab, args.merges, args.cased)
    colour = sys.stdout.isatty() and not args.no_colour
    for text in args.text:
        _show_tokens(tokenizer, text, colour)


def _cmd_vocab_train(args):
    from tf_input.tokenizers import training

    train = {
        "wordpiece": training.train_wordpiece,
        "bpe": training.train_bpe,
        "sentencepiece": training.train_sentencepiece,
    }[args.kind]
    files = [pathlib.Path(f) for f in args.files]
    tokenizer = train(files, args.size, output_dir=args.output)
    written = sorted(p.name for p in pathlib.Path(args.output).iterdir())
    print(
        f"Trained a {args.kind} vocabulary of {tokenizer.vocabulary_size()} "
        f"tokens; wrote {', '.join(written)} to {args.output}"
    )


def _cmd_trace(args):
    from tf_input.block import InputBlock
    from tf_input.tokenizers.loading import load_for_command_line
    from tf_input.trace import trace

    tokenizer = load_for_command_line(args.vocab, args.merges, args.cased)
    block = InputBlock(
        tokenizer.vocabulary_size(),
        args.dim,
        position=args.position,
        max_length=args.max_length,
    )
    for text in args.text:
        trace(text, tokenizer, block, num_values=args.values)


def _cmd_demo(args):
    from tf_input import demo

    demo.run(quick=args.quick, output_dir=args.output)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="tf-input",
        description="The input side of a Transformer, in TensorFlow.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    tokenize = commands.add_parser(
        "tokenize", help="show the tokens and ids of some text"
    )
    tokenize.add_argument(
        "--vocab",
        required=True,
        help="vocab.txt (WordPiece), vocab.json (BPE), *.model "
        "(SentencePiece), or a folder holding one",
    )
    tokenize.add_argument("--merges", help="merges.txt for BPE")
    tokenize.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
    tokenize.add_argument(
        "--no-colour", action="store_true", help="plain output"
    )
    tokenize.add_argument("text", nargs="+")
    tokenize.set_defaults(run=_cmd_tokenize)

    vocab = commands.add_parser("vocab", help="vocabulary tools")
    vocab_commands = vocab.add_subparsers(dest="vocab_command", required=True)
    train = vocab_commands.add_parser(
        "train", help="train a vocabulary from text files"
    )
    train.add_argument(
        "--kind", required=True, choices=("wordpiece", "bpe", "sentencepiece")
    )
    train.add_argument("--size", required=True, type=int)
    train.add_argument("-o", "--output", required=True, help="output folder")
    train.add_argument(
        "files", nargs="+", help="text files, one example a line"
    )
    train.set_defaults(run=_cmd_vocab_train)

    add_plot_parser(commands)

    trace = commands.add_parser(
        "trace",
        help="print the journey of a text: tokens, ids, embeddings, "
        "positions, with shapes",
    )
    trace.add_argument(
        "--vocab", required=True, help="as for `tf-input tokenize`"
    )
    trace.add_argument("--merges", help="merges.txt for BPE")
    trace.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
    trace.add_argument(
        "--dim", type=int, default=8, help="embedding size (default 8)"
    )
    trace.add_argument(
        "--position",
        default="sinusoidal",
        choices=("sinusoidal", "learned", "rope", "none"),
    )
    trace.add_argument(
        "--max-length",
        type=int,
        default=512,
        help="rows of the learned position table (default 512)",
    )
    trace.add_argument(
        "--values", type=int, default=6, help="values shown per step"
    )
    trace.add_argument("text", nargs="+")
    trace.set_defaults(run=_cmd_trace)

    demo = commands.add_parser(
        "demo", help="train a tiny Transformer with each position scheme"
    )
    add_demo_arguments(demo)
    demo.set_defaults(run=_cmd_demo)
    return parser


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (FileNotFoundError, ImportError, ValueError) as error:
        print(f"tf-input: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
