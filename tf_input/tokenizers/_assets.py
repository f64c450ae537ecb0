"""A tokenizer's vocabulary as a Keras asset, named in its config by SHA-256.

As in keras-hub (`save_assets` / `load_assets`): `config.json` holds a
tokenizer's options and the SHA-256 of its vocabulary file, and a `.keras`
file carries the file itself in its assets, so a config stays small (an
o200k vocabulary is megabytes). In one process, `from_config(get_config())`
(a clone) needs no asset: `get_config` keeps the file, by digest, among
the last `KEPT` files (`Recent`). A layer made from a config whose file it
cannot find waits for `load_assets`.

Loading a `.keras` file whose asset is missing or altered is an error, at
load time, naming the file: `load_assets` checks the file against the
config's digest, and if Keras never calls it (an archive left without any
asset), the check object of `VocabularyAsset` raises instead.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import weakref

import keras

from tf_input.tokenizers.base import Untracked

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


def json_asset(data, source, owner):
    """The JSON value of a vocabulary file's bytes (UTF-8 JSON); a
    `ValueError` naming `source` and `owner` (a class name) if they are
    not."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(
            f"{owner} could not read {source}: it is not UTF-8 JSON ({error})."
        ) from None


class _FromAssets:
    """The vocabulary argument of a layer that waits for `load_assets`."""

    def __repr__(self):
        return "FROM_ASSETS"


FROM_ASSETS = _FromAssets()
# The vocabulary files whose config was taken in this process.
KNOWN = Recent()


class _AssetCheck(keras.layers.Layer):
    """Keras loads a layer's own weights, then its assets, then the Keras
    objects among its attributes: this one's `load_own_variables` runs
    after its tokenizer's `load_assets` would have, and raises if the
    tokenizer is still without a vocabulary (Keras calls no `load_assets`
    at all when an archive holds no asset)."""

    def __init__(self, owner):
        super().__init__(name="vocabulary_asset_check")
        self._owner = weakref.ref(owner)

    def save_own_variables(self, store):
        pass

    def load_own_variables(self, store):
        owner = self._owner()
        if owner is not None and owner._waiting_for_asset():
            if not owner._asset_state.failed:
                raise ValueError(owner._missing_asset_message(None))


class VocabularyAsset:
    """Mixin for a `Tokenizer` whose vocabulary is one file (bytes).

    A subclass sets `asset_name` (the file in its asset folder) and
    `digest_key` (the config key of the file's SHA-256) and implements:

    * `_asset_bytes()`: the file's contents, or None while there is no
      vocabulary to save (a `VocabularyTokenizer` before `adapt`): then
      the config's digest is None and no file is written;
    * `_load_asset_bytes(data, source)`: builds the vocabulary from them
      (a `ValueError` naming `source` if they are bad);
    * `_config_has_vocabulary(config)`: True for a config that holds the
      vocabulary itself (as configs of earlier versions did);
    * `_vocabulary_kwargs(data)`: the constructor arguments for the file's
      contents, or for `FROM_ASSETS` (a layer that waits for them).

    Its `__init__` calls `_init_asset()` first, and builds the vocabulary
    only if its argument is not `FROM_ASSETS`.
    """

    asset_name = None
    digest_key = None
    # What the file is, in messages.
    _asset_what = "vocabulary"

    def _init_asset(self):
        self._asset_state = Untracked()
        self._asset_state.expected_sha256 = None
        self._asset_state.failed = False
        self._asset_state.data = None
        self._asset_state.check = _AssetCheck(self)

    @property
    def _vocabulary_asset_check(self):
        # A property, so that the check object is walked by Keras' saving
        # (see `_AssetCheck`) but is no tracked sublayer of the tokenizer.
        return self._asset_state.check

    def _waiting_for_asset(self):
        raise NotImplementedError

    def _check_ready(self):
        if self._waiting_for_asset():
            what = self._asset_what
            raise ValueError(
                f"This {type(self).__name__} has no {what} yet: it was made "
                f"by `from_config` from a config that names its {what} by "
                "SHA-256 only, and no `.keras` asset was loaded into it. "
                "Load the `.keras` file with `keras.saving.load_model`, or "
                "build the tokenizer from its files."
            )

    def _remembered_asset(self):
        """The asset's bytes, computed once, and their digest, kept by
        `KNOWN` for same-process clones (None: no vocabulary yet).

        Always the bytes of this layer's own `_asset_bytes`, never those
        it was loaded from: an asset of an earlier layout (BytePair's
        without its added tokens) is saved again in today's.
        """
        self._check_ready()
        if self._asset_state.data is None:
            self._asset_state.data = self._asset_bytes()
        if self._asset_state.data is None:
            return None
        return KNOWN.remember(self._asset_state.data)

    def _vocabulary_changed(self):
        """Forgets the asset's bytes computed for the previous vocabulary
        (for a class whose vocabulary can be set again)."""
        self._asset_state.data = None

    def _asset_config(self):
        return {self.digest_key: self._remembered_asset()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        digest = config.pop(cls.digest_key, None)
        data = None
        if not cls._config_has_vocabulary(config):
            data = KNOWN.get(digest, None) if digest else None
            config.update(
                cls._vocabulary_kwargs(FROM_ASSETS if data is None else data)
            )
        layer = cls(**config)
        layer._asset_state.expected_sha256 = digest
        return layer

    def save_assets(self, dir_path):
        if self._remembered_asset() is None:
            return  # No vocabulary yet: nothing to save.
        with open(os.path.join(dir_path, self.asset_name), "wb") as f:
            f.write(self._asset_state.data)

    def load_assets(self, dir_path):
        path = None
        if dir_path is not None:
            path = os.path.join(dir_path, self.asset_name)
        if path is None or not os.path.isfile(path):
            if not self._waiting_for_asset():
                return  # An earlier version's file: the config held it.
            self._asset_state.failed = True
            raise ValueError(self._missing_asset_message(dir_path))
        with open(path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        expected = self._asset_state.expected_sha256
        if expected not in (None, digest):
            self._asset_state.failed = True
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: its "
                f"{self._asset_what} asset {self.asset_name!r} has SHA-256 "
                f"{digest}, but its "
                f"config names {expected}: the saved file is corrupt or was "
                "edited. Save the model again from its tokenizer's files."
            )
        if self._waiting_for_asset():
            try:
                self._load_asset_bytes(data, f"the asset {path!r}")
            except ValueError:
                self._asset_state.failed = True
                raise

    def _missing_asset_message(self, dir_path):
        where = "its asset folder" if dir_path is None else repr(dir_path)
        return (
            f"{type(self).__name__} {self.name!r}: the {self._asset_what} "
            f"file {self.asset_name!r} is missing from {where} in the `.keras` "
            "file (its config names the file by SHA-256 only). The file "
            "was saved incompletely or edited: save the model again."
        )


class TokenListAsset(VocabularyAsset):
    """A `VocabularyAsset` that is the token list of the constructor's
    `vocabulary` argument (id order), saved as the JSON list
    `vocabulary.json`.

    A subclass implements `_waiting_for_asset()`, `_token_list()` (the
    tokens, or None while there are none) and `_set_token_list(tokens)`.
    """

    asset_name = "vocabulary.json"
    digest_key = "vocabulary_sha256"

    def _asset_bytes(self):
        tokens = self._token_list()
        if tokens is None:
            return None
        return json.dumps(list(tokens), ensure_ascii=False).encode("utf-8")

    def _load_asset_bytes(self, data, source):
        self._set_token_list(_read_token_list(data, source, type(self)))

    @classmethod
    def _config_has_vocabulary(cls, config):
        return isinstance(config.get("vocabulary"), list)

    @classmethod
    def _vocabulary_kwargs(cls, data):
        if data is FROM_ASSETS:
            return {"vocabulary": FROM_ASSETS}
        source = "the remembered vocabulary"
        return {"vocabulary": _read_token_list(data, source, cls)}


def _read_token_list(data, source, owner):
    """The tokens of a `TokenListAsset` file; a `ValueError` naming
    `source` and `owner` (a class) if it is not a JSON list of strings."""
    tokens = json_asset(data, source, owner.__name__)
    if not isinstance(tokens, list) or not all(
        isinstance(token, str) for token in tokens
    ):
        raise ValueError(
            f"{owner.__name__} could not read {source}: expected a JSON "
            f"list of tokens (strings). Received: a {type(tokens).__name__}."
        )
    return tokens
