"""The common part of the tokenizers built from one `tokenizer.json` text.

`MetaspaceBytePairTokenizer` and `UnigramTokenizer` keep the file's text as
their whole state. Their config names it by SHA-256 only; a `.keras` file
stores the text as a Keras asset (`save_assets` / `load_assets`), so the
config does not carry megabytes of JSON, and the digest catches an edited
or corrupt asset. Subclasses implement `_setup(text)`.
"""

from __future__ import annotations

import hashlib
import os

from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.sentencepiece._recent import Recent

_ASSET = "tokenizer.json"

# The last JSON texts whose config was taken in this process, by SHA-256:
# a `from_config` in the same process (a clone) needs no asset.
_KNOWN = Recent()
_FROM_ASSETS = object()


class JsonFileTokenizer(Tokenizer):
    """A tokenizer whose state is one `tokenizer.json` text (see above)."""

    def __init__(
        self,
        tokenizer_json,
        *,
        add_special_tokens=False,
        roles=None,
        split_special_tokens=False,
        templates=None,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        self._json_text = None
        self._roles_arg = roles
        self._templates_arg = templates
        self._expected_sha256 = None
        self.split_special_tokens = split_special_tokens
        if tokenizer_json is _FROM_ASSETS:
            return  # `load_assets` sets it (a `.keras` file).
        self._setup(tokenizer_json)

    def _setup(self, tokenizer_json):
        raise NotImplementedError

    def get_config(self):
        self._check()
        digest = _KNOWN.remember(self._json_text.encode(), self._json_text)
        return {
            **super().get_config(),
            "tokenizer_json": None,
            "tokenizer_json_sha256": digest,
            "roles": self._roles_arg,
            "split_special_tokens": self.split_special_tokens,
            "templates": self._templates_arg,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        digest = config.pop("tokenizer_json_sha256", None)
        if not isinstance(config.get("tokenizer_json"), str):
            config["tokenizer_json"] = _KNOWN.get(digest, _FROM_ASSETS)
        layer = cls(**config)
        layer._expected_sha256 = digest
        return layer

    def save_assets(self, dir_path):
        self._check()
        with open(os.path.join(dir_path, _ASSET), "w", encoding="utf-8") as f:
            f.write(self._json_text)

    def load_assets(self, dir_path):
        path = os.path.join(dir_path, _ASSET)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        digest = hashlib.sha256(text.encode()).hexdigest()
        if self._expected_sha256 not in (None, digest):
            raise ValueError(
                f"{type(self).__name__}: the asset {path!r} has SHA-256 "
                f"{digest}, but the config names {self._expected_sha256}: "
                "the saved file is corrupt or was edited."
            )
        if self._json_text is None:
            self._setup(text)

    def _check(self):
        if self._json_text is None:
            raise ValueError(
                f"This {type(self).__name__} has no tokenizer.json yet (made "
                "by `from_config` from a config that names it by digest "
                "only): load the `.keras` file with "
                "`keras.saving.load_model`."
            )
