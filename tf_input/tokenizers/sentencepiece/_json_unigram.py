"""A Hugging Face `Unigram` `tokenizer.json` (ALBERT, T5, XLM-R style).

`UnigramTokenizer` gives HF `tokenizers`' ids with core TensorFlow ops
only. It follows HF's pipeline, which differs from `sentencepiece` (whose
`.model` files `SentencePieceTokenizer` reads) in three ways that change
ids:

* **Precompiled** (the charsmap normalizer) looks up a whole grapheme
  cluster of fewer than 6 bytes first, taking the value of the *shortest*
  key that is a prefix of it for the whole cluster, else each character
  alone; sentencepiece takes the longest key at each byte. E.g. with
  nmt_nfkc, a fullwidth "Ａ" + U+0301 is one cluster whose shortest key
  "Ａ" gives "A" (the accent goes), where sentencepiece's longest key
  gives "Á"; and "\\r\\n" is one cluster, " " for its key "\\r".
  `_Precompiled` does HF's (clusters from `_graphemes`).
* **The Viterbi search** adds f64 scores (sentencepiece: f32), keeps the
  first best candidate for a position (the one that starts earliest) and
  runs on each word of the `Metaspace` pre-tokenizer (split at "▁").
  Characters without a one-character piece get an unknown node scored
  `min score - 10`; consecutive unknowns fuse into one unknown token
  (`fuse_unk`) or, with `byte_fallback`, into the `<0xXX>` tokens of
  their bytes. `_Viterbi` is that search: one `tf.while_loop` step per
  character position over all words of the batch at once.
* **The Metaspace decoder** drops every "▁" of the first token (not just
  a leading space).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import struct

import keras
import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers import _added_tokens
from tf_input.tokenizers import _unicode
from tf_input.tokenizers._normalizers import Normalizer
from tf_input.tokenizers._templates import parse_templates
from tf_input.tokenizers.base import Untracked
from tf_input.tokenizers.base import traced_graphs
from tf_input.tokenizers.byte_pair import _to_valid_utf8
from tf_input.tokenizers.sentencepiece._graphemes import cluster_starts
from tf_input.tokenizers.sentencepiece._json_file import JsonFileTokenizer

_SPACE = "\u2581"
_NONE = b"\xff"  # a table miss: never in valid UTF-8
_SEP = b"\xfe"  # a word break: never in valid UTF-8
_WHITE_SPACE = _unicode.WHITE_SPACE.re2()
_UNK_PENALTY = 10.0  # HF's K_UNK_PENALTY (and sentencepiece's kUnkPenalty)
# HF looks a grapheme cluster up whole only below this many bytes.
_CLUSTER_BYTES = 6


def check_supported(data):
    """Raises ValueError naming what this engine does not do, else None."""
    model = data["model"]
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or not vocab:
        raise ValueError("a Unigram 'vocab' must be a non-empty list")
    for n, item in enumerate(vocab):
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or not isinstance(item[1], (int, float))
        ):
            raise ValueError(
                f"Unigram vocab entry {n} must be [piece, score]. Received: "
                f"{json.dumps(item)[:80]}"
            )
    unk = model.get("unk_id")
    if unk is None or isinstance(unk, bool) or not isinstance(unk, int):
        raise ValueError(
            "a Unigram model without an integer unk_id is not supported "
            f"(HF fails on unknown characters then). Received: unk_id={unk!r}"
        )
    if not 0 <= unk < len(vocab):
        raise ValueError(
            f"unk_id={unk} is outside the vocabulary of {len(vocab)} pieces"
        )
    if model.get("byte_fallback"):
        pieces = {piece for piece, _ in vocab}
        missing = [b for b in range(256) if f"<0x{b:02X}>" not in pieces]
        if missing:
            raise ValueError(
                "byte_fallback with some of the 256 tokens <0x00>..<0xFF> "
                f"missing (e.g. <0x{missing[0]:02X}>) is not supported"
            )
    _normalizer_steps(data.get("normalizer"))
    pre_tokenizer(data.get("pre_tokenizer"))
    decoder = data.get("decoder")
    if decoder is not None:
        _metaspace(decoder, "decoder")


def _metaspace(spec, where):
    """`(prepend_scheme, split)` of a Metaspace("▁") spec, or None for
    no spec; raises ValueError for anything else."""
    if spec is None:
        return None
    if isinstance(spec, dict) and spec.get("type") == "Metaspace":
        scheme = spec.get("prepend_scheme", "always")
        if "add_prefix_space" in spec and "prepend_scheme" not in spec:
            scheme = "always" if spec["add_prefix_space"] else "never"
        if spec.get("replacement", _SPACE) == _SPACE and scheme in (
            "always",
            "first",
            "never",
        ):
            return scheme, bool(spec.get("split", True))
    raise ValueError(
        f"the {where} {json.dumps(spec)[:200]} is not supported for a "
        "Unigram model (only Metaspace('▁') with prepend_scheme always, "
        "first or never, or none)"
    )


def pre_tokenizer(spec):
    """`(whitespace_split, metaspace)`: a Metaspace("▁") pre-tokenizer,
    alone or after a WhitespaceSplit (older T5 files), as `_metaspace`
    gives it (or None); raises ValueError for anything else."""
    if isinstance(spec, dict) and spec.get("type") == "Sequence":
        items = spec.get("pretokenizers") or []
        kinds = [i.get("type") if isinstance(i, dict) else None for i in items]
        if kinds == ["WhitespaceSplit", "Metaspace"]:
            metaspace = _metaspace(items[1], "pre_tokenizer")
            if metaspace[0] != "first":
                return True, metaspace
        raise ValueError(
            f"the pre_tokenizer {json.dumps(spec)[:200]} is not supported "
            "for a Unigram model (only Metaspace('▁'), alone or after a "
            "WhitespaceSplit with a prepend scheme other than 'first')"
        )
    if isinstance(spec, dict) and spec.get("type") == "WhitespaceSplit":
        return True, None
    return False, _metaspace(spec, "pre_tokenizer")


def _normalizer_steps(spec):
    """The normalizer as a flat list of specs; raises for unknown ones
    (the types `Normalizer` compiles are checked when it compiles)."""
    if spec is None:
        return []
    if not isinstance(spec, dict) or "type" not in spec:
        raise ValueError(
            f"a normalizer must be an object with a 'type': {spec}"
        )
    if spec["type"] == "Sequence":
        return [
            s for item in spec["normalizers"] for s in _normalizer_steps(item)
        ]
    if spec["type"] == "Precompiled":
        blob = spec.get("precompiled_charsmap")
        if blob is not None and not isinstance(blob, str):
            raise ValueError("precompiled_charsmap must be base64 text")
    return [spec]


# --- Precompiled -------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def charsmap_rules(blob):
    """`{key: replacement}`: every rule of a `precompiled_charsmap` (a
    Darts-clone double array from key bytes to an offset into NUL-ended
    replacements), walked breadth first."""
    if len(blob) < 4:
        raise ValueError("precompiled_charsmap is shorter than 4 bytes")
    (trie_size,) = struct.unpack_from("<I", blob, 0)
    if trie_size % 4 or trie_size == 0 or 4 + trie_size > len(blob):
        raise ValueError("precompiled_charsmap has a bad trie size")
    units = np.frombuffer(blob, "<u4", trie_size // 4, 4).astype(np.int64)
    strings = blob[4 + trie_size :]
    count = len(units)
    offsets = (units >> 10) << ((units & (1 << 9)) >> 6)
    labels = units & ((1 << 31) | 0xFF)
    codes = np.arange(1, 256)
    rules = {}
    # A Darts-clone DAG shares suffixes: walk (state, key) pairs, finding
    # the children of each distinct state once.
    states, keys = np.array([int(offsets[0])]), [b""]
    while len(keys):
        unique, inverse = np.unique(states, return_inverse=True)
        child = unique[:, None] ^ codes[None, :]
        inside = (child >= 0) & (child < count)
        inside &= labels[np.where(inside, child, 0)] == codes[None, :]
        rows, cols = np.nonzero(inside)
        units_at = child[rows, cols]
        after = units_at ^ offsets[units_at]
        kids = [[] for _ in range(len(unique))]
        for row, col, unit, state in zip(
            rows.tolist(), cols.tolist(), units_at.tolist(), after.tolist()
        ):
            leaf = None
            if (units[unit] >> 8) & 1:
                if not 0 <= state < count:
                    raise ValueError("a normalization rule points outside")
                value = int(units[state]) & ((1 << 31) - 1)
                end = strings.find(b"\0", value)
                if value >= len(strings) or end < 0:
                    raise ValueError("a normalization rule has no replacement")
                leaf = strings[value:end]
            kids[row].append((bytes([col + 1]), state, leaf))
        next_states, next_keys = [], []
        for key, row in zip(keys, inverse.tolist()):
            for byte, state, leaf in kids[row]:
                next_keys.append(key + byte)
                next_states.append(state)
                if leaf is not None:
                    rules[key + byte] = leaf
        states, keys = np.array(next_states, np.int64), next_keys
        if len(keys) > 10_000_000:
            raise ValueError("precompiled_charsmap is too large (a cycle?)")
    out = {}
    for key, value in rules.items():
        try:
            out[key.decode("utf-8")] = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(
                f"precompiled_charsmap has a rule that is not UTF-8 ({key!r} "
                f"-> {value!r}), which is not supported"
            ) from None
    return out


def _table(keys, values, default):
    keys = list(keys) or [_NONE]
    values = list(values) or [default]
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys), tf.constant(values)
        ),
        default_value=default,
    )


class _Precompiled(tf.Module):
    """HF's `Precompiled` normalizer (`spm_precompiled`) in core ops.

    For each extended grapheme cluster: if it is shorter than 6 bytes and
    a prefix of it is a key, the value of the shortest such key replaces
    the whole cluster; otherwise each character is replaced by its own
    rule, if it has one.
    """

    def __init__(self, blob):
        super().__init__()
        rules = charsmap_rules(blob)
        firsts = sorted({ord(key[0]) for key in rules})
        self.first_class = _unicode.CodePoints((c, c) for c in firsts).re2()
        self.has_rules = bool(rules)
        # Clusters looked up whole have at most this many characters.
        self.longest = max((len(k) for k in rules), default=1)
        with tf.init_scope():
            keys = [k.encode() for k in rules]
            values = [v.encode() for v in rules.values()]
            self._rules = _table(keys, values, _NONE)
            self._first = _table(
                [chr(c).encode() for c in firsts], [True] * len(firsts), False
            )

    def __call__(self, texts):
        if not self.has_rules:
            return texts
        # Lines without a character that starts a key are left alone.
        touched = tf.strings.regex_full_match(
            texts, f"(?s).*{self.first_class}.*"
        )
        where = tf.where(touched)
        done = self._normalize(tf.gather_nd(texts, where))
        return tf.tensor_scatter_nd_update(texts, where, done)

    def _normalize(self, texts):
        cps = tf.strings.unicode_decode(texts, "UTF-8")
        flat = cps.values
        splits = cps.row_splits
        count = tf.size(flat, out_type=tf.int64)
        chars = tf.strings.unicode_encode(flat[:, None], "UTF-8")
        row_start = (
            tf.scatter_nd(
                splits[:-1, None], tf.ones_like(splits[:-1]), [count + 1]
            )[:-1]
            > 0
        )
        starts = cluster_starts(flat, row_start)
        cluster = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        clusters = tf.reduce_sum(tf.cast(starts, tf.int64))
        size = (
            1
            + tf.cast(flat >= 0x80, tf.int64)
            + tf.cast(flat >= 0x800, tf.int64)
            + tf.cast(flat >= 0x10000, tf.int64)
        )
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
        return tf.strings.unsorted_segment_join(
            out, row_ids(splits), tf.size(texts, out_type=tf.int64)
        )


# The characters HF's StripAccents removes (`is_combining_mark` of the
# `unicode-normalization-alignments` crate: category M of an older Unicode
# than Oniguruma's table, which has 406 marks more). Read off `tokenizers`
# 0.23.3 by running every code point through it; the tests check them.
HF_COMBINING_MARKS = """
300-36F 483-489 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670
6D6-6DC 6DF-6E4 6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 816-819
81B-823 825-827 829-82D 859-85B 8D4-8E1 8E3-903 93A-93C 93E-94F 951-957
962-963 981-983 9BC 9BE-9C4 9C7-9C8 9CB-9CD 9D7 9E2-9E3 A01-A03 A3C
A3E-A42 A47-A48 A4B-A4D A51 A70-A71 A75 A81-A83 ABC ABE-AC5 AC7-AC9
ACB-ACD AE2-AE3 B01-B03 B3C B3E-B44 B47-B48 B4B-B4D B56-B57 B62-B63 B82
BBE-BC2 BC6-BC8 BCA-BCD BD7 C00-C03 C3E-C44 C46-C48 C4A-C4D C55-C56
C62-C63 C81-C83 CBC CBE-CC4 CC6-CC8 CCA-CCD CD5-CD6 CE2-CE3 D01-D03
D3E-D44 D46-D48 D4A-D4D D57 D62-D63 D82-D83 DCA DCF-DD4 DD6 DD8-DDF
DF2-DF3 E31 E34-E3A E47-E4E EB1 EB4-EB9 EBB-EBC EC8-ECD F18-F19 F35 F37
F39 F3E-F3F F71-F84 F86-F87 F8D-F97 F99-FBC FC6 102B-103E 1056-1059
105E-1060 1062-1064 1067-106D 1071-1074 1082-108D 108F 109A-109D
135D-135F 1712-1714 1732-1734 1752-1753 1772-1773 17B4-17D3 17DD
180B-180D 1885-1886 18A9 1920-192B 1930-193B 1A17-1A1B 1A55-1A5E
1A60-1A7C 1A7F 1AB0-1ABE 1B00-1B04 1B34-1B44 1B6B-1B73 1B80-1B82
1BA1-1BAD 1BE6-1BF3 1C24-1C37 1CD0-1CD2 1CD4-1CE8 1CED 1CF2-1CF4
1CF8-1CF9 1DC0-1DF5 1DFB-1DFF 20D0-20F0 2CEF-2CF1 2D7F 2DE0-2DFF
302A-302F 3099-309A A66F-A672 A674-A67D A69E-A69F A6F0-A6F1 A802 A806
A80B A823-A827 A880-A881 A8B4-A8C5 A8E0-A8F1 A926-A92D A947-A953
A980-A983 A9B3-A9C0 A9E5 AA29-AA36 AA43 AA4C-AA4D AA7B-AA7D AAB0
AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEB-AAEF AAF5-AAF6 ABE3-ABEA
ABEC-ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A 10A01-10A03
10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F 10AE5-10AE6 11000-11002
11038-11046 1107F-11082 110B0-110BA 11100-11102 11127-11134 11173
11180-11182 111B3-111C0 111CA-111CC 1122C-11237 1123E 112DF-112EA
11300-11303 1133C 1133E-11344 11347-11348 1134B-1134D 11357 11362-11363
11366-1136C 11370-11374 11435-11446 114B0-114C3 115AF-115B5 115B8-115C0
115DC-115DD 11630-11640 116AB-116B7 1171D-1172B 11C2F-11C36 11C38-11C3F
11C92-11CA7 11CA9-11CB6 16AF0-16AF4 16B30-16B36 16F51-16F7E 16F8F-16F92
1BC9D-1BC9E 1D165-1D169 1D16D-1D172 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD
1D242-1D244 1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF
1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E8D0-1E8D6
1E944-1E94A E0100-E01EF
"""


class _StripAccents:
    """HF's StripAccents: its combining marks go."""

    def __init__(self):
        self.pattern = _unicode.CodePoints.parse(HF_COMBINING_MARKS).re2()

    def __call__(self, texts):
        return tf.strings.regex_replace(texts, self.pattern, "")


# --- The model ---------------------------------------------------------------
class _Viterbi(tf.Module):
    """HF's `Unigram.encode` over words, in core ops.

    For each character `j` and length `l`, the piece made of the `l`
    characters that end at `j` (strings grown one character at a time,
    and only while they are prefixes of pieces); then one loop step per
    position in the word, for all words at once; then the best path,
    walked back from each word's end.
    """

    def __init__(self, vocab, unk_id, byte_fallback):
        super().__init__()
        pieces = [piece for piece, _ in vocab]
        scores = np.array([score for _, score in vocab], np.float64)
        # HF's token_to_ids: a piece listed twice has its last id.
        index = {piece: i for i, piece in enumerate(pieces)}
        prefixes = set()
        for piece in index:
            for k in range(1, len(piece)):
                prefixes.add(piece[:k])
        self.longest = max(len(piece) for piece in index)
        self.unk_id = unk_id
        self.unk_score = float(scores.min()) - _UNK_PENALTY
        self.byte_fallback = byte_fallback
        with tf.init_scope():
            self._ids = _table(
                [p.encode() for p in index], list(index.values()), -1
            )
            self._prefixes = _table(
                [p.encode() for p in prefixes], [True] * len(prefixes), False
            )
            self._scores = tf.constant(scores, tf.float64)
            self._byte_ids = tf.constant(
                [index.get(f"<0x{b:02X}>", unk_id) for b in range(256)],
                tf.int32,
            )

    def __call__(self, words):
        """`[W]` non-empty words -> (int32 ids, `[W + 1]` int64 splits).

        Each distinct word of the batch is searched once (a word's ids
        depend on nothing else): in English text most words repeat.
        """
        distinct, index = tf.unique(words, out_idx=tf.int64)
        values, splits = self._encode(distinct)
        ids = tf.gather(
            tf.RaggedTensor.from_row_splits(values, splits, validate=False),
            index,
        )
        return ids.values, ids.row_splits

    def _encode(self, words):
        cps = tf.strings.unicode_decode(words, "UTF-8")
        flat = cps.values
        splits = cps.row_splits
        count = tf.size(flat, out_type=tf.int64)
        word = row_ids(splits)
        local = tf.range(count) - tf.gather(splits, word)
        chars = tf.strings.unicode_encode(flat[:, None], "UTF-8")
        longest = self.longest
        # ids[j, l - 1]: the piece of the l characters ending at j, or -1.
        columns = []
        ends = tf.range(count)
        grown = chars
        for length in range(1, longest + 1):
            ids = self._ids.lookup(grown)
            columns.append(
                tf.scatter_nd(ends[:, None], ids + 1, [count])  # 0 = none
            )
            if length == longest:
                break
            alive = self._prefixes.lookup(grown)
            nxt = ends + 1
            alive &= nxt < count
            nxt = tf.minimum(nxt, count - 1)
            alive &= tf.gather(word, nxt) == tf.gather(word, ends)
            keep = tf.where(alive)[:, 0]
            ends = tf.gather(nxt, keep)
            grown = tf.strings.join(
                [tf.gather(grown, keep), tf.gather(chars, ends)]
            )
        ids = tf.stack(columns, 1) - 1
        unknown = tf.equal(ids[:, 0], -1)
        ids = tf.concat(
            [tf.where(unknown, self.unk_id, ids[:, 0])[:, None], ids[:, 1:]],
            1,
        )
        exists = ids >= 0
        scores = tf.where(
            exists,
            tf.gather(self._scores, tf.maximum(ids, 0)),
            tf.constant(0.0, tf.float64),
        )
        scores = tf.concat(
            [
                tf.where(
                    unknown,
                    tf.constant(self.unk_score, tf.float64),
                    scores[:, 0],
                )[:, None],
                scores[:, 1:],
            ],
            1,
        )
        back = self._search(word, local, splits, scores, exists)
        return self._tokens(flat, chars, word, splits, ids, unknown, back)

    def _search(self, word, local, splits, scores, exists):
        """`back[j]`: the length of the last piece of the best path over
        the characters of j's word up to j.

        Words go longest first, so the words still running at step `k`
        (position `k` of each word) are the first `n_k`: each step reads
        the best scores of the last `longest` steps from a window of
        `[longest, n_k]` and writes its own row, so the whole search costs
        `O(characters * longest)` (no per-step copy of the batch).
        """
        longest = self.longest
        sizes = splits[1:] - splits[:-1]
        rank = tf.argsort(-sizes, stable=True)
        starts = tf.gather(splits[:-1], rank)
        sizes = tf.gather(sizes, rank)
        words = tf.size(sizes)
        # Empty: reduce_max is the lowest int64.
        steps = tf.maximum(tf.reduce_max(sizes), 0)
        lengths = tf.range(1, longest + 1, dtype=tf.int64)
        neg = tf.constant(-np.inf, tf.float64)

        def step(k, window, found):
            n = tf.reduce_sum(tf.cast(sizes > k, tf.int32))
            js = starts[:n] + k
            start = k - lengths + 1  # [L], the piece's start in its word
            # window row r holds step k - longest + r: column l - 1 of
            # `before` is step k - l.
            before = tf.transpose(tf.reverse(window[:, :n], [0]))
            before = tf.where(
                (start > 0)[None, :], before, tf.constant(0.0, tf.float64)
            )
            ok = tf.gather(exists, js) & (start >= 0)[None, :]
            candidate = tf.where(ok, before + tf.gather(scores, js), neg)
            top = tf.reduce_max(candidate, 1)
            # Ties: the candidate that starts earliest (the longest) wins.
            ties = tf.equal(candidate, top[:, None])
            chosen = longest - tf.argmax(
                tf.cast(tf.reverse(ties, [1]), tf.int32),
                1,
                output_type=tf.int64,
            )
            window = tf.concat([window[1:, :n], top[None, :]], 0)
            window = tf.ensure_shape(window, [longest, None])
            return k + 1, window, found.write(tf.cast(k, tf.int32), chosen)

        _, _, found = tf.while_loop(
            lambda k, window, found: k < steps,
            step,
            (
                tf.constant(0, tf.int64),
                tf.zeros([longest, words], tf.float64),
                tf.TensorArray(
                    tf.int64,
                    size=tf.cast(steps, tf.int32),
                    element_shape=[None],
                    infer_shape=False,
                ),
            ),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([longest, None]),
                tf.TensorShape(None),
            ),
            parallel_iterations=1,
        )
        # The rows are in step order, each in rank order: put them back.
        position = tf.gather(tf.math.invert_permutation(rank), word)
        order = tf.argsort(
            local * tf.cast(words, tf.int64) + tf.cast(position, tf.int64),
            stable=True,
        )
        count = tf.size(word, out_type=tf.int64)
        return tf.scatter_nd(
            tf.cast(order, tf.int64)[:, None],
            found.concat()[:count],
            [count],
        )

    def _tokens(self, flat, chars, word, splits, ids, unknown, back):
        count = tf.size(flat, out_type=tf.int64)
        words = tf.size(splits, out_type=tf.int64) - 1
        last = splits[1:] - 1
        alive = splits[1:] > splits[:-1]

        def walk(current, alive, on_path):
            at = tf.boolean_mask(current, alive)
            on_path = tf.tensor_scatter_nd_update(
                on_path, at[:, None], tf.ones_like(at, tf.bool)
            )
            nxt = current - tf.gather(back, tf.maximum(current, 0))
            alive = alive & (nxt >= splits[:-1])
            return tf.where(alive, nxt, current), alive, on_path

        _, _, on_path = tf.while_loop(
            lambda current, alive, on_path: tf.reduce_any(alive),
            walk,
            (last, alive, tf.zeros([count], tf.bool)),
        )
        # A token per path end: its id, its first character.
        length = tf.where(on_path, back, 0)
        token = tf.gather(
            tf.reshape(ids, [-1]),
            tf.range(count) * self.longest + tf.maximum(length - 1, 0),
        )
        # An unknown node is one character with no one-character piece.
        node = on_path & (length == 1) & unknown
        is_unk = on_path & tf.equal(token, self.unk_id)
        # Path ends in order: the previous end in the same word.
        end_index = tf.where(on_path)[:, 0]
        end_unk = tf.gather(is_unk, end_index)
        end_word = tf.gather(word, end_index)
        prev_unk = tf.concat([[False], end_unk[:-1]], 0) & tf.concat(
            [[False], end_word[1:] == end_word[:-1]], 0
        )
        fused_away = end_unk & prev_unk
        # Runs of unknown tokens: the number of the run of each path end.
        run_start = end_unk & ~prev_unk
        run = tf.cumsum(tf.cast(run_start, tf.int64)) - 1
        run_count = tf.reduce_sum(tf.cast(run_start, tf.int64))
        if not self.byte_fallback:
            kept = ~fused_away
            ends = tf.boolean_mask(end_index, kept)
            values = tf.cast(tf.gather(token, ends), tf.int32)
            per_word = tf.math.unsorted_segment_sum(
                tf.ones_like(ends), tf.gather(word, ends), words
            )
            return values, tf.concat([[0], tf.cumsum(per_word)], 0)
        # Byte fallback: a run is bytes, unless it is one vocabulary match
        # of the unknown piece's own text (HF looks the fused text up).
        run_safe = tf.maximum(run, 0)
        run_nodes = tf.math.unsorted_segment_sum(
            tf.cast(tf.gather(node, end_index) & end_unk, tf.int64),
            run_safe,
            tf.maximum(run_count, 1),
        )
        run_tokens = tf.math.unsorted_segment_sum(
            tf.cast(end_unk, tf.int64), run_safe, tf.maximum(run_count, 1)
        )
        as_bytes_run = (run_nodes > 0) | (run_tokens > 1)
        end_bytes = end_unk & tf.gather(as_bytes_run, run_safe)
        # Per character: bytes if it is inside a bytes token.
        first = end_index - tf.gather(length, end_index) + 1
        marks = tf.scatter_nd(
            first[:, None], tf.cast(end_bytes, tf.int64), [count + 1]
        ) - tf.scatter_nd(
            (end_index + 1)[:, None], tf.cast(end_bytes, tf.int64), [count + 1]
        )
        in_bytes = tf.cumsum(marks)[:-1] > 0
        kept_end = tf.scatter_nd(
            end_index[:, None],
            tf.cast(~fused_away & ~end_bytes, tf.int64),
            [count],
        )
        size = (
            1
            + tf.cast(flat >= 0x80, tf.int64)
            + tf.cast(flat >= 0x800, tf.int64)
            + tf.cast(flat >= 0x10000, tf.int64)
        )
        outputs = tf.where(in_bytes, size, kept_end)
        out_splits = tf.concat([[0], tf.cumsum(outputs)], 0)
        owner = row_ids(out_splits)
        offset = tf.range(out_splits[-1]) - tf.gather(out_splits, owner)
        raw = tf.io.decode_raw(tf.strings.reduce_join(chars), tf.uint8)
        raw = tf.cast(tf.concat([raw, [0]], 0), tf.int64)
        byte_start = tf.cumsum(size, exclusive=True)
        byte = tf.gather(raw, tf.gather(byte_start, owner) + offset)
        values = tf.where(
            tf.gather(in_bytes, owner),
            tf.gather(self._byte_ids, byte),
            tf.cast(tf.gather(token, owner), tf.int32),
        )
        per_word = tf.math.unsorted_segment_sum(outputs, word, words)
        return values, tf.concat([[0], tf.cumsum(per_word)], 0)


# --- The layer ---------------------------------------------------------------
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
    `detokenize` is HF's `decode(ids)` with the `Metaspace` decoder. In a
    `.keras` file the `tokenizer.json` is an asset.

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

    def _setup(self, tokenizer_json):
        data = json.loads(tokenizer_json)
        check_supported(data)
        self._json_text = tokenizer_json
        model = data["model"]
        vocab = [(piece, float(score)) for piece, score in model["vocab"]]
        added = _added_tokens.check_added_tokens(
            data.get("added_tokens") or [], "`added_tokens`"
        )
        if any(t["normalized"] for t in added):
            raise ValueError(
                "added tokens with normalized=True are not supported for a "
                "Unigram model"
            )
        size = max([len(vocab) - 1, *(t["id"] for t in added)]) + 1
        # What `detokenize(..., skip_special_tokens=True)` leaves out.
        self._skipped = [t["id"] for t in added if t["special"]]
        tokens = [""] * size
        for i, (piece, _) in enumerate(vocab):
            tokens[i] = piece
        for t in added:
            tokens[t["id"]] = t["content"]
        # Plain Python, out of Keras' attribute tracking (30,000 items).
        self._plain = Untracked()
        self._plain.tokens = tokens
        index = {p: i for i, (p, _) in enumerate(vocab)}
        index.update({t["content"]: t["id"] for t in added})
        self._plain.index = index
        self._whitespace_split, self._metaspace = pre_tokenizer(
            data.get("pre_tokenizer")
        )
        decoder = data.get("decoder")
        self._decoder_scheme = (
            None if decoder is None else _metaspace(decoder, "decoder")[0]
        )
        with tf.init_scope():
            self._steps = []
            for spec in _normalizer_steps(data.get("normalizer")):
                if spec["type"] == "Precompiled":
                    blob = spec.get("precompiled_charsmap") or ""
                    try:
                        raw = base64.b64decode(blob, validate=True)
                    except (binascii.Error, ValueError):
                        raise ValueError(
                            "precompiled_charsmap is not valid base64"
                        ) from None
                    if raw:
                        self._steps.append(_Precompiled(raw))
                elif spec["type"] == "StripAccents":
                    self._steps.append(_StripAccents())
                else:
                    self._steps.append(Normalizer(spec))
            self._added = _added_tokens.Extractor(
                added, self.split_special_tokens, "`added_tokens`"
            )
            self._placeholder_ids = _table(
                [_added_tokens.placeholder(t["id"]) for t in added],
                [t["id"] for t in added],
                -1,
            )
            self._unigram = _Viterbi(
                vocab, model["unk_id"], bool(model.get("byte_fallback"))
            )
            first, other = [], []
            for token in tokens:
                first.append(token.replace(_SPACE, "").encode())
                other.append(token.replace(_SPACE, " ").encode())
            self._first_texts = tf.constant(first)
            self._other_texts = tf.constant(other)
        roles = self._roles_arg or {}
        self._roles = {r: self._plain.index[t] for r, t in roles.items()}
        if self._templates_arg is not None:
            parsed, self._start_ids, self._end_ids = parse_templates(
                self._templates_arg, size
            )
            self._templates = parsed
        self._graphs = traced_graphs(
            self._tokenize_graph, self._detokenize_graph
        )

    # --- Graph code ---------------------------------------------------------
    def _tokenize_batch(self, texts):
        self._check()
        return self._graphs.tokenize(texts)

    def _tokenize_graph(self, texts):
        texts = _to_valid_utf8(texts)
        segments, per_line = self._added(texts)
        is_token = _added_tokens.is_placeholder(segments)
        normalized = segments
        for step in self._steps:
            normalized = step(normalized)
        segments = tf.where(is_token, segments, normalized)
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
            is_token = _added_tokens.is_placeholder(segments)
        split = True
        if self._metaspace is not None:
            scheme, split = self._metaspace
            segments = self._apply_metaspace(
                segments, is_token, per_line, scheme
            )
        # Words: a text segment splits before each "▁" (HF's
        # MergedWithNext); empty words go.
        marked = segments
        if split:
            marked = tf.where(
                is_token,
                segments,
                tf.strings.regex_replace(
                    segments, _SPACE, _SEP + _SPACE.encode()
                ),
            )
        words, word_splits_of_segments = _split_marked(marked)
        token_id = self._placeholder_ids.lookup(words)
        plain = tf.where(token_id < 0)[:, 0]
        values, word_splits = self._unigram(tf.gather(words, plain))
        # Stitch the added tokens' ids back between the words.
        counts = tf.tensor_scatter_nd_update(
            tf.ones_like(token_id, tf.int64),
            plain[:, None],
            word_splits[1:] - word_splits[:-1],
        )
        starts = tf.cumsum(counts, exclusive=True)
        total = tf.reduce_sum(counts)
        out = tf.scatter_nd(
            tf.gather(starts, tf.where(token_id >= 0)[:, 0])[:, None],
            tf.boolean_mask(token_id, token_id >= 0),
            [total],
        )
        model_positions = tf.gather(starts, plain)
        flat_positions = tf.repeat(
            model_positions, word_splits[1:] - word_splits[:-1]
        ) + (
            tf.range(tf.size(values, out_type=tf.int64))
            - tf.repeat(word_splits[:-1], word_splits[1:] - word_splits[:-1])
        )
        out = tf.tensor_scatter_nd_update(out, flat_positions[:, None], values)
        # Rows: ids -> words -> segments -> lines.
        id_splits = tf.concat([[0], tf.cumsum(counts)], 0)
        line_splits = tf.gather(
            id_splits, tf.gather(word_splits_of_segments, per_line)
        )
        return tf.RaggedTensor.from_row_splits(out, line_splits, validate=False)

    def _apply_metaspace(self, segments, is_token, per_line, scheme):
        """HF's Metaspace on the text segments: spaces become "▁", and a
        "▁" goes in front of a segment that does not start with one:
        every segment ("always"), or only one at the start of its line
        ("first")."""
        spaced = tf.strings.regex_replace(segments, " ", _SPACE)
        if scheme != "never":
            prepend = (
                ~is_token
                & (tf.strings.length(spaced) > 0)
                & (tf.strings.substr(spaced, 0, len(_SPACE.encode())) != _SPACE)
            )
            if scheme == "first":
                first = tf.scatter_nd(
                    per_line[:-1, None],
                    tf.ones_like(per_line[:-1], tf.int32),
                    tf.shape(segments, out_type=tf.int64),
                )
                prepend = prepend & (first > 0)
            spaced = tf.where(prepend, _SPACE + spaced, spaced)
        return tf.where(is_token, segments, spaced)

    def _detokenize_batch(self, ids):
        self._check()
        ids = tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)
        return self._graphs.detokenize(ids)

    def _detokenize_graph(self, ids):
        """HF's decode: the Metaspace decoder turns "▁" into spaces, and
        drops them all in a line's first token (unless the scheme is
        "never"); without a decoder the tokens are joined by spaces."""
        values = ids.values
        if self._decoder_scheme is None:
            texts = tf.gather(tf.constant(self._plain.tokens), values)
            return tf.strings.reduce_join(
                ids.with_flat_values(texts), 1, separator=" "
            )
        texts = tf.gather(self._other_texts, values)
        if self._decoder_scheme != "never":
            size = tf.size(values, out_type=tf.int64)
            first = (
                tf.scatter_nd(
                    ids.row_splits[:-1, None],
                    tf.ones_like(ids.row_splits[:-1]),
                    [size + 1],
                )[:-1]
                > 0
            )
            texts = tf.where(first, tf.gather(self._first_texts, values), texts)
        return tf.strings.reduce_join(ids.with_flat_values(texts), axis=1)

    # --- Python-side API ----------------------------------------------------
    def get_vocabulary(self):
        self._check()
        return list(self._plain.tokens)

    def token_to_id(self, token):
        self._check()
        if token not in self._plain.index:
            raise ValueError(f"{token!r} is not in the vocabulary.")
        return self._plain.index[token]

    @property
    def special_tokens(self):
        self._check()
        return dict(self._roles)

    def _special_ids(self):
        return self._skipped

    @property
    def uses_core_ops_only(self):
        return True


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
