"""Reads the files tagging data comes in: CoNLL-U and CoNLL-2003.

`read_conll(path)` yields one `(words, labels)` pair per sentence, two
lists of `str` of the same length: the pre-split words of the sentence and
one label column. It reads the file one line at a time, so memory is
bounded by the longest sentence.

* **CoNLL-U** (`format="conllu"`, the default for `*.conllu` files): the
  Universal Dependencies format. Ten tab-separated columns `ID FORM LEMMA
  UPOS XPOS FEATS HEAD DEPREL DEPS MISC`; `#` lines are comments; a blank
  line ends a sentence. The words are the syntactic words (integer `ID`s):
  multiword-token ranges (`1-2`) and empty nodes (`8.1`) are left out, as
  taggers trained on UD do. `label` names a column (`"upos"` by default).
* **CoNLL-2003** (`format="conll2003"`, the default for other files):
  space-separated columns `word POS chunk NER`; `-DOCSTART-` lines are
  skipped; a blank line ends a sentence. `label` is `"ner"` (default),
  `"pos"` or `"chunk"`.

A line with the wrong number of columns, or an ID out of order, is a
`ValueError` naming the file and the line.
"""

from __future__ import annotations

import os

_CONLLU_COLUMNS = (
    "id",
    "form",
    "lemma",
    "upos",
    "xpos",
    "feats",
    "head",
    "deprel",
    "deps",
    "misc",
)
_CONLL2003_COLUMNS = ("word", "pos", "chunk", "ner")
_FORMATS = {
    "conllu": (_CONLLU_COLUMNS, "upos"),
    "conll2003": (_CONLL2003_COLUMNS, "ner"),
}


def read_conll(path, *, format=None, label=None, encoding="utf-8"):
    """Yields `(words, labels)` for each sentence of a CoNLL file.

    Args:
        path: str or `os.PathLike`, a CoNLL-U or CoNLL-2003 file.
        format: `"conllu"`, `"conll2003"`, or None: `"conllu"` for a name
            ending in `.conllu`, else `"conll2003"`.
        label: str, the column whose values are the labels (see the module
            docstring; default `"upos"` for CoNLL-U, `"ner"` for
            CoNLL-2003).
        encoding: str, the file's text encoding.

    Yields:
        `(words, labels)`: two equally long lists of str.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "train.txt").write_text(
    ...     "-DOCSTART- -X- -X- O\\n\\n"
    ...     "EU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n"
    ...     "German JJ B-NP B-MISC\\n\\n"
    ... )
    >>> list(read_conll(folder / "train.txt"))
    [(['EU', 'rejects', 'German'], ['B-ORG', 'O', 'B-MISC'])]
    """
    path = os.fspath(path)
    if format is None:
        format = "conllu" if path.endswith(".conllu") else "conll2003"
    if format not in _FORMATS:
        raise ValueError(
            f"format={format!r} is not a CoNLL format read here; expected "
            f"one of {sorted(_FORMATS)}"
        )
    columns, default = _FORMATS[format]
    label = default if label is None else label
    if label not in columns[1:]:
        raise ValueError(
            f"label={label!r} is not a column of {format} files; expected "
            f"one of {list(columns[1:])}"
        )
    column = columns.index(label)
    words_column = 1 if format == "conllu" else 0
    with open(path, encoding=encoding) as lines:
        words, labels = [], []
        for number, line in enumerate(lines, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                if words:
                    yield words, labels
                words, labels = [], []
                continue
            fields = _fields(line, format, path, number)
            if fields is None:
                continue
            if format == "conllu" and int(fields[0]) != len(words) + 1:
                raise ValueError(
                    f"{path}, line {number}: word ID {fields[0]} after "
                    f"{len(words)} words of the sentence; a CoNLL-U "
                    "sentence numbers its words 1, 2, 3, ... (is a blank "
                    "line missing between two sentences?)"
                )
            words.append(fields[words_column])
            labels.append(fields[column])
        if words:
            yield words, labels


def _fields(line, format, path, number):
    """The columns of one word line, or None for a line that holds no
    word (comments, ranges, empty nodes, `-DOCSTART-`)."""
    if format == "conllu":
        if line.startswith("#"):
            return None
        fields = line.split("\t")
        expected = len(_CONLLU_COLUMNS)
        hint = "ten tab-separated columns (ID FORM LEMMA UPOS ...)"
        if len(fields) == expected and not fields[0].isdigit():
            if "-" in fields[0] or "." in fields[0]:
                return None  # A multiword token's range or an empty node.
    else:
        fields = line.split()
        if fields[0] == "-DOCSTART-":
            return None
        expected = len(_CONLL2003_COLUMNS)
        hint = "four space-separated columns (word POS chunk NER)"
    if len(fields) != expected or not fields[0]:
        raise ValueError(
            f"{path}, line {number}: {len(fields)} columns where a "
            f"{format} word line has {hint}: {line[:80]!r}"
        )
    if format == "conllu" and not fields[0].isdigit():
        raise ValueError(
            f"{path}, line {number}: the ID {fields[0]!r} is not a word "
            "number, a range (1-2) or an empty node (8.1)"
        )
    return fields
