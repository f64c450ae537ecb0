"""Hugging Face normalizers in core TensorFlow ops.

`Normalizer` compiles a `tokenizer.json` `normalizer` description into
string ops that give HF's output byte for byte, with no
`tensorflow_text` (so a SavedModel holding one needs nothing but
TensorFlow). It is the one `type` dispatch of this stage; the parts:

* `NFC`, `NFD`, `NFKC`, `NFKD` (`unicode`: HF's Unicode 9.0 tables);
* `Lowercase` (`lowercase`: Rust's per-character lowercase);
* `StripAccents` (`strip_accents`: HF's combining marks);
* `Precompiled` (`precompiled`: a SentencePiece charsmap, walked per
  grapheme cluster as HF does; clusters from `graphemes`);
* `Replace`, `Prepend` and `Strip` (here);
* `Sequence` of these, in order.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input.tokenizers._offsets import Sources
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.hf import regex
from tf_input.tokenizers.hf.normalizers.lowercase import Lowercase
from tf_input.tokenizers.hf.normalizers.precompiled import CharsmapError
from tf_input.tokenizers.hf.normalizers.precompiled import Precompiled
from tf_input.tokenizers.hf.normalizers.precompiled import decode_charsmap
from tf_input.tokenizers.hf.normalizers.rewrite import RegexRewrite
from tf_input.tokenizers.hf.normalizers.strip_accents import StripAccents
from tf_input.tokenizers.hf.normalizers.unicode import FORMS
from tf_input.tokenizers.hf.normalizers.unicode import UnicodeNormalization
from tf_input.tokenizers.hf.normalizers.unicode import reference_normalize
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import check_flag
from tf_input.tokenizers.hf.spec import flatten
from tf_input.tokenizers.hf.spec import unsupported

__all__ = ["Normalizer", "compose", "reference_normalize", "replacement"]

_SUPPORTED = (
    "NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Precompiled, Replace, "
    "Prepend, Strip and Sequence"
)
_UNSUPPORTED = {
    "BertNormalizer": "it belongs to WordPiece tokenizers (BERT), which "
    "load as `WordPieceTokenizer`",
}


class Normalizer(tf.Module):
    """A compiled `normalizer` description (a dict, or None for none).

    A `tf.Module`: the lookup tables it needs are created here (under
    `tf.init_scope`) and saved with the layer that holds it.

    Raises:
        SpecError: for an unknown or unsupported type or a bad field,
            naming it.
    """

    def __init__(self, spec, where="`normalizer`"):
        super().__init__()
        self.where = where
        self._plain = Untracked()
        self._plain.ops = []
        self._plain.kinds = []
        self._tables = []  # what the ops hold, tracked for saving
        with tf.init_scope():
            for item in flatten(spec, "normalizer", where):
                op = self._compile(item)
                if op is not None:
                    self._plain.ops.append(op)
                    self._plain.kinds.append(item["type"])

    def __bool__(self):
        return bool(self._plain.ops)

    def _compile(self, spec):
        kind = spec["type"]
        if kind in FORMS:
            op = UnicodeNormalization(kind)
            self._tables.extend(op.lookup_tables)
            return op
        if kind == "Lowercase":
            op = Lowercase()
            self._tables.append(op.table)
            return op
        if kind == "StripAccents":
            return StripAccents()
        if kind == "Precompiled":
            return self._precompiled(spec)
        if kind == "Prepend":
            prefix = spec.get("prepend")
            if not isinstance(prefix, str):
                raise SpecError(
                    f"{self.where}: Prepend needs a string 'prepend'. "
                    f"Received: {prefix!r}."
                )
            return _Prepend(prefix)
        if kind == "Strip":
            left = check_flag(spec, "strip_left", True, self.where)
            right = check_flag(spec, "strip_right", True, self.where)
            return _strip(left, right)
        if kind == "Replace":
            return replacement(spec, self.where)
        raise unsupported(
            self.where, "normalizer", kind, _SUPPORTED, _UNSUPPORTED
        )

    def _precompiled(self, spec):
        blob = decode_charsmap(spec, self.where)
        if not blob:  # no rules
            return None
        try:
            op = Precompiled(blob)
        except CharsmapError as error:
            raise CharsmapError(f"{self.where}: {error}") from None
        self._tables.append(op)
        return op

    def __call__(self, texts):
        """`[M]` valid UTF-8 strings -> normalized `[M]` strings."""
        for op in self._plain.ops:
            texts = op(texts)
        return texts

    def check_alignments(self, owner):
        """Raises `NotImplementedError` (naming `owner`) if a part of this
        normalizer cannot say where its characters come from."""
        for kind, op in zip(self._plain.kinds, self._plain.ops):
            if not hasattr(op, "with_sources"):
                raise NotImplementedError(
                    f"{owner}: offsets through a {kind} normalizer are not "
                    "implemented. Use `tokenize` for the ids."
                )

    def substitution(self):
        """`(prefix, {new: old})` if this chain only puts `prefix` in front
        of a non-empty text (one `Prepend`) and replaces characters one
        for one (`Replace` of one character by one), no new character
        being an old one or the prefix's: in a text that holds no new
        character, each output character then comes from one known input
        character (or is the prefix's). Else None."""
        prefix, pairs = None, {}
        for op in self._plain.ops:
            if isinstance(op, _Prepend) and prefix is None:
                prefix = op.prefix
            elif isinstance(op, _SameLength):
                old, new = op.pair
                if new in pairs or old in pairs or old in pairs.values():
                    return None
                pairs[new] = old
            else:
                return None
        prefix = prefix or ""
        olds = set(pairs.values())
        if olds & set(pairs) or olds & set(prefix):
            return None
        return prefix, pairs

    def with_sources(self, texts):
        """`[M]` texts -> (normalized `[M]` texts, int64 ragged `[M, None]`
        sources): for each normalized character, the index of the input
        character it is aligned with (HF's alignments), -1 for none."""
        texts, sources = self.with_source_reader(texts)
        return texts, sources.ragged(texts)

    def with_source_reader(self, texts):
        """`with_sources`, the sources as an `_offsets.Sources` that reads
        them where they are needed.

        The alignments are worked out for the texts in which some step
        may move a character; in the others each character stays where
        it was, or shifts by what a `Strip` cut at the start (most lines
        of most text, for most chains).
        """
        ops = self._plain.ops
        # A step without `moves` moves every text (`Prepend`): no text
        # would be left out.
        if any(getattr(op, "moves", None) is None for op in ops):
            texts, sources = self._with_sources(texts)
            return texts, Sources(tf.ones(tf.shape(texts), tf.bool), sources)
        moving = tf.zeros(tf.shape(texts), tf.bool)
        shift = tf.zeros(tf.shape(texts), tf.int64)  # stripped at the start
        out = texts  # right for the texts no step has moved so far
        for op in ops:
            moving |= op.moves(out)
            if isinstance(op, _Strip):
                shift += op.dropped(out)
            # A step that leaves the texts it does not move as they are
            # need not run here: the moving texts are rewritten below.
            if not getattr(op, "keeps_unmoved_texts", False):
                out = op(out)
        where = tf.where(moving)
        done, moved = self._with_sources(tf.gather_nd(texts, where))
        return (
            tf.tensor_scatter_nd_update(out, where, done),
            Sources(moving, moved, shift),
        )

    def _with_sources(self, texts):
        sources = None
        for op in self._plain.ops:
            texts, step = op.with_sources(texts)
            if step is None:  # every character stays where it was
                continue
            sources = step if sources is None else compose(sources, step)
        if sources is None:
            sources = tf.ragged.range(_char_lengths(texts))
        return texts, sources


def compose(sources, step):
    """The sources of two rewrites one after the other (ragged `[M,
    None]`, as `Normalizer.with_sources` gives them): the source of the
    source, row by row."""
    values = step.flat_values
    at = values + tf.gather(sources.row_splits, step.value_rowids())
    found = tf.gather(sources.flat_values, tf.maximum(at, 0))
    return step.with_flat_values(tf.where(values >= 0, found, -1))


def replacement(spec, where):
    """The op of a `Replace` (a normalizer, or a decoder on each token):
    `[M]` strings -> `[M]` strings with every match of the pattern (a
    `String` or an Oniguruma `Regex`) replaced by `content`, or None for
    an empty `String` pattern (HF: it matches nothing)."""
    pattern, content = spec.get("pattern"), spec.get("content")
    if not isinstance(content, str):
        raise SpecError(
            f"{where}: Replace needs a string 'content'. Received: {content!r}."
        )
    if isinstance(pattern, dict) and set(pattern) == {"String"}:
        text = pattern["String"]
        if not isinstance(text, str):
            raise SpecError(
                f"{where}: a Replace String pattern must be a "
                f"string. Received: {text!r}."
            )
        if not text:
            return None
        re2 = "".join(CodePoints.of(c).re2() for c in text)
    elif isinstance(pattern, dict) and set(pattern) == {"Regex"}:
        try:
            tree = regex.parse(pattern["Regex"])
            re2 = regex.to_re2(tree)
        except SpecError as error:
            raise SpecError(f"{where}: {error}") from None
        if regex.nullable(tree):
            raise SpecError(
                f"{where}: the Replace pattern "
                f"{pattern['Regex']!r} can match the empty string, "
                "which is not supported."
            )
    else:
        raise SpecError(
            f"{where}: a Replace 'pattern' must be "
            '{"String": ...} or {"Regex": ...}. '
            f"Received: {pattern!r}."
        )
    replace = RegexRewrite(re2, content.replace("\\", "\\\\"))
    if isinstance(pattern, dict) and len(pattern.get("String", "")) == 1:
        if len(content) == 1:
            # One character for one: each stays aligned with itself.
            return _SameLength(replace, (pattern["String"], content))
    return replace


def _char_lengths(texts):
    return tf.cast(tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64)


class _SameLength:
    """A rewrite that keeps every character in its place (a `Replace` of
    one character by one): its alignments are the identity. `pair` is
    `(old, new)`."""

    def __init__(self, rewrite, pair):
        self._rewrite = rewrite
        self.pair = pair

    def __call__(self, texts):
        return self._rewrite(texts)

    def with_sources(self, texts):
        """The texts and None: each character is its own source."""
        return self(texts), None

    def moves(self, texts):
        """No text: every character stays in place."""
        return tf.zeros(tf.shape(texts), tf.bool)


class _Prepend:
    """HF's `Prepend`: `prefix` in front of a non-empty text. Its
    characters are aligned with the text's first character (HF's
    `prepend` transforms that character into the prefix and itself)."""

    def __init__(self, prefix):
        self.prefix = prefix

    def __call__(self, texts):
        return tf.where(
            tf.strings.length(texts) > 0,
            tf.strings.join([self.prefix, texts]),
            texts,
        )

    def with_sources(self, texts):
        lengths = _char_lengths(texts)
        size = len(self.prefix)
        sources = tf.ragged.range(tf.where(lengths > 0, lengths + size, 0))
        return self(texts), sources.with_flat_values(
            tf.maximum(sources.flat_values - size, 0)
        )


_LEADING_SPACE = f"^{WHITE_SPACE.re2()}+"
_TRAILING_SPACE = f"{WHITE_SPACE.re2()}+$"


def _strip(left, right):
    """HF's `Strip` (leading and/or trailing White_Space goes), or None
    for neither."""
    return _Strip(left, right) if left or right else None


class _Strip:
    """HF's `Strip`: the characters kept keep their alignments, so its
    sources are a range: the output's positions shifted by the count of
    characters stripped on the left. No text has a character moved out
    of that range (`moves`); `Normalizer.with_sources` adds the shift
    (`dropped`) instead."""

    def __init__(self, left, right):
        self._left = left
        self._pattern = "|".join(
            p
            for p, on in ((_LEADING_SPACE, left), (_TRAILING_SPACE, right))
            if on
        )

    def __call__(self, texts):
        return tf.strings.regex_replace(texts, self._pattern, "")

    def dropped(self, texts):
        """int64 `[M]`: the characters stripped at the start of each text."""
        if not self._left:
            return tf.zeros(tf.shape(texts), tf.int64)
        kept = tf.strings.regex_replace(texts, _LEADING_SPACE, "")
        return _char_lengths(texts) - _char_lengths(kept)

    def moves(self, texts):
        """No text: a strip only shifts what it keeps (`dropped`)."""
        return tf.zeros(tf.shape(texts), tf.bool)

    def with_sources(self, texts):
        out = self(texts)
        start = self.dropped(texts)
        return out, tf.ragged.range(start, start + _char_lengths(out))
