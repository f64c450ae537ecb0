"""Hugging Face pre-tokenizers (Split, Sequence, ByteLevel, Digits) in RE2.

A `tokenizer.json` pre-tokenizer cuts each text segment into words before
BPE. `PreTokenizer` compiles its description into a few
`tf.strings.regex_replace` passes that insert a separator byte at every
cut; a final split on that byte gives the words.

Two things make the passes exact and fast:

* Every regex is translated by `_regex.plan_split` (Oniguruma semantics,
  Oniguruma's Unicode tables, the `\\s+(?!\\S)` lookahead removed by a
  proven cut).
* Where a regex strains RE2's DFA (`_regex.strains_the_dfa`: o200k's
  two adjacent runs of large overlapping letter classes), the passes run
  on a *class alphabet*: each non-ASCII character is replaced by a
  representative of its class, the set of characters that every
  character class of the description treats alike, with the same UTF-8
  length. Splits are then unchanged, byte for byte, and the regexes hold a
  few dozen characters instead of Unicode tables. RE2's DFA runs out of
  memory on o200k's regex over Chinese text, which took 524-739 ms a batch
  of 1024 lines of Hong Lou Meng with its own classes against 10-18 ms
  for the other families' regexes (a 50x slowdown); on the class alphabet
  it takes about as long as any other regex. ASCII characters are their
  own representatives, and lines of pure ASCII are not mapped at all. The
  words are then cut out of the original text at the same byte offsets.
  The other regexes run on the text itself, which is cheaper.
"""

from __future__ import annotations

import bisect
import dataclasses

import numpy as np
import tensorflow as tf

from tf_input.tokenizers import _regex
from tf_input.tokenizers._unicode import EVERYTHING
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._unicode import rust_numeric

SEP = b"\xff"  # never in valid UTF-8, and no RE2 class matches it
# Before text that a Removed split drops: the text stays in place (so byte
# offsets still match the original) until the pieces are cut out.
_DROP = b"\xfd"
# HF's ByteLevel pre-tokenizer regex (`use_regex=True`), GPT-2's.
GPT2_PATTERN = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
    r"|\s+(?!\S)|\s+"
)
_BEHAVIORS = (
    "Removed",
    "Isolated",
    "MergedWithPrevious",
    "MergedWithNext",
    "Contiguous",
)
_UNSUPPORTED = {
    "Metaspace": "SentencePiece-style (`▁`) pre-tokenization is not "
    "supported yet",
    "BertPreTokenizer": "it belongs to WordPiece tokenizers (BERT), which "
    "load as `WordPieceTokenizer`",
}


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
        ValueError: for an unknown or unsupported type or option, or a
            regex that RE2 cannot match exactly (the message names it).
    """

    def __init__(self, spec, where="`pretokenizer`"):
        self.where = where
        self.prefix_space = False
        self.steps = []
        if spec == "gpt2":
            spec = {"type": "ByteLevel", "add_prefix_space": False}
        if spec is not None:
            items = self._flatten(spec)
            for i, item in enumerate(items):
                self._add(item, first=i == 0, last=i == len(items) - 1)
        self._compile()

    # --- Description ------------------------------------------------------
    def _flatten(self, spec):
        if not isinstance(spec, dict) or "type" not in spec:
            raise ValueError(
                f"{self.where}: a pre-tokenizer must be a dict with a "
                f"'type'. Received: {spec!r}."
            )
        if spec["type"] == "Sequence":
            out = []
            for item in spec.get("pretokenizers", []):
                out.extend(self._flatten(item))
            return out
        return [spec]

    def _add(self, spec, first, last):
        kind = spec["type"]
        if kind == "Split":
            self._add_split(spec)
        elif kind == "ByteLevel":
            if not last:
                raise ValueError(
                    f"{self.where}: a ByteLevel pre-tokenizer must come last "
                    "(after it, other pre-tokenizers would see its byte "
                    "symbols, not the text), which is what real files do."
                )
            if spec.get("add_prefix_space", True):
                if not first:
                    raise ValueError(
                        f"{self.where}: ByteLevel with add_prefix_space=True "
                        "after other pre-tokenizers is not supported."
                    )
                self.prefix_space = True
            if spec.get("use_regex", True):
                self._add_step(GPT2_PATTERN, "Isolated", False)
        elif kind == "Digits":
            individual = spec.get("individual_digits", False)
            tree = _regex.Chars(rust_numeric())
            self._add_tree(
                tree, "Isolated" if individual else "Contiguous", False
            )
        elif kind == "WhitespaceSplit":
            tree = _regex.Repeat(_regex.Chars(WHITE_SPACE), 1, None)
            self._add_tree(tree, "Removed", False)
        else:
            reason = _UNSUPPORTED.get(
                kind,
                "supported are Split, Sequence, ByteLevel, Digits and "
                "WhitespaceSplit",
            )
            raise ValueError(
                f"{self.where}: the pre-tokenizer type {kind!r} is not "
                f"supported: {reason}."
            )

    def _add_split(self, spec):
        pattern = spec.get("pattern")
        behavior = spec.get("behavior")
        invert = spec.get("invert", False)
        if behavior not in _BEHAVIORS:
            raise ValueError(
                f"{self.where}: a Split's 'behavior' must be one of "
                f"{_BEHAVIORS}. Received: behavior={behavior!r}."
            )
        if not isinstance(invert, bool):
            raise ValueError(
                f"{self.where}: a Split's 'invert' must be true or false. "
                f"Received: invert={invert!r}."
            )
        if isinstance(pattern, dict) and set(pattern) == {"Regex"}:
            self._add_step(pattern["Regex"], behavior, invert)
        elif isinstance(pattern, dict) and set(pattern) == {"String"}:
            text = pattern["String"]
            if not isinstance(text, str) or not text:
                raise ValueError(
                    f"{self.where}: a Split's String pattern must be a "
                    f"non-empty string. Received: {text!r}."
                )
            tree = _regex.concat([_regex.Chars(CodePoints.of(c)) for c in text])
            self._add_tree(tree, behavior, invert)
        else:
            raise ValueError(
                f"{self.where}: a Split's 'pattern' must be "
                '{"Regex": ...} or {"String": ...}. '
                f"Received: pattern={pattern!r}."
            )

    def _add_step(self, pattern, behavior, invert):
        try:
            plan = _regex.plan_split(pattern)
        except (_regex.RegexError, TypeError) as error:
            raise ValueError(f"{self.where}: {error}") from None
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
        single = tree.points if isinstance(tree, _regex.Chars) else None
        covers = not (
            EVERYTHING - _regex.single_characters(tree) - _regex.SURROGATES
        )
        self.steps.append(_Step(tree, None, behavior, invert, covers, single))

    def _check_cut(self, cut, behavior, pattern):
        if cut is not None and behavior == "Contiguous":
            raise ValueError(
                f"{self.where}: the Contiguous behavior with the lookahead "
                f"pattern {pattern!r} is not supported."
            )

    # --- Compilation --------------------------------------------------------
    def _compile(self):
        sets = [EVERYTHING, WHITE_SPACE, ~WHITE_SPACE]
        for step in self.steps:
            sets.extend(_regex.char_sets(step.tree))
            if step.cut is not None:
                sets.append(step.cut)
        # The class alphabet only where RE2's DFA needs it: it costs a
        # decode and re-encode of every non-ASCII line, and cutting the words
        # out of the original text (11 + 9 ms a batch of WikiText, more
        # than the split itself).
        self.mapped = any(
            _regex.strains_the_dfa(step.tree) for step in self.steps
        )
        self.alphabet = _ClassAlphabet(sets) if self.mapped else None
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
        re2 = _regex.to_re2(step.tree, rewrite)
        behavior, invert = step.behavior, step.invert
        if behavior == "Contiguous":
            if step.single_class is None:
                raise ValueError(
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
    def __call__(self, segments, is_token):
        """`[M]` segments -> ragged `[M, None]` words (strings).

        Segments where `is_token` is True (added-token placeholders, made
        of bytes that no class matches) come out as one word.
        """
        if self.prefix_space:
            starts_with_space = tf.strings.regex_full_match(segments, "(?s) .*")
            # HF's `prepend` leaves an empty string alone.
            empty = tf.strings.length(segments) == 0
            segments = tf.where(
                is_token | starts_with_space | empty,
                segments,
                tf.strings.join([" ", segments]),
            )
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
            return tf.RaggedTensor.from_row_splits(
                tf.gather(segments, keep), kept_before, validate=False
            )
        if not self.mapped:
            return self._split_in_place(segments, splits)
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
        return tf.RaggedTensor.from_row_splits(segments, splits, validate=False)

    def _split_in_place(self, segments, splits):
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
            segments = tf.gather(flat, tf.where(kept)[:, 0])
            kept_before = tf.concat(
                [[0], tf.cumsum(tf.cast(kept, tf.int64))], 0
            )
            splits = tf.gather(
                tf.gather(kept_before, pieces.row_splits), splits
            )
        return tf.RaggedTensor.from_row_splits(segments, splits, validate=False)


class _ClassAlphabet:
    """Non-ASCII characters -> representatives of their classes.

    Two characters are in one class when every set of `sets` holds both
    or neither, and they have the same UTF-8 length. `rewrite` spells a
    set of `sets` over the representatives (ASCII characters stand for
    themselves).
    """

    def __init__(self, sets):
        sets = list(dict.fromkeys(sets))
        cuts = {0x80, 0x800, 0x10000, 0xD800, 0xE000, 0x110000}
        for points in sets:
            for first, last in points.ranges:
                cuts.update((first, last + 1))
        cuts = sorted(c for c in cuts if 0x80 <= c <= 0x110000)
        starts = cuts[:-1]
        classes = {}
        reps = []
        for start in starts:
            if 0xD800 <= start < 0xE000:
                reps.append(0xFFFD)  # no UTF-8 text holds a surrogate
                continue
            key = (
                tuple(start in points for points in sets),
                len(chr(start).encode("utf-8")),
            )
            reps.append(classes.setdefault(key, start))
        self._starts = starts
        self._interval_reps = reps
        self.representatives = sorted(set(classes.values()))
        self.bounds = np.array(starts, np.int32)
        self.reps = np.array(reps, np.int32)

    def representative(self, code_point):
        if code_point < 0x80:
            return code_point
        i = bisect.bisect_right(self._starts, code_point) - 1
        return self._interval_reps[i]

    def rewrite(self, points):
        ascii_part = points & CodePoints([(0, 0x7F)])
        reps = [r for r in self.representatives if r in points]
        return ascii_part | CodePoints((r, r) for r in reps)

    def map_text(self, texts, mask):
        """`texts` with each non-ASCII character replaced by its class
        representative, on the rows where `mask` is True."""
        plain = tf.strings.regex_full_match(texts, "[\\x00-\\x7f]*")
        needs = mask & ~plain
        bounds = tf.constant(self.bounds)
        reps = tf.constant(self.reps)

        def mapped():
            rows = tf.where(needs)[:, 0]
            chars = tf.strings.unicode_decode(tf.gather(texts, rows), "UTF-8")
            flat = chars.flat_values
            interval = tf.searchsorted(bounds, flat, side="right") - 1
            flat = tf.where(
                flat < 0x80, flat, tf.gather(reps, tf.maximum(interval, 0))
            )
            encoded = tf.strings.unicode_encode(
                chars.with_flat_values(flat), "UTF-8"
            )
            count = tf.size(texts, out_type=tf.int64)
            position = tf.where(
                needs,
                count + tf.cumsum(tf.cast(needs, tf.int64)) - 1,
                tf.range(count),
            )
            return tf.gather(tf.concat([texts, encoded], 0), position)

        return tf.cond(tf.reduce_any(needs), mapped, lambda: texts)
