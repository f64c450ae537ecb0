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

from tf_input._feature_names import WEIGHT_DTYPE

# SplitMix64 (Steele, Lea and Flood, 2014; the finalizer of Java's
# SplittableRandom and of xoshiro's seeding).
_GOLDEN = 0x9E3779B97F4A7C15
_MIX_1 = 0xBF58476D1CE4E5B9
_MIX_2 = 0x94D049BB133111EB
# Sort keys of a packed row: group (example) << 48 | score << 16 | column.
_SCORE_BITS = 32
_COLUMN_BITS = 16
_GROUP_SHIFT = _SCORE_BITS + _COLUMN_BITS
# Rows of up to 2**15 - 1 positions: the group (< 2**15) and column fit.
MAX_WIDTH = 2**15 - 1
_UNSELECTABLE = 2**_SCORE_BITS - 1


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
    found = tf.searchsorted(specials, tf.reshape(ids, [-1]), side="left")
    found = tf.minimum(found, len(special_ids) - 1)
    found = tf.reshape(tf.gather(specials, found), tf.shape(ids))
    return tf.equal(found, ids)


def random_ids(bits, special_ids, vocabulary_size):
    """int64 draws of 24 bits -> ids uniform over the vocabulary without
    `special_ids` (to 1 part in `2**24 / count`: each of the `count`
    ids gets `floor` or `ceil` of `2**24 / count` draws, by a multiply and
    shift). The r-th non-special id is `r` plus the number of specials
    `s_j` with `s_j - j <= r`."""
    count = vocabulary_size - len(special_ids)
    rank = (bits * count) // 2**24
    shifted = [s - j for j, s in enumerate(special_ids)]
    if len(shifted) <= _FEW:
        skip = tf.zeros_like(rank)
        for value in shifted:
            skip += tf.cast(rank >= value, tf.int64)
        return rank + skip
    skip = tf.searchsorted(
        tf.constant(shifted, tf.int64), tf.reshape(rank, [-1]), side="right"
    )
    return rank + tf.reshape(tf.cast(skip, tf.int64), tf.shape(rank))


def _wanted(masking, candidates):
    """TF Text's count, in float32 as there: ceil(count * rate), capped."""
    wanted = tf.math.ceil(
        tf.cast(candidates, tf.float32)
        * tf.constant(masking.mask_selection_rate, tf.float32)
    )
    wanted = tf.cast(wanted, tf.int64)
    if masking.max_selections is not None:
        wanted = tf.minimum(wanted, masking.max_selections)
    return wanted


def _choose_in_rows(masking, chooses, score):
    """Rows of one example each: the `wanted` candidates of lowest score
    per row, found by a `top_k` of the largest count wanted (a few
    columns), not a sort of the row. The int32 keys are the 16-bit score
    then the column (unique; two candidates of equal score, 1 pair in
    65536, are taken in column order)."""
    width = tf.shape(score)[1]
    column = tf.range(width)[None, :]
    keys = tf.where(
        chooses,
        # 16 + 15 bits: below 2**31 (a row has fewer than 2**15 columns).
        tf.cast(score, tf.int32) * 2**15 + column,
        tf.int32.max,
    )
    wanted = _wanted(masking, tf.reduce_sum(tf.cast(chooses, tf.int64), 1))
    most = tf.maximum(tf.reduce_max(tf.concat([wanted, [0]], 0)), 1)
    lowest = -tf.math.top_k(-keys, k=tf.cast(most, tf.int32)).values
    last = tf.gather(lowest, tf.maximum(wanted - 1, 0), batch_dims=1)
    return chooses & (keys <= last[:, None]) & (wanted[:, None] > 0)


def _choose_in_groups(masking, chooses, score, group, real, position):
    """Packed rows, several examples each: per example the `wanted`
    candidates of lowest score, by one sort of each row by (example,
    score, position in the example) and searches in it: the same choice
    as `_choose_in_rows` makes for the example alone."""
    column = tf.math.floormod(position, 2**_COLUMN_BITS)
    score = tf.where(chooses, score, _UNSELECTABLE)
    # Each group's candidates come first in random order, then its other
    # positions.
    top = tf.where(real, group, 2 ** (63 - _GROUP_SHIFT) - 1)
    top = top * 2**_GROUP_SHIFT
    keys = top + score * 2**_COLUMN_BITS + column
    ordered = tf.sort(keys, axis=1)
    rank = tf.searchsorted(ordered, keys, side="left", out_type=tf.int64)
    begin = tf.searchsorted(ordered, top, side="left", out_type=tf.int64)
    end = tf.searchsorted(
        ordered,
        top + _UNSELECTABLE * 2**_COLUMN_BITS,
        side="left",
        out_type=tf.int64,
    )
    wanted = _wanted(masking, end - begin)
    return chooses & (rank - begin < wanted)


def mask_tokens(
    masking, ids, group, number, position, epoch, words=None, packed=False
):
    """`(masked_ids, labels, weights)` of dense rows `[B, W]`.

    `group`: int `[B, W]`, the example of each position within its row,
    1, 2, ... (0: padding); `number`, `position`: the example's number in
    the source and the token's position in the example, the key of its
    draws with `epoch` (int64, per row `[B, 1]` or per token); `words`:
    the word id of each token (whole-word masking; tokens of one word are
    consecutive), else None; `packed`: rows may hold several examples.
    Labels are the original ids on the chosen positions and 0 elsewhere;
    weights 1 exactly on the chosen positions.
    """
    group = tf.cast(group, tf.int64)
    position = tf.cast(position, tf.int64)
    own_position = position
    width = tf.shape(ids, out_type=tf.int64)[1]
    column = tf.range(width)[None, :]
    real = group > 0
    selectable = real & ~_is_special(ids, masking.special_ids)
    if words is not None:
        # Each token takes the position of its word's first token, so the
        # tokens of a word share their draws; a word is selectable only
        # when all its tokens are.
        words = tf.cast(words, tf.int64)
        previous = tf.pad(words[:, :-1], [[0, 0], [1, 0]], constant_values=-2)
        previous_group = tf.pad(group[:, :-1], [[0, 0], [1, 0]])
        start = ~(tf.equal(words, previous) & tf.equal(group, previous_group))
        word_index = tf.cumsum(tf.cast(start, tf.int64), axis=1) - 1
        rows = tf.shape(ids, out_type=tf.int64)[0]
        segment = tf.range(rows)[:, None] * width + word_index
        count = rows * width
        first = tf.math.unsorted_segment_min(
            tf.broadcast_to(column, tf.shape(segment)), segment, count
        )
        whole = tf.math.unsorted_segment_min(
            tf.cast(selectable, tf.int32), segment, count
        )
        first = tf.gather(first, segment)
        position = tf.gather(position, first, batch_dims=1)
        chooses = start & tf.equal(tf.gather(whole, segment), 1)
    else:
        chooses = selectable
    key = token_hash(masking.seed, epoch, number, position)
    # Three fields of one 64-bit draw: the selection score (16 bits), the
    # action (24) and the random token (24).
    score = tf.cast(tf.bitwise.right_shift(key, _u64(48)), tf.int64)
    action = tf.bitwise.bitwise_and(
        tf.bitwise.right_shift(key, _u64(24)), _u64(2**24 - 1)
    )
    action = tf.cast(tf.cast(action, tf.int64), tf.float32) / 2.0**24
    if packed:
        chosen = _choose_in_groups(
            masking, chooses, score, group, real, position
        )
    else:
        chosen = _choose_in_rows(masking, chooses, score)
    if words is not None:
        chosen = tf.gather(chosen, first, batch_dims=1) & selectable
        # Each token of a word its own random token.
        key = token_hash(masking.seed, epoch, number, own_position)
    bits = tf.cast(tf.bitwise.bitwise_and(key, _u64(2**24 - 1)), tf.int64)
    mask_rate = masking.mask_token_rate
    random_rate = mask_rate + masking.random_token_rate
    replacement = random_ids(bits, masking.special_ids, masking.vocabulary_size)
    replacement = tf.cast(replacement, ids.dtype)
    new = tf.where(
        action < mask_rate, tf.constant(masking.mask_id, ids.dtype), ids
    )
    new = tf.where(
        (action >= mask_rate) & (action < random_rate), replacement, new
    )
    masked = tf.where(chosen, new, ids)
    labels = tf.where(chosen, ids, tf.zeros_like(ids))
    return masked, labels, tf.cast(chosen, WEIGHT_DTYPE)
