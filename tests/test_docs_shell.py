"""Every shell block of the README, docs/*.md and benchmarks/README.md.

Each command of a ```sh block either runs here (under `-m slow`: each
starts a Python process that imports TensorFlow) or is one of the few that
cannot (they take minutes, or serve until killed; each kind says where it
is tested instead). Every command, run or not, uses only files the
repository or `../shared/data` has, or that an earlier command of its page
wrote (`-o`): no placeholder like `corpus.txt` survives.

The commands run in order, page by page, from a scratch folder laid out
like a checkout (`../shared/data` is the real shared data), with
`tf-input` as `python -m tf_input.cli` of this checkout.
"""

import fnmatch
import glob
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.shared_data import SHARED_DATA
from tests.shared_data import requires_shared_data

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
PAGES = (
    ["README.md"]
    + [f"docs/{path.name}" for path in sorted((ROOT / "docs").glob("*.md"))]
    + ["benchmarks/README.md"]
)
FILE_SUFFIXES = (
    ".txt",
    ".json",
    ".model",
    ".tiktoken",
    ".py",
    ".png",
    ".svg",
    ".jpg",
    ".pdf",
    ".keras",
)


def shell_commands(page):
    """`[(line, command)]` for each command of each ```sh block of `page`.

    A command continued with a trailing backslash is one command; comments
    are kept (the shell drops them).
    """
    text = (ROOT / page).read_text(encoding="utf-8")
    commands = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        pending, start = "", line
        for offset, raw in enumerate(match.group(1).splitlines()):
            if not pending:
                start = line + offset
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            command = (pending + raw).strip()
            pending = ""
            if command and not command.startswith("#"):
                commands.append((start, command))
    return commands


def not_run_reason(command):
    """Why `command` is not run here, or None when it is."""
    tokens = words(command)
    if tokens[0] == "make":
        return "it sets up .venv and runs for minutes; CI runs the targets"
    if tokens[:2] == ["tf-input", "demo"]:
        return "minutes; tests/test_demo.py runs the quick demo"
    if ".join()" in command:
        return (
            "a server that runs until it is killed; "
            "tests/data/test_service_processes.py starts such servers"
        )
    if any(token.startswith("benchmarks/") for token in tokens):
        return "a benchmark: minutes to tens of minutes"
    return None


def words(command):
    """The command's words, without leading `NAME=value` assignments."""
    tokens = shlex.split(command, comments=True)
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", tokens[0]):
        tokens = tokens[1:]
    return tokens


# The flags whose argument is a file the command writes.
OUTPUT_FLAGS = ("-o", "--output", "--json")


def outputs(command):
    """The files and folders a command writes: what follows `-o`,
    `--output` or (the benchmarks') `--json`."""
    tokens = words(command)
    return {
        tokens[i + 1].rstrip("/")
        for i, token in enumerate(tokens[:-1])
        if token in OUTPUT_FLAGS
    }


def paths(command):
    """The path-like arguments a command reads (not the files it writes,
    not `-c` code)."""
    tokens = words(command)
    found = []
    for i, token in enumerate(tokens):
        before = tokens[i - 1] if i else ""
        if before in (*OUTPUT_FLAGS, "-c") or token.startswith("-"):
            continue
        if "://" in token or "=" in token:
            continue
        if "/" in token or token.endswith(FILE_SUFFIXES):
            found.append(token)
    return found


def exists(path, made):
    """Whether `path` (a glob pattern too) is in the repository, in
    ../shared/data, or among the files earlier commands `made`."""
    if path.rstrip("/") in made or path.split("/")[0] in made:
        return True
    if any(fnmatch.fnmatchcase(file, path) for file in made):
        return True
    if path.startswith("../shared/data"):
        path = str(SHARED_DATA) + path[len("../shared/data") :]
    else:
        path = str(ROOT / path)
    return bool(glob.glob(path))


def make_targets():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def test_the_docs_have_shell_blocks():
    commands = {page: shell_commands(page) for page in PAGES}
    readme = [command for _, command in commands["README.md"]]
    assert any(c.startswith("make demo") for c in readme), readme
    assert any(c.startswith("make test") for c in readme), readme
    assert commands["docs/command-line.md"], commands


def test_the_parser_sees_what_the_shell_sees():
    assert outputs("tf-input plot pe -o pe.png") == {"pe.png"}
    assert paths("tf-input tokenize --vocab vocab/ 'I love it.'") == ["vocab/"]
    assert paths('python -c "import a; b/c.txt"') == []
    assert paths("python benchmarks/bench_x.py --families a/b") == [
        "benchmarks/bench_x.py",
        "a/b",
    ]
    assert not exists("corpus.txt", set())
    assert exists("vocab/vocab.txt", {"vocab"})
    assert outputs("python benchmarks/b.py --json a1.json") == {"a1.json"}
    assert exists("a*.json", {"a1.json"})
    assert not exists("b*.json", {"a1.json"})
    assert not_run_reason("make test") and not_run_reason("tf-input demo")
    assert not_run_reason("TF_CPU_ALLOCATOR_USE_BFC=true make bench")
    assert not_run_reason("tf-input plot pe -o pe.png") is None


@requires_shared_data
@pytest.mark.parametrize("page", PAGES)
def test_every_shell_command_uses_real_files(page):
    made = set()
    targets = make_targets()
    for line, command in shell_commands(page):
        missing = [path for path in paths(command) if not exists(path, made)]
        assert not missing, f"{page}:{line}: no such file: {missing}"
        tokens = words(command)
        if tokens[0] == "make":
            assert set(tokens[1:2]) <= targets, f"{page}:{line}: {command}"
        made |= outputs(command)


def run(command, cwd):
    python = shlex.quote(sys.executable)
    if command.startswith("tf-input "):
        command = f"{python} -m tf_input.cli" + command[len("tf-input") :]
    elif command.startswith("python "):
        command = python + command[len("python") :]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("page", PAGES)
def test_every_shell_command_runs_in_order(page, tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").mkdir()
    os.symlink(SHARED_DATA, tmp_path / "shared" / "data")
    for line, command in shell_commands(page):
        if not_run_reason(command):
            continue
        result = run(command, checkout)
        assert result.returncode == 0, (
            f"{page}:{line}: {command}\n{result.stdout}\n{result.stderr}"
        )
        for written in outputs(command):
            assert (checkout / written).exists(), f"{page}:{line}: {written}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on port {port}")


def test_the_service_commands_start_a_dispatcher_and_a_worker():
    servers = [
        c for _, c in shell_commands("docs/scale-out.md") if ".join()" in c
    ]
    assert len(servers) == 2, servers
    assert "DispatchServer" in servers[0] and "WorkerServer" in servers[1]
    # Some SentencePiece models run tensorflow_text ops.
    assert "tensorflow_text" in servers[1], servers[1]


@pytest.mark.slow
@requires_shared_data
def test_the_service_commands_serve_a_wordpiece_pipeline():
    """The scale-out page's server commands, as written but on free ports,
    serve `make_dataset` with a WordPiece tokenizer."""
    import tf_input
    from tf_input.data import make_dataset

    dispatcher, worker = (
        c for _, c in shell_commands("docs/scale-out.md") if ".join()" in c
    )
    ports = {"5050": free_port(), "5051": free_port()}
    processes = []
    try:
        for command in (dispatcher, worker):
            for old, new in ports.items():
                command = command.replace(old, str(new))
            python = shlex.quote(sys.executable)
            processes.append(
                subprocess.Popen(
                    ["bash", "-c", python + command[len("python") :]],
                    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        for port, process in zip(ports.values(), processes):
            wait_for_port(port, process)
        tokenizer = tf_input.WordPieceTokenizer.from_vocab_file(
            SHARED_DATA / "bert" / "bert-base-uncased-vocab.txt"
        )
        ds = make_dataset(
            ["I love deep learning.", "Position information matters."] * 8,
            tokenizer,
            batch_size=4,
            max_length=16,
            batching="max_length",
            data_service=f"grpc://localhost:{ports['5050']}",
        )
        features = next(iter(ds))[0]
        assert features["token_ids"].shape == (4, 16)
        assert features["token_ids"][0, 1] == 1045  # "i"
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
