"""Added tokens found in text exactly as Hugging Face's `AddedVocabulary`.

HF cuts added tokens (special or not) out of the text before the
normalizer and pre-tokenizer run: those with `normalized=False` from the
raw text, then those with `normalized=True` from each normalized piece.
Matches are leftmost-longest and do not overlap (an Aho-Corasick scan);
a match is then dropped back into the text if the token is special and
`split_special_tokens` is on, or if it is `single_word` and touches a word
character (Rust's `\\w`); `lstrip` / `rstrip` tokens take the whitespace
beside them.

`Extractor` does the same with one `regex_replace` (alternatives longest
first, which RE2's leftmost-first matching turns into leftmost-longest),
a split, and segment arithmetic for the dropped matches and the strips.
Each token found becomes a *placeholder*: a string of bytes that never
occur in UTF-8 and that no regex class matches, so the normalizer and the
pre-tokenizer pass it through untouched as one word, which the BPE word
table maps to the token's id.
"""

from __future__ import annotations

import tensorflow as tf

from tf_input._ragged import marks
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._unicode import WHITE_SPACE
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._unicode import rust_word
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import SpecTypeError

SEP = b"\xff"
_MARK = b"\xfe"  # before the content of a match, right after the scan
_PLACEHOLDER = b"\xfb"  # first byte of a placeholder
_DIGITS = b"\xf8\xf9\xfa"  # placeholder digits (base 3)
_FLAGS = ("special", "lstrip", "rstrip", "single_word", "normalized")
_INF = 1 << 62


def placeholder(token_id):
    """The placeholder bytes of an added token id."""
    digits = []
    while True:
        token_id, digit = divmod(token_id, 3)
        digits.append(_DIGITS[digit])
        if not token_id:
            break
    return _PLACEHOLDER + bytes(reversed(digits))


def is_placeholder(texts):
    return tf.strings.substr(texts, 0, 1) == _PLACEHOLDER


def check_added_tokens(tokens, where):
    """Validated copies of HF `added_tokens` entries (dicts)."""
    if not isinstance(tokens, (list, tuple)):
        raise SpecTypeError(
            f"{where} must be a list of dicts like Hugging Face's "
            f"'added_tokens'. Received: {type(tokens).__name__}."
        )
    out, seen = [], {}
    for n, token in enumerate(tokens):
        if not isinstance(token, dict):
            raise SpecTypeError(
                f"{where}[{n}] must be a dict with 'id' and 'content'. "
                f"Received: {token!r}."
            )
        content, token_id = token.get("content"), token.get("id")
        if not isinstance(content, str) or not content:
            raise SpecError(
                f"{where}[{n}]: 'content' must be a non-empty string. "
                f"Received: {content!r}."
            )
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise SpecError(
                f"{where}[{n}]: 'id' must be an integer. Received: "
                f"{token_id!r}."
            )
        if token_id < 0:
            raise SpecError(
                f"{where}[{n}]: 'id' must be >= 0. Received: {token_id}."
            )
        special = token.get("special", False)
        entry = {
            "id": token_id,
            "content": content,
            "special": special,
            "lstrip": token.get("lstrip", False),
            "rstrip": token.get("rstrip", False),
            "single_word": token.get("single_word", False),
            "normalized": token.get("normalized", not special),
        }
        for flag in _FLAGS:
            if not isinstance(entry[flag], bool):
                raise SpecError(
                    f"{where}[{n}]: {flag!r} must be true or false. "
                    f"Received: {entry[flag]!r}."
                )
        if content in seen and seen[content] != token_id:
            raise SpecError(
                f"{where}: {content!r} is given twice, with ids "
                f"{seen[content]} and {token_id}."
            )
        seen[content] = token_id
        out.append(entry)
    return out


def _literal(text):
    return "".join(CodePoints.of(c).re2() for c in text)


class Extractor(tf.Module):
    """Cuts a set of added tokens out of texts.

    Args:
        tokens: validated entries (`check_added_tokens`), all of one kind
            (normalized or not); for normalized ones, `content` is the
            normalized content the text is matched against.
        split_special_tokens: bool. Special tokens stay text.
        where: str, for error messages.
    """

    def __init__(self, tokens, split_special_tokens, where):
        super().__init__()
        self.has_tokens = bool(tokens)
        self.has_single_word = any(t["single_word"] for t in tokens)
        by_length = sorted(tokens, key=lambda t: (-len(t["content"]), t["id"]))
        self.pattern = "|".join(_literal(t["content"]) for t in by_length)
        self.has_skipped = split_special_tokens and any(
            t["special"] for t in tokens
        )
        self.has_strips = any(t["lstrip"] or t["rstrip"] for t in tokens)
        with tf.init_scope():
            self._tables(tokens, split_special_tokens)

    def _tables(self, tokens, split_special_tokens):
        contents = [t["content"] for t in tokens]
        skipped = [
            t["content"]
            for t in tokens
            if split_special_tokens and t["special"]
        ]
        single_word = [t["content"] for t in tokens if t["single_word"]]
        lstrip = [t["content"] for t in tokens if t["lstrip"]]
        rstrip = [t["content"] for t in tokens if t["rstrip"]]
        placeholders = [placeholder(t["id"]) for t in tokens]

        def flags(keys):
            return lookup_table(
                [k.encode() for k in keys],
                [True] * len(keys),
                False,
                key_dtype=tf.string,
                value_dtype=tf.bool,
            )

        self._placeholder = lookup_table(
            [c.encode() for c in contents],
            placeholders,
            b"",
            key_dtype=tf.string,
            value_dtype=tf.string,
        )
        self._skipped = flags(skipped)
        self._single_word = flags(single_word)
        self._lstrip = flags(lstrip)
        self._rstrip = flags(rstrip)

    def __call__(self, texts, spans=False):
        """`[N]` texts -> (`[M]` segments, `[N + 1]` row splits).

        Tokens found become placeholders; the other segments are text.
        With `spans=True`, also the int64 `[M]` start and end of each
        segment in its text: a token's span takes the whitespace that its
        `lstrip` / `rstrip` removed, as Hugging Face's offsets do.
        """
        count = tf.size(texts, out_type=tf.int64)
        one_each = tf.range(count + 1)

        def whole():
            if not spans:
                return texts, one_each
            ends = tf.cast(tf.strings.length(texts), tf.int64)
            return texts, one_each, tf.zeros_like(ends), ends

        if not self.has_tokens:
            return whole()
        found = tf.strings.regex_full_match(
            texts, f"(?s).*(?:{self.pattern}).*"
        )
        return tf.cond(
            tf.reduce_any(found),
            lambda: self._extract(texts, spans),
            whole,
        )

    def _extract(self, texts, spans=False):
        marked = tf.strings.regex_replace(
            texts, self.pattern, SEP + _MARK + b"\\0" + SEP
        )
        parts = tf.strings.split(marked, sep=SEP)
        flat, splits = parts.flat_values, parts.row_splits
        is_match = tf.strings.substr(flat, 0, 1) == _MARK
        content = tf.strings.substr(
            flat,
            tf.cast(is_match, tf.int64),
            tf.fill(
                tf.shape(flat, out_type=tf.int64), tf.constant(_INF, tf.int64)
            ),
        )
        kept = is_match
        if self.has_skipped:
            kept = kept & ~self._skipped.lookup(content)
        if self.has_single_word:
            kept = kept & ~(
                self._single_word.lookup(content)
                & _touches_a_word(content, splits)
            )
        if self.has_skipped or self.has_single_word:
            content, kept, splits = _merge_dropped(content, kept, splits)
        if spans:
            lengths = tf.cast(tf.strings.length(content), tf.int64)
            starts = starts_in_rows(lengths, splits)
            ends = starts + lengths
        if self.has_strips:
            content, lead, trail = self._strip(content, kept, splits)
        segments = tf.where(kept, self._placeholder.lookup(content), content)
        if not spans:
            return segments, splits
        if self.has_strips:
            starts, ends = _stripped_spans(
                lead, trail, kept, splits, starts, ends
            )
        return segments, splits, starts, ends

    def _strip(self, content, kept, splits):
        """Text beside an `rstrip` (`lstrip`) token loses its leading
        (trailing) whitespace, HF's order: a token's rstrip comes first.
        Returns the content and the int64 number of bytes taken from the
        start and from the end of each segment."""
        size = tf.size(content, out_type=tf.int64)
        first_in_row = _marks(splits[:-1], size)
        last_in_row = _marks(splits[1:] - 1, size)
        rstrip = kept & self._rstrip.lookup(content)
        lstrip = kept & self._lstrip.lookup(content)
        after_rstrip = tf.concat([[False], rstrip[:-1]], 0) & ~first_in_row
        before_lstrip = tf.concat([lstrip[1:], [False]], 0) & ~last_in_row
        whitespace = WHITE_SPACE.re2()
        before = tf.cast(tf.strings.length(content), tf.int64)
        content = tf.where(
            after_rstrip & ~kept,
            tf.strings.regex_replace(content, f"^{whitespace}+", ""),
            content,
        )
        middle = tf.cast(tf.strings.length(content), tf.int64)
        content = tf.where(
            before_lstrip & ~kept,
            tf.strings.regex_replace(content, f"{whitespace}+$", ""),
            content,
        )
        after = tf.cast(tf.strings.length(content), tf.int64)
        return content, before - middle, middle - after


def _stripped_spans(lead, trail, kept, splits, starts, ends):
    """The spans after `_strip`, which took `lead` (`trail`) bytes of
    whitespace from the start (end) of text segments: the text keeps what
    is left, and a token reaches to the text beside it, so that it covers
    the whitespace it took (Hugging Face's offsets)."""
    size = tf.size(kept, out_type=tf.int64)
    first_in_row = _marks(splits[:-1], size)
    last_in_row = _marks(splits[1:] - 1, size)
    trail_before = tf.where(
        first_in_row, tf.zeros_like(trail), tf.concat([[0], trail[:-1]], 0)
    )
    lead_after = tf.where(
        last_in_row, tf.zeros_like(lead), tf.concat([lead[1:], [0]], 0)
    )
    starts = tf.where(kept, starts - trail_before, starts + lead)
    ends = tf.where(kept, ends + lead_after, ends - trail)
    return starts, ends


def _marks(positions, size):
    return marks(positions, size + 1)[:size] > 0


_WORD = rust_word().re2()


def _touches_a_word(content, splits):
    """Per segment: a word character (Rust's `\\w`) ends the text before it
    or starts the text after it, in its row (HF's `single_word` test)."""
    size = tf.size(content, out_type=tf.int64)
    first_in_row = _marks(splits[:-1], size)
    last_in_row = _marks(splits[1:] - 1, size)
    nonempty = tf.strings.length(content) > 0
    ends = tf.strings.regex_full_match(content, f"(?s).*{_WORD}")
    starts = tf.strings.regex_full_match(content, f"{_WORD}(?s).*")

    # At most one empty segment lies between two non-empty ones (the text
    # between two adjacent matches), so the neighbour is one or two away.
    def shifted(values, by, fill):
        pad = tf.fill([abs(by)], fill)
        if by > 0:
            return tf.concat([pad, values[:-by]], 0)[:size]
        return tf.concat([values[-by:], pad], 0)[:size]

    no_prev = first_in_row
    no_prev2 = no_prev | shifted(first_in_row, 1, True)
    before = tf.where(
        shifted(nonempty, 1, False) & ~no_prev,
        shifted(ends, 1, False),
        ~no_prev2 & shifted(ends, 2, False),
    )
    no_next = last_in_row
    no_next2 = no_next | shifted(last_in_row, -1, True)
    after = tf.where(
        shifted(nonempty, -1, False) & ~no_next,
        shifted(starts, -1, False),
        ~no_next2 & shifted(starts, -2, False),
    )
    return before | after


def _merge_dropped(content, kept, splits):
    """Joins every run of segments between kept tokens into one segment."""
    size = tf.size(content, out_type=tf.int64)
    first_in_row = _marks(splits[:-1], size)
    previous_kept = tf.concat([[False], kept[:-1]], 0)
    starts = kept | previous_kept | first_in_row
    group = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    num_groups = tf.reduce_sum(tf.cast(starts, tf.int64))
    merged = tf.strings.unsorted_segment_join(content, group, num_groups)
    merged_kept = tf.gather(kept, tf.where(starts)[:, 0])
    groups_before = tf.concat([[0], tf.cumsum(tf.cast(starts, tf.int64))], 0)
    return merged, merged_kept, tf.gather(groups_before, splits)
