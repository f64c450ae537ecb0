"""Every Python block of the README and of docs/*.md runs as written, in order.

Each page runs in a namespace of its own (a later block may use what an
earlier block of the same page defined, as a reader would), from a scratch
folder laid out like a checkout: `../shared/data` there is the real shared
data, so the pages' paths work as written. Files the blocks write stay in
the scratch folder.
"""

import os
import pathlib
import re

import pytest

from tests.shared_data import SHARED_DATA
from tests.shared_data import requires_shared_data

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
PAGES = ["README.md"] + [f"docs/{name}" for name in DOCS]
# Pages with nothing to run: the command line is shell blocks only
# (tests/test_docs_shell.py).
SHELL_ONLY = {"docs/command-line.md"}
# Pages whose blocks train and serve models (a minute or more each): run
# under `slow`; their features have tests of their own.
SLOW_PAGES = {"docs/tagging-and-qa.md", "docs/visualization.md"}


# A block whose last line ends with "# prints:" is followed by a plain
# ``` block holding exactly what it prints.
PRINTED = re.compile(r"```\n(.*?)^```", re.S | re.M)


def python_blocks(page):
    """`[(line, code, printed)]` for each ```python block of `page`.

    `printed` is the text of the output block after a block that ends with
    "# prints:", else None.
    """
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        code, printed = match.group(1), None
        if code.rstrip().endswith("# prints:"):
            output = PRINTED.match(text, match.end() + 1)
            assert output, f"{page}:{line}: no output block after '# prints:'"
            printed = output.group(1)
        blocks.append((line, code, printed))
    return blocks


def test_the_pages_have_python_blocks():
    counts = {page: len(python_blocks(page)) for page in PAGES}
    assert sum(counts.values()) >= 10, counts
    assert counts["README.md"] >= 1, counts
    assert {page for page, n in counts.items() if n == 0} <= SHELL_ONLY
    assert "docs/pipeline.md" in PAGES and "docs/tokenizers.md" in PAGES
    printed = [p for page in PAGES for *_, p in python_blocks(page) if p]
    assert printed, "the shape trace's output is checked"


@requires_shared_data
@pytest.mark.parametrize(
    "page",
    [
        pytest.param(page, marks=pytest.mark.slow)
        if page in SLOW_PAGES
        else page
        for page in PAGES
    ],
)
def test_every_python_block_runs_in_order(page, tmp_path, monkeypatch, capsys):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").mkdir()
    os.symlink(SHARED_DATA, tmp_path / "shared" / "data")
    monkeypatch.chdir(checkout)
    namespace = {"__name__": "__docs__"}
    for line, code, printed in python_blocks(page):
        capsys.readouterr()
        try:
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
        except Exception as error:  # the block's line, then the cause
            pytest.fail(
                f"{page} block at line {line} failed: "
                f"{type(error).__name__}: {error}"
            )
        if printed is not None:
            out = capsys.readouterr().out
            assert out.rstrip().splitlines() == printed.rstrip().splitlines(), (
                f"{page} block at line {line} printed:\n{out}"
            )


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#+ (.*)$", re.M)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading):
    """GitHub's anchor of a heading: lowercase, punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_anchor_is_githubs():
    assert anchor("`bench_tokenizers.py`: tokenizers in `tf.data`") == (
        "bench_tokenizerspy-tokenizers-in-tfdata"
    )
    assert anchor("The mask") == "the-mask"


@pytest.mark.parametrize(
    "page", PAGES + ["CHANGELOG.md", "benchmarks/README.md"]
)
def test_every_relative_link_leads_somewhere(page):
    """Files exist, and `#anchors` name a heading of their page."""
    path = ROOT / page
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target):
            continue
        name, _, fragment = target.partition("#")
        linked = (path.parent / name).resolve() if name else path
        assert linked.exists(), f"{page}: {target}"
        if fragment:
            headings = HEADING.findall(
                FENCE.sub("", linked.read_text(encoding="utf-8"))
            )
            anchors = {anchor(heading) for heading in headings}
            assert fragment in anchors, f"{page}: {target}"
