"""HF's Unigram model (`Unigram.encode`): a Viterbi search in core ops.

For each character `j` and length `l`, the piece made of the `l`
characters that end at `j` (strings grown one character at a time, and
only while they are prefixes of pieces); then the search
(`viterbi_blocks.search`: one `tf.while_loop` step per character
position, for all words of the batch at once, or for the blocks of words
of thousands of characters); then the best path, walked back from each
word's end by pointer doubling. As HF (which differs from
`sentencepiece` there): scores add in float64; of equal candidates for a
position the one that starts earliest wins; a character without a
one-character piece is an unknown node scored `min score - 10`;
consecutive unknowns fuse into one unknown token, or with `byte_fallback`
become the `<0xXX>` tokens of their bytes.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.tokenizers._tables import lookup_table
from tf_input.tokenizers._utf8 import utf8_lengths
from tf_input.tokenizers.engines import viterbi_blocks
from tf_input.tokenizers.engines.word_cache import WordCache
from tf_input.tokenizers.engines.word_cache import content_name

_UNK_PENALTY = 10.0  # HF's K_UNK_PENALTY (and sentencepiece's kUnkPenalty)


class Viterbi(tf.Module):
    """HF's `Unigram.encode` over words, in core ops.

    For each character `j` and length `l`, the piece made of the `l`
    characters that end at `j` (strings grown one character at a time,
    and only while they are prefixes of pieces); then one loop step per
    position in the word (or in a block of a long word), for all words at
    once; then the best path, walked back from each word's end.
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
        # Words of more characters than this are not cut into blocks.
        self._exact_characters = viterbi_blocks.exact_characters(
            [*scores, self.unk_score]
        )
        # A word's ids depend on these alone: every build of the same file
        # shares one cache.
        flags = np.asarray([unk_id, byte_fallback], np.int64)
        content = (pieces, scores, flags)
        self._cache = WordCache(content_name("viterbi_words", *content))
        # The ids with each token's span in its word, for the offsets.
        self._spans_cache = WordCache(
            content_name("viterbi_character_spans", *content)
        )
        with tf.init_scope():
            self._ids = lookup_table(
                [p.encode() for p in index],
                list(index.values()),
                -1,
                key_dtype=tf.string,
                value_dtype=tf.int32,
            )
            self._prefixes = lookup_table(
                [p.encode() for p in prefixes],
                [True] * len(prefixes),
                False,
                key_dtype=tf.string,
                value_dtype=tf.bool,
            )
            self._scores = tf.constant(scores, tf.float64)
            self._byte_ids = tf.constant(
                [index.get(f"<0x{b:02X}>", unk_id) for b in range(256)],
                tf.int32,
            )

    def __call__(self, words):
        """`[W]` non-empty words -> (int32 ids, `[W + 1]` int64 splits).

        Each distinct word of the batch is searched once (a word's ids
        depend on nothing else): in English text most words repeat; and
        a word searched in an earlier batch comes from the word cache.
        """
        distinct, index = tf.unique(words, out_idx=tf.int64)
        values, splits = self._cache.ids(distinct, self._encode)
        ids = tf.gather(
            tf.RaggedTensor.from_row_splits(values, splits, validate=False),
            index,
        )
        return ids.values, ids.row_splits

    def with_spans(self, words):
        """`__call__` and each token's span in its word, in characters
        (a token is always whole characters): `[W]` words -> int32 ids,
        `[W + 1]` splits, int64 starts and ends.

        As HF's `Unigram::tokenize`: a token spans its piece; a fused run
        of unknown characters is one unknown token spanning the run, and
        with `byte_fallback` each `<0xXX>` token of a run spans the whole
        run (not its own byte). A searched word's tokens and spans are kept
        in a word cache of their own.
        """
        distinct, index = tf.unique(words, out_idx=tf.int64)

        def search(words):
            # Each token as three int32 values: its id, start and end.
            values, splits, starts, ends = self._encode(words, spans=True)
            triples = tf.stack(
                [values, tf.cast(starts, tf.int32), tf.cast(ends, tf.int32)],
                1,
            )
            return tf.reshape(triples, [-1]), splits * 3

        values, splits = self._spans_cache.ids(distinct, search)
        rows = tf.RaggedTensor.from_row_splits(
            tf.reshape(values, [-1, 3]), splits // 3, validate=False
        )
        triples = tf.gather(rows, index)
        return (
            triples.values[:, 0],
            triples.row_splits,
            tf.cast(triples.values[:, 1], tf.int64),
            tf.cast(triples.values[:, 2], tf.int64),
        )

    def _encode(self, words, spans=False):
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
        # A candidate's score, or -inf where there is no such piece or it
        # would start before its word.
        lengths = tf.range(1, self.longest + 1, dtype=tf.int64)
        scores = tf.where(
            exists & (local[:, None] + 1 >= lengths[None, :]),
            scores,
            tf.constant(-np.inf, tf.float64),
        )

        # One block a word, or blocks of long words (see `viterbi_blocks`).
        back, on_path = viterbi_blocks.search(
            splits, scores, self._exact_characters
        )
        return self._tokens(
            flat, chars, word, splits, ids, unknown, back, on_path, spans
        )

    def _tokens(
        self, flat, chars, word, splits, ids, unknown, back, on_path, spans
    ):
        count = tf.size(flat, out_type=tf.int64)
        words = tf.size(splits, out_type=tf.int64) - 1
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
            out = values, tf.concat([[0], tf.cumsum(per_word)], 0)
            if spans:
                starts, stops = _char_spans(
                    flat, word, splits, end_index, length, fused_away
                )
                out += (tf.gather(starts, ends), tf.gather(stops, ends))
            return out
        if spans:
            spans = _char_spans(
                flat, word, splits, end_index, length, fused_away
            )
        ends = (end_index, end_unk, fused_away, run, run_count)
        return self._with_bytes(
            flat, chars, word, words, token, length, node, ends, spans
        )

    def _with_bytes(
        self, flat, chars, word, words, token, length, node, ends, spans
    ):
        """Byte fallback: a run of unknown tokens is the `<0xXX>` tokens of
        its bytes, unless it is one vocabulary match of the unknown
        piece's own text (HF looks the fused text up). `spans`: False, or
        `_char_spans`, whose values the output tokens then take too."""
        end_index, end_unk, fused_away, run, run_count = ends
        count = tf.size(flat, out_type=tf.int64)
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
        size = utf8_lengths(flat)
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
        out = values, tf.concat([[0], tf.cumsum(per_word)], 0)
        if spans:  # each character's token's span
            out += tuple(tf.gather(x, owner) for x in spans)
        return out


def _char_spans(flat, word, splits, end_index, length, fused_away):
    """Per character, the span in its word (in characters) of the token
    holding it: a piece of the best path, or a whole fused run of
    unknowns (the path ends `fused_away` join the one before them)."""
    count = tf.size(flat, out_type=tf.int64)
    first = end_index - tf.gather(length, end_index) + 1
    kept = ~fused_away
    group = (
        tf.cumsum(
            tf.scatter_nd(
                tf.boolean_mask(first, kept)[:, None],
                tf.ones_like(tf.boolean_mask(first, kept)),
                [count],
            )
        )
        - 1
    )
    groups = tf.reduce_sum(tf.cast(kept, tf.int64))
    position = tf.range(count)
    local = position - tf.gather(splits, word)
    lo = tf.math.unsorted_segment_min(position, group, groups)
    hi = tf.math.unsorted_segment_max(position, group, groups)
    starts = tf.gather(local, lo)
    stops = tf.gather(local + 1, hi)
    return tf.gather(starts, group), tf.gather(stops, group)


def _best_path(splits, back, count):
    """bool `[count]`: the characters that end a piece of the best path,
    walked back from the end of each word (`back[j]`: the length of the
    last piece of the best path up to `j`)."""
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
    return on_path
