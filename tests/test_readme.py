"""Every Python block of the README runs as written, in order.

The blocks run in one namespace (a later block may use what an earlier one
defined, as a reader would), from a scratch folder laid out like a
checkout: `../shared/data` there is the real shared data, so the README's
paths work as written. Files the blocks write stay in the scratch folder.
"""

import os
import pathlib
import re

import pytest

from tests.shared_data import SHARED_DATA
from tests.shared_data import requires_shared_data

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        blocks.append((line, match.group(1)))
    return blocks


def test_the_readme_has_python_blocks():
    assert len(readme_blocks()) >= 10


@requires_shared_data
def test_every_python_block_runs_in_order(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").mkdir()
    os.symlink(SHARED_DATA, tmp_path / "shared" / "data")
    monkeypatch.chdir(checkout)
    namespace = {"__name__": "__readme__"}
    for line, code in readme_blocks():
        try:
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
        except Exception as error:  # the block's line, then the cause
            pytest.fail(
                f"README.md block at line {line} failed: "
                f"{type(error).__name__}: {error}"
            )
