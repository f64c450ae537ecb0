"""HF's `Metaspace`: a pre-tokenizer that is also a decoder.

As a pre-tokenizer (SentencePiece style) it turns every space into "▁"
and puts a "▁" in front of a text segment that does not start with one:
every segment (`prepend_scheme` "always"), only the one at the start of
its line ("first"), or none ("never"); with `split` on, a segment is then
cut before each "▁" (HF's `MergedWithNext`). As a decoder (`decoders`
runs it) it turns "▁" back into spaces, and drops every "▁" of a line's
first token (unless the scheme is "never"). `tokenizer.json` files
describe both roles with the same fields, so `Metaspace.from_spec` reads
either.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from tf_input._ragged import marks
from tf_input.tokenizers.hf.spec import SpecError
from tf_input.tokenizers.hf.spec import excerpt

SPACE = "\u2581"
_SCHEMES = ("always", "first", "never")


@dataclasses.dataclass(frozen=True)
class Metaspace:
    """A `Metaspace` description with the replacement "▁".

    Attributes:
        prepend_scheme: "always", "first" or "never".
        split: bool. Cut segments before each "▁" (the pre-tokenizer).
    """

    prepend_scheme: str = "always"
    split: bool = True

    @classmethod
    def from_spec(cls, spec, where):
        """Reads a `{"type": "Metaspace", ...}` dict as HF does (the
        legacy `add_prefix_space` gives the scheme when none is named)."""
        replacement = spec.get("replacement", SPACE)
        scheme = spec.get("prepend_scheme", "always")
        if "add_prefix_space" in spec and "prepend_scheme" not in spec:
            scheme = "always" if spec["add_prefix_space"] else "never"
        split = spec.get("split", True)
        if (
            replacement != SPACE
            or scheme not in _SCHEMES
            or not isinstance(split, bool)
        ):
            raise SpecError(
                f"{where}: {excerpt(spec)} is not supported: a Metaspace "
                f"needs the replacement {SPACE!r}, a prepend_scheme among "
                f"{_SCHEMES} and a true or false 'split'."
            )
        return cls(scheme, split)

    # --- Pre-tokenizer ------------------------------------------------------
    def apply(self, segments, is_token, per_line):
        """Spaces become "▁", and the scheme's "▁" goes in front, on the
        text segments (`is_token` False) of `[M]` `segments`, whose lines
        start at `per_line[:-1]`. Cutting at "▁" is the caller's."""
        return self.apply_with_prefixes(segments, is_token, per_line)[0]

    def apply_with_prefixes(self, segments, is_token, per_line):
        """`apply`, and bool `[M]`: where a "▁" went in front."""
        spaced = tf.strings.regex_replace(segments, " ", SPACE)
        prepend = tf.zeros(tf.shape(segments), tf.bool)
        if self.prepend_scheme != "never":
            prepend = (
                ~is_token
                & (tf.strings.length(spaced) > 0)
                & (tf.strings.substr(spaced, 0, len(SPACE.encode())) != SPACE)
            )
            if self.prepend_scheme == "first":
                count = tf.size(segments, out_type=tf.int64)
                first = marks(per_line[:-1], count + 1)[:-1] > 0
                prepend = prepend & first
            spaced = tf.where(prepend, SPACE + spaced, spaced)
        return tf.where(is_token, segments, spaced), prepend
