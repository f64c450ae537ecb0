"""BERT WordPiece in core TensorFlow ops, id for id with Hugging Face.

`BertWordPiece`, the engine of `WordPieceTokenizer`, reproduces
`tokenizers.BertWordPieceTokenizer` (the Rust `BertNormalizer`,
`BertPreTokenizer` and `WordPiece` of Hugging Face `tokenizers`) with
core TensorFlow ops only (string, regex, lookup-table and control-flow
ops), so it runs in `tf.data`, in `tf.function` and in a SavedModel that
TF Serving, the C API or any TensorFlow process loads without TF Text.

How Hugging Face tokenizes a line, step by step:

0. Special tokens: `BertWordPieceTokenizer` registers the vocabulary's
   `[UNK]`, `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]` as added tokens, which
   are cut out of the raw text first (case-sensitively: `"[MASK]"` is one
   token, `"[mask]"` is three).
1. `clean_text`: drop NUL, U+FFFD and every "other" character except
   tab, LF and CR (categories Cc, Cf and Co as of Unicode 8, the version of
   the Rust `unicode_categories` crate; unassigned code points are kept),
   and treat the White_Space characters as spaces.
2. `handle_chinese_chars`: put spaces around CJK ideographs. These are
   BERT's ranges, except that the Rust code starts one of them at U+2B920
   where BERT has U+2B820.
3. `strip_accents` (defaults to `lowercase`): NFD (HF's Unicode 9 tables),
   then drop nonspacing marks (Mn as of Unicode 8).
4. `lowercase`: Rust's `char::to_lowercase`, one character at a time. There
   is no final-sigma rule (`Σ` always becomes `σ`) and no case folding
   (`ß`, `ς`, full-width letters and `…` stay as they are).
5. `BertPreTokenizer`: split on whitespace, and make every punctuation
   character (ASCII punctuation, or category P* as of Unicode 8) a word.
6. `WordPiece`: greedy longest-match-first with `##` continuations. A word
   of more than 100 characters, or one the vocabulary cannot cover, becomes
   `[UNK]`.

Here, steps 0 and 1 are regexes over the raw text; step 3 is the core-op
NFD of `hf/normalizers/unicode.py` (the same tables as HF), run only on
the lines that hold a character it can change; step 4 is
`tf.strings.lower` (ICU) with its differences from Rust corrected; steps
2 and 5 are one regex that puts spaces around CJK and punctuation (the
classes are closed under steps 3 and 4, so doing step 2 after them gives
the same words) and a whitespace split; step 6 is in `wordpiece_match`.
The character tables are in `bert_tables`.

`tokenize_with_offsets` runs the same steps, keeping track of where each
word came from (see its docstring).
"""

from __future__ import annotations

import bisect
import functools

import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers import _offsets
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._utf8 import to_valid_utf8
from tf_input.tokenizers.engines.bert_tables import BRACKETED
from tf_input.tokenizers.engines.bert_tables import CJK
from tf_input.tokenizers.engines.bert_tables import CONTROL
from tf_input.tokenizers.engines.bert_tables import DECODER_CLEANUP
from tf_input.tokenizers.engines.bert_tables import NONSPACING_MARKS
from tf_input.tokenizers.engines.bert_tables import NOT_INSIDE_WORDS
from tf_input.tokenizers.engines.bert_tables import PUNCTUATION
from tf_input.tokenizers.engines.bert_tables import STAND_INS
from tf_input.tokenizers.engines.bert_tables import WHITESPACE
from tf_input.tokenizers.engines.bert_tables import WORDS_ALONE
from tf_input.tokenizers.engines.bert_tables import class_body
from tf_input.tokenizers.engines.bert_tables import escape
from tf_input.tokenizers.engines.bert_tables import literal
from tf_input.tokenizers.engines.bert_tables import lowercase_additions
from tf_input.tokenizers.engines.bert_tables import ranges
from tf_input.tokenizers.engines.wordpiece_match import WordPieceMatcher
from tf_input.tokenizers.hf import added_tokens as _added_tokens
from tf_input.tokenizers.hf.normalizers.unicode import UnicodeNormalization

# Cuts a segment into `_before_normalizer`'s pieces: never in valid UTF-8.
_PIECE = b"\xfe"


class BertWordPiece(tf.Module):
    """BERT's normalization, split and WordPiece in core TensorFlow ops
    (see the module docstring).

    Args:
        vocabulary: list of str, the tokens in id order (unique).
        unknown_token: str, a token of the vocabulary.
        lowercase: bool. Step 4.
        strip_accents: bool or None (follows `lowercase`). Step 3.
        max_word_length: int. Longer words become the unknown token.
    """

    def __init__(
        self,
        vocabulary,
        *,
        unknown_token,
        lowercase,
        strip_accents,
        max_word_length,
    ):
        super().__init__()
        self.vocabulary = list(vocabulary)
        self._token_index = {t: i for i, t in enumerate(self.vocabulary)}
        self.unknown_token = unknown_token
        self._unknown_id = self._token_index[unknown_token]
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.max_word_length = max_word_length
        self._strip = lowercase if strip_accents is None else strip_accents
        words, continuations = self._matchable_tokens()
        vocabulary_chars = set("".join(words) + "".join(continuations))
        # Noncharacters that no token uses: the first stands in for the
        # text's own copies of the others, which mark special tokens.
        free = [chr(c) for c in STAND_INS if chr(c) not in vocabulary_chars]
        self._stand_in = free[0]
        reserved, specials = self._special_token_setup(free[1:], words)
        self._rare_setup(reserved)
        # Steps 2 and 5: spaces around CJK and punctuation, whitespace to
        # spaces (`tf.strings.split` only knows ASCII whitespace).
        self._split_pattern = (
            f"([{class_body(CJK)}{class_body(PUNCTUATION)}])"
            f"|[{class_body(WHITESPACE)}]"
        )
        with tf.init_scope():
            self._normalize_setup(vocabulary_chars)
            tokens = {
                **words,
                **{"##" + t: i for t, i in continuations.items()},
            }
            self._matcher = WordPieceMatcher(
                tokens,
                unknown_id=self._unknown_id,
                max_word_length=max_word_length,
            )
            self._vocabulary_tensor = tf.constant(self.vocabulary)
            self._offsets_setup(specials)

    # --- Setup ----------------------------------------------------------------
    def _matchable_tokens(self):
        """`({word: id}, {continuation: id})`: the tokens HF can match.

        HF's WordPiece only sees words, so a token holding whitespace,
        punctuation, CJK or a dropped character inside a word (`"[CLS]"`,
        `"a b"`, `"##!"`), or longer than a word may be, never matches and
        is left out. Continuations are keyed without their `##`.
        """
        words, continuations = {}, {}
        for i, token in enumerate(self.vocabulary):
            continued = token.startswith("##")
            body = token[2:] if continued else token
            alone = not continued and WORDS_ALONE.fullmatch(body)
            if 0 < len(body) <= self.max_word_length and (
                alone or not NOT_INSIDE_WORDS.search(body)
            ):
                (continuations if continued else words)[body] = i
        return words, continuations

    def _special_token_setup(self, free, words):
        """Step 0: the vocabulary's special tokens, matched in raw text.

        `BertWordPieceTokenizer` registers `[UNK]` (its unknown token),
        `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]`, those the vocabulary has,
        as added tokens, which HF cuts out of the raw text before
        normalizing (case-sensitively: "[MASK]" is id 103, "[mask]" is "[",
        "mask", "]"). Here each becomes a word holding a noncharacter from
        `free`, added to `words` with the token's id: one regex turns every
        "[NAME]" into " ?NAME? " (? a noncharacter), and any other special
        token gets a noncharacter of its own.

        Returns the noncharacters used, and the special tokens.
        """
        names = [self.unknown_token, "[SEP]", "[CLS]", "[PAD]", "[MASK]"]
        specials = sorted(
            {t for t in names if t in self._token_index}, key=len, reverse=True
        )
        bracketed = [t for t in specials if BRACKETED.fullmatch(t)]
        others = [t for t in specials if t not in bracketed]
        used = free[: len(others) + bool(bracketed)]
        self._special_patterns = []
        if bracketed:
            mark = used[-1]
            alternatives = "|".join(t[1:-1] for t in bracketed)
            self._special_patterns.append(
                (rf"\[({alternatives})\]", f" {mark}\\1{mark} ")
            )
            for token in bracketed:
                # Step 4 is all normalization does to an ASCII name.
                name = token[1:-1].lower() if self.lowercase else token[1:-1]
                words[f"{mark}{name}{mark}"] = self._token_index[token]
        for token, sentinel in zip(others, used):
            words[sentinel] = self._token_index[token]
            self._special_patterns.append((literal(token), f" {sentinel} "))
        return "".join(used), specials

    def _rare_setup(self, reserved):
        """Invalid UTF-8 and the text's own copies of `reserved`.

        One scan of the raw text (which also checks the UTF-8) says whether
        a batch holds either; if so, the rare path rewrites them first.
        """
        reserved = "".join(escape(ord(c)) for c in reserved)
        self._plain_pattern = rf"[^\x{{D800}}-\x{{DFFF}}{reserved}]*"
        self._reserved_pattern = f"[{reserved}]" if reserved else None

    def _normalize_setup(self, vocabulary_chars):
        """Steps 1, 3 and 4."""
        self._drop_pattern = f"[{class_body(CONTROL)}]"
        self._control = _Ranges(CONTROL)
        self._nfd = None
        if self._strip:
            # Step 3 changes a line only if it holds a character that NFD
            # can change, or a nonspacing mark.
            self._nfd = UnicodeNormalization("NFD")
            self._nfd_tables = list(self._nfd.lookup_tables)  # tracked
            self._marks = _Ranges(NONSPACING_MARKS)
            unsafe = self._nfd.tables.unsafe | CodePoints(self._marks.ranges)
            self._strip_safe_pattern = f"{(~unsafe).re2()}*"
        # Step 4: where ICU's lowercase differs from Rust's, the word holding
        # the character is `[UNK]` both ways unless the vocabulary has the
        # character, so these fixes are added to the graph only when needed.
        # ICU applies the final-sigma rule; Rust always gives `σ`.
        self._fix_sigma = bool(vocabulary_chars & {"σ", "ς"})
        # Capitals newer than the ICU inside TensorFlow.
        self._lowercase_fixes = []
        if self.lowercase:
            self._lowercase_fixes = [
                (capital, small)
                for capital, small in lowercase_additions().items()
                if capital in vocabulary_chars or small in vocabulary_chars
            ]

    def _offsets_setup(self, specials):
        """What `tokenize_with_offsets` needs besides: the special tokens
        cut out of the text as HF cuts them (each then becomes the word
        step 0 makes of it), and the split of step 5 that keeps every
        byte (the pieces' spans in their words are `match_with_spans`')."""
        added = _added_tokens.check_added_tokens(
            [
                {
                    "id": self._token_index[t],
                    "content": t,
                    "special": True,
                    "normalized": False,
                }
                for t in specials
            ],  # fmt: skip
            "the special tokens",
        )
        self._special_extractor = _added_tokens.Extractor(
            added, False, "the special tokens"
        )
        self._special_words = lookup_table(
            [_added_tokens.placeholder(t["id"]) for t in added],
            self._mark_special_tokens(tf.constant(specials)).numpy(),
            b"",
            key_dtype=tf.string,
            value_dtype=tf.string,
        )
        # Steps 2 and 5, to find where words start: the kind of each
        # character (0 in a word, 1 whitespace to `tokenize`'s split, 2 a
        # word alone), by code point ranges.
        alone = CodePoints(ranges(CJK)) | CodePoints(ranges(PUNCTUATION))
        spaces = (
            CodePoints(ranges(WHITESPACE)) | CodePoints.of(" ", "\v", "\f")
        ) - alone
        bounds, kinds, after = [], [], 0
        for first, last, kind in sorted(
            [(*r, 1) for r in spaces.ranges] + [(*r, 2) for r in alone.ranges]
        ):
            if first > after:
                bounds.append(after)
                kinds.append(0)
            bounds.append(first)
            kinds.append(kind)
            after = last + 1
        bounds.append(after)
        kinds.append(0)
        self._kind_bounds = tf.constant(bounds, tf.int32)
        self._kinds = tf.constant(kinds, tf.int32)
        # ASCII by a few comparisons (`_ascii_kind`), which hold for every
        # byte that step 1 keeps.
        control = self._control.ranges
        for byte in range(128):
            if any(a <= byte <= b for a, b in control):
                continue
            i = bisect.bisect_right(bounds, byte) - 1
            if _ascii_kind(byte) != kinds[i]:  # pragma: no cover
                raise AssertionError(
                    f"bert_tables give U+{byte:04X} kind {kinds[i]}, the "
                    f"byte comparisons {_ascii_kind(byte)}"
                )

        # Text where steps 1-4 keep every character in its place and of
        # its length, one for one, so that a byte keeps its position (all
        # printable ASCII, "–", "£", most letters of most scripts): none
        # that step 1 drops, step 3 rewrites or drops, step 4 lowercases
        # to another length, or that stands in for a special token.
        moved = CodePoints(self._control.ranges) | CodePoints.of(
            *(chr(c) for c in STAND_INS)
        )
        if self._nfd is not None:
            moved |= self._nfd.tables.unsafe | CodePoints(self._marks.ranges)
        if self.lowercase:
            moved |= _lowercase_resized()
        self._kept_positions_pattern = f"{(~moved).re2()}*"
        # A part between spaces that holds such a character.
        self._moving_part_pattern = f"[^ ]*{moved.re2()}[^ ]*"

    # --- Tokenize -----------------------------------------------------------
    # No Python control flow depends on tensors here, so AutoGraph (slow to
    # convert these methods) is skipped.
    @tf.autograph.experimental.do_not_convert
    def tokenize(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids."""
        plain = tf.strings.regex_full_match(texts, self._plain_pattern)
        texts = tf.cond(
            tf.reduce_all(plain),
            lambda: self._mark_special_tokens(texts),
            lambda: self._fix_rare_characters(texts),
        )
        texts = self._normalize(texts)
        # Steps 2 and 5.
        texts = tf.strings.regex_replace(texts, self._split_pattern, r" \1 ")
        words = tf.strings.split(texts)
        # Step 6.
        ids, counts = self._matcher.match(words.flat_values)
        splits = tf.concat([[0], tf.cumsum(counts)], 0)
        return tf.RaggedTensor.from_row_splits(
            ids, tf.gather(splits, words.row_splits), validate=False
        )

    def _mark_special_tokens(self, texts):
        """Step 0: each special token -> its noncharacter word."""
        for pattern, rewrite in self._special_patterns:
            texts = tf.strings.regex_replace(texts, pattern, rewrite)
        return texts

    def _fix_rare_characters(self, texts):
        """Invalid UTF-8 and noncharacters, then step 0."""
        # Invalid UTF-8 -> U+FFFD, which step 1 then drops.
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        return self._mark_special_tokens(self._replace_reserved(texts))

    def _replace_reserved(self, texts):
        """The text's own copies of the special tokens' noncharacters ->
        the stand-in: words the vocabulary cannot cover, as the stand-in
        is (one character for one)."""
        if self._reserved_pattern is None:
            return texts
        return tf.strings.regex_replace(
            texts, self._reserved_pattern, self._stand_in
        )

    def _normalize(self, texts, kept=None):
        """BertNormalizer's steps 1, 3 and 4 (whitespace and CJK are left
        to the split). `kept` (bool `[N]`, optional): which texts match
        `_kept_positions_pattern`, which step 3 leaves as they are."""
        # Step 1: drop control and format characters (ZWJ, soft hyphen, ...).
        texts = tf.strings.regex_replace(texts, self._drop_pattern, "")
        if self._nfd is not None:
            # Step 3: NFD, then drop nonspacing marks ("café" -> "cafe").
            if kept is None:
                safe = tf.strings.regex_full_match(
                    texts, self._strip_safe_pattern
                )
            else:
                safe = tf.tensor_scatter_nd_update(
                    kept,
                    tf.where(~kept),
                    tf.strings.regex_full_match(
                        texts[~kept], self._strip_safe_pattern
                    ),
                )
            texts = tf.cond(
                tf.reduce_all(safe),
                lambda: texts,
                lambda: self._strip_rows(texts, tf.logical_not(safe)),
            )
        if self.lowercase:
            # Step 4: per-character lowercase, with `Σ` -> `σ` everywhere.
            if self._fix_sigma:
                texts = tf.strings.regex_replace(texts, "Σ", "σ")
            for capital, small in self._lowercase_fixes:
                texts = tf.strings.regex_replace(
                    texts, escape(ord(capital)), small
                )
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def _strip_rows(self, texts, rows_mask):
        """Step 3 on the rows where `rows_mask` is True."""
        rows = tf.where(rows_mask)
        chars = tf.strings.unicode_decode(tf.gather_nd(texts, rows), "UTF-8")
        flat, splits = self._nfd.normalize_code_points(
            chars.flat_values, tf.cast(chars.row_splits, tf.int64)
        )
        (flat,), splits = _kept(~self._marks.hold(flat), splits, flat)
        stripped = tf.strings.unicode_encode(
            tf.RaggedTensor.from_row_splits(flat, splits, validate=False),
            "UTF-8",
        )
        return tf.tensor_scatter_nd_update(texts, rows, stripped)

    # --- Tokenize with offsets ----------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def tokenize_with_offsets(self, raw, unit="byte"):
        """`[N]` strings -> ragged `[N, None]` int32 ids, int64 starts and
        ends of the tokens in `raw` (in bytes, or with `unit="char"` in
        code points), and int64 word indices.

        The steps of `tokenize`, keeping track of where each piece of text
        came from, as Hugging Face's alignments do: each special token is
        a segment of its own (its one word covers it); a word starts where
        the bytes before it in its segment end (the split keeps them all);
        a token covers its piece of the word (the lengths of the pieces
        before it), and `[UNK]` the whole word it stands for. Steps 1-4
        change no position in most text (ASCII, and any text without a
        character they drop, decompose or resize); in other segments the
        spans go back through the normalizer (`_before_normalizer`: only
        the parts between spaces that hold such a character are aligned),
        then through the UTF-8 repair (`_offsets`). Characters are counted
        in the repaired text, which has one U+FFFD where `bytes.decode(
        "utf-8", "replace")` has one, with no second check of the UTF-8.
        """
        # As `tokenize`: one scan says whether any text needs the repair
        # or holds a noncharacter of the special tokens.
        rare = ~tf.reduce_all(
            tf.strings.regex_full_match(raw, self._plain_pattern)
        )
        texts = tf.cond(rare, lambda: to_valid_utf8(raw), lambda: raw)
        segments, per_line, segment_starts, segment_ends = (
            self._special_extractor(texts, spans=True)
        )  # [S], [N + 1], [S], [S]
        special = _added_tokens.is_placeholder(segments)
        kept = tf.strings.regex_full_match(
            segments, self._kept_positions_pattern
        )
        followed = ~(kept | special)
        plain = tf.cond(
            rare, lambda: self._replace_reserved(segments), lambda: segments
        )
        marked = tf.where(special, self._special_words.lookup(segments), plain)
        normalized = self._normalize(marked, kept)
        words, word_starts = self._words_with_starts(normalized)  # [S, W]
        ids, counts, token_word, starts, ends = self._matcher.match_with_spans(
            words.flat_values
        )  # [T], [W], [T], [T], [T]
        # In the normalized segment: a token spans its piece of its word,
        # and the unknown token (a word alone) the whole word.
        piece_splits = tf.concat([[0], tf.cumsum(counts)], 0)
        word_start = tf.gather(word_starts, token_word)
        starts += word_start
        ends += word_start
        token_segment = tf.gather(row_ids(words.row_splits), token_word)
        # In the segment.
        starts, ends = tf.cond(
            tf.reduce_any(followed),
            lambda: self._before_normalizer(
                segments,
                normalized,
                followed,
                starts,
                ends,
                tf.gather(piece_splits, words.row_splits),
            ),
            lambda: (starts, ends),
        )

        # In the line (each line one segment when it holds no special
        # token), then in the raw bytes.
        def in_lines():
            return (
                *_offsets.in_lines(
                    starts,
                    ends,
                    special,
                    segment_starts,
                    segment_ends,
                    token_segment,
                ),
                tf.gather(row_ids(per_line), token_segment),
            )

        starts, ends, token_line = tf.cond(
            tf.reduce_any(special)
            | tf.reduce_any(per_line[1:] - per_line[:-1] != 1),
            in_lines,
            lambda: (starts, ends, token_segment),
        )
        if unit == "char":
            starts, ends = _offsets.to_characters(
                texts, starts, ends, token_line, valid=True
            )
        else:
            starts, ends = _offsets.before_repair(
                raw, texts, starts, ends, token_line
            )
        word_splits = tf.gather(words.row_splits, per_line)
        word_ids = token_word - tf.gather(word_splits, token_line)
        line_splits = tf.gather(piece_splits, word_splits)

        def rows(values):
            return tf.RaggedTensor.from_row_splits(
                values, line_splits, validate=False
            )

        return rows(ids), rows(starts), rows(ends), rows(word_ids)

    def _words_with_starts(self, texts):
        """Steps 2 and 5 on normalized `[S]` texts: ragged `[S, None]`
        words, as `tokenize` splits them, and the int64 byte start of each
        in its text (flat).

        A word starts at every word alone (CJK, punctuation) and at every
        other character that is not whitespace and follows whitespace, a
        word alone or the start of its text. The characters are read off
        the bytes of the whole batch, code points only for the few that
        are not ASCII."""
        words = tf.strings.split(
            tf.strings.regex_replace(texts, self._split_pattern, r" \1 ")
        )
        lengths = tf.cast(tf.strings.length(texts), tf.int64)
        row_starts = tf.cumsum(lengths, exclusive=True)
        data = tf.io.decode_raw(tf.strings.reduce_join(texts), tf.uint8)
        data = tf.cast(data, tf.int32)
        size = tf.size(data, out_type=tf.int64)
        # Whether each character is a word alone and whether it is one or
        # whitespace (a separator), at its first byte, and whether it is a
        # separator at its last (`separator_at_end`): ASCII by comparisons
        # (`_ascii_kind`), the others by their code points (elementwise:
        # gathers cost more per byte).
        letter = tf.bitwise.bitwise_or(data, 0x20)
        alnum = ((data >= 0x30) & (data <= 0x39)) | (
            (letter >= 0x61) & (letter <= 0x7A)
        )
        alone = (data > 0x20) & (data < 0x7F) & ~alnum
        separator = alone | (data <= 0x20)
        separator_at_end = separator
        wide = tf.where(data >= 0xC0)
        alone, separator, separator_at_end = tf.cond(
            tf.size(wide) > 0,
            lambda: self._with_wide(
                data, wide, alone, separator, separator_at_end
            ),
            lambda: (alone, separator, separator_at_end),
        )
        # Whether the character before each byte is a separator; a text's
        # first byte follows one. Empty texts start at the next one's.
        after = tf.concat([[True], separator_at_end], 0)[:-1]
        first = row_starts[row_starts < size][:, None]
        after = tf.tensor_scatter_nd_update(
            after, first, tf.ones_like(first[:, 0], tf.bool)
        )
        starts = tf.where(
            (tf.bitwise.bitwise_and(data, 0xC0) != 0x80)
            & (alone | (after & ~separator))
        )[:, 0]
        # The k-th start of a text is its k-th word's.
        return words, starts - tf.gather(row_starts, row_ids(words.row_splits))

    def _with_wide(self, data, wide, alone, separator, separator_at_end):
        """`alone`, `separator` and `separator_at_end` with the kinds of
        the characters of 2 to 4 bytes that start at `wide` (`[K, 1]`) in
        `data`."""
        at = wide[:, 0]
        data = tf.concat([data, tf.zeros([3], tf.int32)], 0)
        b0, b1, b2, b3 = (tf.gather(data, at + i) for i in range(4))

        def low(byte, bits, shift):
            return tf.bitwise.left_shift(
                tf.bitwise.bitwise_and(byte, (1 << bits) - 1), shift
            )

        two = low(b0, 5, 6) | low(b1, 6, 0)
        three = low(b0, 4, 12) | low(b1, 6, 6) | low(b2, 6, 0)
        four = low(b0, 3, 18) | low(b1, 6, 12) | low(b2, 6, 6) | low(b3, 6, 0)
        code_points = tf.where(
            b0 >= 0xF0, four, tf.where(b0 >= 0xE0, three, two)
        )
        kinds = tf.gather(
            self._kinds,
            tf.searchsorted(self._kind_bounds, code_points, side="right") - 1,
        )
        # The last byte: 1 to 3 after the first.
        extra = (
            1 + tf.cast(b0 >= 0xE0, tf.int64) + tf.cast(b0 >= 0xF0, tf.int64)
        )
        return (
            tf.tensor_scatter_nd_update(alone, wide, kinds == 2),
            tf.tensor_scatter_nd_update(separator, wide, kinds != 0),
            tf.tensor_scatter_nd_update(
                separator_at_end, (at + extra)[:, None], kinds != 0
            ),
        )

    def _before_normalizer(
        self, segments, normalized, rows_mask, starts, ends, token_splits
    ):
        """Spans in the `normalized` segments -> spans in `segments`, for
        the tokens of the rows where `rows_mask` is True (the others are
        returned as they are); `token_splits` are the tokens' row splits.

        No step moves a character across a space (U+0020 stays, and NFD
        reorders marks only up to the starter before them), and steps 1-4
        change a part of a segment between spaces the same whether alone
        or in the segment. So each segment is cut into its moving parts
        (those holding a character that moves) and the text between them,
        which normalizing leaves as long as it was: a token of that text
        is shifted by what the moving parts before it changed, and only
        the moving parts, normalized alone, are aligned
        (`_in_moving_parts`). A few parts a line (accented words) rather
        than every one."""
        rows = tf.where(rows_mask)[:, 0]
        # Pieces alternate: text between moving parts, a moving part, ...
        pieces = tf.strings.split(
            tf.strings.regex_replace(
                tf.gather(segments, rows),
                self._moving_part_pattern,
                _PIECE + b"\\0" + _PIECE,
            ),
            sep=_PIECE,
        )
        old_texts, piece_splits = pieces.flat_values, pieces.row_splits
        piece_row = row_ids(piece_splits)
        index = tf.range(tf.size(old_texts, out_type=tf.int64))
        moving = (index - tf.gather(piece_splits, piece_row)) % 2 == 1
        at = tf.where(moving)
        old_moving = tf.gather_nd(old_texts, at)
        new_moving = self._normalize(self._replace_reserved(old_moving))
        old_lengths = tf.cast(tf.strings.length(old_texts), tf.int64)
        new_lengths = tf.tensor_scatter_nd_update(
            old_lengths,
            at,
            tf.cast(tf.strings.length(new_moving), tf.int64),
        )
        old_starts = _offsets.starts_in_rows(
            old_lengths, piece_splits, piece_row
        )
        new_starts = _offsets.starts_in_rows(
            new_lengths, piece_splits, piece_row
        )
        # Each token's piece: a search over the pieces' starts in the rows
        # laid end to end.
        row_base = tf.cumsum(
            tf.cast(tf.strings.length(tf.gather(normalized, rows)), tf.int64)
            + 1,
            exclusive=True,
        )
        piece_at = new_starts + tf.gather(row_base, piece_row)
        picked = tf.ragged.range(
            tf.gather(token_splits, rows), tf.gather(token_splits, rows + 1)
        )
        row, picked = row_ids(picked.row_splits), picked.flat_values
        span_starts = tf.gather(starts, picked)
        span_ends = tf.gather(ends, picked)
        piece = (
            tf.searchsorted(
                piece_at,
                span_starts + tf.gather(row_base, row),
                side="right",
                out_type=tf.int64,
            )
            - 1
        )
        shift = tf.gather(old_starts, piece) - tf.gather(new_starts, piece)
        span_starts, span_ends = self._in_moving_parts(
            old_moving,
            new_moving,
            moving,
            tf.gather(old_starts, piece),
            piece,
            span_starts + shift,
            span_ends + shift,
        )
        picked = picked[:, None]
        return (
            tf.tensor_scatter_nd_update(starts, picked, span_starts),
            tf.tensor_scatter_nd_update(ends, picked, span_ends),
        )

    def _in_moving_parts(
        self, old_parts, new_parts, moving, base, part, starts, ends
    ):
        """`_before_normalizer`'s spans (`starts`, `ends`, already in the
        segment as if their `part` moved nothing; `base`, where that part
        starts there) of the tokens of the `moving` parts (`old_parts`,
        and `new_parts` normalized, in order), through those parts'
        alignments."""
        sources, splits = self._sources(old_parts)
        rank = tf.cumsum(tf.cast(moving, tf.int64)) - 1
        picked = tf.where(tf.gather(moving, part))[:, 0]
        part = tf.gather(part, picked)
        base = tf.gather(base, picked)
        new_starts, new_ends = _offsets.before_rewrite(
            tf.gather(starts, picked) - base,
            tf.gather(ends, picked) - base,
            tf.gather(rank, part),
            old_parts,
            new_parts,
            tf.RaggedTensor.from_row_splits(sources, splits, validate=False),
        )
        picked = picked[:, None]
        return (
            tf.tensor_scatter_nd_update(starts, picked, new_starts + base),
            tf.tensor_scatter_nd_update(ends, picked, new_ends + base),
        )

    def _sources(self, texts):
        """For each character of steps 1-4 applied to `[M]` texts (flat,
        and row splits), the index in its row of the character of `texts`
        Hugging Face aligns it with: its own; through NFD, the count-based
        alignment of `UnicodeNormalization.with_sources`. Step 0 (no
        special token is left in these texts) and the stand-in (one
        character for one, which no step changes) move no character."""
        chars = tf.strings.unicode_decode(texts, "UTF-8")
        flat, splits = chars.flat_values, tf.cast(chars.row_splits, tf.int64)
        sources = tf.range(splits[-1]) - tf.gather(splits, row_ids(splits))
        (flat, sources), splits = _kept(
            ~self._control.hold(flat), splits, flat, sources
        )
        if self._nfd is not None:
            flat, new_splits, at = self._nfd.code_points_with_sources(
                flat, splits
            )
            # (No character before it to be aligned with, -1, does not
            # occur: the first of a row always counts.)
            first = tf.gather(splits, row_ids(new_splits))
            sources = tf.gather(sources, first + tf.maximum(at, 0))
            (flat, sources), splits = _kept(
                ~self._marks.hold(flat), new_splits, flat, sources
            )
        if self.lowercase:
            # Only U+0130 lowercases to two characters ("i" and U+0307),
            # both aligned with it.
            repeats = 1 + tf.cast(flat == 0x130, tf.int64)
            sources = tf.repeat(sources, repeats)
            splits = tf.gather(tf.concat([[0], tf.cumsum(repeats)], 0), splits)
        return sources, splits

    # --- Detokenize ---------------------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def detokenize(self, ids):
        """Ragged ids -> `[N]` strings, as HF's WordPiece decoder."""
        tokens = tf.gather(self._vocabulary_tensor, ids.flat_values)
        index = tf.range(tf.size(ids.flat_values, out_type=tf.int64))
        first = tf.equal(index, tf.gather(ids.row_starts(), ids.value_rowids()))
        continued = tf.strings.regex_full_match(tokens, "(?s)##.*")
        # HF's WordPiece decoder: a `##` piece loses its prefix, any other
        # piece after the first gets a leading space.
        pieces = tf.where(
            first,
            tokens,
            tf.where(
                continued,
                tf.strings.regex_replace(tokens, "^##", ""),
                tf.strings.join([" ", tokens]),
            ),
        )
        for old, new in DECODER_CLEANUP:
            pieces = tf.strings.regex_replace(
                pieces, literal(old), new.replace("\\", "\\\\")
            )
        return tf.strings.reduce_join(ids.with_flat_values(pieces), axis=-1)


def _ascii_kind(byte):
    """The kind (0 in a word, 1 whitespace, 2 a word alone) of an ASCII
    character that step 1 keeps, as `_words_with_starts` compares bytes:
    up to the space, whitespace (step 1 drops the other control
    characters); the other printable characters but letters and digits,
    words alone."""
    if byte <= 0x20:
        return 1
    if 0x7F > byte and not chr(byte).isalnum():
        return 2
    return 0


@functools.cache
def _lowercase_resized():
    """The characters whose lowercase (Python's, and the additions made
    to ICU's) is not one character of the same length in UTF-8: step 4
    moves the bytes after them."""
    changed = {
        char: small
        for char, small in (
            (chr(c), chr(c).lower())
            for c in range(0x20000)
            if c < 0xD800 or c > 0xDFFF
        )
        if small != char
    }
    changed.update(lowercase_additions())
    return CodePoints(
        (ord(char), ord(char))
        for char, small in changed.items()
        if len(small) != 1 or len(small.encode()) != len(char.encode())
    )


class _Ranges:
    """A set of code points given as `bert_tables` ranges, for `hold`."""

    def __init__(self, spec):
        self.ranges = ranges(spec)
        with tf.init_scope():
            self._starts = tf.constant([a for a, _ in self.ranges], tf.int32)
            self._ends = tf.constant([b for _, b in self.ranges], tf.int32)

    def hold(self, code_points):
        """bool, whether each int32 code point is in the set."""
        i = tf.searchsorted(self._starts, code_points, side="right") - 1
        i = tf.maximum(i, 0)
        return (code_points >= tf.gather(self._starts, i)) & (
            code_points <= tf.gather(self._ends, i)
        )


def _kept(keep, splits, *values):
    """`values` (flat, rows cut at `splits`) where `keep` is True: the
    kept values and their row splits."""
    at = tf.where(keep)[:, 0]
    before = tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0)
    return [tf.gather(v, at) for v in values], tf.gather(before, splits)
