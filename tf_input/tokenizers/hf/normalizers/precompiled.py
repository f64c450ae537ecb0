"""The `precompiled_charsmap` of SentencePiece, read once, walked two ways.

A charsmap (a `Precompiled` normalizer's `precompiled_charsmap`, the
`normalizer_spec` of a `.model` file) is a Darts-clone double array (a DAG
that shares suffixes) from key bytes to an offset into a block of
NUL-terminated replacement strings. `read_charsmap` is the one reader of
that format; `charsmap_rules` lists its rules as text.

The two libraries walk the rules differently, and both walks are needed:

* `sentencepiece` takes the longest key that is a prefix of the text at
  each byte (TF Text's ops do it for `.model` files;
  `sentencepiece/_charsmap.py` reads the facts their routing needs);
* HF's `Precompiled` (`spm_precompiled`) looks up a whole grapheme cluster
  of fewer than 6 bytes first, taking the value of the *shortest* key
  that is a prefix of it for the whole cluster, else each character
  alone. E.g. with nmt_nfkc, a fullwidth "Ａ" + U+0301 is one cluster
  whose shortest key "Ａ" gives "A" (the accent goes), where
  sentencepiece's longest key gives "Á"; and "\\r\\n" is one cluster, " "
  for its key "\\r". `Precompiled` below is that walk, in core TF ops.
"""

from __future__ import annotations

import base64
import binascii
import functools
import struct

import numpy as np
import tensorflow as tf

from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers._offsets import sources_where
from tf_input.tokenizers._offsets import starts_in_rows
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._unicode import CodePoints
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.hf.normalizers.graphemes import cluster_starts
from tf_input.tokenizers.hf.spec import SpecError

_NONE = b"\xff"  # a table miss: never in valid UTF-8
# HF looks a grapheme cluster up whole only below this many bytes.
_CLUSTER_BYTES = 6
# More key prefixes than any real charsmap has: a corrupt one (a cycle).
_MOST_KEYS = 10_000_000


class CharsmapError(SpecError):
    """A `precompiled_charsmap` that is corrupt."""


@functools.lru_cache(maxsize=4)
def read_charsmap(blob):
    """`(children, values, strings)` of a `precompiled_charsmap` (bytes).

    `children` holds the edges of the trie, `{node: [(byte, child)]}` with
    bytes in increasing order; `values` the replacement offset of each
    node that ends a key; `strings` the block of replacement strings.
    """
    if len(blob) < 4:
        raise CharsmapError("precompiled_charsmap is shorter than 4 bytes")
    (trie_size,) = struct.unpack_from("<I", blob, 0)
    if trie_size % 4 or trie_size == 0 or 4 + trie_size > len(blob):
        raise CharsmapError("precompiled_charsmap has a bad trie size")
    units = np.frombuffer(blob, "<u4", trie_size // 4, 4).astype(np.int64)
    strings = blob[4 + trie_size :]
    count = len(units)
    offsets = (units >> 10) << ((units & (1 << 9)) >> 6)
    labels = units & ((1 << 31) | 0xFF)
    codes = np.arange(1, 256)
    children, values = {}, {}
    seen = np.zeros(count, bool)
    seen[0] = True
    frontier = np.array([0])
    while frontier.size:
        child = (frontier ^ offsets[frontier])[:, None] ^ codes[None, :]
        inside = child < count
        inside &= labels[np.where(inside, child, 0)] == codes[None, :]
        rows, cols = np.nonzero(inside)
        kids = child[rows, cols]
        for parent, byte, kid in zip(
            frontier[rows].tolist(), codes[cols].tolist(), kids.tolist()
        ):
            children.setdefault(parent, []).append((byte, kid))
        for kid in kids[((units[kids] >> 8) & 1) == 1].tolist():
            leaf = kid ^ int(offsets[kid])
            if leaf >= count:
                raise CharsmapError("a normalization rule points outside")
            values[kid] = int(units[leaf]) & ((1 << 31) - 1)
        frontier = np.unique(kids[~seen[kids]])
        seen[frontier] = True
    return children, values, strings


def replacement(strings, value):
    """The replacement bytes at offset `value` of the strings block."""
    end = strings.find(b"\0", value)
    if value >= len(strings) or end < 0:
        raise CharsmapError("a normalization rule has no replacement")
    return strings[value:end]


@functools.lru_cache(maxsize=4)
def charsmap_rules(blob):
    """`{key: replacement}`: every rule of a `precompiled_charsmap` as text,
    keys in breadth-first order."""
    children, values, strings = read_charsmap(blob)
    rules, level, visited = {}, [(0, b"")], 0
    while level:
        deeper = []
        for node, key in level:
            for byte, kid in children.get(node, ()):
                deeper.append((kid, key + bytes([byte])))
        for kid, key in deeper:
            if kid in values:
                rules[key] = replacement(strings, values[kid])
        visited += len(deeper)
        if visited > _MOST_KEYS:
            raise CharsmapError("precompiled_charsmap is too large (a cycle?)")
        level = deeper
    out = {}
    for key, value in rules.items():
        try:
            out[key.decode("utf-8")] = value.decode("utf-8")
        except UnicodeDecodeError:
            raise CharsmapError(
                f"precompiled_charsmap has a rule that is not UTF-8 ({key!r} "
                f"-> {value!r}), which is not supported"
            ) from None
    return out


def decode_charsmap(spec, where):
    """The charsmap bytes of a `Precompiled` normalizer description."""
    blob = spec.get("precompiled_charsmap") or ""
    if not isinstance(blob, str):
        raise SpecError(
            f"{where}: precompiled_charsmap must be base64 text. "
            f"Received: a {type(blob).__name__}."
        )
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        raise SpecError(
            f"{where}: precompiled_charsmap is not valid base64."
        ) from None


class Precompiled(tf.Module):
    """HF's `Precompiled` normalizer (`spm_precompiled`) in core ops.

    For each extended grapheme cluster: if it is shorter than 6 bytes and
    a prefix of it is a key, the value of the shortest such key replaces
    the whole cluster; otherwise each character is replaced by its own
    rule, if it has one.
    """

    # A text `moves` does not pick comes out as it went in.
    keeps_unmoved_texts = True

    def __init__(self, blob):
        super().__init__()
        rules = charsmap_rules(blob)
        firsts = sorted({ord(key[0]) for key in rules})
        self.changing = _changing_texts(rules)
        self.has_rules = bool(rules)
        # Clusters looked up whole have at most this many characters.
        self.longest = max((len(k) for k in rules), default=1)
        with tf.init_scope():
            keys = [k.encode() for k in rules]
            values = [v.encode() for v in rules.values()]
            self._rules = lookup_table(
                keys, values, _NONE, key_dtype=tf.string, value_dtype=tf.string
            )
            self._first = lookup_table(
                [chr(c).encode() for c in firsts],
                [True] * len(firsts),
                False,
                key_dtype=tf.string,
                value_dtype=tf.bool,
            )

    def __call__(self, texts):
        if not self.has_rules:
            return texts
        where = tf.where(self.moves(texts))
        done = self._normalize(tf.gather_nd(texts, where))
        return tf.tensor_scatter_nd_update(texts, where, done)

    def _normalize(self, texts):
        out, splits, _ = self._rewrite(texts)
        return tf.strings.unsorted_segment_join(
            out, row_ids(splits), tf.size(texts, out_type=tf.int64)
        )

    def with_sources(self, texts):
        """The normalized texts and their sources (HF's alignments).

        HF rewrites a text as a list of `(char, change)`: per cluster or
        character replaced, its new characters with change 0, the last
        `diff` of them with 1 when it has `diff` more than the old, or the
        last entry of the list (which may be an earlier one's, when the
        new text is empty) with `diff` added when it has fewer; a
        character left alone is `(c, 0)`. Walking the input, an entry
        with change <= 0 comes from the character at the pointer and
        moves it `1 - change` characters on; one with change > 0 comes
        from the character before the pointer (none at 0) and does not
        move it.
        """
        if not self.has_rules:
            return texts, None
        return sources_where(self.moves(texts), texts, self._with_sources)

    def moves(self, texts):
        """bool `[M]`: the texts a rule may change (the others stay as they
        are, each character in place)."""
        if not self.has_rules:
            return tf.zeros(tf.shape(texts), tf.bool)
        return tf.strings.regex_full_match(texts, self.changing)

    def _with_sources(self, texts):
        """`with_sources` of texts that may all change."""
        count = tf.size(texts, out_type=tf.int64)
        out, splits, old = self._rewrite(texts)
        new = tf.strings.unicode_decode(out, "UTF-8")
        new_count = tf.cast(new.row_lengths(), tf.int64)
        entry_splits = tf.concat([[0], tf.cumsum(new_count)], 0)
        owner = row_ids(entry_splits)  # the input character of each entry
        k = tf.range(entry_splits[-1]) - tf.gather(entry_splits, owner)
        change = tf.cast(k >= tf.gather(old, owner), tf.int64)
        # Fewer new characters: the diff goes on the last entry so far, if
        # the row has one.
        diff = new_count - old
        row = row_ids(splits)
        target = entry_splits[1:] - 1
        shrinks = (diff < 0) & (
            target >= tf.gather(entry_splits, tf.gather(splits, row))
        )
        # (The rest go to one more entry, dropped: there may be no entry.)
        change += tf.math.unsorted_segment_sum(
            tf.where(shrinks, diff, 0),
            tf.where(shrinks, target, entry_splits[-1]),
            entry_splits[-1] + 1,
        )[:-1]
        moves = tf.where(change <= 0, 1 - change, 0)
        row_splits = tf.gather(entry_splits, splits)
        pointer = starts_in_rows(moves, row_splits)
        sources = pointer - tf.cast(change > 0, tf.int64)
        texts = tf.strings.unsorted_segment_join(out, row, count)
        return texts, tf.RaggedTensor.from_row_splits(
            sources, row_splits, validate=False
        )

    def _rewrite(self, texts):
        """Per character of `texts`: `(what it becomes, row splits of the
        characters, how many characters it replaces)`: a cluster looked
        up whole becomes its value at its first character (which
        replaces the whole cluster) and "" at the others (which replace
        none); any other character becomes its own rule or itself."""
        cps = tf.strings.unicode_decode(texts, "UTF-8")
        flat = cps.values
        splits = cps.row_splits
        count = tf.size(flat, out_type=tf.int64)
        chars = tf.strings.unicode_encode(flat[:, None], "UTF-8")
        row_start = marks(splits[:-1], count + 1)[:-1] > 0
        starts = cluster_starts(flat, row_start)
        cluster = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        clusters = tf.reduce_sum(tf.cast(starts, tf.int64))
        size = utf8_lengths(flat)
        nbytes = tf.math.unsorted_segment_sum(size, cluster, clusters)
        length = tf.math.unsorted_segment_sum(
            tf.ones_like(size), cluster, clusters
        )
        position = tf.range(count) - tf.gather(
            tf.math.unsorted_segment_min(tf.range(count), cluster, clusters),
            cluster,
        )
        first_char = tf.gather(chars, tf.where(starts)[:, 0])
        whole = (
            (length >= 2)
            & (nbytes < _CLUSTER_BYTES)
            & self._first.lookup(first_char)
        )
        found = tf.zeros_like(whole)
        value = tf.fill(tf.shape(whole), "")
        for k in range(1, min(self.longest, _CLUSTER_BYTES - 1) + 1):
            prefix = tf.strings.unsorted_segment_join(
                tf.where(position < k, chars, ""), cluster, clusters
            )
            hit = self._rules.lookup(
                tf.where(whole & (length >= k), prefix, _NONE)
            )
            new = (hit != _NONE) & ~found
            value = tf.where(new, hit, value)
            found = found | new
        single = self._rules.lookup(chars)
        out = tf.where(single != _NONE, single, chars)
        in_found = tf.gather(found, cluster)
        out = tf.where(
            in_found,
            tf.where(position == 0, tf.gather(value, cluster), ""),
            out,
        )
        old = tf.where(
            in_found,
            tf.where(position == 0, tf.gather(length, cluster), 0),
            tf.ones_like(position),
        )
        return out, tf.cast(splits, tf.int64), old


_ASCII = CodePoints([(0, 0x7F)])


def _changing_texts(rules):
    """An RE2 pattern that fully matches every text the rules may change
    (and some they leave alone): one holding a character with a rule of
    its own, or one that may start a longer cluster with a key. A
    character starts a cluster of two or more only when a non-ASCII one
    follows it, or it is non-ASCII, or it is the CR of CR LF (Unicode's
    grapheme rules), so text without those is left as it is."""
    singles = CodePoints((ord(k), ord(k)) for k in rules if len(k) == 1)
    firsts = CodePoints((ord(k[0]), ord(k[0])) for k in rules)
    parts = [
        (singles | (firsts - _ASCII)).re2(),
        f"{(firsts & _ASCII).re2()}[^\\x{{0}}-\\x{{7F}}]",
    ]
    if ord("\r") in firsts:
        parts.append(r"\r\n")
    return f"(?s).*(?:{'|'.join(parts)}).*"
