"""`make_dataset(task="mlm")`: BERT's masking, checked on WikiText.

The counts of chosen positions are a rule (TF Text's, under keras-hub's
`MaskedLMMaskGenerator`): `min(ceil(rate * selectable), max_selections)`
per example, so they are compared with keras-hub's exactly. The random
parts (which positions, and the 80/10/10 split) differ in their streams
and are checked statistically, within 5 binomial standard deviations.
"""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import InputBlock
from tf_input import VocabularyTokenizer
from tf_input import WordPieceTokenizer
from tf_input.data import make_dataset

pytestmark = requires_shared_data

SIGMAS = 5


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(
        data_path("bert", "bert-base-uncased-vocab.txt"),
        add_special_tokens=False,
    )


@pytest.fixture(scope="module")
def lines():
    """WikiText-2 test paragraphs (no headings, no blank lines)."""
    return [
        line
        for line in corpora()["wikitext-2-raw-test.txt"]
        if line.strip() and not line.strip().startswith("=")
    ]


def specials_of(tokenizer):
    return np.array(sorted(set(tokenizer.special_tokens.values())))


def rows_of(ds):
    """Every row of every batch: `(masked, original, weights, real)`,
    with `original` read back from the labels under the weights."""
    out = collections.defaultdict(list)
    for features, labels, weights in ds:
        ids, labels = features["token_ids"].numpy(), labels.numpy()
        weights = weights.numpy()
        width = ids.shape[1]
        for key, value in (
            ("masked", ids),
            ("original", np.where(weights > 0, labels, ids)),
            ("weights", weights),
            ("real", features["padding_mask"].numpy() > 0),
            ("labels", labels),
            ("example_ids", np.asarray(features.get("example_ids", ids * 0))),
        ):
            out[key].extend(list(np.pad(value, [(0, 0), (0, 256 - width)])))
    return {key: np.array(value) for key, value in out.items()}


def within(count, total, rate, what):
    """`count` of `total` Bernoulli(`rate`) draws, within 5 sigmas."""
    sigma = np.sqrt(total * rate * (1 - rate))
    assert abs(count - total * rate) <= SIGMAS * sigma, (
        f"{what}: {count} of {total}, expected {total * rate:.1f} "
        f"+- {SIGMAS * sigma:.1f}"
    )


def rule(selectable, rate, cap=None):
    """TF Text's count, in float32 as there."""
    wanted = np.ceil(
        np.asarray(selectable, np.float32) * np.float32(rate)
    ).astype(int)
    return wanted if cap is None else np.minimum(wanted, cap)


def test_masks_follow_keras_hub_rule_and_bert_rates(tokenizer, lines):
    """On 800 WikiText paragraphs (rows of 128): per row exactly
    keras-hub's number of chosen tokens, never a special token or
    padding; of the chosen, 80% `[MASK]`, 10% a random non-special token,
    10% unchanged; labels are the original ids there and 0 elsewhere.
    keras-hub's generator, run on the same rows, gives the same counts
    and the same split."""
    import keras_hub

    ds = make_dataset(
        lines[:800],
        tokenizer,
        task="mlm",
        batch_size=32,
        max_length=128,
        batching="max_length",
        seed=11,
    )
    rows = rows_of(ds)
    specials = specials_of(tokenizer)
    mask_id = tokenizer.special_tokens["mask"]
    original, masked = rows["original"], rows["masked"]
    chosen = rows["weights"] > 0
    selectable = rows["real"] & ~np.isin(original, specials)
    assert not (chosen & ~selectable).any()
    np.testing.assert_array_equal(rows["labels"][~chosen], 0)
    np.testing.assert_array_equal(masked[~chosen], original[~chosen])
    counts = chosen.sum(1)
    np.testing.assert_array_equal(counts, rule(selectable.sum(1), 0.15))

    def split(masked, original):
        as_mask = masked == mask_id
        same = masked == original
        other = ~as_mask & ~same
        return as_mask.sum(), other.sum(), same.sum(), masked[other]

    total = int(chosen.sum())
    assert total > 10_000
    as_mask, other, same, replacements = split(masked[chosen], original[chosen])
    within(as_mask, total, 0.8, "[MASK]")
    # A random token equal to the original (1 in ~30k) counts as same.
    within(other, total, 0.1, "random")
    within(same, total, 0.1, "unchanged")
    assert not np.isin(replacements, specials).any()
    # Random tokens: uniform over the 30517 non-special ids.
    size = tokenizer.vocabulary_size()
    within((replacements < size // 2).sum(), other, 0.5, "low half of ids")
    # Chosen positions spread evenly over the selectable ones.
    order = np.cumsum(selectable, 1) - 1
    first_half = selectable & (order < selectable.sum(1, keepdims=True) // 2)
    within(
        (chosen & first_half).sum(),
        total,
        first_half.sum() / selectable.sum(),
        "first half",
    )

    # keras-hub on the same rows, with the special tokens unselectable.
    generator = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=size,
        mask_selection_rate=0.15,
        mask_token_id=mask_id,
        unselectable_token_ids=specials.tolist(),
    )
    ragged = tf.ragged.boolean_mask(original, rows["real"])
    tf.random.set_seed(5)
    # In a tf.data map, as its docs show (eagerly it returns lists).
    out = next(iter(tf.data.Dataset.from_tensors(ragged).map(generator)))
    positions = out["mask_positions"]
    np.testing.assert_array_equal(positions.row_lengths().numpy(), counts)
    theirs = tf.gather(out["token_ids"], positions, batch_dims=1)
    theirs = theirs.flat_values.numpy()
    as_mask, other, same, _ = split(theirs, out["mask_ids"].flat_values.numpy())
    within(as_mask, total, 0.8, "keras-hub [MASK]")
    within(other, total, 0.1, "keras-hub random")


def test_max_selections_and_whole_words(tokenizer, lines):
    """Whole-word masking in "bucket" mode: the words (a token and the
    `##` pieces after it) are chosen whole, `min(ceil(0.15 * words),
    max_selections)` of them per row, never a special token."""
    ds = make_dataset(
        lines[:300],
        tokenizer,
        task="mlm",
        batch_size=16,
        max_length=96,
        batching="bucket",
        whole_word_masking=True,
        max_selections=6,
        seed=2,
    )
    rows = rows_of(ds)
    specials = specials_of(tokenizer)
    pieces = np.array([t.startswith("##") for t in tokenizer.get_vocabulary()])
    chosen_words, capped = 0, 0
    for original, chosen, real in zip(
        rows["original"], rows["weights"] > 0, rows["real"]
    ):
        ids = original[real]
        chosen = chosen[real]
        special = np.isin(ids, specials)
        start = ~pieces[ids] | special
        word = np.cumsum(start) - 1
        for w in np.unique(word[chosen]):
            assert chosen[word == w].all(), "a word chosen in part"
        whole = [not special[word == w].any() for w in np.unique(word)]
        wanted = rule(sum(whole), 0.15, 6)
        assert len(np.unique(word[chosen])) == wanted
        assert not (chosen & special).any()
        chosen_words += wanted
        capped += wanted == 6
    assert capped > 10 and chosen_words > 1000


def test_masks_belong_to_the_example_whatever_the_batching(tokenizer):
    """Each example's masks are keyed by `(seed, epoch, its number,
    position)`: the same in "longest" (chunks of 5) and "max_length"
    (chunks of 64) and "pack"; each new epoch masks anew, and a dataset
    made again with the same seed repeats the epochs, whatever
    TensorFlow's global seed."""
    texts = corpora()["tinyshakespeare.txt"][:120]
    texts = [t for t in texts if t.strip()]

    def examples(batching, chunk_size=None, epochs=1, seed=9):
        ds = make_dataset(
            texts,
            tokenizer,
            task="mlm",
            batch_size=8,
            max_length=64,
            batching=batching,
            chunk_size=chunk_size,
            seed=seed,
        )
        out = []
        for _ in range(epochs):
            rows = rows_of(ds)
            # Never a target on padding or on the rows that fill a batch.
            assert not (rows["weights"][~rows["real"]]).any()
            found = []
            for masked, weights, real, example in zip(
                rows["masked"],
                rows["weights"],
                rows["real"],
                rows["example_ids"],
            ):
                group = example if batching == "pack" else real.astype(int)
                for e in np.unique(group[group > 0]):
                    at = group == e
                    found.append((tuple(masked[at]), tuple(weights[at])))
            out.append(sorted(found))
        return out

    (longest,) = examples("longest", chunk_size=5)
    first, second = examples("max_length", chunk_size=64, epochs=2)
    (packed,) = examples("pack")
    assert longest == first == packed
    assert len(first) == len(texts)
    assert first != second
    tf.random.set_seed(1234)  # the global seed plays no part
    assert examples("max_length", epochs=2) == [first, second]
    assert examples("max_length", seed=10) != [first]


@pytest.mark.parametrize("source", ["texts", "pairs"])
def test_fit_loss_counts_only_the_chosen_positions(tokenizer, lines, source):
    """A tiny BERT-like model (InputBlock + Dense head; with a segment
    embedding for sentence pairs) fits on the masked batches; on one
    batch, the loss `evaluate` reports is the mean negative
    log-likelihood of the original ids over exactly the chosen positions,
    computed by hand."""
    keras.utils.set_random_seed(3)
    size = tokenizer.vocabulary_size()
    names = ["token_ids", "padding_mask"]
    data = lines[:40]
    if source == "pairs":
        names.append("segment_ids")
        data = list(zip(lines[0:80:2], lines[1:80:2]))
    block = InputBlock(
        size,
        16,
        position="learned",
        max_length=32,
        padding_mask_input=True,
        num_segments=2 if source == "pairs" else 0,
    )
    inputs = {
        name: keras.Input((None,), dtype="int32", name=name) for name in names
    }
    model = keras.Model(inputs, keras.layers.Dense(size)(block(inputs)))
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
    )
    ds = make_dataset(
        data,
        tokenizer,
        task="mlm",
        batch_size=8,
        max_length=32,
        seed=1,
        features=model,
    )
    history = model.fit(ds, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    features, labels, weights = next(iter(ds))
    labels, weights = labels.numpy(), weights.numpy()
    logits = np.asarray(model.predict_on_batch(features), np.float64)
    top = logits.max(-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
    nll = log_z - np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    want = nll[weights > 0].mean()
    batch = tf.data.Dataset.from_tensors((features, labels, weights))
    got = model.evaluate(batch, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert 0 < weights.sum() < features["padding_mask"].numpy().sum()
    assert sorted(features) == sorted(names)
    if source == "pairs":  # both sentences of a row hold chosen positions
        segments = features["segment_ids"].numpy()
        assert (weights[segments == 1] > 0).any()
        assert (weights[(segments == 0) & (labels > 0)] > 0).any()


@pytest.mark.parametrize("batching", ["longest", "max_length"])
def test_skip_empty_false_keeps_every_input(tokenizer, lines, batching):
    """With `skip_empty=False` each input keeps its row, in order (rows
    are masked before they are padded): an empty text is the one token
    `[SEP]`, never chosen, as served; every other row holds its text's
    tokens, masked by the rule."""
    texts = ["", *lines[:9], ""]
    ds = make_dataset(
        texts,
        tokenizer,
        task="mlm",
        batching=batching,
        batch_size=4,
        max_length=32,
        seed=2,
        skip_empty=False,
        add_special_tokens=False,
    )
    rows = rows_of(ds)
    assert len(rows["masked"]) == len(texts)
    sep = tokenizer.special_tokens["sep"]
    for row, text in enumerate(texts):
        expected = tokenizer.tokenize(text).numpy()[:32] if text else [sep]
        real = rows["real"][row]
        assert real.sum() == len(expected)
        np.testing.assert_array_equal(rows["original"][row][real], expected)
        assert rows["weights"][row][~real].sum() == 0
        wanted = rule([len(expected)], 0.15)[0] if text else 0
        assert rows["weights"][row].sum() == wanted


def test_same_masks_through_the_tf_data_service(tokenizer, lines):
    """The workers tokenize and number the examples; the trainer masks:
    with one worker, the batches of both epochs equal the local ones."""
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    for batching in ("max_length", "pack"):
        kwargs = dict(
            task="mlm",
            batch_size=8,
            max_length=64,
            batching=batching,
            seed=4,
            chunk_size=40,
        )
        local = make_dataset(lines[:120], tokenizer, **kwargs)
        remote = make_dataset(
            lines[:120], tokenizer, data_service=dispatcher.target, **kwargs
        )
        for _ in range(2):
            pairs = list(zip(local, remote, strict=True))
            assert pairs
            for want, got in pairs:
                for name in want[0]:
                    np.testing.assert_array_equal(want[0][name], got[0][name])
                np.testing.assert_array_equal(want[1], got[1])
                np.testing.assert_array_equal(want[2], got[2])
    del worker, dispatcher


def test_sentence_pairs(tokenizer, lines):
    """(text_a, text_b) pairs: the rows of `task="encode"` (`[CLS] a [SEP]
    b [SEP]`, segment ids, "longest_first" truncation), masked over both
    texts by the same rule as single texts; no special token (the `[SEP]`
    between the texts included) is ever chosen."""
    pairs = list(zip(lines[0:300:2], lines[1:300:2]))
    common = dict(batch_size=16, max_length=96, batching="longest")
    encoded = list(make_dataset(pairs, tokenizer, task="encode", **common))
    masked = list(make_dataset(pairs, tokenizer, task="mlm", seed=4, **common))
    assert len(encoded) == len(masked) == 10
    specials = specials_of(tokenizer)
    chosen_in = collections.Counter()
    for plain, (features, labels, weights) in zip(encoded, masked):
        ids = plain["token_ids"].numpy()
        segments = plain["segment_ids"].numpy()
        np.testing.assert_array_equal(features["segment_ids"], segments)
        np.testing.assert_array_equal(
            features["padding_mask"], plain["padding_mask"]
        )
        chosen = weights.numpy() > 0
        original = np.where(chosen, labels.numpy(), features["token_ids"])
        np.testing.assert_array_equal(original, ids)
        real = plain["padding_mask"].numpy() > 0
        selectable = real & ~np.isin(ids, specials)
        assert not (chosen & ~selectable).any()
        np.testing.assert_array_equal(
            chosen.sum(1), rule(selectable.sum(1), 0.15)
        )
        chosen_in.update(segments[chosen].tolist())
    # Both texts of the pairs (truncated to fit 96) get masks.
    assert chosen_in[0] > 300 and chosen_in[1] > 300


@pytest.mark.parametrize("batching", ["max_length", "bucket"])
def test_whole_words_of_sentence_pairs(tokenizer, lines, batching):
    """Whole-word masking of pairs: the words of either text are chosen
    whole, `ceil(0.15 * words of both texts)` per row, in the padded
    rows and in the ragged ("bucket") ones."""
    pairs = list(zip(lines[0:200:2], lines[1:200:2]))
    ds = make_dataset(
        pairs,
        tokenizer,
        task="mlm",
        batch_size=16,
        max_length=64,
        batching=batching,
        whole_word_masking=True,
        seed=3,
    )
    rows = rows_of(ds)
    assert len(rows["real"]) >= len(pairs)
    specials = specials_of(tokenizer)
    pieces = np.array([t.startswith("##") for t in tokenizer.get_vocabulary()])
    chosen_words = 0
    for original, chosen, real in zip(
        rows["original"], rows["weights"] > 0, rows["real"]
    ):
        ids, chosen = original[real], chosen[real]
        special = np.isin(ids, specials)
        # A word starts at a token that is not a `##` piece, or after a
        # special token (the `[SEP]` between the texts).
        word = np.cumsum(~pieces[ids] | special) - 1
        for w in np.unique(word[chosen]):
            assert chosen[word == w].all(), "a word chosen in part"
        whole = [not special[word == w].any() for w in np.unique(word)]
        assert len(np.unique(word[chosen])) == rule(sum(whole), 0.15)
        assert not (chosen & special).any()
        chosen_words += len(np.unique(word[chosen]))
    assert chosen_words > 500


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"mask_selection_rate": 0.2}, ValueError, 'task="mlm".*task=.lm'),
        ({"task": "mlm", "mask_selection_rate": 1.5}, ValueError, r"\[0, 1\]"),
        ({"task": "mlm", "mask_selection_rate": 0}, ValueError, r"\(0, 1\]"),
        (
            {"task": "mlm", "mask_token_rate": 0.9, "random_token_rate": 0.2},
            ValueError,
            "at most 1",
        ),
        ({"task": "mlm", "max_selections": 0}, ValueError, "max_selections"),
        (
            {"task": "mlm", "whole_word_masking": "yes"},
            TypeError,
            "whole_word_masking",
        ),
        ({"task": "mlm", "batching": "stream"}, ValueError, '"pack"'),
    ],
)
def test_bad_arguments(tokenizer, kwargs, error, message):
    kwargs = {"batch_size": 2, "max_length": 8, **kwargs}
    with pytest.raises(error, match=message):
        make_dataset(["a b"], tokenizer, **kwargs)


class NoWordIds(WordPieceTokenizer):
    """A tokenizer with a mask token but no word ids."""

    def _tokenize_with_offsets_batch(self, texts):
        raise NotImplementedError("NoWordIds gives no offsets.")


def test_bad_sources_and_tokenizers(tokenizer):
    no_words = NoWordIds(
        data_path("bert", "bert-base-uncased-vocab.txt"),
        add_special_tokens=False,
    )
    with pytest.raises(ValueError, match="return_word_ids.*NoWordIds"):
        make_dataset(
            ["a b"],
            no_words,
            task="mlm",
            batch_size=2,
            max_length=8,
            whole_word_masking=True,
        )
    with pytest.raises(ValueError, match="takes texts or .*pairs"):
        make_dataset(
            [("a", 1)], tokenizer, task="mlm", batch_size=2, max_length=8
        )
    with pytest.raises(ValueError, match='batching="pack".*pairs'):
        make_dataset(
            [("a", "b")],
            tokenizer,
            task="mlm",
            batch_size=2,
            max_length=8,
            batching="pack",
        )
    vocabulary = VocabularyTokenizer()
    vocabulary.adapt(["a b"])
    with pytest.raises(ValueError, match="has none.*role `mask`"):
        make_dataset(
            ["a b"], vocabulary, task="mlm", batch_size=2, max_length=8
        )
