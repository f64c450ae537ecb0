"""Argument types and options shared by the `tf-input` commands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer, got {text!r}"
        )
    return value


def positive_even_int(text: str) -> int:
    value = positive_int(text)
    if value % 2:
        raise argparse.ArgumentTypeError(
            f"must be even (sine/cosine or rotated pairs), got {text!r}"
        )
    return value


def image_path(text: str) -> str:
    """`-o` of `tf-input plot`: a path whose suffix names an image format."""
    from tf_input.viz import image_format

    try:
        image_format(text)
    except ValueError as error:
        message = str(error).replace("`path` must", "must")
        raise argparse.ArgumentTypeError(
            message.replace("Received: path=", "Received: ")
        ) from None
    return text


def add_tokenizer_arguments(
    parser: argparse.ArgumentParser,
    vocab_help: str = "vocab.txt (WordPiece), vocab.json (BPE), *.model "
    "(SentencePiece), tokenizer.json, or a folder holding one",
) -> None:
    """`--vocab`, `--merges` and `--cased`: the tokenizer to load."""
    parser.add_argument("--vocab", required=True, help=vocab_help)
    parser.add_argument(
        "--merges", help="merges.txt for BPE (default: beside vocab.json)"
    )
    parser.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )


def load_tokenizer(args: argparse.Namespace):
    """The tokenizer that `add_tokenizer_arguments`' options name."""
    from tf_input.tokenizers.loading import load_for_command_line

    return load_for_command_line(args.vocab, args.merges, args.cased)
