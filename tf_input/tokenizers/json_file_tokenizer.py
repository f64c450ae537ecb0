"""The common part of the tokenizers built from one `tokenizer.json` text.

`MetaspaceBytePairTokenizer` and `UnigramTokenizer` keep the file's text as
their whole state. It is their vocabulary asset (`_assets.VocabularyAsset`):
the config names it by SHA-256 only, and a `.keras` file stores the text
itself, so the config does not carry megabytes of JSON, and the digest
catches an edited or corrupt asset. Subclasses implement `_build(data)`
(the parsed file) and the graphs `_tokenize_graph` / `_detokenize_graph`.
"""

from __future__ import annotations

import json

import tensorflow as tf

from tf_input._validation import check_bool
from tf_input.tokenizers._assets import FROM_ASSETS
from tf_input.tokenizers._assets import VocabularyAsset
from tf_input.tokenizers._assets import json_asset
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.base import traced_graphs
from tf_input.tokenizers.hf import added_tokens
from tf_input.tokenizers.hf.processors import parse_templates
from tf_input.tokenizers.hf.spec import SpecError


class JsonFileTokenizer(VocabularyAsset, Tokenizer):
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
        self._init_asset()
        self._json_text = None
        self._roles_arg = roles
        self._templates_arg = templates
        self.split_special_tokens = check_bool(
            "split_special_tokens", split_special_tokens
        )
        self._plain = Untracked()  # large Python data, out of tracking
        if tokenizer_json is not FROM_ASSETS:
            self._setup(tokenizer_json)

    @classmethod
    def _from_file(cls, text, data, specials, **kwargs):
        """The tokenizer of a file read and parsed by the caller.

        `specials(token_ids)` gives `(roles, templates)` from the dict of
        every token to its id, once the file's vocabulary is built.
        """
        layer = cls(FROM_ASSETS, **kwargs)  # The text comes right below.
        layer._build_tokens(data)
        layer._roles_arg, layer._templates_arg = specials(layer._plain.index)
        layer._finish(text)
        return layer

    def _setup(self, text, data=None):
        self._build_tokens(json.loads(text) if data is None else data)
        self._finish(text)

    def _build_tokens(self, data):
        """`_build(data)`, then the token list and index it made."""
        tokens, index, added = self._build(data)
        self._plain.tokens = tokens
        self._plain.index = index
        # What `detokenize(..., skip_special_tokens=True)` leaves out.
        self._plain.skipped = [t["id"] for t in added if t["special"]]

    def _build(self, data):
        """Checks and compiles the parsed file; returns `(tokens, index,
        added)`: the token of each id, the id of each token, the checked
        added tokens."""
        raise NotImplementedError

    def _finish(self, text):
        index = self._plain.index
        self._roles = {}
        for role, token in (self._roles_arg or {}).items():
            if token not in index:
                raise SpecError(
                    f"`roles`: the {role} token {token!r} is not a token of "
                    "this tokenizer."
                )
            self._roles[role] = index[token]
        if self._templates_arg is not None:
            parsed, self._start_ids, self._end_ids = parse_templates(
                self._templates_arg, len(self._plain.tokens)
            )
            self._templates = parsed
        self._graphs = traced_graphs(
            self._tokenize_graph, self._detokenize_graph
        )
        # Set last: the tokenizer has its file once all of it is built.
        self._json_text = text

    # --- Saving ---------------------------------------------------------------
    def get_config(self):
        return {
            **super().get_config(),
            # Saved as an asset, named by `tokenizer_json_sha256` (`_assets`).
            "tokenizer_json": None,
            "roles": self._roles_arg,
            "split_special_tokens": self.split_special_tokens,
            "templates": self._templates_arg,
            **self._asset_config(),
        }

    # --- The file as a Keras asset (`_assets`) --------------------------------
    asset_name = "tokenizer.json"
    digest_key = "tokenizer_json_sha256"
    _asset_what = "tokenizer.json"

    def _waiting_for_asset(self):
        return self._json_text is None

    def _asset_bytes(self):
        return self._json_text.encode("utf-8")

    def _load_asset_bytes(self, data, source):
        parsed = json_asset(data, source, type(self).__name__)
        if not isinstance(parsed, dict):
            raise ValueError(
                f"{type(self).__name__} could not read {source}: a "
                "tokenizer.json holds a JSON object. Received: a "
                f"{type(parsed).__name__}."
            )
        try:
            self._setup(data.decode("utf-8"), parsed)
        except SpecError as error:
            raise ValueError(
                f"{type(self).__name__} could not read {source}: {error}"
            ) from error

    @classmethod
    def _config_has_vocabulary(cls, config):
        return isinstance(config.get("tokenizer_json"), str)

    @classmethod
    def _vocabulary_kwargs(cls, data):
        if data is FROM_ASSETS:
            return {"tokenizer_json": FROM_ASSETS}
        return {"tokenizer_json": data.decode("utf-8")}

    # --- Graphs ---------------------------------------------------------------
    def _tokenize_batch(self, texts):
        self._check_ready()
        return self._graphs.tokenize(texts)

    def _detokenize_batch(self, ids):
        self._check_ready()
        ids = tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)
        return self._graphs.detokenize(ids)

    # --- Python-side API ------------------------------------------------------
    def get_vocabulary(self):
        self._check_ready()
        return list(self._plain.tokens)

    def _index(self):
        self._check_ready()
        return self._plain.index

    @property
    def special_tokens(self):
        self._check_ready()
        return dict(self._roles)

    def _special_ids(self):
        return self._plain.skipped

    @property
    def uses_core_ops_only(self):
        return True


def added_token_entries(data, model):
    """The checked `added_tokens` of a parsed `tokenizer.json` (`model`
    names the model type for the message: none may be `normalized`)."""
    added = added_tokens.check_added_tokens(
        data.get("added_tokens") or [], "`added_tokens`"
    )
    if any(t["normalized"] for t in added):
        raise SpecError(
            f"added tokens with normalized=True are not supported for a {model}"
        )
    return added


def token_table(vocabulary, added):
    """`(tokens, index)`: the token of each id and the id of each token,
    from `(token, id)` pairs and the added tokens (which win; a token
    listed twice has its last id, as in HF)."""
    size = max([i for _, i in vocabulary] + [t["id"] for t in added]) + 1
    tokens, index = [""] * size, {}
    for token, i in vocabulary:
        tokens[i] = token
        index[token] = i
    for t in added:
        tokens[t["id"]] = t["content"]
        index[t["content"]] = t["id"]
    return tokens, index
