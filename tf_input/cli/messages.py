"""Help and error messages of the `tf-input` command, in its own words.

`HelpFormatter` adds each option's default to its help. An error raised
by the library names Python arguments (`max_length`); `in_flag_names`
turns them into the flags that set them (`--max-length`), and
`plain_message` drops the wrapper Keras puts around an error raised in a
layer's `call`.
"""

from __future__ import annotations

import argparse
import re


class HelpFormatter(argparse.HelpFormatter):
    """Adds "(default: ...)" to every option that has a real default.

    Not to on/off flags (`--log`, `--no-special-tokens`): their help says
    what they turn on or off.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or not action.option_strings
            or action.required
            or isinstance(action, argparse._StoreConstAction)
            or default is None
            or default is False
            or default is argparse.SUPPRESS
        ):
            return text
        if isinstance(default, (list, tuple)):
            default = ",".join(str(x) for x in default)
        return f"{text} (default: {default})" if text else f"default: {default}"


def set_formatter(parser: argparse.ArgumentParser) -> None:
    """`HelpFormatter` for `parser` and every sub-command under it."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                set_formatter(sub)


def flag_names(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> dict[str, str]:
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


def in_flag_names(message: str, names: dict[str, str]) -> str:
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


def plain_message(error: BaseException) -> str:
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
