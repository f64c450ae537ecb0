"""`BytePairTokenizer`: byte-level BPE in core TensorFlow ops.

One layer for every byte-level BPE tokenizer: GPT-2 / RoBERTa
(`vocab.json` + `merges.txt`), the `tokenizer.json` of Llama 3, Qwen 2.5 /
3, DeepSeek and GPT-4-class models, and tiktoken rank files. What differs
between them is data, not code: the normalizer, the pre-tokenizer regexes,
the merges (or ranks), the added tokens and the special-token template,
all taken from the file (`tf_input.load_tokenizer` reads them). The ids
are those of Hugging Face `tokenizers` (tiktoken for rank files). Only
core TF ops are used (no `tensorflow_text`), so a SavedModel loads
anywhere TensorFlow does. The steps, and why they look the way they do
(their costs are in benchmarks/README.md):

1. Invalid UTF-8 becomes U+FFFD exactly as `bytes.decode("utf-8",
   "replace")` does (checked on 200k random byte strings). A strict RE2
   check runs first, and the transcoding, which costs much more, only
   when a line fails it (`_utf8`).
2. Added tokens are cut out as HF does it (`_added_tokens`): those with
   `normalized=False` from the raw text, then the text is normalized
   (`_normalizers`: NFC and friends in core ops), then those with
   `normalized=True`. Each becomes a placeholder that later steps pass
   through as one word.
3. Pre-tokenization (`_pretokenizers`): each Split of the description is
   a `regex_replace` that marks the cuts, with the Oniguruma regex
   translated exactly to RE2 (`_regex`, which also removes the
   `\\s+(?!\\S)` lookahead by a proven cut) and run on a small class
   alphabet. Capture groups make RE2 leave its DFA at every match, so the
   main passes have none (GPT-2's regex written with groups is many times
   slower).
4. Words to ids: the byte-level BPE engine (`engines/byte_level_bpe.py`:
   a table of the words that are one token, chunks that no merge joins,
   the merge loop over the distinct rest, started from whole characters
   where a proof allows it).

keras-hub's `BytePairTokenizer` is several times slower (see
benchmarks/README.md) mostly because each merge step joins and hashes
strings, for every word and every copy of a word in the batch, and its
loop runs as many steps as the longest word has merges.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from tf_input.tokenizers import _added_tokens
from tf_input.tokenizers._bpe_files import load_merges
from tf_input.tokenizers._bpe_files import load_vocabulary
from tf_input.tokenizers._byte_level import ALPHABET
from tf_input.tokenizers._byte_level import rank_pairs
from tf_input.tokenizers._byte_level import token_to_bytes
from tf_input.tokenizers._normalizers import Normalizer
from tf_input.tokenizers._pretokenizers import PreTokenizer
from tf_input.tokenizers._templates import parse_templates
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.base import traced_graphs
from tf_input.tokenizers.engines.byte_level_bpe import ByteLevelBPE

# Special tokens recognised by name when `special_tokens=None`, and the
# roles they play (GPT-2 uses one token for both ends; RoBERTa uses BART's).
_KNOWN_SPECIALS = {
    "<|endoftext|>": ("bos", "eos"),
    "<s>": ("bos", "cls"),
    "</s>": ("eos", "sep"),
    "<pad>": ("pad",),
    "<unk>": ("unk",),
    "<mask>": ("mask",),
}
_ROLES = ("bos", "eos", "pad", "unk", "cls", "sep", "mask")


@keras.saving.register_keras_serializable(package="tf_input")
class BytePairTokenizer(Tokenizer):
    """Byte-level BPE tokenizer (GPT-2, RoBERTa, Llama 3, Qwen, GPT-4...).

    Gives the same ids as Hugging Face `tokenizers` for the same files
    (and as tiktoken for a rank file), and `detokenize(tokenize(text)) ==
    text` for every valid UTF-8 text that the normalizer leaves alone. It
    runs in `tf.data.Dataset.map`, `tf.function` and a SavedModel, and
    needs only core TensorFlow ops: no `tensorflow_text` import is needed
    where a saved model is loaded.

    Built directly, it is GPT-2's tokenizer for a `vocab.json` and a
    `merges.txt`. `tf_input.load_tokenizer` builds it from a
    `tokenizer.json` or a tiktoken rank file, with the normalizer,
    pre-tokenizer, added tokens, template and roles of the file, which are
    the arguments below in the file's own JSON form.

    Invalid UTF-8 is first replaced by U+FFFD as `bytes.decode("utf-8",
    "replace")` does, so such a line gets the ids of its repaired text.
    Bytes whose symbol is missing from the vocabulary are dropped (HF's
    behaviour without an `unk_token`); real byte-level vocabularies contain
    all 256. `detokenize` is HF's `decode(ids, skip_special_tokens=False)`
    (special tokens kept, unless `skip_special_tokens=True`); bytes that do
    not form UTF-8 (a cut inside a character) become U+FFFD, like HF.

    The layer holds no mutable state, so a parallel `Dataset.map` is safe.
    Its cost is a fixed number of vectorised passes per batch plus one loop
    step per merge that a chunk of a word still needs; the one slow case
    is a huge word without cut points, such as a single 1 MB run of digits
    for GPT-2, which takes many times longer than HF (ordinary text of the
    same size does not; see benchmarks/README.md).

    Args:
        vocabulary: dict from token to id (ids `0..n-1`, GPT-2's byte
            alphabet, e.g. `"Ġworld"`), or the path of a `vocab.json`.
        merges: list of `"a b"` strings (or `(a, b)` pairs), best first, or
            the path of a `merges.txt` (a `#version` line is skipped); or
            None for a rank vocabulary (tiktoken): then BPE merges the pair
            whose concatenation has the lowest id.
        special_tokens: list of str. Tokens of the vocabulary that are kept
            whole wherever they appear in the text, matched before
            pre-tokenization (leftmost, then longest), like HF's
            `add_special_tokens`. `None` (default) takes those of
            `<|endoftext|>`, `<s>`, `</s>`, `<pad>`, `<unk>`, `<mask>` that
            the vocabulary has; `[]` keeps none. Not with `added_tokens`.
        pretokenizer: `"gpt2"` (default: GPT-2's regex, no prefix space),
            None (no pre-tokenization), or a `tokenizer.json`
            `pre_tokenizer` (a dict: `Split` with a `Regex` or `String`
            pattern and any behaviour, `Sequence`, `ByteLevel`, `Digits`,
            `WhitespaceSplit`). Oniguruma regexes are translated to RE2
            exactly, or rejected with the reason.
        add_special_tokens: bool. Add the template's special tokens (see
            `templates`) around every sequence. Defaults to `False`.
        normalizer: None (default) or a `tokenizer.json` `normalizer` (a
            dict: `NFC`, `NFD`, `NFKC`, `NFKD`, `Lowercase`, `Replace`,
            `Prepend`, `Strip`, `Sequence`).
        added_tokens: None (default) or a `tokenizer.json` `added_tokens`
            list: dicts with `id`, `content`, `special`, `lstrip`,
            `rstrip`, `single_word`, `normalized`.
            Their ids may lie beyond the vocabulary (gaps between are not
            tokens: they detokenize to nothing, as in HF).
        ignore_merges: bool. A word that is itself a token is taken whole
            (Llama 3, tiktoken). Defaults to `False`.
        split_special_tokens: bool. Special added tokens in the text are
            plain text (HF's `encode_special_tokens`). Defaults to `False`.
        templates: None or `{"single": [...], "pair": [...]}` with items
            `[piece, type_id]`, `piece` a token id or `"$A"` / `"$B"`: what
            `add_special_tokens=True` adds (the `single` template) and what
            `templates()` returns. None: `bos` before and `eos` after.
        roles: None or a dict from role (`"bos"`, `"eos"`, `"pad"`, `"unk"`,
            `"cls"`, `"sep"`, `"mask"`) to a token (str). None: the roles
            of the `special_tokens` named above.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    `special_tokens` (the property) maps roles to ids: `<|endoftext|>` is
    `bos` and `eos`; `<s>` is `bos` and `cls`; `</s>` is `eos` and `sep`;
    `<pad>`, `<unk>`, `<mask>` are `pad`, `unk`, `mask` (or the `roles`
    given). Other special tokens are kept whole but have no role.

    Call arguments:
        inputs: a string scalar or a `[N]` string batch.

    Returns:
        int32 ids: `[S]` for a scalar, `tf.RaggedTensor` `[N, None]` for a
        batch.

    Example:

    >>> vocab = {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5,
    ...          "abc": 6, "<|endoftext|>": 7}
    >>> merges = ["a b", "Ġ ab", "ab c"]
    >>> tokenizer = tf_input.tokenizers.BytePairTokenizer(vocab, merges)
    >>> tokenizer("abc")
    <tf.Tensor: shape=(1,), dtype=int32, numpy=array([6], dtype=int32)>
    >>> ids = tokenizer(["abc abc", "ab<|endoftext|>"])
    >>> ids
    <tf.RaggedTensor [[6, 5, 2], [4, 7]]>
    >>> tokenizer.detokenize(ids)
    <tf.Tensor: shape=(2,), dtype=string, numpy=array([b'abc abc', b'ab<|endoftext|>'], dtype=object)>
    >>> tokenizer.special_tokens
    {'bos': 7, 'eos': 7}
    """  # noqa: E501

    def __init__(
        self,
        vocabulary,
        merges,
        *,
        special_tokens=None,
        pretokenizer="gpt2",
        add_special_tokens=False,
        normalizer=None,
        added_tokens=None,
        ignore_merges=False,
        split_special_tokens=False,
        templates=None,
        roles=None,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        if not (
            pretokenizer in ("gpt2", None) or isinstance(pretokenizer, dict)
        ):
            raise ValueError(
                "`pretokenizer` must be one of ('gpt2', None) or a Hugging "
                "Face pre_tokenizer description (a dict). Received: "
                f"pretokenizer={pretokenizer!r}."
            )
        for name, value in (
            ("ignore_merges", ignore_merges),
            ("split_special_tokens", split_special_tokens),
        ):
            if not isinstance(value, bool):
                raise ValueError(
                    f"`{name}` must be True or False. Received: "
                    f"{name}={value!r}."
                )
        self.pretokenizer = pretokenizer
        self.ignore_merges = ignore_merges
        self.split_special_tokens = split_special_tokens
        self._pre = PreTokenizer(pretokenizer)
        self._normalizer = Normalizer(normalizer)
        # A tokenizer.json vocabulary may have gaps (cl100k's, for the ids
        # of its added tokens); a vocab.json may not.
        vocabulary = load_vocabulary(
            vocabulary, allow_gaps=added_tokens is not None
        )
        if added_tokens is None:
            specials = _check_special_tokens(special_tokens, vocabulary)
            added = [
                {"id": vocabulary[t], "content": t, "special": True,
                 "normalized": False}
                for t in specials
            ]  # fmt: skip
        else:
            if special_tokens is not None:
                raise ValueError(
                    "Pass either `special_tokens` or `added_tokens`, not both."
                )
            specials = None
            added = added_tokens
        added = _added_tokens.check_added_tokens(added, "`added_tokens`")
        # Plain Python data, returned by `get_config`; kept out of Keras'
        # and tf.Module's attribute tracking (50k-entry dicts and lists).
        self._data = Untracked()
        self._data.vocabulary = vocabulary
        self._data.special_tokens = specials
        self._data.added_tokens = added if added_tokens is not None else None
        self._data.normalizer = normalizer
        self._data.templates = templates
        self._data.roles = roles
        self._set_tokens(vocabulary, added)
        decoded = [
            None if t is None else token_to_bytes(t)
            for t in self._data.model_tokens
        ]
        self._data.decoded = decoded
        token_bytes = [b"" if d is None else d[0] for d in decoded]
        if merges is None:
            with tf.init_scope():
                merge_ids, ranks = rank_pairs(
                    [d[0] if d is not None and d[1] else None for d in decoded]
                )
            self._data.merges = None
        else:
            merges, merge_ids = load_merges(merges, vocabulary)
            ranks = np.arange(len(merge_ids), dtype=np.int64)
            self._data.merges = merges
        self._set_roles(roles, added, specials)
        self._set_templates(templates)
        with tf.init_scope():
            self._build_tables(merge_ids, ranks, token_bytes, added)

    @classmethod
    def from_files(cls, vocab_json, merges_txt, **kwargs):
        """Builds a tokenizer from a `vocab.json` and a `merges.txt`.

        Args:
            vocab_json: str or path-like, a JSON object from token to id.
            merges_txt: str or path-like, one `"a b"` merge per line.
            **kwargs: the other constructor arguments.
        """
        for name, path in (
            ("vocab_json", vocab_json),
            ("merges_txt", merges_txt),
        ):
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(
                    f"`{name}` must be a file path (str or path-like). "
                    f"Received: {name}={path!r} (of type "
                    f"{type(path).__name__})."
                )
        return cls(vocab_json, merges_txt, **kwargs)

    # --- Setup ----------------------------------------------------------------
    def _set_tokens(self, vocabulary, added):
        """Token strings by id: the vocabulary's, then the added tokens'
        (which win, as in HF); ids without a token are gaps ("")."""
        size = max([*vocabulary.values()] + [t["id"] for t in added]) + 1
        model_tokens = [None] * (max(vocabulary.values()) + 1)
        for token, i in vocabulary.items():
            model_tokens[i] = token
        tokens = [t or "" for t in model_tokens]
        tokens += [""] * (size - len(tokens))
        index = dict(vocabulary)
        for t in added:
            tokens[t["id"]] = t["content"]
            index[t["content"]] = t["id"]
        self._data.model_tokens = model_tokens
        self._data.tokens = tokens
        self._data.index = index

    def _set_roles(self, roles, added, specials):
        self._roles = {}
        if roles is None:
            for token in specials or []:
                for role in _KNOWN_SPECIALS.get(token, ()):
                    self._roles.setdefault(role, self._data.index[token])
            if "bos" in self._roles:
                self._start_ids = [self._roles["bos"]]
            if "eos" in self._roles:
                self._end_ids = [self._roles["eos"]]
            return
        if not isinstance(roles, dict):
            raise TypeError(
                "`roles` must be None or a dict from role to token. "
                f"Received: roles={roles!r}."
            )
        for role, token in roles.items():
            if role not in _ROLES:
                raise ValueError(
                    f"`roles` keys must be among {_ROLES}. Received: {role!r}."
                )
            if token not in self._data.index:
                raise ValueError(
                    f"`roles`: the {role} token {token!r} is not a token of "
                    "this tokenizer."
                )
            self._roles[role] = self._data.index[token]

    def _set_templates(self, templates):
        if templates is None:
            return
        parsed, self._start_ids, self._end_ids = parse_templates(
            templates, len(self._data.tokens)
        )
        self._templates = parsed

    # --- Tables -------------------------------------------------------------
    def _build_tables(self, merge_ids, ranks, token_bytes, added):
        """`merge_ids`: int64 `[n, 3]`, (left, right, merged) per merge."""
        vocabulary = self._data.vocabulary
        alphabet = [vocabulary.get(char, -1) for char in ALPHABET]
        byte_level = [d is not None and d[1] for d in self._data.decoded]
        # Decoding: HF's ByteLevel decoder on each token's string (for an
        # added token with `normalized=True`, its normalized content).
        decoded = [d[0] if d is not None else b"" for d in self._data.decoded]
        decoded += [b""] * (len(self._data.tokens) - len(decoded))
        normalized = self._normalized_contents(added)
        for t in added:
            content = normalized.get(t["id"], t["content"])
            decoded[t["id"]] = token_to_bytes(content)[0]
        self._id_to_bytes = tf.constant(decoded, tf.string)
        # What `detokenize(..., skip_special_tokens=True)` leaves out.
        self._data.special_ids = [t["id"] for t in added if t["special"]]

        placeholders = [_added_tokens.placeholder(t["id"]) for t in added]
        self._engine = ByteLevelBPE(
            token_bytes,
            byte_level,
            alphabet,
            merge_ids,
            ranks,
            ignore_merges=self.ignore_merges,
            extra_words=(placeholders, [t["id"] for t in added]),
        )
        raw = [t for t in added if not t["normalized"]]
        normalized = [
            dict(t, content=normalized.get(t["id"], t["content"]))
            for t in added
            if t["normalized"]
        ]
        self._raw_tokens = _added_tokens.Extractor(
            raw, self.split_special_tokens, "`added_tokens`"
        )
        self._normalized_tokens = _added_tokens.Extractor(
            normalized, self.split_special_tokens, "`added_tokens`"
        )
        self._graphs = traced_graphs(
            self._tokenize_graph, self._detokenize_graph
        )

    def _normalized_contents(self, added):
        """`{id: normalized content}` of the `normalized=True` added
        tokens, what HF matches in normalized text and decodes."""
        tokens = [t for t in added if t["normalized"]]
        if not tokens or not self._normalizer:
            return {}
        contents = self._normalizer(
            tf.constant([t["content"] for t in tokens])
        ).numpy()
        return {t["id"]: c.decode("utf-8") for t, c in zip(tokens, contents)}

    # --- Graph code ---------------------------------------------------------
    def _tokenize_batch(self, texts):
        return self._graphs.tokenize(texts)

    def _tokenize_graph(self, texts):
        texts = to_valid_utf8(texts)
        # Added tokens of the raw text, then the normalizer on the rest.
        segments, per_line = self._raw_tokens(texts)  # [S], [N + 1]
        is_token = _added_tokens.is_placeholder(segments)
        if self._normalizer:
            segments = tf.where(is_token, segments, self._normalizer(segments))
        # Added tokens of each normalized segment.
        pieces, per_segment = self._normalized_tokens(segments)  # [P], [S + 1]
        is_token = _added_tokens.is_placeholder(pieces)
        words = self._pre(pieces, is_token)  # [P, W]
        ids = self._engine.encode(words.flat_values)  # [W, T]
        per_piece = tf.gather(ids.row_splits, words.row_splits)
        per_segment = tf.gather(per_piece, per_segment)
        per_line = tf.gather(per_segment, per_line)
        return tf.RaggedTensor.from_row_splits(
            ids.values, per_line, validate=False
        )

    def _detokenize_graph(self, ids):
        pieces = tf.gather(self._id_to_bytes, ids)
        return to_valid_utf8(tf.strings.reduce_join(pieces, axis=1))

    # --- Python-side API ----------------------------------------------------
    def _special_ids(self):
        return self._data.special_ids

    def _detokenize_batch(self, ids):
        ids = tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)
        return self._graphs.detokenize(ids)

    def get_vocabulary(self):
        """All tokens, in id order, as a list of Python strings.

        Ids that are no token (a gap before an added token, as in cl100k)
        hold `""`.
        """
        return list(self._data.tokens)

    def token_to_id(self, token):
        """The id of `token` (Python str); an error if it is not a token."""
        if token not in self._data.index:
            raise ValueError(
                f"{token!r} is not in the vocabulary of this "
                f"{type(self).__name__} ({len(self._data.index)} tokens)."
            )
        return self._data.index[token]

    def id_to_token(self, id):
        """The token string of `id` (Python int)."""
        token = super().id_to_token(id)
        if token == "":
            raise ValueError(
                f"`id` {id} is no token of this vocabulary (a gap between "
                "the vocabulary and the added tokens)."
            )
        return token

    @property
    def special_tokens(self):
        """Dict from role (`"bos"`, `"eos"`, `"pad"`, ...) to id."""
        return dict(self._roles)

    @property
    def uses_core_ops_only(self):
        """True: byte-level BPE needs no TF Text op."""
        return True

    def get_config(self):
        config = {
            **super().get_config(),
            "vocabulary": dict(self._data.vocabulary),
            "merges": (
                None if self._data.merges is None else list(self._data.merges)
            ),
            "special_tokens": (
                None
                if self._data.special_tokens is None
                else list(self._data.special_tokens)
            ),
            "pretokenizer": self.pretokenizer,
        }
        extra = {
            "normalizer": self._data.normalizer,
            "added_tokens": self._data.added_tokens,
            "ignore_merges": self.ignore_merges,
            "split_special_tokens": self.split_special_tokens,
            "templates": self._data.templates,
            "roles": self._data.roles,
        }
        return {**config, **extra}


def _check_special_tokens(special_tokens, vocabulary):
    if special_tokens is None:
        return [token for token in _KNOWN_SPECIALS if token in vocabulary]
    if isinstance(special_tokens, str) or not isinstance(
        special_tokens, (list, tuple)
    ):
        raise TypeError(
            "`special_tokens` must be None or a list of strings. "
            f"Received: special_tokens={special_tokens!r}."
        )
    out = []
    for token in special_tokens:
        if not isinstance(token, str) or not token:
            raise ValueError(
                "`special_tokens` must contain non-empty strings. "
                f"Received: {token!r} in special_tokens={special_tokens!r}."
            )
        if token not in vocabulary:
            raise ValueError(
                f"Special token {token!r} is not in the vocabulary. Add it "
                "to vocab.json, or leave it out of `special_tokens`."
            )
        if token not in out:
            out.append(token)
    return out
