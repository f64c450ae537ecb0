"""The bounded digest -> file memory behind same-process clones."""

import hashlib

from tf_input.tokenizers._assets import KEPT
from tf_input.tokenizers._assets import Recent


def test_keeps_the_last_files_by_digest():
    recent = Recent()
    digests = [recent.remember(f"file {i}".encode()) for i in range(KEPT + 3)]
    assert digests[0] == hashlib.sha256(b"file 0").hexdigest()
    assert len(recent) == KEPT
    missing = object()
    for digest in digests[:3]:
        assert recent.get(digest, missing) is missing
    for i, digest in enumerate(digests[3:], start=3):
        assert recent.get(digest, missing) == f"file {i}".encode()


def test_remembering_again_makes_a_file_the_newest():
    recent = Recent()
    first = recent.remember(b"first", "its text")
    for i in range(KEPT - 1):
        recent.remember(f"file {i}".encode())
    assert recent.remember(b"first", "its text") == first
    recent.remember(b"one more")  # drops "file 0", not "first"
    assert recent.get(first, None) == "its text"
    assert recent.get(hashlib.sha256(b"file 0").hexdigest(), None) is None
