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


# Every kind of file `load_tokenizer` reads, for `--vocab`'s help.
VOCAB_HELP = (
    "a tokenizer file: tokenizer.json (Hugging Face: byte-level BPE, "
    "WordPiece, Unigram, SentencePiece-style BPE), a tiktoken rank file "
    "(*.tiktoken, or a tokenizer.model of `base64 rank` lines; with "
    "--pattern), vocab.json (byte-level BPE, with merges.txt beside it or "
    "--merges), vocab.txt (WordPiece) or *.model (SentencePiece); or a "
    "folder holding exactly one of these; or a Hugging Face model id "
    "(org/name or hf://org/name) in huggingface_hub's cache"
)


def special_token(text: str) -> tuple[str, int]:
    """`TOKEN=ID` of `--special-tokens`: split at the last `=`."""
    token, equals, number = text.rpartition("=")
    if not equals or not token or not number.isdigit():
        raise argparse.ArgumentTypeError(
            f"must be TOKEN=ID (e.g. '<|endoftext|>=100257'), got {text!r}"
        )
    return token, int(number)


def add_tokenizer_arguments(
    parser: argparse.ArgumentParser,
    vocab_help: str = VOCAB_HELP,
    rank_files: bool = True,
) -> None:
    """The tokenizer to load: `--vocab`, `--merges` and `--cased`, and
    (`rank_files`) `--pattern` and `--special-tokens` for tiktoken rank
    files."""
    parser.add_argument("--vocab", required=True, help=vocab_help)
    parser.add_argument(
        "--merges", help="merges.txt for BPE (default: beside vocab.json)"
    )
    parser.add_argument(
        "--cased", action="store_true", help="WordPiece: keep case"
    )
    if not rank_files:
        return
    from tf_input.tokenizers.rank_files import PATTERNS

    parser.add_argument(
        "--pattern",
        help="tiktoken rank files: the pre-tokenization regex, by name "
        f"({', '.join(sorted(PATTERNS))}) or the regex itself",
    )
    parser.add_argument(
        "--special-tokens",
        dest="special_token_ids",
        metavar="TOKEN=ID",
        type=special_token,
        action="append",
        help="tiktoken rank files: a special token and its id, found whole "
        "in the text (repeat the option for each, e.g. "
        "--special-tokens '<|endoftext|>=100257')",
    )


def load_tokenizer(args: argparse.Namespace):
    """The tokenizer that `add_tokenizer_arguments`' options name."""
    from tf_input.tokenizers.loading import load_for_command_line

    specials = getattr(args, "special_token_ids", None)
    return load_for_command_line(
        args.vocab,
        args.merges,
        args.cased,
        pattern=getattr(args, "pattern", None),
        special_token_ids=dict(specials) if specials else None,
    )
