"""Byte-level BPE in core TensorFlow ops, configured like a `tokenizer.json`.

One engine for every byte-level BPE tokenizer: GPT-2 / RoBERTa
(`vocab.json` + `merges.txt`), the `tokenizer.json` of Llama 3, Qwen 2.5 /
3, DeepSeek and GPT-4-class models, and tiktoken rank files. What differs
between them is data, not code: the normalizer, the pre-tokenizer regexes,
the merges (or ranks), the added tokens and the special-token template,
all taken from the file (`tf_input.load_tokenizer` reads them). The ids
are those of Hugging Face `tokenizers` (tiktoken for rank files). Only
core TF ops are used (no `tensorflow_text`), so a SavedModel loads
anywhere TensorFlow does. The steps, and why they look the way they do
(CPU times for one batch of 1024 lines, one thread, this 2-core machine):

1. Invalid UTF-8 becomes U+FFFD exactly as `bytes.decode("utf-8",
   "replace")` does (checked on 200k random byte strings). A strict RE2
   check runs first (3 ms on WikiText) and the transcoding (27 ms) only
   when a line fails it.
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
   main passes have none: GPT-2's regex written with groups took 800-1000
   ms on WikiText, the plain passes take about 40 ms.
4. Words to ids, in `_lookup_or_merge`. Text is Zipfian: about 85% of
   WikiText words are one GPT-2 token, found in a static table of all the
   tokens that BPE leaves whole (computed at construction by running the
   merge loop over the vocabulary; the table comes from the vocabulary and
   merges only), or of all tokens with `ignore_merges` (Llama 3,
   tiktoken: a word that is a token is taken whole). The other words are
   deduplicated, cut into chunks at byte pairs that no merge joins
   (between CJK characters, mostly), and the distinct chunks are looked
   up, or merged by a loop over all of them at once (`_merge_words`). For
   1024 lines of Japanese this turns 635 kB of unknown words into 28 kB
   of distinct chunks, and took the batch from 310 ms to 170 ms. The loop
   starts from one symbol per multi-byte character where a proof from the
   merges says that gives the same result (`_whole_characters`): most CJK
   characters, which then need no steps to be built from their bytes.

Merges are applied by rank: the rank of a merges-list entry (HF), or for a
rank file the rank of the pair's concatenation (tiktoken). Ties go to the
leftmost pair, as in both references. The merge step is shared with what
SentencePiece-style BPE will need, which differs only in where the ranks
come from.

Speed, in a `tf.data` pipeline (batches of 1024 lines, `map` with
AUTOTUNE), against HF `encode_batch` and tiktoken on the same lines: see
benchmarks/README.md. keras-hub's `BytePairTokenizer` is 3-10x slower
mostly because each merge step joins and hashes strings, for every word
and every copy of a word in the batch, and its loop runs as many steps as
the longest word has merges.
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tf_input._ragged import gather_rows
from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers import _added_tokens
from tf_input.tokenizers._normalizers import Normalizer
from tf_input.tokenizers._pretokenizers import PreTokenizer
from tf_input.tokenizers._templates import parse_templates
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.base import traced_graphs

_INF = np.iinfo(np.int64).max

# Kept for reference (and the tests' probe points): the letters and
# numbers that Oniguruma 6.9.10 (HF tokenizers 0.2x) has in `\p{L}` /
# `\p{N}` and TF 2.21's RE2 lacks (new in Unicode 16.0). Regex classes are
# now built from Oniguruma's own table (`_unicode`), which has them all.
_EXTRA_LETTERS = (
    (0x1C89, 0x1C8A), (0xA7CB, 0xA7CD), (0xA7DA, 0xA7DC), (0x105C0, 0x105F3),
    (0x10D4A, 0x10D65), (0x10D6F, 0x10D85), (0x10EC2, 0x10EC4),
    (0x11380, 0x11389), (0x1138B, 0x1138B), (0x1138E, 0x1138E),
    (0x11390, 0x113B5), (0x113B7, 0x113B7), (0x113D1, 0x113D1),
    (0x113D3, 0x113D3), (0x11BC0, 0x11BE0), (0x13460, 0x143FA),
    (0x16100, 0x1611D), (0x16D40, 0x16D6C), (0x18CFF, 0x18CFF),
    (0x1E5D0, 0x1E5ED), (0x1E5F0, 0x1E5F0), (0x2EBF0, 0x2EE5D),
)  # fmt: skip
_EXTRA_NUMBERS = (
    (0x10D40, 0x10D49), (0x116D0, 0x116E3), (0x11BF0, 0x11BF9),
    (0x16130, 0x16139), (0x16D70, 0x16D79), (0x1CCF0, 0x1CCF9),
    (0x1E5F1, 0x1E5FA),
)  # fmt: skip
# Strict: RE2 accepts surrogates and overlong forms in `[\x{0}-\x{10FFFF}]`.
_VALID_UTF8 = r"(?:[\x{0}-\x{D7FF}]|[\x{E000}-\x{10FFFF}])*"

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


def _byte_alphabet():
    """GPT-2's printable stand-in for each byte: `alphabet[byte] -> str`."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    alphabet = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in alphabet:
            alphabet[b] = chr(256 + shifted)
            shifted += 1
    return [alphabet[b] for b in range(256)]


_ALPHABET = _byte_alphabet()
# str.translate to one Latin-1 character per byte; characters below 0x144
# that are not in the alphabet become U+FFFF, which Latin-1 cannot encode.
_TO_LATIN1 = {c: "\uffff" for c in range(0x144)}
_TO_LATIN1.update({ord(char): chr(b) for b, char in enumerate(_ALPHABET)})


def _token_bytes(token):
    """`(bytes, is_byte_level)`: what a token stands for, HF's `ByteLevel`
    decoder rule (a token with a character outside the alphabet is its
    own UTF-8)."""
    try:
        return token.translate(_TO_LATIN1).encode("latin-1"), True
    except UnicodeEncodeError:
        return token.encode("utf-8"), False


def byte_level(raw):
    """The byte-level spelling (GPT-2's alphabet) of `raw` bytes."""
    return "".join(_ALPHABET[b] for b in raw)


def _merges_properly_ordered(merge_ids, ranks, num_tokens):
    """True if every merge outranks the merges that made its two parts.

    Then a merge never creates a pair that ranks below it, so BPE applies
    ranks in increasing order and all occurrences of a word's lowest pair
    can be merged in one step. Trained merges files (GPT-2, RoBERTa, HF
    trainers, and every `tokenizer.json` in ../shared/data/llm) always
    are; tiktoken's rank pairs are not (43,674 of cl100k's 233,378 pairs
    have a part ranked above the whole), and for those each step checks
    the new pairs it makes (`_merge_words`).
    """
    made_at = np.full(num_tokens, -1, np.int64)
    np.maximum.at(made_at, merge_ids[:, 2], ranks)
    return bool(
        np.all(made_at[merge_ids[:, 0]] < ranks)
        and np.all(made_at[merge_ids[:, 1]] < ranks)
    )


def _rank_pairs(token_bytes):
    """tiktoken's merges: every split of a token into two tokens.

    `token_bytes[i]` is the bytes of token `i` (None for no token).
    Returns int64 `[n, 3]` (left, right, merged) and the ranks (the merged
    token's id): BPE merges the adjacent pair whose concatenation has the
    lowest rank. Vectorised (all cuts of all tokens, looked up at once):
    for o200k's 200k tokens, 0.3 s against 2.1 s for a Python loop.
    """
    known = [i for i, raw in enumerate(token_bytes) if raw is not None]
    table = _string_table([token_bytes[i] for i in known], known)
    long = [i for i in known if len(token_bytes[i]) > 1]
    if not long:
        return np.zeros([0, 3], np.int64), np.zeros([0], np.int64)
    cuts = np.array([len(token_bytes[i]) - 1 for i in long], np.int64)
    owner = np.repeat(np.arange(len(long)), cuts)
    first = np.repeat(np.cumsum(cuts) - cuts, cuts)
    cut = np.arange(len(owner)) - first + 1
    strings = tf.gather(tf.constant([token_bytes[i] for i in long]), owner)
    left = table.lookup(
        tf.strings.substr(strings, np.zeros_like(cut), cut)
    ).numpy()
    right = table.lookup(
        tf.strings.substr(strings, cut, np.full_like(cut, 1 << 30))
    ).numpy()
    found = (left >= 0) & (right >= 0)
    merged = np.array(long, np.int64)[owner[found]]
    ids = np.stack([left[found], right[found], merged], 1)
    return ids, merged.copy()


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
    for GPT-2 (measured 24 s, HF 2 s; 1 MB of ordinary text: 1.0 s, HF 1.3
    s).

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
        vocabulary = _load_vocabulary(
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
            None if t is None else _token_bytes(t)
            for t in self._data.model_tokens
        ]
        self._data.decoded = decoded
        token_bytes = [b"" if d is None else d[0] for d in decoded]
        if merges is None:
            with tf.init_scope():
                merge_ids, ranks = _rank_pairs(
                    [d[0] if d is not None and d[1] else None for d in decoded]
                )
            self._data.merges = None
        else:
            merges, merge_ids = _load_merges(merges, vocabulary)
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
        model_tokens = self._data.model_tokens
        num_tokens = len(model_tokens)
        self._num_tokens = num_tokens
        alphabet = [vocabulary.get(char, -1) for char in _ALPHABET]
        self._byte_ids = tf.constant(alphabet, tf.int32)
        self._missing_bytes = min(alphabet) < 0
        byte_level = [d is not None and d[1] for d in self._data.decoded]
        # Decoding: HF's ByteLevel decoder on each token's string (for an
        # added token with `normalized=True`, its normalized content).
        decoded = [d[0] if d is not None else b"" for d in self._data.decoded]
        decoded += [b""] * (len(self._data.tokens) - len(decoded))
        normalized = self._normalized_contents(added)
        for t in added:
            content = normalized.get(t["id"], t["content"])
            decoded[t["id"]] = _token_bytes(content)[0]
        self._id_to_bytes = tf.constant(decoded, tf.string)
        # What `detokenize(..., skip_special_tokens=True)` leaves out.
        self._data.special_ids = [t["id"] for t in added if t["special"]]

        # Later duplicates win, as in HF's merge map.
        keys = merge_ids[:, 0] * num_tokens + merge_ids[:, 1]
        _, last = np.unique(keys[::-1], return_index=True)
        last = len(keys) - 1 - last
        keys, ranks, made = keys[last], ranks[last], merge_ids[last, 2]
        self._all_at_once = _merges_properly_ordered(
            merge_ids[last], ranks, num_tokens
        )
        # Tables cannot be empty: pad with a key no pair or word can have.
        self._merge_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(np.append(keys, -1), tf.int64),
                # Rank in the high half, so that a min picks the best pair.
                tf.constant(np.append((ranks << 32) | made, _INF), tf.int64),
            ),
            default_value=tf.constant(_INF, tf.int64),
        )
        first_byte = np.array([raw[0] if raw else 0 for raw in token_bytes])
        last_byte = np.array([raw[-1] if raw else 0 for raw in token_bytes])
        junction = (
            last_byte[merge_ids[:, 0]] * 256 + first_byte[merge_ids[:, 1]]
        )
        joinable = np.zeros(256 * 256, bool)
        joinable[junction] = True
        self._joinable = tf.constant(joinable)
        # Junctions between whole characters, by character pair; the others
        # (a token that starts or ends inside a character) by byte pair.
        last_char = np.array(
            [_edge_char(raw, last=True) for raw in token_bytes]
        )
        first_char = np.array(
            [_edge_char(raw, last=False) for raw in token_bytes]
        )
        left_char = last_char[merge_ids[:, 0]]
        right_char = first_char[merge_ids[:, 1]]
        whole = (left_char >= 0) & (right_char >= 0)
        partial = np.zeros(256 * 256, bool)
        partial[junction[~whole]] = True
        self._partial_joinable = tf.constant(partial)
        char_keys = np.unique(left_char[whole] * 0x110000 + right_char[whole])
        self._char_joinable = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(np.append(char_keys, -1), tf.int64),
                tf.ones([len(char_keys) + 1], tf.int64),
            ),
            default_value=tf.constant(0, tf.int64),
        )

        # Words that are one token: run BPE over every byte-level token and
        # keep those that come out whole (for GPT-2, all 50256 of them).
        # Built from the vocabulary and merges alone, never from a corpus.
        # (From bytes: the whole characters below need this result.)
        self._char_table = None
        candidates = [i for i in range(num_tokens) if byte_level[i]]
        whole = []
        if candidates:
            # Traced: eagerly, the loop's small ops cost 2x more in total.
            merge = tf.function(self._merge_words, autograph=False)
            values, splits = merge(
                tf.constant([token_bytes[i] for i in candidates], tf.string)
            )
            values, splits = values.numpy(), splits.numpy()
            whole = [
                i
                for i, length, start in zip(
                    candidates, splits[1:] - splits[:-1], splits[:-1]
                )
                if length == 1 and values[start] == i
            ]
        self._chunk_table = _string_table(
            [token_bytes[i] for i in whole], whole
        )
        if not self._missing_bytes:
            chars, values, left, right = _whole_characters(
                token_bytes, whole, merge_ids[last], ranks, num_tokens
            )
            self._char_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(np.append(chars, -1), tf.int64),
                    tf.constant(np.append(values, -1), tf.int64),
                ),
                default_value=tf.constant(-1, tf.int64),
            )
            self._joins_before = tf.constant(left.reshape(-1))
            self._joins_after = tf.constant(right.reshape(-1))
        words = candidates if self.ignore_merges else whole
        placeholders = [_added_tokens.placeholder(t["id"]) for t in added]
        self._word_table = _string_table(
            [token_bytes[i] for i in words] + placeholders,
            words + [t["id"] for t in added],
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
        texts = _to_valid_utf8(texts)
        # Added tokens of the raw text, then the normalizer on the rest.
        segments, per_line = self._raw_tokens(texts)  # [S], [N + 1]
        is_token = _added_tokens.is_placeholder(segments)
        if self._normalizer:
            segments = tf.where(is_token, segments, self._normalizer(segments))
        # Added tokens of each normalized segment.
        pieces, per_segment = self._normalized_tokens(segments)  # [P], [S + 1]
        is_token = _added_tokens.is_placeholder(pieces)
        words = self._pre(pieces, is_token)  # [P, W]
        ids = self._words_to_ids(words.flat_values)  # [W, T]
        per_piece = tf.gather(ids.row_splits, words.row_splits)
        per_segment = tf.gather(per_piece, per_segment)
        per_line = tf.gather(per_segment, per_line)
        return tf.RaggedTensor.from_row_splits(
            ids.values, per_line, validate=False
        )

    def _words_to_ids(self, words):
        """`[W]` words -> ragged `[W, None]` int32 ids."""
        values, splits = self._lookup_or_merge(
            words, self._word_table, self._merge_chunks
        )
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    def _lookup_or_merge(self, pieces, table, merge):
        return lookup_or_merge(pieces, table, merge)

    def _merge_chunks(self, words):
        """BPE of `[M]` distinct words -> `(ids, row_splits)`, by chunks.

        Words are cut at byte pairs that no merge ever joins (the first
        byte of a token can never follow the last byte of the token before
        it there), so BPE of a word is the BPE of each chunk. Chunks repeat
        far more than words: in 1024 lines of Japanese, 635 kB of words
        missing from the table are 28 kB of distinct chunks (Chinese: 264
        kB, 2 kB), so each distinct chunk is looked up, or merged, once.
        """
        if self._missing_bytes:
            # Dropped bytes would join their neighbours: no cuts.
            return self._merge_words(words)
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        starts = tf.cumsum(lengths, exclusive=True)
        joined = tf.strings.reduce_join(words)
        byte_values = tf.cast(tf.io.decode_raw(joined, tf.uint8), tf.int32)
        num_bytes = tf.size(byte_values, out_type=tf.int64)
        pair = byte_values[:-1] * 256 + byte_values[1:]
        word_start = marks(starts[1:], num_bytes + 1)[1:num_bytes] > 0
        # Between characters, the two characters decide (a byte pair such
        # as a CJK character's last byte and the next one's first byte is
        # joined by some merge in any vocabulary with CJK words); inside a
        # character, the byte pair does.
        chars, offsets = tf.strings.unicode_decode_with_offsets(joined, "UTF-8")
        offsets = tf.cast(offsets, tf.int64)
        key = tf.cast(chars[:-1], tf.int64) * 0x110000 + tf.cast(
            chars[1:], tf.int64
        )
        at = offsets[1:]
        joins = (self._char_joinable.lookup(key) > 0) | tf.gather(
            self._partial_joinable, tf.gather(pair, tf.maximum(at - 1, 0))
        )
        char_cut = marks(_take(at, ~joins), num_bytes + 1)[1:num_bytes] > 0
        inside = (byte_values[1:] >= 0x80) & (byte_values[1:] < 0xC0)
        cut = word_start | tf.where(
            inside, ~tf.gather(self._joinable, pair), char_cut
        )
        # [:size] keeps it empty when there are no bytes at all.
        cut = tf.concat([[True], cut], 0)[:num_bytes]
        chunk_at = tf.where(cut)[:, 0]
        chunk_len = tf.concat([chunk_at[1:], [num_bytes]], 0) - chunk_at
        chunks = tf.strings.substr(joined, chunk_at, chunk_len)
        values, chunk_splits = self._lookup_or_merge(
            chunks, self._chunk_table, self._merge_words
        )
        first_chunk = tf.searchsorted(chunk_at, starts, out_type=tf.int64)
        word_splits = tf.gather(
            chunk_splits,
            tf.concat(
                [first_chunk, tf.size(chunk_at, out_type=tf.int64)[None]], 0
            ),
        )
        return values, word_splits

    def _merge_words(self, words):
        """BPE of `[M]` strings at once -> `(ids, row_splits)`.

        Each step finds, in every chunk (see below), the lowest-ranked
        adjacent pair and merges its occurrences, left to right (`a a a` ->
        `aa a`), as HF's priority queue and tiktoken's loop do one at a
        time. When the merges are properly ordered
        (`_merges_properly_ordered`) a merge never makes a pair that ranks
        lower, so all occurrences can go in one step. Otherwise (tiktoken
        ranks) an occurrence whose merge makes a lower-ranked pair with
        its neighbours is the last one taken in that step: the sequential
        algorithm would merge that new pair next. The loop stops when no
        chunk has a pair left to merge.
        """
        num_words = tf.size(words)
        lengths = tf.cast(tf.strings.length(words), tf.int64)
        byte_values = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
        word_of = tf.cast(
            row_ids(tf.concat([[0], tf.cumsum(lengths)], 0)), tf.int32
        )
        tok = tf.gather(self._byte_ids, tf.cast(byte_values, tf.int32))
        if self._missing_bytes:
            known = tok >= 0
            tok, word_of = _take(tok, known), _take(word_of, known)
            byte_values = _take(byte_values, known)
        # Chunks: cut at byte pairs that no merge joins (as in
        # `_merge_chunks`, whose inputs are single chunks already; this
        # serves the other callers). Chunks are independent, so the loop's
        # "lowest pair" is per chunk: a long CJK word does not need one
        # step per merge of the whole word.
        pair = tf.cast(byte_values[:-1], tf.int32) * 256 + tf.cast(
            byte_values[1:], tf.int32
        )
        joined = (word_of[:-1] == word_of[1:]) & tf.gather(self._joinable, pair)
        # [:size] keeps these empty when there are no bytes at all.
        starts = tf.concat([[True], ~joined], 0)[: tf.size(tok)]
        chunk_word = _take(word_of, starts)
        chunk_of = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        num_chunks = tf.size(chunk_word)
        if self._char_table is not None:
            tok, chunk_of = self._start_from_characters(
                tok, chunk_of, tf.cast(byte_values, tf.int32)
            )
        tok, chunk_of = self._merge_sequences(tok, chunk_of, num_chunks)
        counts = tf.math.unsorted_segment_sum(
            tf.ones_like(chunk_of, tf.int64),
            tf.gather(chunk_word, chunk_of),
            num_words,
        )
        return tok, tf.concat([[0], tf.cumsum(counts)], 0)

    def _start_from_characters(self, tok, chunk_of, byte_values):
        """Replaces the bytes of each character that BPE may start from as
        one token (`_whole_characters`, which proves it exact) by that
        token: a CJK character is then one symbol of the merge loop instead
        of three, and needs no loop steps to be built. On 1024 lines of
        Hong Lou Meng with Qwen 3, 85% of the characters of the distinct
        chunks start whole: 51k symbols instead of 119k bytes, 10 loop
        steps instead of 24, and the loop takes 35 ms instead of 65 ms
        (CPU time)."""
        size = tf.size(byte_values, out_type=tf.int64)
        lead_at = tf.where(byte_values >= 0xC0)[:, 0]
        lead = tf.gather(byte_values, lead_at)
        length = tf.cast(
            2
            + tf.cast(lead >= 0xE0, tf.int32)
            + tf.cast(lead >= 0xF0, tf.int32),
            tf.int64,
        )
        end = tf.minimum(lead_at + length, size)  # one past the character
        # The character's bytes, packed big-endian (`_pack`); the bytes
        # past its end (or the sequence) shifted out again.
        padded = tf.cast(tf.concat([byte_values, [0, 0, 0]], 0), tf.int64)
        packed = tf.cast(lead, tf.int64)
        for offset in (1, 2, 3):
            packed = packed * 256 + tf.gather(padded, lead_at + offset)
        key = tf.bitwise.right_shift(packed, 8 * (4 - length))
        chunk_pad = tf.concat([[-1], chunk_of, [-1]], 0)
        byte_pad = tf.concat([[0], byte_values, [0]], 0)
        chunk = tf.gather(chunk_pad, lead_at + 1)
        # Edges: the chunk's, or a byte that joins no proper part of it.
        found = self._char_table.lookup(key)
        classes = tf.maximum(found, 0)  # (-1: not such a character)
        left_class = tf.bitwise.right_shift(classes, 32) & 0xFFFF
        right_class = tf.bitwise.right_shift(classes, 48)
        before = tf.cast(tf.gather(byte_pad, lead_at), tf.int64)
        after = tf.cast(tf.gather(byte_pad, end + 1), tf.int64)
        start = (
            (found >= 0)
            & (tf.gather(chunk_pad, end) == chunk)
            & (
                (tf.gather(chunk_pad, lead_at) != chunk)
                | ~tf.gather(self._joins_before, left_class * 256 + before)
            )
            & (
                (tf.gather(chunk_pad, end + 1) != chunk)
                | ~tf.gather(self._joins_after, right_class * 256 + after)
            )
        )
        at = _take(lead_at, start)
        tok = tf.tensor_scatter_nd_update(
            tok,
            at[:, None],
            tf.cast(_take(found, start) & 0xFFFFFFFF, tf.int32),
        )
        # Drop the character's other bytes: +1 after its lead, -1 past it.
        inside = tf.cumsum(
            marks(
                tf.concat([at + 1, _take(end, start)], 0),
                size + 1,
                tf.concat(
                    [tf.ones_like(at, tf.int32), -tf.ones_like(at, tf.int32)],
                    0,
                ),
            )
        )[:size]
        keep = inside == 0
        return _take(tok, keep), _take(chunk_of, keep)

    def _merge_sequences(self, tok, chunk_of, num_chunks):
        return merge_sequences(
            tok,
            chunk_of,
            num_chunks,
            merge_table=self._merge_table,
            num_tokens=self._num_tokens,
            all_at_once=self._all_at_once,
        )

    def _detokenize_graph(self, ids):
        pieces = tf.gather(self._id_to_bytes, ids)
        return _to_valid_utf8(tf.strings.reduce_join(pieces, axis=1))

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


def lookup_or_merge(pieces, table, merge):
    """`[P]` strings -> `(ids, row_splits)`: BPE of each piece.

    Pieces that are one token come from one hash lookup; the others are
    deduplicated and passed to `merge`. The result is assembled with
    gathers only (on CPU, a scatter of 360k values took 4x a gather).
    """
    num_pieces = tf.size(pieces, out_type=tf.int64)
    single = table.lookup(pieces)
    hit = single >= 0
    miss_at = tf.where(~hit)[:, 0]
    unique, which = tf.unique(tf.gather(pieces, miss_at), tf.int64)
    merged_values, merged_splits = merge(unique)
    # Per piece: its length and where its ids start in
    # [single ids of all pieces, merged ids of unique misses].
    miss_rank = tf.cumsum(tf.cast(~hit, tf.int64), exclusive=True)
    unique_of = tf.gather(
        tf.concat([which, [0]], 0),
        tf.minimum(miss_rank, tf.size(which, out_type=tf.int64)),
    )
    lengths = tf.where(
        hit,
        tf.ones_like(single),
        tf.gather(
            # Padded: `unique_of` is 0 for hits even when nothing missed.
            tf.concat([merged_splits[1:] - merged_splits[:-1], [0]], 0),
            unique_of,
        ),
    )
    first = tf.where(
        hit,
        tf.range(num_pieces),
        num_pieces + tf.gather(merged_splits, unique_of),
    )
    splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    values = gather_rows(
        tf.concat([tf.cast(single, tf.int32), merged_values], 0),
        first,
        splits,
    )
    return values, splits


def _previous(values, fill):
    """`values` shifted right by one, `fill` first: constant slice bounds
    (a slice to a computed length is 3 more graph nodes)."""
    return tf.concat([[fill], values], 0)[:-1]


def _first_steps_only(at, tok, chunk_of, num_chunks, best, lookup):
    """The picks `at` (pair positions, increasing) up to, per chunk, the
    first one whose merged piece pairs at a better rank than this step's
    with its left neighbour (the previous pick's result if adjacent, else
    the token before) or the token after it."""
    size = tf.size(tok, out_type=tf.int64)
    chunk = tf.gather(chunk_of, at)
    picked = tf.gather(best, at)
    merged = tf.bitwise.bitwise_and(picked, 0xFFFFFFFF)
    rank = tf.bitwise.right_shift(picked, 32)
    before = tf.maximum(at - 1, 0)
    has_left = (at > 0) & tf.equal(tf.gather(chunk_of, before), chunk)
    left = tf.where(
        tf.equal(at, _previous(at, -3) + 2),
        _previous(merged, 0),
        tf.gather(tok, before),
    )
    after = tf.minimum(at + 2, size - 1)
    has_right = (at + 2 < size) & tf.equal(tf.gather(chunk_of, after), chunk)
    left_rank = tf.bitwise.right_shift(lookup(left, merged), 32)
    right_rank = tf.bitwise.right_shift(
        lookup(merged, tf.gather(tok, after)), 32
    )
    lower = (has_left & (left_rank < rank)) | (has_right & (right_rank < rank))
    index = tf.range(tf.size(at, out_type=tf.int64))
    first_lower = tf.math.unsorted_segment_min(
        tf.where(lower, index, tf.int64.max), chunk, num_chunks
    )
    return _take(at, index <= tf.gather(first_lower, chunk))


def merge_sequences(
    tok,
    chunk_of,
    num_chunks,
    *,
    merge_table,
    num_tokens,
    all_at_once,
    tied_ranks=None,
    set_aside=False,
):
    """The BPE loop on token sequences: `tok` int32 `[T]`, `chunk_of`
    int32 `[T]` (non-decreasing chunk ids, `num_chunks` of them) ->
    the merged `(tok, chunk_of)`, in order.

    Only the merge table (int64 `left * num_tokens + right` -> `rank << 32
    | merged id`, `_INF` for no merge) and the initial tokens say what is
    merged: the same loop serves merges-list BPE (rank = position in the
    list), tiktoken ranks, and any other rank order (SentencePiece's
    scores, say).

    One step, per chunk: the pairs of the chunk's best (rank, merged id)
    are the picks; runs of one picked pair (`a a a`) take every other
    pick from the left. `tied_ranks`: None, or a bool tensor indexed by
    rank, True for a rank that several merged tokens share (SentencePiece
    pieces of equal score); a step then picks the pairs of the chunk's
    best rank, and for a tied rank only the leftmost, as sentencepiece's
    queue (score, then leftmost) does. `all_at_once` False (ranks that
    need not grow with the merges): a chunk keeps its picks only up to
    the first one whose merged token forms a better-ranked pair with a
    neighbour; the rest wait for the next step. `set_aside`: the tokens of
    a chunk that has no pair left to merge leave the loop (each later step
    then works on the unfinished chunks only: most chunks finish in a few
    steps, the longest take 15-20), and are put back in order at the end.

    Written for few graph nodes, since each `tf.data` iterator
    instantiates and optimizes the map function again (~0.2 ms of CPU a
    node): no `tf.cond` in the body (the overlap and first-steps rules
    run on the picked positions only, every step), int64 tokens inside
    the loop, constant slice bounds. 124 ops in the body, against 167 for
    the loop it replaced, which took 105 ms of a 220 ms one-line epoch of
    SentencePiece BPE.
    """
    num_tokens = tf.constant(num_tokens, tf.int64)

    def step_lookup(left, right):
        return merge_table.lookup(left * num_tokens + right)

    def step(tok, chunk_of, _, *finished):
        pair_chunk = chunk_of[:-1]
        # `best`: rank << 32 | merged id, so the min is the best pair.
        best = tf.where(
            tf.equal(pair_chunk, chunk_of[1:]),
            step_lookup(tok[:-1], tok[1:]),
            _INF,
        )
        chunk_min = tf.math.unsorted_segment_min(best, pair_chunk, num_chunks)
        chunk_best = tf.gather(chunk_min, pair_chunk)
        rank = tf.bitwise.right_shift(best, 32)
        if tied_ranks is None:
            pick = tf.equal(best, chunk_best)
        else:
            # The chunk's best rank, whichever piece it makes.
            pick = tf.equal(rank, tf.bitwise.right_shift(chunk_best, 32))
        # From here on, the picked positions only (a few per chunk).
        at = tf.reshape(tf.where(pick & (best != _INF)), [-1])
        index = tf.range(tf.size(at, out_type=tf.int64))
        # Runs of adjacent picks (`a a a`): every other one from the left.
        # A run never crosses chunks, so a chunk's first pick starts one.
        new_run = tf.not_equal(at, _previous(at, -2) + 1)
        run_start = tf.gather(
            _take(index, new_run), tf.cumsum(tf.cast(new_run, tf.int64)) - 1
        )
        keep = tf.equal((index - run_start) % 2, 0)
        if tied_ranks is not None:
            chunk = tf.gather(pair_chunk, at)
            first = tf.not_equal(chunk, _previous(chunk, -1))
            tied = tf.gather(
                tied_ranks,
                tf.minimum(
                    tf.gather(rank, at), tf.size(tied_ranks, tf.int64) - 1
                ),
            )
            keep = keep & (first | ~tied)
        at = _take(at, keep)
        if not all_at_once:
            at = _first_steps_only(
                at, tok, chunk_of, num_chunks, best, step_lookup
            )
        tok = tf.tensor_scatter_nd_update(
            tok,
            at[:, None],
            tf.bitwise.bitwise_and(tf.gather(best, at), 0xFFFFFFFF),
        )
        gone = tf.math.unsorted_segment_sum(
            tf.ones_like(at), at + 1, tf.size(tok, out_type=tf.int64)
        )
        stays = tf.equal(gone, 0)
        if set_aside:
            # A chunk without a pair to merge (none of its tokens merge in
            # this step) is done.
            done = tf.equal(tf.gather(chunk_min, chunk_of), _INF)
            stays = stays & ~done
            out = tf.reshape(tf.where(done), [-1])
            finished = (
                tf.concat([finished[0], tf.gather(tok, out)], 0),
                tf.concat([finished[1], tf.gather(chunk_of, out)], 0),
            )
        kept = tf.reshape(tf.where(stays), [-1])
        return (
            tf.gather(tok, kept),
            tf.gather(chunk_of, kept),
            tf.size(at) > 0,
        ) + tuple(finished)

    tok = tf.cast(tok, tf.int64)
    loop_vars = [tok, chunk_of, tf.constant(True)]
    if set_aside:
        loop_vars += [tok[:0], chunk_of[:0]]
    tok, chunk_of, _, *finished = tf.while_loop(
        lambda tok, chunk_of, merged, *_: merged & (tf.size(tok) > 1),
        step,
        loop_vars,
        shape_invariants=[tf.TensorShape([None])] * 2
        + [tf.TensorShape([])]
        + [tf.TensorShape([None])] * (len(loop_vars) - 3),
    )
    if set_aside:
        # Finished chunks left in the order they finished, each whole.
        tok = tf.concat([finished[0], tok], 0)
        chunk_of = tf.concat([finished[1], chunk_of], 0)
        # Sorted by chunk, stable (`top_k` puts equal values in index
        # order): 3 graph nodes, `tf.argsort` 5.
        order = tf.math.top_k(-chunk_of, tf.size(chunk_of)).indices
        tok, chunk_of = tf.gather(tok, order), tf.gather(chunk_of, order)
    return tf.cast(tok, tf.int32), chunk_of


def _whole_characters(token_bytes, whole, merge_ids, ranks, num_tokens):
    """The multi-byte characters that BPE may start from as one symbol.

    `whole`: the ids of the tokens that BPE of their own bytes leaves
    whole; `merge_ids` int64 `[n, 3]` (left, right, merged) and `ranks`,
    without duplicate pairs.

    Starting the merge loop from character `c`'s token `t` instead of its
    bytes gives the same BPE, in any text, if (checked here):

    1. BPE of `c`'s bytes alone is `[t]` (`t` is in `whole`);
    2. every merge with `t` as a part ranks above every merge that can
       occur inside `c` (all merges whose result is a run of `c`'s bytes;
       their highest rank bounds the ranks of `c`'s own BPE);

    and where it stands in the text (checked per occurrence, in
    `_start_from_characters`):

    3. no merge can join a proper part of `c` with a neighbour: none has
       a proper prefix of `c` as its right part and, as its left part, a
       token ending in the byte before `c`; none has a proper suffix of
       `c` as its left part and a token starting with the byte after `c`
       as its right part (or the edge is the chunk's).

    Proof. By 3, while `c`'s bytes are not yet one token, no pair across
    its edges is a merge (such a pair's tokens are a proper part of `c`
    and a neighbour): `c`'s bytes merge as they would alone, which by 1
    ends in `t`, and every merge outside `c` in that time is the lowest
    pair of the sequence while `c` still has one of its own, so it ranks
    at most as high as the highest merge inside `c`. Started from `t`,
    the outside sees the same pairs, plus pairs with `t`, which by 2 rank
    above all of those merges: it makes the same merges in the same
    order, and reaches the state that the byte start has once `c`
    becomes `t`. From there both runs are the same. For ordered merges
    (every merge outranks those that made its parts:
    `_merges_properly_ordered`) 2 always holds; tiktoken ranks need it
    checked. Characters started whole one at a time: each step is exact
    whatever its neighbours are, so all of them are.

    Returns:
        `(keys, values, left, right)`: per character, its UTF-8 bytes
        packed big-endian into an int (`_pack`), and its token id with its
        left and right edge classes in bits 32-47 and 48-63; and bool
        `[classes, 256]` tables, True where the byte before (after) the
        character can join a proper part of it (3). Class 0 joins none.
    """
    made_at = np.full(num_tokens, -1, np.int64)
    np.maximum.at(made_at, merge_ids[:, 2], ranks)
    part_min = np.full(num_tokens, _INF, np.int64)
    np.minimum.at(part_min, merge_ids[:, 0], ranks)
    np.minimum.at(part_min, merge_ids[:, 1], ranks)
    # The highest rank of a merge that makes each byte string (of any of
    # the tokens that spell it).
    made = {}
    for raw, rank in zip(token_bytes, made_at.tolist()):
        if raw:
            made[raw] = max(rank, made.get(raw, -1))
    # Merges whose right part may be a proper prefix of a character (a
    # lead byte, then fewer continuation bytes than it announces), or
    # whose left part may be a proper suffix of one (continuation bytes):
    # the bytes next to that part that they join.
    lead = np.array([raw[0] if raw else 0 for raw in token_bytes])
    size = np.array([len(raw) for raw in token_bytes])
    tail = np.array(
        [raw is not None and all(0x80 <= x < 0xC0 for x in raw) for raw in
         token_bytes]
    ) & (size <= 3)  # fmt: skip
    head = (lead >= 0xC0) & (size <= 3)
    before, after = {}, {}
    for left, right, _ in merge_ids[head[merge_ids[:, 1]]]:
        before.setdefault(token_bytes[right], set()).add(token_bytes[left][-1])
    for left, right, _ in merge_ids[tail[merge_ids[:, 0]]]:
        after.setdefault(token_bytes[left], set()).add(token_bytes[right][0])
    classes = [{}, {}]  # frozenset of bytes -> class, per edge
    keys, values = [], []
    for i in whole:
        raw = token_bytes[i]
        if not 2 <= len(raw) <= 4:
            continue
        try:
            one = len(raw.decode("utf-8")) == 1
        except UnicodeDecodeError:
            one = False
        if not one:
            continue
        inside = max(
            made.get(raw[a:b], -1)
            for a in range(len(raw))
            for b in range(a + 2, len(raw) + 1)
        )
        if part_min[i] <= inside:
            continue
        cuts = range(1, len(raw))
        edges = (
            frozenset().union(*(before.get(raw[:j], ()) for j in cuts)),
            frozenset().union(*(after.get(raw[j:], ()) for j in cuts)),
        )
        left, right = (
            table.setdefault(edge, len(table) + 1) if edge else 0
            for table, edge in zip(classes, edges)
        )
        if max(left, right) >= 1 << 15:
            continue  # (the class must fit its 15 bits; never seen)
        keys.append(_pack(raw))
        values.append(i | left << 32 | right << 48)
    tables = []
    for table in classes:
        joins = np.zeros([len(table) + 1, 256], bool)
        for edge, k in table.items():
            if k < 1 << 15:
                joins[k, list(edge)] = True
        tables.append(joins)
    return np.array(keys, np.int64), np.array(values, np.int64), *tables


def _pack(raw):
    """Up to 4 bytes as one int, big-endian: what `_merge_words` computes
    for the bytes from a lead byte to the end of its character."""
    return int.from_bytes(raw, "big")


def _edge_char(raw, last):
    """The code point of the first (last) character of `raw` bytes, or -1
    if the token starts (ends) inside a character."""
    if not raw:
        return -1
    if last:
        start = len(raw) - 1
        while start > 0 and 0x80 <= raw[start] < 0xC0:
            start -= 1
        edge = raw[start:]
    else:
        lead = raw[0]
        size = (
            1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        )
        edge = raw[:size]
    try:
        text = edge.decode("utf-8")
    except UnicodeDecodeError:
        return -1
    return ord(text) if len(text) == 1 else -1


def _string_table(keys, values):
    """A string -> int64 table; missing keys give -1."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant([b"", *keys], tf.string),
            tf.constant([-1, *values], tf.int64),
        ),
        default_value=tf.constant(-1, tf.int64),
    )


def _take(values, mask):
    """`values[mask]` for 1-D tensors, in 3 graph nodes (`boolean_mask` uses
    about 15; every node costs time each time tf.data builds an iterator)."""
    return tf.gather(values, tf.reshape(tf.where(mask), [-1]))


def _to_valid_utf8(texts):
    """Replaces invalid UTF-8 by U+FFFD (only on batches that need it)."""
    valid = tf.strings.regex_full_match(texts, _VALID_UTF8)
    return tf.cond(
        tf.reduce_all(valid),
        lambda: texts,
        lambda: tf.strings.unicode_transcode(
            texts,
            "UTF-8",
            "UTF-8",
            errors="replace",
            replacement_char=0xFFFD,
        ),
    )


def _load_vocabulary(vocabulary, allow_gaps=False):
    """Reads and checks `vocabulary` (dict or path) -> `{token: id}`.

    Ids must be `0..n-1`, each once; with `allow_gaps`, any distinct ids
    >= 0.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        where = f"Vocabulary file {path!r}"
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"Vocabulary file {path!r} not found. Pass the path of a "
                "`vocab.json` (a JSON object from token to id) or a dict."
            ) from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{where} is not UTF-8 text: {e}.") from None
        try:
            vocabulary = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{where} is not valid JSON: {e.msg} at line {e.lineno}, "
                f"column {e.colno}."
            ) from None
    elif isinstance(vocabulary, dict):
        where = "`vocabulary`"
    else:
        raise TypeError(
            "`vocabulary` must be a dict from token to id or the path of a "
            f"`vocab.json`. Received: vocabulary of type "
            f"{type(vocabulary).__name__}."
        )
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise ValueError(
            f"{where} must be a non-empty JSON object from token to id. "
            f"Received: a {type(vocabulary).__name__} of length "
            f"{len(vocabulary) if hasattr(vocabulary, '__len__') else '?'}."
        )
    for token, i in vocabulary.items():
        if not isinstance(token, str) or not token:
            raise ValueError(
                f"{where}: every token must be a non-empty string. "
                f"Received: token {token!r} (id {i!r})."
            )
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise ValueError(
                f"{where}: every id must be an integer. Received: "
                f"{token!r}: {i!r}."
            )
    ids = sorted(int(i) for i in vocabulary.values())
    if allow_gaps and ids[0] >= 0 and len(set(ids)) == len(ids):
        pass
    elif ids != list(range(len(ids))):
        seen = set()
        duplicate = next((i for i in ids if i in seen or seen.add(i)), None)
        if duplicate is not None:
            tokens = [t for t, i in vocabulary.items() if i == duplicate]
            problem = f"id {duplicate} is used by {tokens[:3]}"
        else:
            missing = next(i for i in range(len(ids)) if i not in seen)
            problem = f"id {missing} is missing (largest id: {ids[-1]})"
        raise ValueError(
            f"{where}: ids must be 0..{len(ids) - 1}, each once; {problem}."
        )
    return {token: int(i) for token, i in vocabulary.items()}


def _load_merges(merges, vocabulary):
    """Reads and checks `merges` (list or path).

    Returns:
        `(merges, ids)`: the list of `"a b"` strings and an int64 array
        `[n, 3]` of (left id, right id, merged id).
    """
    if isinstance(merges, (str, os.PathLike)):
        path = os.fspath(merges)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"Merges file {path!r} not found. Pass the path of a "
                "`merges.txt` (one `a b` merge per line) or a list."
            ) from None
        except UnicodeDecodeError as e:
            raise ValueError(f"Merges file {path!r} is not UTF-8 text: {e}.")
        numbered = [(n, line.rstrip("\r")) for n, line in enumerate(lines, 1)]
        numbered = [
            (n, line)
            for n, line in numbered
            if line and not line.startswith("#version")
        ]

        def where(n):
            return f"Merges file {path!r}, line {n}"

    elif isinstance(merges, (list, tuple)):
        numbered = []
        for n, merge in enumerate(merges):
            pair = (
                isinstance(merge, (list, tuple))
                and len(merge) == 2
                and all(isinstance(part, str) for part in merge)
            )
            if not (pair or isinstance(merge, str)):
                raise ValueError(
                    f"`merges[{n}]` must be a string 'a b' or a pair of "
                    f"strings. Received: {merge!r}."
                )
            if pair:
                numbered.append((n, list(merge)))
            elif not merge.startswith("#version"):
                numbered.append((n, merge))

        def where(n):
            return f"`merges[{n}]`"

    else:
        raise TypeError(
            "`merges` must be a list of 'a b' strings or the path of a "
            f"`merges.txt`. Received: merges of type {type(merges).__name__}."
        )
    out = [merge for _, merge in numbered]
    parts = [
        merge if isinstance(merge, list) else merge.split(" ") for merge in out
    ]
    get = vocabulary.get
    rows = [
        (get(pair[0]), get(pair[-1]), get(pair[0] + pair[-1])) for pair in parts
    ]
    for (n, merge), pair, row in zip(numbered, parts, rows):
        if None in row or len(pair) != 2 or not pair[0] or not pair[1]:
            if isinstance(merge, list):
                # A pair (Qwen's tokenizer.json): tokens may hold spaces.
                left, right = merge
            else:
                left, _, right = merge.partition(" ")
                if " " in right:
                    right = ""
            row = (get(left), get(right), get(left + right))
            _bad_merge(where(n), merge, left, right, row)
    ids = np.array(rows, np.int64).reshape(-1, 3)
    return out, ids


def _bad_merge(where, merge, left, right, row):
    if not left or not right:
        raise ValueError(
            f"{where}: a merge is two tokens separated by one space, "
            f"like 'Ġ t'. Received: {merge!r}."
        )
    missing = (left, right, left + right)[row.index(None)]
    raise ValueError(
        f"{where}: token {missing!r} of merge {merge!r} is not in "
        "the vocabulary. Use the vocab.json that came with these "
        "merges."
    )


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
