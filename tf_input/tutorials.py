"""The numbers the "write a Transformer by hand" tutorials print, computed.

Each function computes one of the tutorials' tables with `tf_input` itself,
so a learner can hold the real code against the tutorial:

* `shape_table`: `[32, 128]` ids -> `[32, 128, 512]` embeddings, step by
  step through an `InputBlock`'s layers.
* `sinusoid_table`: the `D = 8` sinusoidal encoding at positions 0-3.
* `other_tutorial_table`: a `D = 4` table printed by another tutorial, next
  to what its own formula gives, and the exponent it must have used.
* `rounding_bug_frequencies`: the frequencies of the historical bug where
  the exponent `2i / D` was rounded (integer division), next to the right
  ones.
* `scale_check`: why token embeddings are multiplied by `sqrt(D)`.
* `arithmetic_tokens`: the EECS 498 example, numbers split into digits.
* `collate_batches`: the translation toy's `collate_fn` batches, built by
  `make_dataset`.

`tf-input demo` prints them all in its step "0. The tutorials' numbers"
(`print_all`).
"""

from __future__ import annotations

import math

import numpy as np

# The translation toy's sentence pairs (also `examples/translation_toy.py`).
TRANSLATION_PAIRS = (
    ("I love deep learning", "我爱深度学习"),
    ("The weather is nice today", "今天天气很好"),
    ("She reads a book", "她在读书"),
    ("We are learning Transformers", "我们在学习变换器"),
    ("Good morning", "早上好"),
)
# The EECS 498 arithmetic example.
ARITHMETIC_QUESTION = "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"
# The D = 4 table of the other tutorial, as it prints it: positions 0-2,
# columns [sin(p w_0), sin(p w_1), cos(p w_0), cos(p w_1)].
OTHER_TUTORIAL_TABLE = (
    (0.0, 0.0, 1.0, 1.0),
    (0.84, 0.0001, 0.54, 1.0),
    (0.91, 0.0002, 0.42, 1.0),
)


def shape_table(
    batch_size=32, length=128, embedding_dim=512, vocabulary_size=10_000
):
    """The tutorials' shape table, measured on an `InputBlock`'s layers.

    Random ids `[batch_size, length]` go through the block's token
    embedding (`x sqrt(D)`), sinusoidal position encoding and dropout
    (rate 0.1, in training mode), one layer at a time.

    Returns:
        list of `(step, shape)`, the shape a tuple of int, as computed.

    Example:

    >>> from tf_input import tutorials
    >>> tutorials.shape_table(2, 5, 8, 20)[-1]
    ('dropout(0.1)', (2, 5, 8))
    """
    from tf_input.block import InputBlock

    block = InputBlock(vocabulary_size, embedding_dim, dropout=0.1)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocabulary_size, size=(batch_size, length))
    ids = ids.astype("int32")
    rows = [("token_ids", tuple(ids.shape))]
    x = block.token_embedding(ids)
    rows.append((f"token embedding x sqrt({embedding_dim})", tuple(x.shape)))
    x = block.position_embedding(x)
    rows.append(("+ sinusoidal position", tuple(x.shape)))
    x = block.dropout_layer(x, training=True)
    rows.append((f"dropout({block.dropout:g})", tuple(x.shape)))
    return rows


def sinusoid_table(positions=4, embedding_dim=8):
    """`tf_input.sinusoidal_encoding(positions, embedding_dim)` in float64.

    Example:

    >>> from tf_input import tutorials
    >>> tutorials.sinusoid_table()[1].round(2).tolist()
    [0.84, 0.54, 0.1, 1.0, 0.01, 1.0, 0.0, 1.0]
    """
    from tf_input.layers.sinusoidal_pe import sinusoidal_encoding

    table = sinusoidal_encoding(positions, embedding_dim)
    return np.asarray(table, np.float64)


def other_tutorial_table():
    """The other tutorial's `D = 4` table against its formula.

    That tutorial lays out `[sin(p w_0), sin(p w_1), cos(p w_0), cos(p
    w_1)]` (the `"concat"` layout) and states `w_i = 1 / 10000^(2i/D)`,
    which gives `w_1 = 0.01` and `sin(1 * 0.01) = 0.01` at position 1. It
    prints 0.0001 there: `w_1 = 0.0001 = 1 / 10000^(4i/D)`, the exponent
    with the feature index `2i` in place of the pair index `i`.

    Returns:
        dict with `"printed"` (the tutorial's table, float64 `[3, 4]`),
        `"formula"` (`sinusoidal_encoding(3, 4, layout="concat")`),
        `"implied"` (the same layout with exponent `4i / D`) and
        `"exponent"` (the exponent of `w_1` that the printed second column
        implies: `-log10000(arcsin(printed[1, 1]))`).

    Example:

    >>> from tf_input import tutorials
    >>> table = tutorials.other_tutorial_table()
    >>> round(float(table["formula"][1, 1]), 4), round(table["exponent"], 2)
    (0.01, 1.0)
    """
    from tf_input.layers.sinusoidal_pe import sinusoidal_encoding

    printed = np.array(OTHER_TUTORIAL_TABLE, np.float64)
    formula = sinusoidal_encoding(3, 4, layout="concat")
    formula = np.asarray(formula, np.float64)
    positions = np.arange(3, dtype=np.float64)[:, None]
    frequencies = 10_000.0 ** (-4.0 * np.arange(2) / 4)  # 4i / D
    angles = positions * frequencies
    implied = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    exponent = -math.log(math.asin(printed[1, 1])) / math.log(10_000.0)
    return {
        "printed": printed,
        "formula": formula,
        "implied": implied,
        "exponent": exponent,
    }


def rounding_bug_frequencies(embedding_dim=8, max_wavelength=10_000.0):
    """Correct sinusoid frequencies next to those of the rounding bug.

    The correct frequency of pair `i` is `1 / w^(2i/D)`. The bug computes
    the exponent `2i / D` with integer division (`2 * i // D`, or `/` on
    ints in Python 2): it rounds down to 0 for every pair, so all the
    dimensions get the same frequency 1 and the encoding cannot tell far
    positions apart (any two positions `2 pi k` apart look alike).

    Returns:
        list of `(pair, correct exponent, correct frequency, buggy
        exponent, buggy frequency)`, one per pair.

    Example:

    >>> from tf_input import tutorials
    >>> [row[4] for row in tutorials.rounding_bug_frequencies(8)]
    [1.0, 1.0, 1.0, 1.0]
    """
    rows = []
    for pair in range(embedding_dim // 2):
        right = 2 * pair / embedding_dim
        wrong = 2 * pair // embedding_dim
        rows.append(
            (
                pair,
                right,
                float(max_wavelength**-right),
                wrong,
                float(max_wavelength**-wrong),
            )
        )
    return rows


def scale_check(embedding_dim=512, vocabulary_size=10_000, count=4096):
    """Std of token embeddings without and with the `x sqrt(D)` scale.

    `TokenEmbedding`'s default table has std `1 / sqrt(D)`, so the rows
    looked up for `count` random ids have std about `1 / sqrt(D)`
    unscaled, and about 1 once multiplied by `sqrt(D)`: the same size as
    the sinusoidal encoding's values (std `sqrt(1/2)`: sin and cos of
    spread angles), so neither drowns the other.

    Returns:
        dict with `"unscaled"`, `"scaled"` (the measured stds),
        `"expected_unscaled"` (`1 / sqrt(D)`) and `"position"` (the std of
        `sinusoidal_encoding(128, D)`).

    Example:

    >>> from tf_input import tutorials
    >>> check = tutorials.scale_check(64, 1000, 2000)
    >>> round(check["scaled"], 1)
    1.0
    """
    import keras

    from tf_input.layers.token_embedding import TokenEmbedding

    keras.utils.set_random_seed(0)
    ids = np.random.default_rng(0).integers(0, vocabulary_size, size=count)
    ids = ids.astype("int32")[None]
    # Random ids hold 0 anywhere: no padding id, so no mask.
    plain = TokenEmbedding(
        vocabulary_size, embedding_dim, scale=False, padding_id=None
    )
    unscaled = np.asarray(plain(ids), np.float64)
    scaled = TokenEmbedding(
        vocabulary_size, embedding_dim, scale=True, padding_id=None
    )
    scaled.build(ids.shape)
    scaled.embeddings.assign(plain.embeddings)  # the same table
    scaled_values = np.asarray(scaled(ids), np.float64)
    position = np.asarray(sinusoid_table(128, embedding_dim)).std()
    return {
        "unscaled": float(unscaled.std()),
        "scaled": float(scaled_values.std()),
        "expected_unscaled": 1 / math.sqrt(embedding_dim),
        "position": float(position),
    }


def arithmetic_tokens(question=ARITHMETIC_QUESTION):
    """The EECS 498 example through `VocabularyTokenizer(split=
    "whitespace_digits")`: numbers become digits.

    Returns:
        list of str, the tokens.

    Example:

    >>> from tf_input import tutorials
    >>> tutorials.arithmetic_tokens()
    ['BOS', 'NEGATIVE', '3', '0', 'subtract', 'NEGATIVE', '3', '4', 'EOS']
    """
    from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer

    # The words of the task; numbers are not in the vocabulary, so they
    # fall back to their digits.
    words = "BOS EOS POSITIVE NEGATIVE add subtract 0 1 2 3 4 5 6 7 8 9"
    tokenizer = VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt([words])
    ids = tokenizer(question).numpy().tolist()
    return [tokenizer.id_to_token(i) for i in ids]


def collate_reference(pairs, source, target):
    """The tutorial's `collate_fn` in plain Python, for comparison.

    `src_batch`: each source's ids, padded with 0 to the longest.
    `tgt_batch`: `<sos>` + each target's ids + `<eos>`, padded with 0.

    Returns:
        `(src_batch, tgt_batch)`, int32 arrays.
    """

    def ids(tokenizer, text):
        return tokenizer(text).numpy().tolist()

    def pad(rows):
        width = max(len(row) for row in rows)
        return np.array(
            [row + [0] * (width - len(row)) for row in rows], np.int32
        )

    sos, eos = target.token_to_id("<sos>"), target.token_to_id("<eos>")
    src = [ids(source, s) for s, _ in pairs]
    tgt = [[sos] + ids(target, t) + [eos] for _, t in pairs]
    return pad(src), pad(tgt)


def collate_batches(pairs=TRANSLATION_PAIRS, batch_size=2):
    """The translation toy's batches, from `make_dataset(task="seq2seq")`.

    English words through `VocabularyTokenizer(split="whitespace")`,
    Chinese characters through `VocabularyTokenizer(split="character")`
    (`<pad>`=0, `<sos>`=1, `<eos>`=2). The tutorial's `collate_fn` makes
    `src_batch` and `tgt_batch = <sos> target <eos>`, and its training
    loop feeds `tgt_batch[:, :-1]` to the decoder and scores against
    `tgt_batch[:, 1:]`. `make_dataset` gives those two directly:
    `decoder_token_ids` (`<sos>` + target) and the labels (target +
    `<eos>`); only a shorter row's `<eos>` in the decoder input is padding
    instead.

    Returns:
        list of dicts, one per batch, with `"src_batch"`, `"tgt_batch"`
        (rebuilt from the dataset: `<sos>` + labels), `"decoder_token_ids"`
        and `"labels"` (int32 arrays), and the two tokenizers as
        `"source"` and `"target"`.

    Example:

    >>> from tf_input import tutorials
    >>> first = tutorials.collate_batches()[0]
    >>> first["tgt_batch"].tolist()  # 今天天气很好: 天 twice, id 11
    [[1, 4, 5, 6, 7, 8, 9, 2], [1, 10, 11, 11, 12, 13, 14, 2]]
    """
    from tf_input.data import make_dataset
    from tf_input.tokenizers.vocabulary_tokenizer import VocabularyTokenizer

    pairs = list(pairs)
    source = VocabularyTokenizer(split="whitespace")
    source.adapt([s for s, _ in pairs])
    target = VocabularyTokenizer(split="character")
    target.adapt([t for _, t in pairs])
    dataset = make_dataset(
        pairs,
        source,
        target_tokenizer=target,
        task="seq2seq",
        batch_size=batch_size,
        batching="longest",
        max_length=32,
        add_special_tokens=False,
    )
    sos = target.token_to_id("<sos>")
    batches = []
    for features, labels, _ in dataset:
        labels = labels.numpy()
        tgt = np.concatenate(
            [np.full((labels.shape[0], 1), sos, np.int32), labels], axis=1
        )
        batches.append(
            {
                "src_batch": features["encoder_token_ids"].numpy(),
                "tgt_batch": tgt,
                "decoder_token_ids": features["decoder_token_ids"].numpy(),
                "labels": labels,
                "source": source,
                "target": target,
            }
        )
    return batches


def _row(values, width=7, digits=4):
    return "[" + ", ".join(f"{v:>{width}.{digits}f}" for v in values) + "]"


def print_all(print_fn=print):
    """Prints every table of this module, as the demo's step 0."""
    print_fn("   a. Shapes, [32, 128] ids -> [32, 128, 512] (an InputBlock)")
    for step, shape in shape_table():
        print_fn(f"      {step:<28} {list(shape)}")

    print_fn("\n   b. Sinusoidal encoding, D=8, positions 0-3")
    print_fn("      PE[p, 2i] = sin(p / 10000^(2i/8)), PE[p, 2i+1] = cos(...)")
    for position, row in enumerate(sinusoid_table()):
        print_fn(f"      pos={position}: {_row(row, 6, 3)}")

    other = other_tutorial_table()
    print_fn(
        "\n   c. The other tutorial's D=4 table, [sin w0, sin w1, cos w0, "
        "cos w1]"
    )
    print_fn(f"      {'':<6}{'the tutorial printed':<36}its formula gives")
    for position in range(3):
        printed = _row(other["printed"][position], 6, 4)
        formula = _row(other["formula"][position], 6, 4)
        print_fn(f"      pos={position} {printed}  {formula}")
    print_fn(
        f"      Its 0.0001 at pos=1 is sin(1 / 10000^{other['exponent']:.2f})"
        ": it used the exponent 4i/D"
    )
    print_fn("      (the feature index 2i in place of i), not its own 2i/D.")
    if other["printed"][2, 2] * other["implied"][2, 2] < 0:
        print_fn(
            f"      (Its {other['printed'][2, 2]:.2f} at pos=2 is cos(2) = "
            f"{other['implied'][2, 2]:.2f} without its sign.)"
        )

    print_fn(
        "\n   d. The rounding bug: exponent 2i/D with integer division, D=8"
    )
    print_fn(
        f"      {'pair i':>6}  {'2i/D':>6}  {'frequency':>10}    "
        f"{'2i//D':>6}  {'frequency':>10}"
    )
    for pair, right, good, wrong, bad in rounding_bug_frequencies():
        print_fn(
            f"      {pair:>6}  {right:>6.3f}  {good:>10.4g}    "
            f"{wrong:>6d}  {bad:>10.4g}"
        )
    print_fn("      With the bug every pair turns at the same frequency.")

    check = scale_check()
    print_fn("\n   e. Why x sqrt(D): token embeddings, D=512")
    print_fn(
        f"      std unscaled {check['unscaled']:.4f} (1/sqrt(512) = "
        f"{check['expected_unscaled']:.4f}); scaled {check['scaled']:.4f}"
    )
    print_fn(
        "      scaled, the tokens are as large as the sinusoidal encoding "
        f"(std {check['position']:.2f}) they are added to"
    )

    print_fn("\n   f. The EECS 498 example, numbers split into digits")
    print_fn(f"      {ARITHMETIC_QUESTION}")
    print_fn(f"      -> [{', '.join(arithmetic_tokens())}]")

    batches = collate_batches()
    first = batches[0]
    print_fn(
        "\n   g. The translation toy's collate_fn, by make_dataset "
        "(<pad>=0 <sos>=1 <eos>=2)"
    )
    for name in ("src_batch", "tgt_batch"):
        for i, row in enumerate(first[name].tolist()):
            label = name if i == 0 else ""
            print_fn(f"      {label:<18}{row}")
    print_fn(
        "      make_dataset gives the decoder input tgt_batch[:, :-1] and "
        "the labels tgt_batch[:, 1:]:"
    )
    for name in ("decoder_token_ids", "labels"):
        for i, row in enumerate(first[name].tolist()):
            label = name if i == 0 else ""
            print_fn(f"      {label:<18}{row}")
