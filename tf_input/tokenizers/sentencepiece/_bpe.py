"""SentencePiece BPE `.model`s: their merges, and the graphs that run them.

SentencePiece BPE merges characters, not bytes (`engines/char_bpe.py`
runs it). `model_merges` turns a `.model`'s pieces and scores into that
engine's merges and ranks; `BpeGraph` runs it in core ops, and
`LibraryBpe` runs the models it does not cover (`library_reason`) on TF
Text's op.

A character that is no piece of its own has the id `num_pieces + code
point` in the engine; a merge is every split of a normal piece into two
symbols (sentencepiece merges any two adjacent symbols whose
concatenation is a piece, by score).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input.tokenizers._utf8 import replace_invalid_bytes
from tf_input.tokenizers.engines.char_bpe import CharBPE
from tf_input.tokenizers.hf import added_tokens as _added_tokens
from tf_input.tokenizers.sentencepiece._normalizer import whitespace_rules
from tf_input.tokenizers.sentencepiece._proto import _NORMAL
from tf_input.tokenizers.sentencepiece._proto import _SPACE
from tf_input.tokenizers.sentencepiece._proto import _UNUSED
from tf_input.tokenizers.sentencepiece._proto import _USER_DEFINED


def model_merges(model):
    """A `.model`'s BPE: `(symbols, merges, ranks, tied_ranks, whole)` for
    `CharBPE`.

    sentencepiece (bpe_model.cc) merges the two adjacent symbols whose
    concatenation is a normal piece of the highest score, leftmost on equal
    scores. So every split of a normal piece into two symbols (normal
    pieces, or single characters) is a merge, ranked by the piece's score;
    pieces of equal score share a rank, marked tied if there are several.
    """
    num_pieces = len(model.pieces)
    symbols = {
        p: i for i, (p, t) in enumerate(zip(model.pieces, model.types))
        if t == _NORMAL
    }  # fmt: skip
    merged = [i for p, i in symbols.items() if len(p) > 1]
    scores = np.array([model.scores[i] for i in merged], np.float32)
    distinct, rank_of, counts = np.unique(
        -scores, return_inverse=True, return_counts=True
    )
    rows, ranks = [], []
    for i, rank in zip(merged, rank_of.tolist()):
        piece = model.pieces[i]
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            left_id = symbols.get(left)
            if left_id is None:
                if len(left) > 1:
                    continue
                left_id = num_pieces + ord(left)
            right_id = symbols.get(right)
            if right_id is None:
                if len(right) > 1:
                    continue
                right_id = num_pieces + ord(right)
            rows.append((left_id, right_id, i))
            ranks.append(rank)
    tied = counts > 1
    return (
        symbols,
        np.array(rows, np.int64).reshape([-1, 3]),
        np.array(ranks, np.int64),
        tied if tied.any() else None,
        sorted(symbols.values()),
        _runs_of_one_character(model, symbols, merged, rank_of, tied),
    )


def _leftmost_runs(length, pieces):
    """sentencepiece's BPE of `c * length` when the pieces made of `c` all
    have one score: repeatedly the leftmost pair whose concatenation is a
    piece. Returns the lengths of the pieces."""
    out = [1] * length
    while True:
        for i in range(len(out) - 1):
            if out[i] + out[i + 1] in pieces:
                out[i : i + 2] = [out[i] + out[i + 1]]
                break
        else:
            return out


def _runs_of_one_character(model, symbols, merged, rank_of, tied):
    """`(char id, block id, block length)` when equal scores are only runs
    of one character `c` (Mistral: "▁" * 2..16, all scored -1e9), else
    None.

    Equal scores go leftmost first, one merge at a time: a run of n spaces
    would take n loop steps, each over the whole batch (quadratic time; see
    benchmarks/README.md). When the longest run piece `c * L` is the first
    piece of every run of `2L` or more (checked here by sentencepiece's
    rule), and no other piece holds `c` except as its first character (so
    nothing joins a run from the left, and only its last `c` can join the
    text after it), the first `k * L` characters of a run of `n`, `k = (n
    - 1 - L) // L`, are `k` pieces `c * L` whatever follows, and are merged
    before the loop; the loop sees at most `2L` characters of each run.
    """
    if tied is None:
        return None
    tied_pieces = [
        model.pieces[i] for i, r in zip(merged, rank_of.tolist()) if tied[r]
    ]
    chars = {p[0] for p in tied_pieces}
    if len(chars) != 1:
        return None
    (c,) = chars
    if any(set(p) != {c} for p in tied_pieces) or c not in symbols:
        return None
    runs = {p for p in symbols if set(p) == {c}}
    if any(p not in tied_pieces for p in runs if len(p) > 1):
        return None  # A run piece of its own score.
    if any(c in p[1:] for p in symbols if set(p) != {c}):
        return None
    lengths = {len(p) for p in runs}
    longest = max(lengths)
    for n in range(2 * longest, 4 * longest + 1):
        result = _leftmost_runs(n, lengths)
        if result[0] != longest or result[1:] != _leftmost_runs(
            n - longest, lengths
        ):
            return None
    return symbols[c], symbols[c * longest], longest


def library_reason(model):
    """Why a BPE model runs on TF Text's library op, or None.

    The core-ops engine covers the models of today's LLMs (Mistral, Llama
    2: no normalization rules); these stay on the library op.
    """
    if model.charsmap:
        return "normalization rules (a precompiled charsmap)"
    if model.suffix_space:
        return "treat_whitespace_as_suffix"
    if _UNUSED in model.types:
        return "unused pieces (sentencepiece re-segments them)"
    for piece, piece_type in zip(model.pieces, model.types):
        if piece_type == _USER_DEFINED and (" " in piece or _SPACE in piece):
            return "a user-defined piece with a space"
    return None


class BpeGraph(tf.Module):
    """A BPE `.model` on the character BPE engine, in core ops.

    Args:
        model: the parsed `_proto` model (`library_reason(model)` None).
        byte_ids: None, or the ids of the 256 byte pieces (byte fallback).
    """

    uses_core_ops_only = True

    def __init__(self, model, byte_ids):
        super().__init__()
        self._model = model
        symbols, merges, ranks, tied, whole, runs = model_merges(model)
        user = [
            (p, i)
            for i, (p, t) in enumerate(zip(model.pieces, model.types))
            if t == _USER_DEFINED
        ]
        self._user_pieces = _added_tokens.Extractor(
            _added_tokens.check_added_tokens(
                [{"id": i, "content": p, "special": False} for p, i in user],
                "the user-defined pieces",
            ),
            False,
            "the user-defined pieces",
        )
        self.char_bpe = CharBPE(
            model.pieces,
            symbols,
            merges,
            ranks,
            tied_ranks=tied,
            whole=whole,
            runs=runs,
            extra_words=(
                [_added_tokens.placeholder(i) for _, i in user],
                [i for _, i in user],
            ),
            byte_ids=byte_ids,
            unk_id=model.unk_id,
            reserved=[
                (ord(p), i)
                for i, (p, t) in enumerate(zip(model.pieces, model.types))
                if len(p) == 1 and t != _NORMAL and t != _USER_DEFINED
            ],
        )

    def warm_up(self):
        pass

    def tokenize(self, texts):
        """sentencepiece's BPE in core ops: bad bytes -> U+FFFD, the
        whitespace rules, user-defined pieces cut out (kept whole), the
        merges, then characters without a piece -> byte pieces or unk."""
        texts = tf.reshape(texts, [-1])
        texts = whitespace_rules(replace_invalid_bytes(texts), self._model)
        segments, per_line = self._user_pieces(texts)
        values, splits = self.char_bpe.encode(segments)
        return tf.RaggedTensor.from_row_splits(
            values, tf.gather(splits, per_line), validate=False
        )


class LibraryBpe(tf.Module):
    """A BPE `.model` the engine does not cover (`library_reason`), on TF
    Text's op around the `sentencepiece` library."""

    uses_core_ops_only = False

    def __init__(self, proto):
        super().__init__()
        self._proto = proto

    def warm_up(self):
        """Makes the op parse the model now (see `UnigramGraph.warm_up`)."""
        from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_library

        _run_library(self._proto, tf.constant([""]), tf.int32)

    def tokenize(self, texts):
        from tf_input.tokenizers.sentencepiece._tf_text_ops import _run_library

        return _run_library(self._proto, texts, tf.int32)
