"""BERT WordPiece in the TensorFlow graph, id for id with Hugging Face.

`BertWordPiece`, the engine of `WordPieceTokenizer`, reproduces
`tokenizers.BertWordPieceTokenizer` (the Rust `BertNormalizer`,
`BertPreTokenizer` and `WordPiece` of Hugging Face `tokenizers`) with
TensorFlow string ops, so it runs in `tf.data`, in `tf.function` and in a
SavedModel.

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
3. `strip_accents` (defaults to `lowercase`): NFD, then drop nonspacing
   marks (Mn as of Unicode 8).
4. `lowercase`: Rust's `char::to_lowercase`, one character at a time. There
   is no final-sigma rule (`Σ` always becomes `σ`) and no case folding
   (`ß`, `ς`, full-width letters and `…` stay as they are, unlike TF Text's
   `NFKC_CF` and `case_fold_utf8`).
5. `BertPreTokenizer`: split on whitespace, and make every punctuation
   character (ASCII punctuation, or category P* as of Unicode 8) a word.
6. `WordPiece`: greedy longest-match-first with `##` continuations. A word
   of more than 100 characters, or one the vocabulary cannot cover, becomes
   `[UNK]`.

The TensorFlow version normalizes with regexes, TF Text's NFD and
`tf.strings.lower`, then lets TF Text's `FastWordpieceTokenizer` do steps 2,
5 and 6 in one op: its split agrees with HF's on whitespace and CJK and on
all but a few punctuation characters, which get fixed up beforehand. Every
difference between the TF ops (RE2, ICU) and the Rust crates is listed
below and corrected, or, where it can only matter for a vocabulary holding
the characters involved, corrected for such vocabularies.

The character tables are in `bert_tables`. The setup of the corrections
and the graph code that runs them stay in one class (and file, a little
over 500 lines): each correction is set up and applied side by side.
"""

from __future__ import annotations

import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from tf_input.tokenizers.engines.bert_tables import BRACKETED
from tf_input.tokenizers.engines.bert_tables import CJK
from tf_input.tokenizers.engines.bert_tables import CONTROL
from tf_input.tokenizers.engines.bert_tables import DECODER_CLEANUP
from tf_input.tokenizers.engines.bert_tables import HF_ONLY_PUNCTUATION
from tf_input.tokenizers.engines.bert_tables import KEPT_NON_STARTERS
from tf_input.tokenizers.engines.bert_tables import MARKER
from tf_input.tokenizers.engines.bert_tables import NFD_DIFFERENCES
from tf_input.tokenizers.engines.bert_tables import NONSPACING_MARKS
from tf_input.tokenizers.engines.bert_tables import NOT_INSIDE_WORDS
from tf_input.tokenizers.engines.bert_tables import PUNCTUATION
from tf_input.tokenizers.engines.bert_tables import STAND_INS
from tf_input.tokenizers.engines.bert_tables import TF_TEXT_ONLY_PUNCTUATION
from tf_input.tokenizers.engines.bert_tables import WHITESPACE
from tf_input.tokenizers.engines.bert_tables import WORDS_ALONE
from tf_input.tokenizers.engines.bert_tables import class_body
from tf_input.tokenizers.engines.bert_tables import code_points
from tf_input.tokenizers.engines.bert_tables import escape
from tf_input.tokenizers.engines.bert_tables import literal
from tf_input.tokenizers.engines.bert_tables import lowercase_additions
from tf_input.tokenizers.hf.spec import SpecError


class BertWordPiece(tf.Module):
    """BERT's normalization and split, then TF Text's WordPiece, with every
    difference from Hugging Face corrected (see the module docstring).

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
        self._build_graph_constants()

    def _build_graph_constants(self):
        """Regexes, fixes and WordPiece models for the call."""
        self._strip = (
            self.lowercase if self.strip_accents is None else self.strip_accents
        )
        self._model_vocabulary = self._matchable_tokens()
        vocabulary_chars = set(
            "".join(t for t in self._model_vocabulary if MARKER not in t)
        )
        self._drop_pattern = f"[{class_body(CONTROL)}]"
        self._mark_pattern = f"[{class_body(NONSPACING_MARKS)}]"
        # Some differences between the TF ops and the Rust code only matter
        # if the vocabulary holds a character involved: otherwise the word
        # holding it is `[UNK]` on both sides. Such fixes are added to the
        # graph only when needed (never for the BERT vocabularies).
        #
        # Step 4: ICU applies the final-sigma rule; Rust always gives `σ`.
        self._fix_sigma = bool(vocabulary_chars & {"σ", "ς"})
        # Step 4: capitals newer than the ICU inside TensorFlow.
        self._lowercase_fixes = []
        if self.lowercase:
            self._lowercase_fixes = [
                (capital, small)
                for capital, small in lowercase_additions().items()
                if capital in vocabulary_chars or small in vocabulary_chars
            ]
        # Step 3: marks whose NFD differs between ICU and Rust.
        self._nfd_protected = ""
        self._nfd_recompose = []
        if self._strip:
            self._nfd_fix_setup(vocabulary_chars)
        # Noncharacters that no token uses: the first stands in for
        # characters the vocabulary does not have, the others for special
        # tokens.
        free = [chr(c) for c in STAND_INS if chr(c) not in vocabulary_chars]
        self._stand_in = free[0]
        self._nfd_run_setup()
        specials, reserved = self._special_token_setup(free[1:])
        self._split_fix_setup(vocabulary_chars, reserved)
        # Steps 2, 5 and 6: TF Text's WordPiece with its own split, which
        # agrees with HF's on whitespace and CJK.
        self._line_model = self._wordpiece_model(no_pretokenization=False)
        # Which ids are `##` continuations (special tokens never are).
        continuation = [t.startswith("##") for t in self.vocabulary]
        for token in specials:
            continuation[self._token_index[token]] = False
        self._continuation = tf.constant(continuation)
        self._vocabulary_tensor = tf.constant(self.vocabulary)

    def _special_token_setup(self, free):
        """Step 0: the vocabulary's special tokens, matched in raw text.

        `BertWordPieceTokenizer` registers `[UNK]` (its unknown token),
        `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]`, those the vocabulary has,
        as added tokens, which HF cuts out of the raw text before
        normalizing (case-sensitively: "[MASK]" is id 103, "[mask]" is "[",
        "mask", "]"). Here each becomes a word holding a noncharacter from
        `free`, which TF Text's vocabulary maps to its id: one regex turns
        every "[NAME]" into " ?NAME? " (? a noncharacter), and any other
        special token gets a noncharacter of its own.

        Returns the special tokens and the noncharacters used.
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
                index = self._token_index[token]
                self._model_vocabulary[index] = f"{mark}{name}{mark}"
        for token, sentinel in zip(others, used):
            self._model_vocabulary[self._token_index[token]] = sentinel
            self._special_patterns.append((literal(token), f" {sentinel} "))
        return specials, "".join(used)

    def _split_fix_setup(self, vocabulary_chars, reserved):
        """Step 5 as TF Text does it, corrected where it differs from HF's.

        TF Text's split needs spaces around the characters only HF splits
        on, and a stand-in for the ones only TF Text splits on. As
        normalization neither makes nor changes these characters, one scan
        of the raw text (which also checks the UTF-8 and looks for the
        `reserved` noncharacters) says whether a batch needs any of it.
        """
        tf_text_only = code_points(TF_TEXT_ONLY_PUNCTUATION)
        in_vocabulary = {c for c in tf_text_only if chr(c) in vocabulary_chars}
        reserved = "".join(escape(ord(c)) for c in reserved)
        self._plain_pattern = (
            r"[^\x{D800}-\x{DFFF}"
            f"{self._long_run_class}"
            f"{class_body(TF_TEXT_ONLY_PUNCTUATION)}"
            f"{class_body(HF_ONLY_PUNCTUATION)}{reserved}]*"
        )
        self._reserved_pattern = f"[{reserved}]" if reserved else None
        self._hf_only_pattern = f"([{class_body(HF_ONLY_PUNCTUATION)}])"
        stand_for = sorted(tf_text_only - in_vocabulary)
        self._stand_in_pattern = None
        if stand_for:
            self._stand_in_pattern = f"[{''.join(map(escape, stand_for))}]"
        # A TF-Text-only punctuation character that the vocabulary has
        # cannot be stood in for: lines holding one take the exact path.
        self._exact_path_pattern = None
        if in_vocabulary:
            self._exact_path_pattern = (
                "(?s).*[" + "".join(map(escape, sorted(in_vocabulary))) + "].*"
            )
            # Steps 1, 2 and 5 with HF's own classes: spaces around CJK and
            # punctuation, whitespace to spaces.
            self._split_pattern = (
                f"([{class_body(CJK)}{class_body(PUNCTUATION)}])"
                f"|[{class_body(WHITESPACE)}]"
            )
            self._word_model = self._wordpiece_model(no_pretokenization=True)

    def _matchable_tokens(self):
        """The vocabulary for TF Text, without tokens HF can never match.

        HF's WordPiece only sees words, so a token holding whitespace,
        punctuation, CJK or a dropped character inside a word (`"[CLS]"`,
        `"a b"`, `"##!"`), or longer than a word may be, never matches.
        TF Text's WordPiece can match a token holding a space across two
        words, and fails to build on some control characters and on long
        tokens; each such token becomes, for TF Text only, a unique string
        that no normalized text contains. So does the unknown token, which
        TF Text only needs to know by name.
        """
        out = []
        for i, token in enumerate(self.vocabulary):
            body = token[2:] if token.startswith("##") else token
            alone = body == token and WORDS_ALONE.fullmatch(body)
            matchable = 0 < len(body) <= self.max_word_length and (
                alone or not NOT_INSIDE_WORDS.search(body)
            )
            if not matchable or i == self._unknown_id:
                token = f"{MARKER}{i}"
            out.append(token)
        return out

    def _wordpiece_model(self, no_pretokenization):
        # A character has at most 4 bytes, so TF Text's byte limit never
        # cuts a word of `max_word_length` characters short; longer words
        # are found after the fact.
        try:
            return tf_text.FastWordpieceTokenizer(
                self._model_vocabulary,
                suffix_indicator="##",
                max_bytes_per_word=4 * self.max_word_length,
                token_out_type=tf.int32,
                unknown_token=self._model_vocabulary[self._unknown_id],
                no_pretokenization=no_pretokenization,
            )
        except RuntimeError as error:
            # A vocabulary TF Text does not support (a token too long, for
            # one): a fault of the vocabulary, not of this code.
            raise SpecError(
                "TF Text could not build a WordPiece model from this "
                f"vocabulary ({len(self.vocabulary)} tokens): {error}"
            ) from None

    def _nfd_run_setup(self):
        """Keeps step 3 linear: ICU's NFD reorders marks by insertion sort.

        Its canonical reordering is quadratic in a run of non-starters
        (marks in descending combining class, such as U+0345 U+0301 U+0316
        U+0334 repeated; bench_hostile.py in benchmarks/README.md), where
        HF `tokenizers` is linear. Two exact rewrites before NFD keep
        every run short:

        - nonspacing marks whose NFD is only nonspacing non-starters (734
          of them) are dropped with step 1's controls: step 3 drops them
          anyway, and taking elements out of a run does not change the
          order a stable sort by combining class gives the others;
        - a run of more than `max_word_length` non-starters that step 3
          keeps (`KEPT_NON_STARTERS`; such lines take the rare path) makes
          its word longer than `max_word_length`, `[UNK]` whatever the
          order: it becomes `max_word_length + 1` stand-ins. (RE2 counts to
          1000, so with `max_word_length >= 1000` this one is not done.)
        """
        self._long_run_class, self._long_run_pattern = "", None
        if not self._strip:
            return
        marks = code_points(NONSPACING_MARKS)
        # Unicode 8 characters: their decompositions and classes are
        # stable, so Python's tables give ICU's.
        dropped = [
            c
            for c in sorted(marks)
            if all(
                ord(x) in marks and unicodedata.combining(x)
                for x in unicodedata.normalize("NFD", chr(c))
            )
        ]
        spec = " ".join(f"{c:X}" for c in dropped)
        self._drop_pattern = f"[{class_body(CONTROL)}{class_body(spec)}]"
        if self.max_word_length < 1000:
            self._long_run_class = class_body(KEPT_NON_STARTERS)
            self._long_run_pattern = (
                f"[{self._long_run_class}]{{{self.max_word_length + 1},}}"
            )

    def _nfd_fix_setup(self, vocabulary_chars):
        """Protects the `NFD_DIFFERENCES` characters the vocabulary uses.

        Around NFD, each such character is wrapped in `MARKER`s: a marker
        is a starter, so ICU cannot reorder marks across the character
        (Rust treats it as a starter too). ICU's decomposition of it is
        then put back together, and the markers go with the nonspacing
        marks.
        """
        candidates = sorted(code_points(NFD_DIFFERENCES))
        with tf.init_scope():
            decomposed = tf_text.normalize_utf8(
                tf.constant([chr(c) for c in candidates]), "NFD"
            ).numpy()
        marks = {chr(c) for c in code_points(NONSPACING_MARKS)}
        protected = []
        for c, nfd in zip(candidates, decomposed):
            nfd = nfd.decode("utf-8")
            # Nonspacing marks are dropped after NFD: they cannot matter.
            if not (set(chr(c) + nfd) - marks) & vocabulary_chars:
                continue
            protected.append(c)
            if nfd != chr(c):
                pattern = "".join(map(escape, map(ord, MARKER + nfd)))
                self._nfd_recompose.append(
                    (
                        pattern + escape(ord(MARKER)),
                        MARKER + chr(c) + MARKER,
                    )
                )
        if protected:
            self._nfd_protected = "".join(map(escape, protected))
            self._mark_pattern = (
                f"[{class_body(NONSPACING_MARKS)}{escape(ord(MARKER))}]"
            )

    # --- Tokenize -----------------------------------------------------------
    # No Python control flow depends on tensors here, so AutoGraph (slow to
    # convert these methods) is skipped.
    @tf.autograph.experimental.do_not_convert
    def tokenize(self, texts):
        """`[N]` strings -> ragged `[N, None]` int32 ids."""
        # One scan of the raw text decides whether the rare fixes are
        # needed at all.
        plain = tf.strings.regex_full_match(texts, self._plain_pattern)
        texts = tf.cond(
            tf.reduce_all(plain),
            lambda: self._mark_special_tokens(texts),
            lambda: self._fix_rare_characters(texts),
        )
        texts = self._normalize(texts)
        # Steps 2, 5 and 6 in one op.
        ids, starts, ends = self._line_model.tokenize_with_offsets(texts)
        ids = self._unknown_long_words(ids, starts, ends, texts)
        if self._exact_path_pattern is None:
            return ids
        redo = tf.strings.regex_full_match(texts, self._exact_path_pattern)
        return tf.cond(
            tf.reduce_any(redo),
            lambda: self._replace_rows(ids, texts, redo),
            lambda: ids,
        )

    def _mark_special_tokens(self, texts):
        """Step 0: each special token -> its noncharacter, as a word."""
        for pattern, rewrite in self._special_patterns:
            texts = tf.strings.regex_replace(texts, pattern, rewrite)
        return texts

    def _fix_rare_characters(self, texts):
        """Invalid UTF-8, noncharacters, and where the two splits differ."""
        # Invalid UTF-8 -> U+FFFD, which step 1 then drops.
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        # The text's own copies of the special tokens' noncharacters are
        # words the vocabulary cannot cover, as the stand-in is.
        if self._reserved_pattern is not None:
            texts = tf.strings.regex_replace(
                texts, self._reserved_pattern, self._stand_in
            )
        texts = self._mark_special_tokens(texts)
        texts = tf.strings.regex_replace(texts, self._hf_only_pattern, r" \1 ")
        if self._stand_in_pattern is not None:
            texts = tf.strings.regex_replace(
                texts, self._stand_in_pattern, self._stand_in
            )
        if self._long_run_pattern is not None:
            # Runs of kept non-starters, once step 1 has dropped what lies
            # between them (see `_nfd_run_setup`).
            texts = tf.strings.regex_replace(texts, self._drop_pattern, "")
            texts = tf.strings.regex_replace(
                texts,
                self._long_run_pattern,
                self._stand_in * (self.max_word_length + 1),
            )
        return texts

    def _normalize(self, texts):
        """BertNormalizer's steps 1, 3 and 4.

        Whitespace and CJK need no spaces here: TF Text's split treats them
        as HF does.
        """
        # Step 1: drop control and format characters (ZWJ, soft hyphen, ...).
        texts = tf.strings.regex_replace(texts, self._drop_pattern, "")
        if self._strip:
            # Step 3: NFD, then drop nonspacing marks ("café" -> "cafe").
            if self._nfd_protected:
                texts = tf.strings.regex_replace(
                    texts,
                    f"([{self._nfd_protected}])",
                    MARKER + r"\1" + MARKER,
                )
            texts = tf_text.normalize_utf8(texts, "NFD")
            for pattern, rewrite in self._nfd_recompose:
                texts = tf.strings.regex_replace(texts, pattern, rewrite)
            texts = tf.strings.regex_replace(texts, self._mark_pattern, "")
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

    def _unknown_long_words(self, ids, starts, ends, texts):
        """Step 6: a word over `max_word_length` characters -> `[UNK]`.

        A word is a piece that is not a `##` continuation plus the
        continuations after it; its byte span comes from the offsets. Only
        a word of more than `max_word_length` bytes can have more than
        `max_word_length` characters, and only those are counted.

        Plain tensors, no ragged ops and no `tf.cond`: `tf.data` pays for
        every op of a map function each time it starts an iterator, and
        these ops cost little when no word is long.
        """
        pieces = ids.flat_values
        starts_word = tf.logical_not(tf.gather(self._continuation, pieces))
        word = tf.cumsum(tf.cast(starts_word, "int64")) - 1  # [pieces]
        first = tf.squeeze(tf.where(starts_word), axis=1)  # [words]
        word_start = tf.gather(starts.flat_values, first)
        word_bytes = tf.math.segment_max(ends.flat_values, word) - word_start
        candidates = tf.squeeze(
            tf.where(word_bytes > self.max_word_length), axis=1
        )
        row = tf.searchsorted(
            ids.row_splits, tf.gather(first, candidates), side="right"
        )
        chars = tf.strings.length(
            tf.strings.substr(
                tf.gather(texts, row - 1),
                tf.gather(word_start, candidates),
                tf.gather(word_bytes, candidates),
            ),
            unit="UTF8_CHAR",
        )
        long = tf.scatter_nd(
            tf.expand_dims(candidates, 1),
            chars > self.max_word_length,
            tf.shape(word_start, out_type=tf.int64),
        )
        in_long_word = tf.gather(long, word)  # [pieces]
        # The first piece of a long word becomes `[UNK]`, the others go.
        keep = tf.logical_or(tf.logical_not(in_long_word), starts_word)
        pieces = tf.where(in_long_word, self._unknown_id, pieces)
        kept = tf.pad(tf.cumsum(tf.cast(keep, "int64")), [[1, 0]])
        return tf.RaggedTensor.from_row_splits(
            tf.gather(pieces, tf.squeeze(tf.where(keep), axis=1)),
            tf.gather(kept, ids.row_splits),
            validate=False,
        )

    def _replace_rows(self, ids, texts, redo):
        """`ids` with the rows where `redo` is True tokenized exactly."""
        rows = tf.where(redo)[:, 0]
        exact = self._tokenize_exactly(tf.gather(texts, rows))
        nrows = ids.nrows()
        position = tf.where(
            redo,
            nrows + tf.cumsum(tf.cast(redo, "int64")) - 1,
            tf.range(nrows),
        )
        return tf.gather(tf.concat([ids, exact], axis=0), position)

    def _tokenize_exactly(self, texts):
        """Steps 2, 5 and 6 with HF's own character classes, word by word."""
        texts = tf.strings.regex_replace(texts, self._split_pattern, r" \1 ")
        words = tf.strings.split(texts)
        flat = words.flat_values
        long = tf.strings.length(flat, unit="UTF8_CHAR") > self.max_word_length
        flat = tf.where(long, MARKER, flat)  # matches no token: [UNK]
        pieces = self._word_model.tokenize(flat)
        return words.with_flat_values(pieces).merge_dims(1, 2)

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
