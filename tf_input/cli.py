"""The `tf-input` command line.

tf-input vocab train --kind wordpiece --size 8000 corpus.txt -o vocab/
tf-input tokenize --vocab vocab/vocab.txt "I love deep learning."
tf-input plot pe|rope|lengths ... -o out.png
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

from tf_input.cli_plot import add_plot_parser

# Background colours for tokens in a terminal, cycled.
_COLOURS = (
    "\x1b[48;5;153m",
    "\x1b[48;5;223m",
    "\x1b[48;5;194m",
    "\x1b[48;5;225m",
)
_RESET = "\x1b[0m"


def load_tokenizer(vocab, merges=None, lowercase=True):
    """A tokenizer from its files, chosen by the file name.

    `*.model` -> SentencePiece; `*.json` (with `merges`, or a `merges.txt`
    beside it) -> byte-level BPE; any other file (`vocab.txt`) -> WordPiece.
    A folder is searched for `spm.model`, `vocab.json` or `vocab.txt`.
    """
    from tf_input import tokenizers

    path = pathlib.Path(vocab)
    if path.is_dir():
        for name in ("spm.model", "vocab.json", "vocab.txt"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise FileNotFoundError(
                "No spm.model, vocab.json or vocab.txt in folder "
                f"{str(vocab)!r}."
            )
    if not path.is_file():
        raise FileNotFoundError(f"Vocabulary file not found: {str(path)!r}.")
    if path.suffix == ".model":
        return tokenizers.SentencePieceTokenizer(str(path))
    if path.suffix == ".json":
        merges = (
            pathlib.Path(merges) if merges else path.with_name("merges.txt")
        )
        return tokenizers.BytePairTokenizer.from_files(str(path), str(merges))
    return tokenizers.WordPieceTokenizer.from_vocab_file(
        str(path), lowercase=lowercase
    )


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
    tokenizer = load_tokenizer(args.vocab, args.merges, not args.cased)
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
