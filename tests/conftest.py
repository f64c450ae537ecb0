"""Marks the tests listed in `heavy.txt` `heavy` (see `list_heavy.py`)."""

from pathlib import Path

import pytest

HEAVY = Path(__file__).with_name("heavy.txt")


def _heavy_ids():
    ids = set()
    for line in HEAVY.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ids.add(line.split(maxsplit=1)[1])
    return ids


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    heavy = _heavy_ids()
    collected = {item.nodeid for item in items}
    # A listed test missing from a module collected whole is a stale name
    # (a renamed test would otherwise run in `make test` unnoticed).
    whole = not any("::" in arg for arg in config.args)
    modules = {node.split("::")[0] for node in collected}
    stale = sorted(
        node
        for node in heavy - collected
        if whole and node.split("::")[0] in modules
    )
    if stale and not config.getoption("lf", False):
        raise pytest.UsageError(
            f"{HEAVY} names tests that do not exist: {stale}. Remove them, "
            "or write the list again with `make heavy-list`."
        )
    for item in items:
        if item.nodeid in heavy:
            item.add_marker(pytest.mark.heavy)
