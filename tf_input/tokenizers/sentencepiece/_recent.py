"""The few most recent model files a config named, by SHA-256.

A tokenizer's config names its model file (a `.model` proto or a
`tokenizer.json` text) by digest only; the file itself travels as a Keras
asset. So that `from_config(get_config())` in the same process (a clone)
needs no asset, `get_config` keeps the file here. Only the last few are
kept: a process that builds many tokenizers must not hold every file it
ever saw (a `tokenizer.json` is up to ~30 MB). A config whose file has
been dropped makes a tokenizer that waits for `load_assets`, and one used
before that raises an error that says so.
"""

from __future__ import annotations

import collections
import hashlib

KEPT = 8


class Recent:
    """`digest -> file` for the `KEPT` files remembered last."""

    def __init__(self):
        self._files = collections.OrderedDict()

    def remember(self, data, value=None):
        """Keeps `value` (default: `data`, bytes) under the SHA-256 of
        `data` and returns that hex digest."""
        digest = hashlib.sha256(data).hexdigest()
        self._files[digest] = data if value is None else value
        self._files.move_to_end(digest)
        while len(self._files) > KEPT:
            self._files.popitem(last=False)
        return digest

    def get(self, digest, default):
        return self._files.get(digest, default)

    def __len__(self):
        return len(self._files)
