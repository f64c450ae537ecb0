"""A Hugging Face `Unigram` `tokenizer.json` (ALBERT, T5, XLM-R style).

`UnigramTokenizer` gives HF `tokenizers`' ids with core TensorFlow ops
only. It follows HF's pipeline, which differs from `sentencepiece` (whose
`.model` files `SentencePieceTokenizer` reads) in three ways that change
ids:

* **Precompiled** (the charsmap normalizer) looks up a whole grapheme
  cluster of fewer than 6 bytes first, where sentencepiece takes the
  longest key at each byte (`hf.normalizers.precompiled`).
* **The Viterbi search** adds f64 scores (sentencepiece: f32), keeps the
  first best candidate for a position (the one that starts earliest) and
  runs on each word of the `Metaspace` pre-tokenizer (split at "▁");
  unknown characters fuse into one unknown token, or with `byte_fallback`
  become the `<0xXX>` tokens of their bytes (`engines.viterbi`).
* **The Metaspace decoder** drops every "▁" of the first token (not just
  a leading space) (`hf.decoders`).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers import _offsets
from tf_input.tokenizers import _unicode
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.engines.viterbi import Viterbi
from tf_input.tokenizers.hf import added_tokens
from tf_input.tokenizers.hf import decoders
from tf_input.tokenizers.hf import pre_tokenizers
from tf_input.tokenizers.hf.normalizers import Normalizer
from tf_input.tokenizers.hf.pre_tokenizers import SPACE
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import excerpt
from tf_input.tokenizers.hf.spec import require
from tf_input.tokenizers.json_file_tokenizer import JsonFileTokenizer
from tf_input.tokenizers.json_file_tokenizer import added_token_entries
from tf_input.tokenizers.json_file_tokenizer import token_table

_SEP = b"\xfe"  # a word break: never in valid UTF-8
_WHITE_SPACE = _unicode.WHITE_SPACE.re2()


def check_vocabulary(model):
    """The `[piece, score]` list of a Unigram `model` section, checked."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or not vocab:
        raise SpecError("a Unigram 'vocab' must be a non-empty list")
    for n, item in enumerate(vocab):
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or not isinstance(item[1], (int, float))
        ):
            raise SpecError(
                f"Unigram vocab entry {n} must be [piece, score]. Received: "
                f"{excerpt(item, 80)}"
            )
    unk = model.get("unk_id")
    if unk is None or isinstance(unk, bool) or not isinstance(unk, int):
        raise SpecError(
            "a Unigram model without an integer unk_id is not supported "
            f"(HF fails on unknown characters then). Received: unk_id={unk!r}"
        )
    if not 0 <= unk < len(vocab):
        raise SpecError(
            f"unk_id={unk} is outside the vocabulary of {len(vocab)} pieces"
        )
    if model.get("byte_fallback"):
        pieces = {piece for piece, _ in vocab}
        missing = [b for b in range(256) if f"<0x{b:02X}>" not in pieces]
        if missing:
            raise SpecError(
                "byte_fallback with some of the 256 tokens <0x00>..<0xFF> "
                f"missing (e.g. <0x{missing[0]:02X}>) is not supported"
            )
    return [(piece, float(score)) for piece, score in vocab]


def pre_tokenization(spec):
    """`(whitespace_split, metaspace)` of a `pre_tokenizer`: a Metaspace,
    alone or after a WhitespaceSplit (older T5 files), or a
    WhitespaceSplit alone, or none; a `SpecError` for anything else."""
    try:
        parts = pre_tokenizers.parse(spec, "`pre_tokenizer`")
    except SpecError:
        parts = [None]
    whitespace = bool(parts) and isinstance(
        parts[0], pre_tokenizers.WhitespaceSplit
    )
    rest = parts[1:] if whitespace else parts
    if not rest:
        return whitespace, None
    if len(rest) == 1 and isinstance(rest[0], pre_tokenizers.Metaspace):
        if not (whitespace and rest[0].prepend_scheme == "first"):
            return whitespace, rest[0]
    raise SpecError(
        f"the pre_tokenizer {excerpt(spec)} is not supported for a Unigram "
        "model (only Metaspace('▁'), alone or after a WhitespaceSplit with "
        "a prepend scheme other than 'first')"
    )


@keras.saving.register_keras_serializable(package="tf_input")
class UnigramTokenizer(JsonFileTokenizer):
    """A Hugging Face `Unigram` `tokenizer.json`, id for id as HF.

    Built by `tf_input.load_tokenizer` for a `tokenizer.json` whose model
    is `Unigram` (the files transformers writes for ALBERT, T5, XLM-R,
    mBART...): its normalizers (`Precompiled`, `NFKD`, `StripAccents`,
    `Lowercase`, `Replace`, `Strip`... in a `Sequence`), its `Metaspace`
    pre-tokenizer (any prepend scheme, split or not), `byte_fallback`, the
    added tokens and the post-processor's template. Core TensorFlow ops
    only: a SavedModel holding it loads with a plain `import tensorflow`.
    `detokenize` is HF's `decode(ids)` with the file's decoder (any chain
    of HF's decoders; none: the tokens joined by spaces). In a `.keras`
    file the `tokenizer.json` is an asset.

    Args:
        tokenizer_json: str, the text of the `tokenizer.json`.
        add_special_tokens: bool. Add the post-processor's tokens (ALBERT:
            `[CLS]` ... `[SEP]`; T5: `</s>` after). Defaults to `False`.
        roles: None or a dict from role (`"unk"`, `"pad"`...) to token.
        split_special_tokens: bool. Special added tokens are plain text.
        templates: None or `{"single": [...], "pair": [...]}`, the
            post-processor's templates (see `BytePairTokenizer`).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string scalar or a `[N]` string batch.

    Returns:
        int32 ids: `[S]` for a scalar, `tf.RaggedTensor` `[N, None]` for a
        batch.
    """

    def _build(self, data):
        model = require(data, "model", "tokenizer.json")
        vocab = check_vocabulary(model)
        self._whitespace_split, self._metaspace = pre_tokenization(
            data.get("pre_tokenizer")
        )
        added = added_token_entries(data, "Unigram model")
        tokens, index = token_table(
            [(piece, i) for i, (piece, _) in enumerate(vocab)], added
        )
        with tf.init_scope():
            self._normalizer = Normalizer(data.get("normalizer"))
            self._added = added_tokens.Extractor(
                added, self.split_special_tokens, "`added_tokens`"
            )
            self._placeholder_ids = lookup_table(
                [added_tokens.placeholder(t["id"]) for t in added],
                [t["id"] for t in added],
                -1,
                key_dtype=tf.string,
                value_dtype=tf.int32,
            )
            self._unigram = Viterbi(
                vocab, model["unk_id"], bool(model.get("byte_fallback"))
            )
            self._decoder = decoders.Decoder(data.get("decoder"), tokens)
        return tokens, index, added

    # --- Graph code ---------------------------------------------------------
    def _tokenize_graph(self, texts):
        texts = to_valid_utf8(texts)
        segments, per_line = self._added(texts)
        is_token = added_tokens.is_placeholder(segments)
        if self._normalizer:
            segments = tf.where(is_token, segments, self._normalizer(segments))
        words, word_splits_of_segments, per_line = self._words(
            segments, is_token, per_line
        )
        ids, id_splits = self._ids(words)
        # Rows: ids -> words -> segments -> lines.
        line_splits = tf.gather(
            id_splits, tf.gather(word_splits_of_segments, per_line)
        )
        return tf.RaggedTensor.from_row_splits(ids, line_splits, validate=False)

    def _words(self, segments, is_token, per_line):
        """`(words, splits of the words of each segment, per_line)`: the
        pre-tokenizer on the segments (added tokens stay one word)."""
        if self._whitespace_split:
            # HF's WhitespaceSplit: text segments split at (and lose) runs
            # of White_Space; each piece is a segment from here on.
            marked = tf.where(
                is_token,
                segments,
                tf.strings.regex_replace(segments, f"{_WHITE_SPACE}+", _SEP),
            )
            segments, piece_splits = _split_marked(marked)
            per_line = tf.gather(piece_splits, per_line)
            is_token = added_tokens.is_placeholder(segments)
        split = True
        if self._metaspace is not None:
            split = self._metaspace.split
            segments = self._metaspace.apply(segments, is_token, per_line)
        # Words: a text segment splits before each "▁" (HF's
        # MergedWithNext); empty words go.
        marked = segments
        if split:
            marked = tf.where(
                is_token,
                segments,
                tf.strings.regex_replace(
                    segments, SPACE, _SEP + SPACE.encode()
                ),
            )
        words, word_splits = _split_marked(marked)
        return words, word_splits, per_line

    def _ids(self, words, spans=False):
        """`(ids, splits of the ids of each word)`: the Viterbi on the
        words, the added tokens' ids stitched back between them. With
        `spans`, also each token's start and end in its word, in
        characters (an added token: 0, 0)."""
        token_id = self._placeholder_ids.lookup(words)
        plain = tf.where(token_id < 0)[:, 0]
        # Most batches hold no added token: every word is searched and
        # its tokens are the answer as they are (nothing to stitch).
        searched_all = tf.equal(tf.size(plain), tf.size(words))
        searched = tf.cond(
            searched_all, lambda: words, lambda: tf.gather(words, plain)
        )
        if spans:
            values, word_splits, *bounds = self._unigram.with_spans(searched)
        else:
            values, word_splits = self._unigram(searched)
            bounds = []
        return tf.cond(
            searched_all,
            lambda: (values, word_splits, *bounds),
            lambda: _stitch(token_id, plain, values, word_splits, bounds),
        )

    # --- Offsets ---------------------------------------------------------
    def _tokenize_with_offsets_batch(self, texts):
        self._normalizer.check_alignments(type(self).__name__)
        return self._offsets_graph(texts)

    def _tokenize_with_character_offsets_batch(self, texts):
        self._normalizer.check_alignments(type(self).__name__)
        return self._offsets_graph(texts, unit="char")

    def _offsets_graph(self, raw, unit="byte"):
        """`_tokenize_graph`, keeping track of where every character came
        from: `[N]` strings -> ragged ids, starts, ends (in bytes, or with
        `unit="char"` in characters) and word indices.

        Each word (a piece of the pre-tokenizer) is cut from a segment
        (the text between added tokens) after the normalizer: every
        character of a word knows its character in the normalized segment
        (the word's start there, less the Metaspace's "▁" in front, which
        HF aligns with the piece's first character), hence, through the
        normalizer's sources, its bytes in the segment. A token's span in
        its word (the Viterbi's, whole characters) goes back through its
        first and last characters' sources, then into the
        line (the segment's start) and the bytes given (the UTF-8
        repair). In characters, the sources are the span, and the segment's
        start is counted in characters of the repaired line (one U+FFFD
        where `bytes.decode("utf-8", "replace")` has one). The words are
        HF's: the non-empty pieces, an added token being one.
        """
        texts = to_valid_utf8(raw)
        segments, per_line, segment_starts, segment_ends = self._added(
            texts, spans=True
        )
        is_token = added_tokens.is_placeholder(segments)
        plain = tf.where(is_token, "", segments)
        rewritten, sources = plain, None
        if self._normalizer:
            rewritten, sources = self._normalizer.with_source_reader(plain)
        text = tf.where(is_token, segments, rewritten)
        count = tf.size(segments, out_type=tf.int64)
        # Pieces: the WhitespaceSplit's, or the segments. Their start (in
        # characters) in the normalized segment.
        if self._whitespace_split:
            marked = tf.where(
                is_token,
                text,
                tf.strings.regex_replace(
                    text, f"({_WHITE_SPACE}+)", _SEP + b"\\1" + _SEP
                ),
            )
            parts, owner, index, start = _parts(marked)
            # Parts alternate text, white space, text...
            keep = tf.where((index % 2 == 0) & (tf.strings.length(parts) > 0))[
                :, 0
            ]
            pieces = tf.gather(parts, keep)
            piece_segment = tf.gather(owner, keep)
            piece_start = tf.gather(start, keep)
        else:
            pieces, piece_segment = text, tf.range(count)
            piece_start = tf.zeros([count], tf.int64)
        pieces_of_segments = _splits(piece_segment, count)
        piece_lines = tf.gather(pieces_of_segments, per_line)
        piece_is_token = tf.gather(is_token, piece_segment)
        spaced, prepended, split = pieces, None, True
        if self._metaspace is not None:
            split = self._metaspace.split
            spaced, prepended = self._metaspace.apply_with_prefixes(
                pieces, piece_is_token, piece_lines
            )
        marked = spaced
        if split:
            marked = tf.where(
                piece_is_token,
                spaced,
                tf.strings.regex_replace(spaced, SPACE, _SEP + SPACE.encode()),
            )
        parts, owner, _, start = _parts(marked)
        keep = tf.where(tf.strings.length(parts) > 0)[:, 0]
        words = tf.gather(parts, keep)
        word_piece = tf.gather(owner, keep)
        word_start = tf.gather(start, keep)
        word_segment = tf.gather(piece_segment, word_piece)
        words_of_segments = _splits(word_segment, count)
        values, splits, starts, ends = self._ids(words, spans=True)
        # Each token's span in its word (whole characters) -> in its
        # segment, through its first and last characters: their places
        # in the normalized segment, their sources, those sources' bytes
        # in the segment (`_offsets.remap`'s rule; a token holds whole
        # characters, so it takes its sources whole).
        token_word = row_ids(splits)
        piece = tf.gather(word_piece, token_word)
        token_segment = tf.gather(word_segment, token_word)
        if unit == "byte":
            bytes_of = _offsets.WideCharacters(plain).reader(token_segment)
        source_of = None if sources is None else sources.reader(token_segment)
        in_text = ~tf.gather(is_token, token_segment)
        # A character's place in the segment is its place in its word,
        # plus the word's start in its piece, less the "▁" put in front,
        # plus the piece's start.
        shift = tf.gather(word_start, token_word)
        if prepended is not None:
            shift -= tf.cast(tf.gather(prepended, piece), tf.int64)
        piece_first = tf.gather(piece_start, piece)

        def moved(character, side):
            """Where the start (`side` 0) or end (1) of character
            `character` of a word goes in its segment's bytes."""
            at = tf.maximum(character + shift, 0) + piece_first
            source = at if source_of is None else source_of(at)
            known = in_text & (source >= 0)
            if unit == "char":
                return tf.where(known, source + side, 0)
            old_start, old_bytes = bytes_of(tf.where(known, source, 0))
            return tf.where(known, old_start + side * old_bytes, 0)

        starts, ends = moved(starts, 0), moved(ends - 1, 1)
        segment_line = row_ids(per_line)
        if unit == "char":
            segment_starts, segment_ends = _offsets.to_characters(
                texts, segment_starts, segment_ends, segment_line, valid=True
            )
        starts, ends = _offsets.in_lines(
            starts, ends, is_token, segment_starts, segment_ends, token_segment
        )
        token_line = tf.gather(segment_line, token_segment)
        if unit == "byte":
            starts, ends = _offsets.before_repair(
                raw, texts, starts, ends, token_line
            )
        word_lines = tf.gather(words_of_segments, per_line)
        word_ids = token_word - tf.gather(word_lines, token_line)
        line_splits = tf.gather(splits, word_lines)

        def rows(x):
            return tf.RaggedTensor.from_row_splits(
                x, line_splits, validate=False
            )

        return rows(values), rows(starts), rows(ends), rows(word_ids)

    def _detokenize_graph(self, ids):
        return self._decoder(ids)


def _stitch(token_id, plain, values, word_splits, bounds):
    """The tokens of every word: those of the searched words (`plain`;
    their `values` and `bounds` in rows of `word_splits`) with the added
    tokens' ids (`token_id` >= 0; bounds 0, 0) put back between them."""
    is_added = token_id >= 0
    # A word's token count: its search's, or 1 for an added token.
    searched = tf.cumsum(tf.cast(~is_added, tf.int64), exclusive=True)
    lengths = tf.concat([word_splits[1:] - word_splits[:-1], [1]], 0)
    counts = tf.where(
        is_added, tf.ones_like(searched), tf.gather(lengths, searched)
    )
    splits = tf.concat([[0], tf.cumsum(counts)], 0)
    added_ids = tf.boolean_mask(token_id, is_added)
    # Which tokens are added ones; each other token is the next searched
    # one, in order.
    total = splits[-1]
    at_added = marks(tf.gather(splits, tf.where(is_added)[:, 0]), total) > 0
    before = tf.cumsum(tf.cast(~at_added, tf.int64), exclusive=True)
    added_before = tf.range(total) - before

    def pick(searched_values, added_values):
        searched_values = tf.concat([searched_values, [0]], 0)
        added_values = tf.concat([added_values, [0]], 0)
        return tf.where(
            at_added,
            tf.gather(added_values, added_before),
            tf.gather(searched_values, before),
        )

    out = pick(values, added_ids)
    bounds = [pick(b, tf.zeros_like(added_ids, b.dtype)) for b in bounds]
    return out, splits, *bounds


def _char_lengths(texts):
    return tf.cast(tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64)


def _splits(owner, count):
    """`[count + 1]` row splits of items whose (sorted) rows are `owner`."""
    counts = tf.math.unsorted_segment_sum(tf.ones_like(owner), owner, count)
    return tf.concat([[0], tf.cumsum(counts)], 0)


def _parts(marked):
    """The parts of `[S]` strings cut at `_SEP`, empty ones too: `(parts,
    owner string, index in it, start in characters in it with the
    `_SEP`s gone)`."""
    where, parts, _ = tf.raw_ops.StringSplitV2(input=marked, sep=_SEP)
    owner, index = where[:, 0], where[:, 1]
    starts = _offsets.starts_in_rows(
        _char_lengths(parts), _splits(owner, tf.size(marked, out_type=tf.int64))
    )
    return parts, owner, index, starts


def _split_marked(marked):
    """`[S]` strings with `_SEP` between parts -> (the non-empty parts,
    `[S + 1]` row splits of the parts of each string)."""
    where, parts, _ = tf.raw_ops.StringSplitV2(input=marked, sep=_SEP)
    owner = where[:, 0]
    keep = tf.where(tf.strings.length(parts) > 0)[:, 0]
    owner = tf.gather(owner, keep)
    counts = tf.math.unsorted_segment_sum(
        tf.ones_like(owner), owner, tf.size(marked, out_type=tf.int64)
    )
    return tf.gather(parts, keep), tf.concat([[0], tf.cumsum(counts)], 0)
