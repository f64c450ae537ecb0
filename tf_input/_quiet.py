"""Keeps TensorFlow's start-up chatter out of the terminal.

Loading TensorFlow prints lines such as

    WARNING: All log messages before absl::InitializeLog() is called are
    written to STDERR
    I0000 00:00:... port.cc:153] oneDNN custom operations are on. ...
    I0000 00:00:... cudart_stub.cc:31] Could not find cuda drivers ...

from C++ before `TF_CPP_MIN_LOG_LEVEL` is read, so that variable cannot
hide them, and, on a machine without CUDA drivers, `failed call to cuInit`
at the first op (TensorFlow 2.21: 8 or 9 lines per process).
`load_tensorflow()` imports TensorFlow and lists its devices (which makes
the cuInit call) with file descriptor 2 sent to a temporary file,
then writes back every line except those known ones: errors, Python
warnings and anything unexpected still reach stderr, only later. The cuInit
error is dropped only when TensorFlow also said that there are no CUDA
drivers at all. Set `TF_CPP_MIN_LOG_LEVEL=0` to see everything unfiltered.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

# The informational lines TensorFlow's native code prints while it loads.
_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called "
    r"are written to STDERR"
    r"|I\d{4} [\d:.]+\s+\d+ (port|cudart_stub|cpu_feature_guard)\.cc:\d+\] "
    r".*"
    r"|To enable the following instructions: .* rebuild TensorFlow with "
    r"the appropriate compiler flags\."
)


_NO_DRIVERS = "Could not find cuda drivers on your machine"
_CUINIT = re.compile(
    r"E\d{4} [\d:.]+\s+\d+ cuda_platform\.cc:\d+\] failed call to cuInit: .*"
)


def is_command_line():
    """Whether this process is the `tf-input` command (or `python -m
    tf_input.cli`)."""
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" in argv:
        return argv[argv.index("-m") + 1 : argv.index("-m") + 2] == [
            "tf_input.cli"
        ]
    return os.path.basename(sys.argv[0] if sys.argv else "") in (
        "tf-input",
        "tf-input.exe",
    )


def load_tensorflow():
    """Imports TensorFlow and initialises its devices, filtering stderr.

    In the `tf-input` command, `TF_CPP_MIN_LOG_LEVEL` defaults to 2 (no
    info or warning lines from TensorFlow's C++ code, such as the XLA
    service or "Ignoring Assert operator" lines of the demo; errors still
    show). TensorFlow reads it once, when it loads, so it is set here.
    Imported as a library, tf_input leaves the variable alone.
    """
    if is_command_line():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with native_stderr_filtered():
        import tensorflow as tf

        tf.config.list_physical_devices()


def filter_lines(text):
    """`text` without TensorFlow's known start-up lines (a str)."""
    lines = text.splitlines(keepends=True)
    no_drivers = any(_NO_DRIVERS in line for line in lines)
    kept = [
        line
        for line in lines
        if _NOISE.fullmatch(line.rstrip("\r\n")) is None
        and not (no_drivers and _CUINIT.fullmatch(line.rstrip("\r\n")))
    ]
    return "".join(kept)


@contextlib.contextmanager
def native_stderr_filtered():
    """Filters TensorFlow's start-up lines out of stderr (fd 2) meanwhile."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all
        yield
        return
    with tempfile.TemporaryFile() as capture:
        _flush()
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            _flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = filter_lines(capture.read().decode("utf-8", "replace"))
            if kept:
                sys.stderr.write(kept)
                _flush()


def _flush():
    with contextlib.suppress(Exception):
        sys.stderr.flush()
