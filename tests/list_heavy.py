"""Write `tests/heavy.txt`: the tests that take 4 s or more, from a run's
JUnit report.

    .venv/bin/python -m pytest tests -m "not slow" -n 2 --dist loadfile \
        --junitxml=/tmp/report.xml
    .venv/bin/python tests/list_heavy.py /tmp/report.xml

(`make heavy-list` does both.) `tests/conftest.py` marks the listed tests
`heavy`: `make test` leaves them out, `make test-heavy` and CI run them.
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SECONDS = 4.0
ROOT = Path(__file__).resolve().parent.parent
LIST = Path(__file__).with_name("heavy.txt")
HEADER = f"""\
# Tests that take {SECONDS:g} s or more each on a 2-core machine (seconds,
# node id), written by tests/list_heavy.py from a run's JUnit report.
# tests/conftest.py marks them `heavy`: `make test` leaves them out,
# `make test-heavy` and CI run them.
"""


def node_id(classname, name):
    """The pytest node id of a JUnit test case ("tests.data.test_mlm",
    "test_x[a]" -> "tests/data/test_mlm.py::test_x[a]")."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        module = "/".join(parts[:end]) + ".py"
        if (ROOT / module).exists():
            return "::".join([module, *parts[end:], name])
    raise ValueError(f"no test module for the JUnit class {classname!r}")


def main(report):
    rows = []
    for case in ET.parse(report).getroot().iter("testcase"):
        seconds = float(case.get("time", 0))
        where = case.get("classname")
        if seconds >= SECONDS and where.startswith("tests."):
            rows.append((node_id(where, case.get("name")), seconds))
    lines = [f"{seconds:5.1f}  {node}\n" for node, seconds in sorted(rows)]
    LIST.write_text(HEADER + "".join(lines))
    print(f"{len(rows)} tests of {SECONDS:g} s or more written to {LIST}")


if __name__ == "__main__":
    main(sys.argv[1])
