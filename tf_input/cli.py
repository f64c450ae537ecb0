"""The `tf-input` command line.

tf-input vocab train --kind wordpiece --size 8000 corpus.txt -o vocab/
tf-input tokenize --vocab vocab/vocab.txt "I love deep learning."
tf-input plot pe|rope|lengths ... -o out.png
tf-input trace --vocab vocab/vocab.txt "I love deep learning."
tf-input demo [--quick]
"""

from __future__ import annotations

import argparse
import pathlib
import re
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
            # minloglevel=1: warnings only, not the ~80 lines of
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

    demo.run(quick=args.quick, output_dir=args.output, seed=args.seed)


class HelpFormatter(argparse.HelpFormatter):
    """Adds "(default: ...)" to every option that has a real default."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or not action.option_strings
            or action.required
            or default is None
            or default is False
            or default is argparse.SUPPRESS
        ):
            return text
        if isinstance(default, (list, tuple)):
            default = ",".join(str(x) for x in default)
        return f"{text} (default: {default})" if text else f"default: {default}"


def _set_formatter(parser):
    """`HelpFormatter` for `parser` and every sub-command under it."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _set_formatter(sub)


def build_parser():
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

    tokenize = commands.add_parser(
        "tokenize",
        help="show the tokens and ids of some text",
        description="Tokenize each TEXT and print its tokens with their ids.",
    )
    tokenize.add_argument(
        "--vocab",
        required=True,
        help="vocab.txt (WordPiece), vocab.json (BPE), *.model "
        "(SentencePiece), or a folder holding one",
    )
    tokenize.add_argument(
        "--merges", help="merges.txt for BPE (default: beside vocab.json)"
    )
    tokenize.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
    tokenize.add_argument(
        "--no-colour", action="store_true", help="plain output, no colours"
    )
    tokenize.add_argument("text", nargs="+", help="the texts to tokenize")
    tokenize.set_defaults(run=_cmd_tokenize)

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

    add_plot_parser(commands)

    trace = commands.add_parser(
        "trace",
        help="print the journey of a text: tokens, ids, embeddings, "
        "positions, with shapes",
        description="Print each step of TEXT's way through a tokenizer and "
        "a fresh (untrained) InputBlock, with shapes, dtypes and values.",
    )
    trace.add_argument(
        "--vocab", required=True, help="as for `tf-input tokenize`"
    )
    trace.add_argument(
        "--merges", help="merges.txt for BPE (default: beside vocab.json)"
    )
    trace.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
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

    demo = commands.add_parser(
        "demo",
        help="train a tiny Transformer with each position scheme",
        description="The demo: the tutorials' numbers, why position "
        "matters, and a tiny Transformer trained on two-digit arithmetic "
        "with each position scheme.",
    )
    add_demo_arguments(demo)
    demo.set_defaults(run=_cmd_demo)
    _set_formatter(parser)
    return parser


def flag_names(parser, args):
    """Python argument names -> the flags that set them, for `args`' command.

    Each option's `dest` (`max_length` -> `--max-length`), plus the names
    the library uses for a differently named flag (`head_dim` -> `--dim`),
    which each command lists in its `flag_names` default.
    """
    names = {}
    for command in _command_parsers(parser, args):
        for action in command._actions:
            longest = max(action.option_strings, key=len, default=None)
            if longest and longest.startswith("--"):
                names[action.dest] = longest
    names.update(getattr(args, "flag_names", None) or {})
    return names


def _command_parsers(parser, args):
    """The chain of parsers that parsed `args`: tf-input, plot, plot pe."""
    chain = [parser]
    while True:
        subparsers = [
            action
            for action in chain[-1]._actions
            if isinstance(action, argparse._SubParsersAction)
        ]
        if not subparsers:
            return chain
        chosen = getattr(args, subparsers[0].dest, None)
        if chosen not in subparsers[0].choices:
            return chain
        chain.append(subparsers[0].choices[chosen])


def in_flag_names(message, names):
    """`message` with the Python argument names it quotes replaced by flags.

    "Raise `max_length`" -> "Raise `--max-length`"; "Received:
    max_length=8" -> "Received: --max-length=8". Only quoted names and
    `name=` are replaced, so ordinary words stay as they are.
    """
    for name in sorted(names, key=len, reverse=True):
        flag = names[name]
        message = re.sub(rf"`{re.escape(name)}([=`])", rf"`{flag}\1", message)
        message = re.sub(
            rf"(?<![\w`.-]){re.escape(name)}=", f"{flag}=", message
        )
    return message


def plain_message(error):
    """The message of `error`, without Keras's call wrapper and colours.

    Keras wraps an error raised in a layer's `call` in "Exception
    encountered when calling LearnedPE.call(). <bold message> Arguments
    received by ..."; the CLI shows the message alone.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    wrapped = re.match(
        r"Exception encountered when calling [^\n]*\n\s*\n(.*?)"
        r"(\n\s*\nArguments received by .*)?$",
        text,
        flags=re.DOTALL,
    )
    return wrapped.group(1).strip() if wrapped else text


def main(argv=None):
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


if __name__ == "__main__":
    sys.exit(main())
