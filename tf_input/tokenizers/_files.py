"""Reading tokenizer files: their error, their text, their JSON (once).

A fault of a file (corrupt, truncated, not UTF-8, malformed or not
supported) is a `TokenizerFileError` whose message starts with the path.
A fault of the code that runs a file is never turned into one: it keeps
its own type and traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib


class TokenizerFileError(ValueError):
    """A tokenizer file that cannot be read or is not supported."""


def read_text(path):
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise TokenizerFileError(
            f"{str(path)!r} is not UTF-8 text: {error}."
        ) from None


_PARSED = {}  # inside `reading()` scopes: path -> (text, JSON)
_DEPTH = [0]


@contextlib.contextmanager
def reading():
    """A scope in which each JSON file is read and parsed once (telling
    the kind of a file and loading it share the result); the results go
    when the outermost scope ends."""
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if not _DEPTH[0]:
            _PARSED.clear()


def read_json(path):
    """`(text, data)`: the text of the JSON file `path` and its parse."""
    key = os.fspath(path)
    if key not in _PARSED:
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise TokenizerFileError(
                f"{str(path)!r} is not valid JSON (truncated or corrupt?): "
                f"{error.msg} at line {error.lineno}, column {error.colno}."
            ) from None
        if not _DEPTH[0]:
            return text, data
        _PARSED[key] = (text, data)
    return _PARSED[key]


def check_options(path, options, allowed):
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(
            f"Unknown option(s) {unknown} for {str(path)!r}; this kind of "
            f"file takes {sorted(allowed) or 'none'}."
        )
