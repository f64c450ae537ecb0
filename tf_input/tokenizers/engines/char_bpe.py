"""Character-level BPE in core ops, on the merge loop of `merge`.

SentencePiece BPE (`.model` files with `model_type=BPE`, and BPE
`tokenizer.json` files with byte fallback and a `▁` metaspace) merges
characters, not bytes: a line is one sequence of characters and a merge
may cross a `▁` (code vocabularies have `▁▁▁▁`). `CharBPE` builds the
tables and the graph; words around added tokens are looked up with
`merge.lookup_or_merge`.

Token ids: the model's pieces keep their ids; a character that is no piece
of its own gets `num_pieces + code point` (it may still take part in a
merge, and at the end it becomes its UTF-8 byte pieces or the unknown id).
Merges are `(left, right) -> (rank, merged)`. A line is cut into chunks
between two characters that no merge joins (the last character of a
merge's left part and the first of its right part), and each distinct
chunk is looked up (chunks that BPE leaves as one piece) or merged once.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import marks
from tf_input._ragged import row_ids
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.engines import merge
from tf_input.tokenizers.engines._ops import lower_bound
from tf_input.tokenizers.engines._ops import previous
from tf_input.tokenizers.engines._ops import take
from tf_input.tokenizers.engines.word_cache import WordCache
from tf_input.tokenizers.engines.word_cache import content_name

_CODE_POINTS = 0x110000
# Up to this many code points, one-character chunks take a dense table.
_DENSE_CHARS = 0x30000


def _int_table(keys, values, default=-1):
    return lookup_table(keys, values, default, key_dtype=tf.int64)


def _string_table(keys, values):
    return lookup_table(keys, values, -1, key_dtype=tf.string)


class CharBPE(tf.Module):
    """Tables and graph of one character-level BPE.

    Args:
        pieces: list of str, the text of every id (any kind of piece).
        symbols: dict from text to id: the pieces that can be symbols of
            the merge loop (sentencepiece: normal pieces; HF: the
            vocabulary).
        merges: int64 `[n, 3]`: (left, right, merged) ids, in the extended
            id space (see the module docstring).
        ranks: int64 `[n]`: lower merges first.
        tied_ranks: None or bool `[max rank + 1]`: ranks shared by several
            merged pieces (see `merge.merge_sequences`).
        whole: ids of pieces whose text may be a chunk that BPE leaves
            whole (checked here by running the merges on them).
        extra_words: `(texts, ids)` looked up before anything else
            (placeholders of user-defined pieces and added tokens).
        runs: None or `(char id, block id, block length)`: runs of one
            character merged in blocks before the loop (see
            `_runs_of_one_character`).
        byte_ids: None, or the ids of the 256 byte pieces `<0x00>..<0xFF>`:
            a character without a piece becomes the pieces of its UTF-8
            bytes (byte fallback; a negative id, for a byte without a
            piece, comes out as it is, for the caller to report); without
            them, `unk_id`, one for each run of such characters (as
            sentencepiece).
        unk_id: the unknown id.
        reserved: `(code point, id)` pairs: characters that are no symbol
            but whose text is a piece of another kind (a one-character
            control piece), which they become.
    """

    def __init__(
        self,
        pieces,
        symbols,
        merges,
        ranks,
        *,
        tied_ranks=None,
        whole=(),
        extra_words=((), ()),
        runs=None,
        byte_ids=None,
        unk_id=0,
        reserved=(),
    ):
        super().__init__()
        self._runs = runs
        self._unk_id = unk_id
        self._byte_ids = None
        if byte_ids is not None:
            self._byte_ids = tf.constant(byte_ids, tf.int32)
        reserved = list(reserved)
        self._reserved = None
        if reserved:
            self._reserved = _int_table(*zip(*reserved))
        self.num_pieces = len(pieces)
        self.num_tokens = self.num_pieces + _CODE_POINTS
        chars = [(ord(t), i) for t, i in symbols.items() if len(t) == 1]
        self._char_ids = _int_table(
            [c for c, _ in chars], [i for _, i in chars]
        )
        self._merge_table, merges, ranks = merge.merge_table(
            merges, ranks, self.num_tokens
        )
        self.all_at_once = tied_ranks is None and merge.merges_properly_ordered(
            merges, ranks, self.num_tokens
        )
        self._tied = None
        if tied_ranks is not None:
            self._tied = tf.constant(np.append(tied_ranks, False), tf.bool)
        self._windows = None
        if self.all_at_once:
            self._windows = merge.MergeWindows(
                merges,
                [ord(p[0]) if p else 0 for p in pieces],
                [ord(p[-1]) if p else 0 for p in pieces],
                [len(p) for p in pieces],
                _CODE_POINTS,
            )

        # A chunk's merge depends on these alone: every build of the same
        # file shares one cache of merged chunks.
        self._cache = WordCache(
            content_name(
                "char_bpe_chunks",
                pieces,
                sorted(f"{i} {t}" for t, i in symbols.items()),
                np.asarray(merges, np.int64),
                np.asarray(ranks, np.int64),
                np.asarray([] if tied_ranks is None else tied_ranks, bool),
                np.asarray([] if runs is None else runs, np.int64),
            )
        )

        def text(i):
            return (
                pieces[i] if i < self.num_pieces else chr(i - self.num_pieces)
            )

        junctions = {
            ord(text(left)[-1]) * _CODE_POINTS + ord(text(right)[0])
            for left, right in merges[:, :2].tolist()
        }
        self._joinable = _int_table(sorted(junctions), [1] * len(junctions), 0)
        self._fused = byte_ids is not None and self._fusion_tables(
            chars, junctions, reserved
        )
        whole = list(whole)
        found = merge.left_whole(
            self._merge_words, [pieces[i].encode() for i in whole], whole
        )
        texts = [pieces[i].encode() for i in found]
        self._chunk_table = _string_table(texts, found)
        extra_texts, extra_ids = extra_words
        self._has_extra_words = bool(len(extra_ids))
        self._word_table = _string_table(
            texts + list(extra_texts), found + list(extra_ids)
        )

    def _fusion_tables(self, chars, junctions, reserved):
        """With byte fallback, the final ids come out of the chunk assembly
        (no second pass over every id) when a chunk of several characters
        never holds a character without a piece: every character of such
        a chunk is in a junction (it joins a neighbour). Returns whether
        that holds, after building the tables it needs."""
        single_chars = {c for c, _ in chars}
        if not all(
            key // _CODE_POINTS in single_chars
            and key % _CODE_POINTS in single_chars
            for key in junctions
        ):
            return False
        # A one-character chunk's final id: its symbol, else a reserved
        # piece of its text, else -1 (its bytes).
        own = dict(reserved)
        own.update(chars)
        # A dense table when the characters are few code points apart
        # (Mistral: up to U+1F97A, 0.5 MB): a gather instead of a hash
        # lookup per chunk.
        self._top_char = max(own, default=0) + 1
        self._final_dense = None
        if self._top_char <= _DENSE_CHARS:
            dense = np.full(self._top_char + 1, -1, np.int32)
            dense[list(own)] = list(own.values())
            self._final_dense = tf.constant(dense)
        else:
            self._final_chars = _int_table(list(own), list(own.values()))
        return True

    # --- Graph code ---------------------------------------------------------
    def encode(self, words):
        """`[W]` valid UTF-8 strings -> `(int32 ids, int64 row_splits)`:
        BPE, then characters without a piece as byte pieces or unknown."""
        if self._has_extra_words:
            values, splits = merge.lookup_or_merge(
                words, self._word_table, self._merge_chunks
            )
        else:
            values, splits = self._merge_chunks(words)
        if self._fused:
            return values, splits
        return self._characters_to_pieces(values, splits)

    def unknown_runs(self, words):
        """int64 `[R]`: the UTF-8 length of each run of characters without
        a piece in `[W]` valid UTF-8 words, in order. Without byte
        fallback, `encode` gives one unknown id for each such run of a
        word: these are the lengths of the text those ids stand for."""
        chars = tf.strings.unicode_decode(words, "UTF-8")
        code = tf.cast(chars.flat_values, tf.int64)
        unknown = self._char_ids.lookup(code) < 0
        if self._reserved is not None:
            unknown &= self._reserved.lookup(code) < 0
        word = row_ids(chars.row_splits)
        continues = (
            unknown
            & previous(unknown, False)
            & tf.equal(word, previous(word, -1))
        )
        starts = unknown & ~continues
        run = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        at = tf.reshape(tf.where(unknown), [-1])
        return tf.math.unsorted_segment_sum(
            utf8_lengths(tf.gather(code, at)),
            tf.gather(run, at),
            tf.reduce_sum(tf.cast(starts, tf.int64)),
        )

    def _initial_ids(self, code_points):
        code_points = tf.cast(code_points, tf.int64)
        ids = self._char_ids.lookup(code_points)
        return tf.cast(
            tf.where(ids >= 0, ids, self.num_pieces + code_points), tf.int32
        )

    def _merge_chunks(self, words):
        """BPE of `[M]` words, cut into chunks between characters that no
        merge joins. A chunk of one character is its character's id (an
        integer lookup: most chunks of Chinese text); a longer one is
        looked up (the chunks that BPE leaves whole), and the distinct
        others are merged once. One assembly for all chunks (`_assemble`):
        this is `merge.lookup_or_merge` folded into the chunk assembly,
        which saves a second pass over the ids and some 30 graph nodes
        (see `engines/__init__.py`)."""
        starts = tf.cumsum(
            tf.cast(tf.strings.length(words), tf.int64), exclusive=True
        )
        joined = tf.strings.reduce_join(words)
        num_bytes = tf.cast(tf.strings.length(joined), tf.int64)
        chars, offsets = tf.strings.unicode_decode_with_offsets(joined, "UTF-8")
        offsets = tf.cast(offsets, tf.int64)
        chars = tf.cast(chars, tf.int64)
        num_chars = tf.size(chars, tf.int64)
        # Chunks start at every word start and where no merge joins a
        # character to the one before (the first: a negative key, no
        # junction). Word starts are scattered in: a word may start at
        # `num_chars` (empty words at the end), so one more place.
        joins = self._joinable.lookup(
            previous(chars, -1) * _CODE_POINTS + chars
        )
        word_first = lower_bound(offsets, starts)
        cut = tf.tensor_scatter_nd_update(
            tf.concat([joins <= 0, [True]], 0),
            word_first[:, None],
            tf.ones_like(word_first, tf.bool),
        )[:-1]
        first_char = tf.reshape(tf.where(cut), [-1])
        num_chunks = tf.size(first_char, tf.int64)
        single = tf.concat([first_char[1:], num_chars[None]], 0) == (
            first_char + 1
        )
        # The longer chunks' bytes (the next chunk's first byte ends one).
        multi_at = tf.reshape(tf.where(~single), [-1])
        byte_at = tf.gather(offsets, tf.gather(first_char, multi_at))
        byte_end = tf.gather(
            tf.concat([offsets, num_bytes[None]], 0),
            tf.gather(
                tf.concat([first_char, num_chars[None]], 0), multi_at + 1
            ),
        )
        multi = tf.strings.substr(joined, byte_at, byte_end - byte_at)
        # Per longer chunk: its id if BPE leaves it whole, else -1 - the
        # index of its distinct text among the misses.
        whole = self._chunk_table.lookup(multi)
        miss_at = tf.reshape(tf.where(whole < 0), [-1])
        unique, which = tf.unique(tf.gather(multi, miss_at), tf.int64)
        merged_values, merged_splits = self._kept_or_merged(unique)
        found = tf.tensor_scatter_nd_update(whole, miss_at[:, None], -1 - which)
        # Per chunk: `unit` >= 0 is its one id, else it is merged text
        # number `-1 - unit`. The longer chunks' units are scattered in:
        # they are fewer than the chunks, and a cumulative sum over all
        # chunks to gather them costs as much.
        code = tf.gather(chars, first_char)
        if self._fused:
            own, merged_values, merged_splits = self._fallback_chunks(
                code, single, tf.size(unique, tf.int64), merged_values,
                merged_splits,
            )  # fmt: skip
        else:
            own = tf.cast(self._initial_ids(code), tf.int64)
        unit = tf.tensor_scatter_nd_update(own, multi_at[:, None], found)
        values, splits = _assemble(unit, merged_values, merged_splits)
        first_chunk = lower_bound(first_char, word_first)
        word_splits = tf.gather(
            splits, tf.concat([first_chunk, num_chunks[None]], 0)
        )
        return values, word_splits

    def _fallback_chunks(self, code, single, num_merged, values, splits):
        """The final ids of the one-character chunks (`code`: each chunk's
        first code point): a piece's id, or for a character without one,
        `-1 - m` where merged text `m` (appended to `values` / `splits`,
        after the `num_merged` texts of the merge loop) is its byte
        pieces. The assembly then expands them with the merged chunks."""
        if self._final_dense is None:
            own = self._final_chars.lookup(code)
        else:
            own = tf.cast(
                tf.gather(self._final_dense, tf.minimum(code, self._top_char)),
                tf.int64,
            )
        fallback_at = tf.where(single & (own < 0))
        char_code = tf.gather_nd(code, fallback_at)
        raw = tf.io.decode_raw(
            tf.strings.unicode_encode(tf.cast(char_code, tf.int32), "UTF-8"),
            tf.uint8,
        )
        # UTF-8 lengths: 1 below U+0080, 2 below U+0800, 3 below U+10000.
        size = 1 + tf.cast(
            tf.raw_ops.Bucketize(
                input=char_code, boundaries=[0x80, 0x800, 0x10000]
            ),
            tf.int64,
        )
        values = tf.concat(
            [values, tf.gather(self._byte_ids, tf.cast(raw, tf.int32))], 0
        )
        splits = tf.concat([splits, splits[-1] + tf.cumsum(size)], 0)
        which = num_merged + tf.range(tf.size(char_code, tf.int64))
        own = tf.tensor_scatter_nd_update(own, fallback_at, -1 - which)
        return own, values, splits

    def _kept_or_merged(self, words):
        """`_merge_words` of `[M]` distinct chunks, from the word cache
        where it holds them."""
        return self._cache.ids(words, self._merge_words)

    def _merge_words(self, words):
        """BPE of `[M]` strings, each one chunk -> `(ids, row_splits)`."""
        num_words = tf.size(words)
        chars = tf.strings.unicode_decode(words, "UTF-8")
        splits = tf.cast(chars.row_splits, tf.int64)
        tok = self._initial_ids(chars.flat_values)
        chunk_of = tf.cast(row_ids(splits), tf.int32)
        if self._runs is not None:
            tok, chunk_of = self._merge_long_runs(tok, chunk_of)
        tok, chunk_of = merge.merge_sequences(
            tok,
            chunk_of,
            num_words,
            merge_table=self._merge_table,
            num_tokens=self.num_tokens,
            all_at_once=self.all_at_once,
            tied_ranks=self._tied,
            set_aside=True,
            windows=self._windows,
        )
        counts = tf.math.unsorted_segment_sum(
            tf.ones_like(chunk_of, tf.int64), chunk_of, num_words
        )
        return tok, tf.concat([[0], tf.cumsum(counts)], 0)

    def _merge_long_runs(self, tok, chunk_of):
        """The first `k * L` characters of each run of `c` as `k` pieces
        `c * L` (see `_runs_of_one_character`)."""
        char_id, block_id, block = self._runs
        is_c = tf.equal(tok, char_id)
        # `continues`: a `c` after a `c` of the same chunk. Shifts with
        # constant slice bounds (`_previous`): a slice to a computed
        # length is 3 more graph nodes.
        continues = (
            is_c
            & previous(is_c, False)
            & tf.equal(chunk_of, previous(chunk_of, -1))
        )
        starts = is_c & ~continues
        run = tf.maximum(tf.cumsum(tf.cast(starts, tf.int64)) - 1, 0)
        start_at = tf.reshape(tf.where(starts), [-1])
        # Padded: `run` is 0 before the first run, or where there is none.
        first = tf.concat([start_at, [0]], 0)
        offset = tf.range(tf.size(tok, tf.int64)) - tf.gather(first, run)
        # Run lengths: each run ends before the next non-`c` or chunk end.
        ends = is_c & ~tf.concat([continues, [False]], 0)[1:]
        lengths = tf.reshape(tf.where(ends), [-1]) - start_at + 1
        blocks = tf.maximum((lengths - 1 - block) // block, 0) * block
        inside = is_c & (offset < tf.gather(tf.concat([blocks, [0]], 0), run))
        keep = ~inside | tf.equal(offset % block, 0)
        tok = tf.where(inside, block_id, tok)
        return take(tok, keep), take(chunk_of, keep)

    def _characters_to_pieces(self, ids, splits):
        """Ids of characters without a piece -> final ids: a reserved
        piece of their text, else their UTF-8 bytes' pieces or, without
        byte fallback, the unknown id."""
        byte_ids, unk_id, reserved = (
            self._byte_ids, self._unk_id, self._reserved
        )  # fmt: skip
        is_char = ids >= self.num_pieces
        code = tf.cast(tf.where(is_char, ids - self.num_pieces, 0), tf.int64)
        if reserved is not None:
            other = tf.cast(reserved.lookup(code), tf.int32)
            ids = tf.where(is_char & (other >= 0), other, ids)
            is_char = is_char & (other < 0)
        if byte_ids is None:
            # Adjacent unknown characters give one unknown id, as in
            # sentencepiece (only characters without a piece are unknown).
            ids = tf.where(is_char, unk_id, ids)
            row_start = marks(splits[:-1], tf.size(ids, tf.int64) + 1) > 0
            repeat = (
                is_char
                & tf.concat([[False], is_char[:-1]], 0)
                & ~row_start[:-1]
            )
            kept = tf.concat([[0], tf.cumsum(tf.cast(~repeat, tf.int64))], 0)
            return take(ids, ~repeat), tf.gather(kept, splits)
        # The characters' UTF-8 bytes, all at once: the code points of the
        # k characters -> one string -> its bytes. Each token is then a
        # row of [its id (all T), the byte pieces (B)]: its own id, or its
        # character's bytes. (Arithmetic on the code point per output
        # position took 20 ops over all outputs, a large share of a batch.)
        num = tf.size(ids, out_type=tf.int64)
        char_at = tf.reshape(tf.where(is_char), [-1])
        char_code = tf.gather(code, char_at)
        raw = tf.io.decode_raw(
            tf.strings.unicode_encode(tf.cast(char_code, tf.int32), "UTF-8"),
            tf.uint8,
        )
        size = utf8_lengths(char_code)
        rank = tf.cumsum(tf.cast(is_char, tf.int64), exclusive=True)
        # Padded: `rank` of the tokens after the last character is k.
        char_first = tf.concat([tf.cumsum(size, exclusive=True), [0]], 0)
        lengths = tf.where(
            is_char, tf.gather(tf.concat([size, [0]], 0), rank), 1
        )
        first = tf.where(
            is_char, num + tf.gather(char_first, rank), tf.range(num)
        )
        new_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        row = row_ids(new_splits)
        source = tf.range(new_splits[-1]) + tf.gather(
            first - new_splits[:-1], row
        )
        out = tf.gather(
            tf.concat([ids, tf.gather(byte_ids, tf.cast(raw, tf.int32))], 0),
            source,
        )
        return out, tf.gather(new_splits, splits)


def _assemble(unit, merged_values, merged_splits):
    """The ids of all chunks, in order -> `(ids, row_splits)` by chunk.

    `unit`: per chunk, its one id (>= 0) or `-1 - m` for merged text `m`
    (`merged_values` split by `merged_splits`). Gathers only: on CPU a
    scatter of the same size costs more.
    """
    num_chunks = tf.size(unit, tf.int64)
    merged = tf.maximum(-1 - unit, 0)
    is_merged = unit < 0
    lengths = tf.where(
        is_merged,
        tf.gather(
            tf.concat([merged_splits[1:] - merged_splits[:-1], [0]], 0),
            merged,
        ),
        1,
    )
    first = tf.where(
        is_merged,
        num_chunks + tf.gather(merged_splits, merged),
        tf.range(num_chunks),
    )
    splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    row = row_ids(splits)
    values = tf.gather(
        tf.concat([tf.cast(unit, tf.int32), merged_values], 0),
        tf.range(splits[-1]) + tf.gather(first - splits[:-1], row),
    )
    return values, splits
