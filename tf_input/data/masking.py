"""Masked language modelling (`task="mlm"`): BERT's masking, in the graph.

Of each example's selectable tokens (not padding, not a special token of
the tokenizer), `ceil(mask_selection_rate * count)` are chosen at random
(at most `max_selections`), the rule of keras-hub's
`MaskedLMMaskGenerator` (TF Text's `RandomItemSelector`); of the chosen,
a share `mask_token_rate` becomes the mask token, `random_token_rate` a
random token and the rest stays. With whole-word masking the unit is the
word (the tokens that share a word id of the tokenizer's
pre-tokenization), chosen or left whole.

Random numbers come from a counter-based hash (SplitMix64's finalizer)
of `(seed, epoch, example number, position in the example)`, not from a
random op's stream: each token's draw depends on nothing else, so the
masks are the same whatever the chunking, batching mode, packing,
parallelism or shuffle order, and a new epoch (a new iterator, each
`fit` epoch, counted by `epoch_values`) draws new masks, the same ones
in every run with the same `seed`.
"""

from __future__ import annotations

import dataclasses
import random

import tensorflow as tf

# SplitMix64 (Steele, Lea and Flood, 2014; the finalizer of Java's
# SplittableRandom and of xoshiro's seeding).
_GOLDEN = 0x9E3779B97F4A7C15
_MIX_1 = 0xBF58476D1CE4E5B9
_MIX_2 = 0x94D049BB133111EB
# The selection score is a draw's top 16 bits; its top `_BIN_BITS` pick
# one of the bins an example's candidates are counted in.
_SCORE_BITS = 16
_BIN_BITS = 5
_LOW_BITS = _SCORE_BITS - _BIN_BITS
# Ties of score are taken in order of position; the keys hold 16 bits of
# it, so rows have fewer than 2**15 positions.
_POSITION_BITS = 16
MAX_WIDTH = 2**15 - 1


@dataclasses.dataclass(frozen=True)
class Masking:
    """The checked masking arguments of one `make_dataset` call."""

    mask_selection_rate: float
    mask_token_rate: float
    random_token_rate: float
    max_selections: int | None
    whole_word_masking: bool
    seed: int
    mask_id: int
    special_ids: tuple
    vocabulary_size: int


def masking_for(tokenizer, settings):
    """`Masking` from the tokenizer and `Settings` (`task="mlm"`)."""
    roles = tokenizer.special_tokens
    mask_id = roles.get("mask")
    if mask_id is None:
        raise ValueError(
            'task="mlm" replaces the chosen tokens by the mask token, but '
            f"the tokenizer ({type(tokenizer).__name__}) has none: "
            f"special_tokens={roles}. Use a vocabulary with a mask token "
            "(role `mask`, e.g. BERT's `[MASK]`)."
        )
    special_ids = tuple(sorted(set(tokenizer._special_ids()) | {mask_id}))
    size = tokenizer.vocabulary_size()
    if len(special_ids) >= size:
        raise ValueError(
            "The vocabulary holds only special tokens: no random token "
            f"can be drawn. Received: vocabulary_size={size}."
        )
    if settings.whole_word_masking:
        check_word_ids(tokenizer)
    seed = settings.seed
    if seed is None:  # this dataset's masks, not repeatable across runs
        seed = random.SystemRandom().randrange(2**63)
    return Masking(
        mask_selection_rate=settings.mask_selection_rate,
        mask_token_rate=settings.mask_token_rate,
        random_token_rate=settings.random_token_rate,
        max_selections=settings.max_selections,
        whole_word_masking=settings.whole_word_masking,
        seed=int(seed),
        mask_id=int(mask_id),
        special_ids=special_ids,
        vocabulary_size=int(size),
    )


def check_word_ids(tokenizer):
    """Raises unless the tokenizer gives word ids (whole-word masking)."""
    try:
        tokenizer.tokenize_with_offsets("a b", return_word_ids=True)
    except NotImplementedError as error:
        raise ValueError(
            "`whole_word_masking=True` needs the words of the tokenizer's "
            "pre-tokenization (`tokenize_with_offsets(..., "
            f"return_word_ids=True)`), which {type(tokenizer).__name__} "
            f"does not give: {error}"
        ) from None


def epoch_values():
    """A dataset that repeats, in its n-th iteration (0, 1, ...), the int64
    `n`: the epoch in the key of the masks. A counter (a variable the
    dataset owns) rather than a random draw, so that the keys do not
    depend on TensorFlow's global seed."""
    with tf.init_scope():
        counter = tf.Variable(-1, dtype=tf.int64, trainable=False)
    started = tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).map(
        lambda _: counter.assign_add(1)
    )
    return started.flat_map(
        lambda epoch: tf.data.Dataset.from_tensors(epoch).repeat()
    )


def _u64(value):
    return tf.cast(value, tf.uint64)


def _mix(z):
    """SplitMix64's finalizer on uint64 tensors (wrapping arithmetic)."""
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(30)))
    z = z * _u64(_MIX_1)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(27)))
    z = z * _u64(_MIX_2)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(31)))


def token_hash(seed, epoch, number, position):
    """uint64 hash of each token's `(seed, epoch, number, position)`."""
    z = _mix(_u64(seed) + _u64(_GOLDEN))
    z = _mix(z + _u64(epoch))
    z = _mix(z + _u64(number) * _u64(_GOLDEN))
    return _mix(z + _u64(position))


# Up to this many special ids are compared one by one, more are searched.
_FEW = 8


def _is_special(ids, special_ids):
    if len(special_ids) <= _FEW:
        found = tf.zeros_like(ids, tf.bool)
        for special in special_ids:
            found |= tf.equal(ids, special)
        return found
    specials = tf.constant(special_ids, ids.dtype)
    found = tf.searchsorted(specials, ids, side="left")
    found = tf.gather(specials, tf.minimum(found, len(special_ids) - 1))
    return tf.equal(found, ids)


def random_ids(bits, special_ids, vocabulary_size):
    """int64 draws of 24 bits -> ids uniform over the vocabulary without
    `special_ids` (to 1 part in `2**24 / count`: each of the `count`
    ids gets `floor` or `ceil` of `2**24 / count` draws, by a multiply and
    shift). The r-th non-special id is `r` plus the number of specials
    `s_j` with `s_j - j <= r`."""
    count = vocabulary_size - len(special_ids)
    rank = tf.bitwise.right_shift(bits * count, 24)
    shifted = [s - j for j, s in enumerate(special_ids)]
    if len(shifted) <= _FEW:
        skip = tf.zeros_like(rank)
        for value in shifted:
            skip += tf.cast(rank >= value, tf.int64)
        return rank + skip
    skip = tf.searchsorted(tf.constant(shifted, tf.int64), rank, side="right")
    return rank + tf.cast(skip, tf.int64)


def _wanted(masking, candidates):
    """TF Text's count, in float32 as there: ceil(count * rate), capped."""
    wanted = tf.math.ceil(
        tf.cast(candidates, tf.float32)
        * tf.constant(masking.mask_selection_rate, tf.float32)
    )
    wanted = tf.cast(wanted, tf.int32)
    if masking.max_selections is not None:
        wanted = tf.minimum(wanted, masking.max_selections)
    return wanted


def _choose(masking, chooses, score, example, examples, position):
    """bool `[N]`: per example, its `wanted` candidates (`chooses`) of
    lowest `(score, position)`, without sorting them all.

    Each example counts its candidates in 32 bins of the score's top bits:
    the bins before the one where the running count reaches `wanted` are
    taken whole; the few candidates of that edge bin are sorted (by
    example, the score's other bits and position) and the first `need`
    of each example taken.
    """
    bins = 2**_BIN_BITS
    top = tf.bitwise.right_shift(score, _LOW_BITS)
    counts = tf.math.unsorted_segment_sum(
        tf.cast(chooses, tf.int32), example * bins + top, examples * bins
    )
    # Running counts along each example's bins, by an int32 product with
    # a triangle of ones (exact whatever math mode oneDNN is set to),
    # several times faster than a `cumsum` along short rows.
    triangle = tf.linalg.band_part(tf.ones([bins, bins], tf.int32), 0, -1)
    running = tf.matmul(tf.reshape(counts, [examples, bins]), triangle)
    wanted = _wanted(masking, running[:, -1])
    short = running < wanted[:, None]
    edge = tf.reduce_sum(tf.cast(short, tf.int32), 1)
    # Taken before the edge bin (0 where it is the first).
    need = wanted - tf.reduce_max(
        tf.pad(tf.where(short, running, 0), [[0, 0], [1, 0]]), 1
    )
    token_edge = tf.gather(edge, example)
    chosen = chooses & (top < token_edge)
    at_edge = tf.where(chooses & tf.equal(top, token_edge))[:, 0]
    edge_example = tf.cast(tf.gather(example, at_edge), tf.int64)
    low = tf.bitwise.bitwise_and(score, 2**_LOW_BITS - 1)
    keys = (
        edge_example * 2 ** (_LOW_BITS + _POSITION_BITS)
        + tf.cast(tf.gather(low, at_edge), tf.int64) * 2**_POSITION_BITS
        + tf.math.floormod(
            tf.cast(tf.gather(position, at_edge), tf.int64), 2**_POSITION_BITS
        )
    )
    ordered = tf.sort(keys)
    rank = tf.searchsorted(ordered, keys, out_type=tf.int32)
    first = tf.searchsorted(
        ordered,
        edge_example * 2 ** (_LOW_BITS + _POSITION_BITS),
        out_type=tf.int32,
    )
    taken = rank - first < tf.gather(need, edge_example)
    size = tf.shape(chooses, out_type=tf.int64)
    return chosen | tf.scatter_nd(at_edge[:, None], taken, size)


def mask_tokens(
    masking, ids, example, number, position, epoch, words=None, real=None
):
    """`(masked_ids, chosen)` of one flat list of tokens `[N]`.

    `example`: int32 `[N]`, the example of each token, 0, 1, ... in
    order (an example's tokens are consecutive); `number`: int64 `[S]`,
    each example's number in the source; `position`: int `[N]`, each
    token's position in its example; with `epoch` (int64 scalar), the key
    of its draws. `words`: int `[N]`, each token's word id (whole-word
    masking; a word's tokens are consecutive), else None. `real`: bool
    `[N]`, False on padding, or None (no padding among the tokens).
    `chosen` is True exactly on the chosen tokens.
    """
    example = tf.cast(example, tf.int32)
    position = tf.cast(position, tf.int64)
    examples = tf.shape(number)[0]
    selectable = ~_is_special(ids, masking.special_ids)
    if real is not None:
        selectable &= real
    z = _mix(_mix(_u64(masking.seed) + _u64(_GOLDEN)) + _u64(epoch))
    # Each example's part of the hash, then each token's.
    z = tf.gather(_mix(z + _u64(number) * _u64(_GOLDEN)), example)
    key = _mix(z + _u64(position))
    if words is None:
        chosen = _choose(
            masking,
            selectable,
            _score(key),
            example,
            examples,
            position,
        )
        action = key
    else:
        # The unit is the word, a candidate when all its tokens are. Its
        # draws are those of its first token; each of its tokens still
        # draws its own random token.
        words = tf.cast(words, tf.int32)
        starts = tf.concat(
            [
                [True],
                tf.not_equal(words[1:], words[:-1])
                | tf.not_equal(example[1:], example[:-1]),
            ],
            0,
        )
        word = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        first = tf.where(starts)[:, 0]
        whole = tf.equal(
            tf.math.segment_max(tf.cast(~selectable, tf.int32), word), 0
        )
        word_key = tf.gather(key, first)
        word_chosen = _choose(
            masking,
            whole,
            _score(word_key),
            tf.gather(example, first),
            examples,
            tf.gather(position, first),
        )
        chosen = tf.gather(word_chosen, word) & selectable
    # The chosen tokens' draws: three fields of one 64-bit value, the
    # selection score (its top 16 bits), the action (the next 24) and the
    # random token (the low 24).
    at = tf.where(chosen)[:, 0]
    key_at = tf.gather(key, at)
    if words is None:
        action = key_at
    else:
        action = tf.gather(word_key, tf.gather(word, at))
    action = tf.bitwise.bitwise_and(
        tf.bitwise.right_shift(action, _u64(24)), _u64(2**24 - 1)
    )
    action = tf.cast(tf.cast(action, tf.int64), tf.float32) / 2.0**24
    bits = tf.cast(tf.bitwise.bitwise_and(key_at, _u64(2**24 - 1)), tf.int64)
    mask_rate = masking.mask_token_rate
    random_rate = mask_rate + masking.random_token_rate
    replacement = random_ids(bits, masking.special_ids, masking.vocabulary_size)
    new = tf.where(
        action < mask_rate,
        tf.constant(masking.mask_id, ids.dtype),
        tf.gather(ids, at),
    )
    new = tf.where(
        (action >= mask_rate) & (action < random_rate),
        tf.cast(replacement, ids.dtype),
        new,
    )
    masked = tf.tensor_scatter_nd_update(ids, at[:, None], new)
    return masked, chosen


def _score(key):
    """A draw's selection score: its top `_SCORE_BITS`, as int32."""
    score = tf.bitwise.right_shift(key, _u64(64 - _SCORE_BITS))
    return tf.cast(score, tf.int32)
