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

`tokenize_with_offsets` runs the same steps, keeping track of where
each piece of text came from: a token's span is the lengths of the
tokens before it in its word, plus its word's start in its piece (from
the split passes), its piece's in its segment, that segment's in the
line. Where the normalizer or the UTF-8 repair rewrote characters, spans
go back through the alignments Hugging Face gives them (`_offsets`);
those steps run only for batches that such a rewrite touched.

keras-hub's `BytePairTokenizer` is several times slower (see
benchmarks/README.md) mostly because each merge step joins and hashes
strings, for every word and every copy of a word in the batch, and its
loop runs as many steps as the longest word has merges.
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input._validation import check_bool
from tf_input.tokenizers import _offsets
from tf_input.tokenizers._assets import FROM_ASSETS
from tf_input.tokenizers._assets import VocabularyAsset
from tf_input.tokenizers._byte_level import ALPHABET
from tf_input.tokenizers._byte_level import rank_pairs
from tf_input.tokenizers._byte_level import token_to_bytes
from tf_input.tokenizers._byte_pair_arguments import check_pretokenizer
from tf_input.tokenizers._byte_pair_arguments import check_unsplittable
from tf_input.tokenizers._byte_pair_arguments import load_merges
from tf_input.tokenizers._byte_pair_arguments import load_vocabulary
from tf_input.tokenizers._byte_pair_arguments import read_asset
from tf_input.tokenizers._byte_pair_arguments import renamed_special_tokens
from tf_input.tokenizers._byte_pair_arguments import role_ids
from tf_input.tokenizers._byte_pair_arguments import token_tables
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.base import TracedOnce
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.base import traced_graphs
from tf_input.tokenizers.engines.byte_level_bpe import ByteLevelBPE
from tf_input.tokenizers.hf import added_tokens as _added_tokens
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.pre_tokenizers import PreTokenizer
from tf_input.tokenizers.hf.processors import parse_templates


@keras.saving.register_keras_serializable(package="tf_input")
class BytePairTokenizer(VocabularyAsset, Tokenizer):
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

    A `.keras` file keeps the vocabulary, the merges and the added tokens
    as an asset (`vocabulary.json`; the config holds its SHA-256).

    Invalid UTF-8 is first replaced by U+FFFD as `bytes.decode("utf-8",
    "replace")` does, so such a line gets the ids of its repaired text.
    Bytes whose symbol is missing from the vocabulary are dropped (HF's
    behaviour without an `unk_token`); real byte-level vocabularies contain
    all 256. `detokenize` is HF's `decode(ids, skip_special_tokens=False)`
    (special tokens kept, unless `skip_special_tokens=True`); bytes that do
    not form UTF-8 (a cut inside a character) become U+FFFD, like HF.

    `tokenize_with_offsets` also gives each token's span, in bytes or in
    characters, and its word index: the characters and word indices are
    HF's `encoding.offsets` and `encoding.word_ids` (checked on every
    line of the shared corpora for GPT-2, Qwen 3, o200k, cl100k and
    DeepSeek V4), through normalizers NFC, NFD, NFKC and NFKD (others
    raise `NotImplementedError` there), added tokens and `trim_offsets`.

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
        unsplittable_tokens: list of str. Tokens of the vocabulary that are
            kept whole wherever they appear in the text, matched before
            pre-tokenization (leftmost, then longest), like HF's
            `add_special_tokens` (keras-hub's name). `None` (default) takes
            those of `<|endoftext|>`, `<s>`, `</s>`, `<pad>`, `<unk>`,
            `<mask>` that the vocabulary has; `[]` keeps none. Not with
            `added_tokens`. (`special_tokens=` is its deprecated name.)
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
            of the `unsplittable_tokens` named above.
        trim_offsets: bool. `tokenize_with_offsets` leaves the spaces at
            the ends of a token out of its span, as HF's `ByteLevel`
            post-processor with `trim_offsets=true` does (RoBERTa; a
            `tokenizer.json` sets it). Ids are the same either way.
            Defaults to `False` (GPT-2, Llama 3, Qwen, tiktoken).
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    `special_tokens` (the property) maps roles to ids: `<|endoftext|>` is
    `bos` and `eos`; `<s>` is `bos` and `cls`; `</s>` is `eos` and `sep`;
    `<pad>`, `<unk>`, `<mask>` are `pad`, `unk`, `mask` (or the `roles`
    given). Other unsplittable tokens are kept whole but have no role.

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
        vocabulary: dict[str, int] | str | os.PathLike,
        merges: list[str] | str | os.PathLike | None,
        *,
        unsplittable_tokens: list[str] | None = None,
        pretokenizer: str | dict | None = "gpt2",
        add_special_tokens: bool = False,
        normalizer: dict | None = None,
        added_tokens: list[dict] | None = None,
        ignore_merges: bool = False,
        split_special_tokens: bool = False,
        templates: dict | None = None,
        roles: dict[str, str] | None = None,
        trim_offsets: bool = False,
        **kwargs,
    ):
        unsplittable_tokens = renamed_special_tokens(
            kwargs, unsplittable_tokens
        )
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        if unsplittable_tokens is not None and added_tokens is not None:
            raise ValueError(
                "Pass either `unsplittable_tokens` or `added_tokens`, not both."
            )
        self.pretokenizer = check_pretokenizer(pretokenizer)
        self.ignore_merges = check_bool("ignore_merges", ignore_merges)
        self.split_special_tokens = check_bool(
            "split_special_tokens", split_special_tokens
        )
        self.trim_offsets = check_bool("trim_offsets", trim_offsets)
        self._pre = PreTokenizer(pretokenizer)
        self._normalizer = Normalizer(normalizer)
        self._init_asset()
        # Plain Python data, returned by `get_config`; kept out of Keras'
        # and tf.Module's attribute tracking (50k-entry dicts and lists).
        self._data = Untracked()
        self._data.vocabulary = None
        self._data.unsplittable = unsplittable_tokens
        # Until the asset is loaded: the added tokens of a config written
        # when they were in it, not in the asset.
        self._data.added_tokens = added_tokens
        self._data.normalizer = normalizer
        self._data.templates = templates
        self._data.roles = roles
        if vocabulary is not FROM_ASSETS:
            self._set_vocabulary(vocabulary, merges, added_tokens)

    def _set_vocabulary(self, vocabulary, merges, added_tokens):
        """Reads and checks the vocabulary, merges and added tokens, and
        builds the tables (in `__init__`, or in `load_assets` for a
        `.keras` file)."""
        self._data.added_tokens = added_tokens
        # A tokenizer.json vocabulary may have gaps (cl100k's, for the ids
        # of its added tokens); a vocab.json may not.
        vocabulary = load_vocabulary(
            vocabulary, allow_gaps=added_tokens is not None
        )
        specials = None
        if added_tokens is None:
            specials = check_unsplittable(self._data.unsplittable, vocabulary)
            added = [
                {"id": vocabulary[t], "content": t, "special": True,
                 "normalized": False}
                for t in specials
            ]  # fmt: skip
        else:
            added = added_tokens
        added = _added_tokens.check_added_tokens(added, "`added_tokens`")
        self._data.unsplittable = specials
        model_tokens, tokens, index = token_tables(vocabulary, added)
        self._data.model_tokens = model_tokens
        self._data.tokens = tokens
        self._data.index = index
        decoded = [
            None if t is None else token_to_bytes(t)
            for t in self._data.model_tokens
        ]
        self._data.decoded = decoded
        if merges is None:
            with tf.init_scope():
                merge_ids, ranks = rank_pairs(
                    [d[0] if d is not None and d[1] else None for d in decoded]
                )
        else:
            merges, merge_ids = load_merges(merges, vocabulary)
            ranks = np.arange(len(merge_ids), dtype=np.int64)
        self._set_roles(self._data.roles, specials)
        self._set_templates(self._data.templates)
        token_bytes = [b"" if d is None else d[0] for d in decoded]
        with tf.init_scope():
            self._build_tables(vocabulary, merge_ids, ranks, token_bytes, added)
        # Set last: the tokenizer has a vocabulary once all of it is built.
        self._data.merges = merges
        self._data.vocabulary = vocabulary

    @classmethod
    def from_files(
        cls,
        vocab_json: str | os.PathLike,
        merges_txt: str | os.PathLike,
        **kwargs,
    ) -> BytePairTokenizer:
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
    def _set_roles(self, roles, specials):
        self._roles = role_ids(roles, specials, self._data.index)
        if roles is None:
            if "bos" in self._roles:
                self._start_ids = [self._roles["bos"]]
            if "eos" in self._roles:
                self._end_ids = [self._roles["eos"]]

    def _set_templates(self, templates):
        if templates is None:
            return
        parsed, self._start_ids, self._end_ids = parse_templates(
            templates, len(self._data.tokens)
        )
        self._templates = parsed

    # --- Tables -------------------------------------------------------------
    def _build_tables(self, vocabulary, merge_ids, ranks, token_bytes, added):
        """`merge_ids`: int64 `[n, 3]`, (left, right, merged) per merge."""
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
        # Offsets: each token's length in bytes, and for `trim_offsets` the
        # spaces at its ends (HF counts the characters of its string).
        self._token_lengths = tf.constant([len(d) for d in decoded], tf.int64)
        if self.trim_offsets:
            self._trims = tf.constant(
                _space_counts(self._data.tokens), tf.int64
            )
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
        self._graphs.offsets = TracedOnce(
            self._offsets_graph, tf.TensorSpec([None], tf.string)
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

    def _tokenize_with_offsets_batch(self, texts):
        self._normalizer.check_alignments(type(self).__name__)
        return self._graphs.offsets(texts)

    def _offsets_graph(self, raw):
        """`_tokenize_graph`, keeping track of where every piece of text
        came from: `[N]` strings -> ragged ids, byte starts, byte ends and
        word indices. Each token's span is found in its word (the lengths
        of the tokens before it), then its word's start in its piece, its
        piece's in its segment (through the normalizer's alignments), its
        segment's in the line (through the UTF-8 repair)."""
        texts = to_valid_utf8(raw)
        segments, per_line, segment_starts, segment_ends = self._raw_tokens(
            texts, spans=True
        )  # [S], [N + 1], [S], [S]
        segment_is_token = _added_tokens.is_placeholder(segments)
        normalized = segments
        if self._normalizer:
            normalized = tf.where(
                segment_is_token, segments, self._normalizer(segments)
            )
        pieces, per_segment, piece_starts, piece_ends = self._normalized_tokens(
            normalized, spans=True
        )  # [P], [S + 1], [P], [P]
        is_token = _added_tokens.is_placeholder(pieces)
        words, word_starts = self._pre(pieces, is_token, starts=True)
        ids = self._engine.encode(words.flat_values)  # [W, T]

        # In the piece (an added token is a whole piece).
        lengths = tf.gather(self._token_lengths, ids.values)
        token_word = row_ids(ids.row_splits)
        token_piece = tf.gather(row_ids(words.row_splits), token_word)
        # (Bytes without a symbol, dropped, are not counted: HF's BPE
        # places tokens by the lengths of the tokens before them alone.)
        within = _offsets.starts_in_rows(lengths, ids.row_splits)
        starts = tf.gather(word_starts, token_word) + within
        ends = starts + lengths
        whole = tf.gather(is_token, token_piece)
        starts = tf.where(whole, tf.zeros_like(starts), starts)
        ends = tf.where(
            whole, tf.gather(piece_ends - piece_starts, token_piece), ends
        )
        if self._pre.prefix_space:
            # The prefix space (at -1) is aligned with nothing: HF's
            # `prepend` gives it `(0, 0)`.
            starts = tf.maximum(starts, 0)
            ends = tf.maximum(ends, 0)
        # In the segment.
        starts += tf.gather(piece_starts, token_piece)
        ends += tf.gather(piece_starts, token_piece)
        token_segment = tf.gather(row_ids(per_segment), token_piece)
        if self._normalizer:
            starts, ends = tf.cond(
                tf.reduce_any(normalized != segments),
                lambda: self._before_normalizer(
                    tf.where(segment_is_token, "", segments),
                    starts,
                    ends,
                    token_segment,
                ),
                lambda: (starts, ends),
            )
        # In the line.
        starts, ends = _offsets.in_lines(
            starts,
            ends,
            segment_is_token,
            segment_starts,
            segment_ends,
            token_segment,
        )
        token_line = tf.gather(row_ids(per_line), token_segment)
        line_splits = tf.gather(
            tf.gather(tf.gather(ids.row_splits, words.row_splits), per_segment),
            per_line,
        )
        if self.trim_offsets:
            starts, ends = self._trimmed(ids, starts, ends, line_splits)
        starts, ends = _offsets.before_repair(
            raw, texts, starts, ends, token_line
        )
        word_splits = tf.gather(
            tf.gather(words.row_splits, per_segment), per_line
        )
        word_ids = token_word - tf.gather(word_splits, token_line)

        def rows(values):
            return tf.RaggedTensor.from_row_splits(
                values, line_splits, validate=False
            )

        return rows(ids.values), rows(starts), rows(ends), rows(word_ids)

    def _before_normalizer(self, segments, starts, ends, token_segment):
        """Spans in the normalized segments -> spans in `segments`."""
        normalized, sources = self._normalizer.with_sources(segments)
        return _offsets.before_rewrite(
            starts, ends, token_segment, segments, normalized, sources
        )

    def _trimmed(self, ids, starts, ends, line_splits):
        """HF's `ByteLevel` `process_offsets`: a token's leading (trailing)
        spaces, counted in characters of its string, move its start (end)
        in, except one leading space of a line's first token when a prefix
        space is added."""
        trims = tf.gather(self._trims, ids.values)
        leading, trailing = trims[:, 0], trims[:, 1]
        if self._pre.prefix_space:
            first = tf.math.unsorted_segment_sum(
                tf.ones_like(line_splits[:-1]),
                line_splits[:-1],
                tf.size(ids.values, out_type=tf.int64) + 1,
            )[:-1]
            keep = ((first > 0) | (starts == 0)) & (leading == 1)
            leading = tf.where(keep, tf.zeros_like(leading), leading)
        starts = tf.minimum(starts + leading, ends)
        ends = tf.where(
            (trailing > 0) & (ends >= trailing),
            tf.maximum(ends - trailing, starts),
            ends,
        )
        return starts, ends

    def _detokenize_graph(self, ids):
        pieces = tf.gather(self._id_to_bytes, ids)
        return to_valid_utf8(tf.strings.reduce_join(pieces, axis=1))

    # --- Python-side API ----------------------------------------------------
    def _special_ids(self):
        self._check_ready()
        return self._data.special_ids

    def _detokenize_batch(self, ids):
        ids = tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)
        return self._graphs.detokenize(ids)

    def get_vocabulary(self) -> list[str]:
        """All tokens, in id order, as a list of Python strings.

        Ids that are no token (a gap before an added token, as in cl100k)
        hold `""`.
        """
        self._check_ready()
        return list(self._data.tokens)

    def vocabulary_size(self) -> int:
        """Number of ids, `max id + 1` (gaps included)."""
        self._check_ready()
        return len(self._data.tokens)

    def token_to_id(self, token: str) -> int:
        """The id of `token` (Python str); an error if it is not a token."""
        self._check_ready()
        if token not in self._data.index:
            raise ValueError(
                f"{token!r} is not in the vocabulary of this "
                f"{type(self).__name__} ({len(self._data.index)} tokens)."
            )
        return self._data.index[token]

    def id_to_token(self, id: int) -> str:
        """The token string of `id` (Python int)."""
        token = super().id_to_token(id)
        if token == "":
            raise ValueError(
                f"`id` {id} is no token of this vocabulary (a gap between "
                "the vocabulary and the added tokens)."
            )
        return token

    @property
    def special_tokens(self) -> dict[str, int]:
        """Dict from role (`"bos"`, `"eos"`, `"pad"`, ...) to id."""
        self._check_ready()
        return dict(self._roles)

    @property
    def uses_core_ops_only(self) -> bool:
        """True: byte-level BPE needs no TF Text op."""
        return True

    def get_config(self):
        return {
            **super().get_config(),
            # Saved as an asset, named by `vocabulary_sha256` (`_assets`).
            "vocabulary": None,
            "merges": None,
            "added_tokens": None,
            "unsplittable_tokens": (
                None
                if self._data.unsplittable is None
                else list(self._data.unsplittable)
            ),
            "pretokenizer": self.pretokenizer,
            "normalizer": self._data.normalizer,
            "ignore_merges": self.ignore_merges,
            "split_special_tokens": self.split_special_tokens,
            "templates": self._data.templates,
            "roles": self._data.roles,
            "trim_offsets": self.trim_offsets,
            **self._asset_config(),
        }

    # --- The vocabulary as a Keras asset (`_assets`) -------------------------
    asset_name = "vocabulary.json"
    digest_key = "vocabulary_sha256"

    def _waiting_for_asset(self):
        return self._data.vocabulary is None

    def _asset_bytes(self):
        content = {
            "vocabulary": self._data.vocabulary,
            "merges": self._data.merges,
            "added_tokens": self._data.added_tokens,
        }
        return json.dumps(content, ensure_ascii=False).encode("utf-8")

    def _load_asset_bytes(self, data, source):
        content = {"added_tokens": self._data.added_tokens}
        content.update(read_asset(data, source))
        self._set_vocabulary(**content)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "special_tokens" in config:
            # The key of configs written before the argument was renamed.
            config["unsplittable_tokens"] = config.pop("special_tokens")
        return super().from_config(config)

    @classmethod
    def _config_has_vocabulary(cls, config):
        return isinstance(config.get("vocabulary"), dict)

    @classmethod
    def _vocabulary_kwargs(cls, data):
        if data is FROM_ASSETS:
            return {"vocabulary": FROM_ASSETS, "merges": None}
        return read_asset(data, "the remembered vocabulary")


def _space_counts(tokens):
    """`[n, 2]`: the spaces at the start and at the end of each token's
    string, as HF's `process_offsets` counts them (the byte-level space
    `Ġ`, or a white-space character of an added token's text)."""

    def spaces(text):
        return len(text) - len(
            text.lstrip("".join(c for c in set(text) if _is_space(c)))
        )

    out = []
    for token in tokens:
        token = token or ""
        out.append([spaces(token), spaces(token[::-1])])
    return out


def _is_space(char):
    return char == "Ġ" or ord(char) in WHITE_SPACE
