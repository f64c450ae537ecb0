"""The real vocabularies and corpora in ../shared/data (see its README).

They are large and never copied into the repository: tests read them from
`../shared/data` beside the checkout (or `$TF_INPUT_SHARED_DATA`). CI has
them; a checkout without them skips only the tests marked
`requires_shared_data`.
"""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
requires_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason=f"real data not found at {SHARED_DATA} (set TF_INPUT_SHARED_DATA)",
)


def data_path(*parts):
    return SHARED_DATA.joinpath(*parts)


def read_lines(path):
    """The lines of a UTF-8 file: split on LF, a trailing CR removed, BOM kept.

    Empty lines are kept; a final empty string after the last LF is not.
    """
    text = pathlib.Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def corpora():
    """`{name: lines}` for every corpus in shared/data/corpora.

    For the CoNLL-U file only the raw sentences (`# text = ...`) are kept.
    """
    folder = data_path("corpora")
    out = {}
    for path in sorted(folder.glob("*")):
        if path.is_dir():
            continue
        lines = read_lines(path)
        if path.suffix == ".conllu":
            prefix = "# text = "
            lines = [x[len(prefix) :] for x in lines if x.startswith(prefix)]
        out[path.name] = lines
    for path in sorted((folder / "tatoeba").glob("tatoeba.*")):
        out[path.name] = read_lines(path)
    return out
