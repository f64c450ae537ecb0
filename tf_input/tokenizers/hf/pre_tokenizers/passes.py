"""The regex splits of byte-level BPE as `tf.strings` passes.

`PreTokenizer` compiles the `Split`, `ByteLevel`, `Digits` and
`WhitespaceSplit` components of a `pre_tokenizer` description into a few
`tf.strings.regex_replace` passes that insert a separator byte at every
cut; a final split on that byte gives the words. Every regex is
translated by `regex.plan_split` (Oniguruma semantics, Oniguruma's Unicode
tables, the `\\s+(?!\\S)` lookahead removed by a proven cut). Where a
regex strains RE2's DFA, the passes run on a class alphabet
(`class_alphabet`) and the words are cut out of the original text at the
same byte offsets; the other regexes run on the text itself, which is
cheaper.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._unicode import EVERYTHING
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._unicode import rust_numeric
from tf_input.tokenizers.hf import regex
from tf_input.tokenizers.hf.pre_tokenizers import components
from tf_input.tokenizers.hf.pre_tokenizers.class_alphabet import ClassAlphabet
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import Metaspace
from tf_input.tokenizers.hf.spec import SpecError

SEP = b"\xff"  # never in valid UTF-8, and no RE2 class matches it
# Before text that a Removed split drops: the text stays in place (so byte
# offsets still match the original) until the pieces are cut out.
_DROP = b"\xfd"
# HF's ByteLevel pre-tokenizer regex (`use_regex=True`), GPT-2's.
GPT2_PATTERN = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
    r"|\s+(?!\S)|\s+"
)


@dataclasses.dataclass(frozen=True)
class _Step:
    """One Split: a tree (lookahead-free), how matches become pieces."""

    tree: object
    cut: CodePoints | None
    behavior: str
    invert: bool
    covers_all: bool
    single_class: CodePoints | None


class PreTokenizer:
    """A compiled `pre_tokenizer` description.

    Args:
        spec: `"gpt2"`, None (no pre-tokenization: each segment is one
            word) or a dict as in a `tokenizer.json` (`Split`, `Sequence`,
            `ByteLevel`, `Digits`, `WhitespaceSplit`).
        where: str, for error messages.

    Raises:
        SpecError: for an unknown or unsupported type or option, or a
            regex that RE2 cannot match exactly (the message names it).
    """

    def __init__(self, spec, where="`pretokenizer`"):
        self.where = where
        self.prefix_space = False
        self.steps = []
        if spec == "gpt2":
            spec = {"type": "ByteLevel", "add_prefix_space": False}
        parts = components.parse(spec, where)
        for i, part in enumerate(parts):
            self._add(part, first=i == 0, last=i == len(parts) - 1)
        self._compile()

    # --- Description ------------------------------------------------------
    def _add(self, part, first, last):
        if isinstance(part, components.Split):
            if part.literal:
                tree = regex.concat(
                    [regex.Chars(CodePoints.of(c)) for c in part.pattern]
                )
                self._add_tree(tree, part.behavior, part.invert)
            else:
                self._add_step(part.pattern, part.behavior, part.invert)
        elif isinstance(part, components.ByteLevel):
            self._add_byte_level(part, first, last)
        elif isinstance(part, components.Digits):
            tree = regex.Chars(rust_numeric())
            behavior = "Isolated" if part.individual_digits else "Contiguous"
            self._add_tree(tree, behavior, False)
        elif isinstance(part, components.WhitespaceSplit):
            tree = regex.Repeat(regex.Chars(WHITE_SPACE), 1, None)
            self._add_tree(tree, "Removed", False)
        elif isinstance(part, Metaspace):
            raise SpecError(
                f"{self.where}: a Metaspace pre-tokenizer (SentencePiece-"
                "style `▁`) is not supported for a byte-level BPE; "
                "`load_tokenizer` reads such a file as a "
                "`MetaspaceBytePairTokenizer`."
            )

    def _add_byte_level(self, part, first, last):
        if not last:
            raise SpecError(
                f"{self.where}: a ByteLevel pre-tokenizer must come last "
                "(after it, other pre-tokenizers would see its byte "
                "symbols, not the text), which is what real files do."
            )
        if part.add_prefix_space:
            if not first:
                raise SpecError(
                    f"{self.where}: ByteLevel with add_prefix_space=True "
                    "after other pre-tokenizers is not supported."
                )
            self.prefix_space = True
        if part.use_regex:
            self._add_step(GPT2_PATTERN, "Isolated", False)

    def _add_step(self, pattern, behavior, invert):
        try:
            plan = regex.plan_split(pattern)
        except SpecError as error:
            raise SpecError(f"{self.where}: {error}") from None
        self._check_cut(plan.cut_before_last, behavior, pattern)
        self.steps.append(
            _Step(
                plan.tree,
                plan.cut_before_last,
                behavior,
                invert,
                plan.covers_all,
                plan.single_class,
            )
        )

    def _add_tree(self, tree, behavior, invert):
        single = tree.points if isinstance(tree, regex.Chars) else None
        covers = not (
            EVERYTHING - regex.single_characters(tree) - regex.SURROGATES
        )
        self.steps.append(_Step(tree, None, behavior, invert, covers, single))

    def _check_cut(self, cut, behavior, pattern):
        if cut is not None and behavior == "Contiguous":
            raise SpecError(
                f"{self.where}: the Contiguous behavior with the lookahead "
                f"pattern {pattern!r} is not supported."
            )

    # --- Compilation --------------------------------------------------------
    def _compile(self):
        sets = [EVERYTHING, WHITE_SPACE, ~WHITE_SPACE]
        for step in self.steps:
            sets.extend(regex.char_sets(step.tree))
            if step.cut is not None:
                sets.append(step.cut)
        # The class alphabet only where RE2's DFA needs it: it costs a
        # decode and re-encode of every non-ASCII line, and cutting the words
        # out of the original text, more than the split itself (see
        # `benchmarks/README.md`).
        self.mapped = any(
            regex.strains_the_dfa(step.tree) for step in self.steps
        )
        self.alphabet = ClassAlphabet(sets) if self.mapped else None
        rewrite = (
            self.alphabet.rewrite if self.mapped else (lambda points: points)
        )
        # Passes, in stages: a stage ends after a pass that drops text, so
        # that no later pass cuts into dropped text.
        self._stages = [[]]
        for step in self.steps:
            if step.cut is not None:
                self._stages[-1].append(
                    (
                        f"({rewrite(WHITE_SPACE).re2()}+)"
                        f"({rewrite(step.cut).re2()})"
                        f"({rewrite(~WHITE_SPACE).re2()})",
                        b"\\1" + SEP + b"\\2\\3",
                    )
                )
            pattern, replacement, drops = self._match_pass(step, rewrite)
            self._stages[-1].append((pattern, replacement))
            if drops:
                self._stages.append([])
        if not self._stages[-1]:
            self._stages.pop()

    def _match_pass(self, step, rewrite):
        re2 = regex.to_re2(step.tree, rewrite)
        behavior, invert = step.behavior, step.invert
        if behavior == "Contiguous":
            if step.single_class is None:
                raise SpecError(
                    f"{self.where}: the Contiguous behavior is only "
                    "supported for a pattern that is one character class."
                )
            pattern = f"{rewrite(step.single_class).re2()}+"
            return pattern, SEP + b"\\0" + SEP, False
        if behavior == "Isolated" or (
            behavior == "Removed" and invert and step.covers_all
        ):
            return re2, SEP + b"\\0" + SEP, False
        if behavior == "Removed" and not invert:
            return re2, SEP + _DROP + b"\\0" + SEP, True
        if behavior == "Removed":
            # Keep the matches only: every other character is matched
            # alone and dropped.
            everything = rewrite(EVERYTHING).re2()
            replacement = SEP + b"\\1" + SEP + _DROP + b"\\2"
            return f"({re2})|({everything})", replacement, True
        merge_previous = (behavior == "MergedWithPrevious") != invert
        replacement = (b"\\0" + SEP) if merge_previous else (SEP + b"\\0")
        return re2, replacement, False

    # --- Graph --------------------------------------------------------------
    def __call__(self, segments, is_token, starts=False):
        """`[M]` segments -> ragged `[M, None]` words (strings).

        Segments where `is_token` is True (added-token placeholders, made
        of bytes that no class matches) come out as one word. With
        `starts=True`, also the int64 start of each word (flat, `[W]`) in
        its segment: -1 for a first word that begins with the prefix
        space (`add_prefix_space`), which is not in the segment.
        """
        if self.prefix_space:
            starts_with_space = tf.strings.regex_full_match(segments, "(?s) .*")
            # HF's `prepend` leaves an empty string alone.
            empty = tf.strings.length(segments) == 0
            prefixed = ~(is_token | starts_with_space | empty)
            segments = tf.where(
                prefixed, tf.strings.join([" ", segments]), segments
            )
            base = -tf.cast(prefixed, tf.int64)
        else:
            base = tf.zeros(tf.shape(segments, out_type=tf.int64), tf.int64)
        # `base`: where each current piece starts in its segment, tracked
        # only when asked for (`tokenize` does without).
        words, base = self._words(segments, is_token, base if starts else None)
        return (words, base) if starts else words

    def _words(self, segments, is_token, base):
        count = tf.size(segments, out_type=tf.int64)
        splits = tf.range(count + 1)
        if not self._stages:
            keep = tf.where(tf.strings.length(segments) > 0)[:, 0]
            kept_before = tf.concat(
                [
                    [0],
                    tf.cumsum(
                        tf.cast(tf.strings.length(segments) > 0, tf.int64)
                    ),
                ],
                0,
            )
            words = tf.RaggedTensor.from_row_splits(
                tf.gather(segments, keep), kept_before, validate=False
            )
            return words, None if base is None else tf.gather(base, keep)
        if not self.mapped:
            return self._split_in_place(segments, splits, base)
        mapped = self.alphabet.map_text(segments, ~is_token)
        for n, stage in enumerate(self._stages):
            marked = mapped
            for pattern, replacement in stage:
                marked = tf.strings.regex_replace(marked, pattern, replacement)
            pieces = tf.strings.split(marked, sep=SEP)
            flat = pieces.flat_values
            dropped = tf.strings.substr(flat, 0, 1) == _DROP
            # A dropped piece holds one byte more than the text it covers.
            lengths = tf.cast(tf.strings.length(flat), tf.int64) - tf.cast(
                dropped, tf.int64
            )
            starts = tf.cumsum(lengths, exclusive=True)
            kept = (lengths > 0) & ~dropped
            at = tf.where(kept)[:, 0]
            if base is not None:
                base = _piece_starts(base, lengths, pieces.row_splits, at)
            starts, lengths = tf.gather(starts, at), tf.gather(lengths, at)
            segments = tf.strings.substr(
                tf.strings.reduce_join(segments), starts, lengths
            )
            if n + 1 < len(self._stages):
                mapped = tf.strings.substr(
                    tf.strings.reduce_join(mapped), starts, lengths
                )
            kept_before = tf.concat(
                [[0], tf.cumsum(tf.cast(kept, tf.int64))], 0
            )
            splits = tf.gather(
                tf.gather(kept_before, pieces.row_splits), splits
            )
        words = tf.RaggedTensor.from_row_splits(
            segments, splits, validate=False
        )
        return words, base

    def _split_in_place(self, segments, splits, base):
        """The stages on the text itself: the pieces are what the split
        gives (less the dropped and empty ones)."""
        for stage in self._stages:
            marked = segments
            for pattern, replacement in stage:
                marked = tf.strings.regex_replace(marked, pattern, replacement)
            pieces = tf.strings.split(marked, sep=SEP)
            flat = pieces.flat_values
            kept = (tf.strings.length(flat) > 0) & (
                tf.strings.substr(flat, 0, 1) != _DROP
            )
            at = tf.where(kept)[:, 0]
            if base is not None:
                # A dropped piece holds one byte more than the text it covers.
                lengths = tf.cast(tf.strings.length(flat), tf.int64) - tf.cast(
                    ~kept & (tf.strings.length(flat) > 0), tf.int64
                )
                base = _piece_starts(base, lengths, pieces.row_splits, at)
            segments = tf.gather(flat, at)
            kept_before = tf.concat(
                [[0], tf.cumsum(tf.cast(kept, tf.int64))], 0
            )
            splits = tf.gather(
                tf.gather(kept_before, pieces.row_splits), splits
            )
        words = tf.RaggedTensor.from_row_splits(
            segments, splits, validate=False
        )
        return words, base


def _piece_starts(base, lengths, splits, at):
    """The start of the kept pieces `at` in the original segment: that of
    the unit they were cut from (`base`, per row of `splits`) plus the
    lengths before them in it."""
    within = starts_in_rows(lengths, splits)
    return tf.gather(tf.gather(base, row_ids(splits)) + within, at)
