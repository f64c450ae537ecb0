"""`tf-input tokenize`, `vocab train`, `trace` and `demo`.

Each `add_*_parser(commands)` adds one command to the `tf-input` parser;
the command stores its handler as `run`, a function of the parsed
arguments, and, in `flag_names`, the flags of library arguments that are
named otherwise (`embedding_dim` -> `--dim`), for error messages.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

from tf_input.cli.arguments import add_tokenizer_arguments
from tf_input.cli.arguments import load_tokenizer

# Background colours for tokens in a terminal, cycled.
_COLOURS = (
    "\x1b[48;5;153m",
    "\x1b[48;5;223m",
    "\x1b[48;5;194m",
    "\x1b[48;5;225m",
)
_RESET = "\x1b[0m"


# === tokenize ===
def add_tokenize_parser(commands) -> argparse.ArgumentParser:
    tokenize = commands.add_parser(
        "tokenize",
        help="show the tokens and ids of some text",
        description="Tokenize each TEXT and print its tokens with their ids.",
    )
    add_tokenizer_arguments(tokenize)
    tokenize.add_argument(
        "--no-colour", action="store_true", help="plain output, no colours"
    )
    tokenize.add_argument("text", nargs="+", help="the texts to tokenize")
    tokenize.set_defaults(run=_cmd_tokenize)
    return tokenize


def _cmd_tokenize(args):
    tokenizer = load_tokenizer(args)
    colour = sys.stdout.isatty() and not args.no_colour
    for text in args.text:
        _show_tokens(tokenizer, text, colour)


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


# === vocab train ===
def add_vocab_parser(commands) -> argparse.ArgumentParser:
    vocab = commands.add_parser("vocab", help="vocabulary tools")
    vocab_commands = vocab.add_subparsers(
        dest="vocab_command", required=True, metavar="COMMAND"
    )
    train = vocab_commands.add_parser(
        "train",
        help="train a vocabulary from text files",
        description="Train a WordPiece, byte-level BPE or SentencePiece "
        "vocabulary from text files (one example a line) and write its "
        "files to the --output folder.",
    )
    train.add_argument(
        "--kind",
        required=True,
        choices=("wordpiece", "bpe", "sentencepiece"),
        help="the kind of vocabulary",
    )
    train.add_argument(
        "--size",
        required=True,
        type=int,
        help="vocabulary size, special tokens included (e.g. 8000)",
    )
    train.add_argument(
        "-o",
        "--output",
        required=True,
        help="output folder (vocab.txt; vocab.json + merges.txt; spm.model)",
    )
    train.add_argument(
        "files", nargs="+", help="text files, one example a line"
    )
    train.set_defaults(
        run=_cmd_vocab_train, flag_names={"vocabulary_size": "--size"}
    )
    return vocab


def _cmd_vocab_train(args):
    from tf_input.tokenizers import training

    files = [pathlib.Path(f) for f in args.files]
    if args.kind == "wordpiece":
        # `train_wordpiece` runs the Hugging Face trainer twice: the first
        # pass finds the "##" continuation characters, the second trains
        # with them in a fixed order, so that the same text always gives
        # the same vocabulary. Each pass draws its own progress bars.
        print(
            "Training WordPiece in two passes (the first finds the ## "
            "continuation characters, the second fixes their order so the "
            "result is reproducible): two sets of progress bars.",
            file=sys.stderr,
        )
        tokenizer = training.train_wordpiece(
            files, args.size, output_dir=args.output
        )
    elif args.kind == "bpe":
        tokenizer = training.train_bpe(files, args.size, output_dir=args.output)
    else:
        try:
            # minloglevel=1: warnings only, not the long list of
            # `trainer_spec` settings the trainer logs at level 0.
            tokenizer = training.train_sentencepiece(
                files, args.size, output_dir=args.output, minloglevel=1
            )
        except RuntimeError as error:
            raise ValueError(_sentencepiece_message(error, args.size)) from None
    written = sorted(p.name for p in pathlib.Path(args.output).iterdir())
    print(
        f"Trained a {args.kind} vocabulary of {tokenizer.vocabulary_size()} "
        f"tokens; wrote {', '.join(written)} to {args.output}"
    )


def _sentencepiece_message(error, size):
    """The sentencepiece trainer's RuntimeError, in the CLI's words."""
    text = str(error)
    # e.g. "INTERNAL: src/trainer_interface.cc(744) [...] Vocabulary size
    # too high (300). Please set it to a value <= 35."
    limit = re.search(r"Vocabulary size too high \(\d+\).*<= (\d+)", text)
    if limit:
        return (
            f"--size {size} is more pieces than SentencePiece can make from "
            f"these files: at most {limit.group(1)} here. Lower --size, or "
            "train on more text."
        )
    reason = text.split("] ", 1)[-1]
    return f"SentencePiece could not train with --size {size}: {reason}"


# === trace ===
def add_trace_parser(commands) -> argparse.ArgumentParser:
    trace = commands.add_parser(
        "trace",
        help="print the journey of a text: tokens, ids, embeddings, "
        "positions, with shapes",
        description="Print each step of TEXT's way through a tokenizer and "
        "a fresh (untrained) InputBlock, with shapes, dtypes and values.",
    )
    add_tokenizer_arguments(trace, vocab_help="as for `tf-input tokenize`")
    trace.add_argument(
        "--dim", type=int, default=8, help="embedding size D of the block"
    )
    trace.add_argument(
        "--position",
        default="sinusoidal",
        choices=("sinusoidal", "learned", "rope", "none"),
        help="the position scheme of the block",
    )
    trace.add_argument(
        "--max-length",
        type=int,
        default=512,
        help="rows of the learned position table (--position learned)",
    )
    trace.add_argument(
        "--values",
        type=int,
        default=6,
        help="features shown for each [B, S, D] step",
    )
    trace.add_argument("text", nargs="+", help="the texts to trace")
    trace.set_defaults(
        run=_cmd_trace,
        flag_names={"embedding_dim": "--dim", "num_values": "--values"},
    )
    return trace


def _cmd_trace(args):
    from tf_input.block import InputBlock
    from tf_input.trace import trace

    tokenizer = load_tokenizer(args)
    block = InputBlock(
        tokenizer.vocabulary_size(),
        args.dim,
        position=args.position,
        max_length=args.max_length,
    )
    for text in args.text:
        trace(text, tokenizer, block, num_values=args.values)


# === demo ===
def add_demo_parser(commands) -> argparse.ArgumentParser:
    from tf_input.demo import add_arguments

    demo = commands.add_parser(
        "demo",
        help="train a tiny Transformer with each position scheme",
        description="The demo: the tutorials' numbers, why position "
        "matters, and a tiny Transformer trained on two-digit arithmetic "
        "with each position scheme.",
    )
    add_arguments(demo)
    demo.set_defaults(run=_cmd_demo)
    return demo


def _cmd_demo(args):
    from tf_input import demo

    demo.run(quick=args.quick, output_dir=args.output, seed=args.seed)
