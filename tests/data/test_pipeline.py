"""make_dataset: shapes, contents, tasks, sources, errors and stats.

The references are plain Python: tokenize each line with the tokenizer
(eagerly, one line at a time), then truncate, wrap, batch and pad by hand.
"""

import gc
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_input import VocabularyTokenizer
from tf_input import WordPieceTokenizer
from tf_input.data import SkippedExamplesWarning
from tf_input.data import make_dataset
from tf_input.data import pipeline_info
from tf_input.data import stats
from tf_input.data.cutting import pad_rows
from tf_input.data.cutting import select_rows

# LINES holds blank lines on purpose: they are skipped, and the skip is
# checked (with its warning) in `test_in_memory_skips_warn_and_are_counted`.
pytestmark = pytest.mark.filterwarnings(
    "ignore::tf_input.data.SkippedExamplesWarning"
)

LINES = [
    "the cat sat on the mat",
    "",
    "a dog",
    "   ",
    "the quick brown fox jumps over the lazy dog again and again",
    "one",
    "two words",
    "cat dog cat dog cat",
    "mat",
]


@pytest.fixture(scope="module")
def tokenizer():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(LINES)
    return tokenizer


def line_ids(tokenizer, line):
    return tokenizer(line).numpy().tolist()


def reference_rows(tokenizer, lines, max_length, specials=True):
    """[start] + ids[:room] + [end] for each non-empty line; truncations."""
    start, end = (
        tokenizer.special_tokens["bos"],
        tokenizer.special_tokens["eos"],
    )
    room = max_length - (2 if specials else 0)
    rows, truncated = [], 0
    for line in lines:
        ids = line_ids(tokenizer, line)
        if not ids:
            continue
        truncated += len(ids) > room
        ids = ids[:room]
        rows.append([start] + ids + [end] if specials else ids)
    return rows, truncated


def pad(rows, length, batch=None):
    batch = len(rows) if batch is None else batch
    out = np.zeros([batch, length], np.int32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def next_token_labels(rows, length, batch=None):
    return pad([row[1:] for row in rows], length, batch)


def next_token_weights(rows, length, batch=None):
    """1.0 on every position of a row but its last, 0.0 elsewhere."""
    return (
        pad([[1] * (len(row) - 1) for row in rows], length, batch) > 0
    ) * 1.0


def as_lists(dataset):
    return [
        (
            {k: v.numpy() for k, v in features.items()},
            labels.numpy(),
            weights.numpy(),
        )
        for features, labels, weights in dataset
    ]


# --- Batching modes ---


def test_longest_matches_reference(tokenizer):
    ds = make_dataset(LINES, tokenizer, batch_size=3, max_length=8)
    rows, truncated = reference_rows(tokenizer, LINES, 8)
    batches = as_lists(ds)
    assert len(batches) == 3  # 7 non-empty lines: 3 + 3 + 1
    for i, (features, labels, weights) in enumerate(batches):
        expected = rows[3 * i : 3 * i + 3]
        longest = max(len(r) for r in expected)
        np.testing.assert_array_equal(
            features["token_ids"], pad(expected, longest)
        )
        np.testing.assert_array_equal(
            features["padding_mask"], pad(expected, longest) != 0
        )
        np.testing.assert_array_equal(
            labels, next_token_labels(expected, longest)
        )
        np.testing.assert_array_equal(
            weights, next_token_weights(expected, longest)
        )
        assert features["token_ids"].dtype == np.int32
        assert features["padding_mask"].dtype == np.int32
        assert labels.dtype == np.int32
        assert weights.dtype == np.float32
    assert stats(ds)["truncated"] == truncated == 1


def test_max_length_is_fully_static_and_fills_the_last_batch(tokenizer):
    ds = make_dataset(
        LINES, tokenizer, batch_size=3, max_length=8, batching="max_length"
    )
    features_spec, labels_spec, weights_spec = ds.element_spec
    for spec in [*features_spec.values(), labels_spec, weights_spec]:
        assert spec.shape.as_list() == [3, 8]
    rows, _ = reference_rows(tokenizer, LINES, 8)
    batches = as_lists(ds)
    assert len(batches) == 3
    token_ids = np.concatenate([f["token_ids"] for f, *_ in batches])
    np.testing.assert_array_equal(token_ids, pad(rows, 8, batch=9))
    last_features, last_labels, last_weights = batches[-1]
    # Two all-padding rows fill the last batch: masked out, weights 0.
    assert not last_features["padding_mask"][1:].any()
    assert not last_labels[1:].any()
    assert not last_weights[1:].any()
    np.testing.assert_array_equal(
        np.concatenate([w for *_, w in batches]),
        next_token_weights(rows, 8, batch=9),
    )


@pytest.mark.parametrize("chunk_size", [1, 2, 4])
@pytest.mark.parametrize("batch_size", [3, 7])
@pytest.mark.parametrize("drop_remainder", [False, True])
@pytest.mark.parametrize("batching", ["longest", "max_length"])
def test_batches_cross_chunks(
    tokenizer, batching, drop_remainder, batch_size, chunk_size
):
    """Batches are cut from the stream of rows, whatever the chunks: small
    chunks (some holding only empty lines) give the batches of one chunk.
    With 7 rows and batch_size 7 no fill rows are added."""
    ds = make_dataset(
        LINES,
        tokenizer,
        batch_size=batch_size,
        max_length=8,
        batching=batching,
        drop_remainder=drop_remainder,
        chunk_size=chunk_size,
    )
    rows, truncated = reference_rows(tokenizer, LINES, 8)
    count = (
        len(rows) // batch_size
        if drop_remainder
        else -(-len(rows) // batch_size)
    )
    batches = as_lists(ds)
    assert len(batches) == count
    for i, (features, labels, weights) in enumerate(batches):
        expected = rows[batch_size * i : batch_size * (i + 1)]
        if batching == "longest":
            length, size = max(len(r) for r in expected), len(expected)
        else:
            length, size = 8, batch_size
        np.testing.assert_array_equal(
            features["token_ids"], pad(expected, length, size)
        )
        np.testing.assert_array_equal(
            features["padding_mask"], pad(expected, length, size) != 0
        )
        np.testing.assert_array_equal(
            labels, next_token_labels(expected, length, size)
        )
        np.testing.assert_array_equal(
            weights, next_token_weights(expected, length, size)
        )
    if not drop_remainder:
        assert stats(ds)["truncated"] == truncated


@pytest.mark.parametrize("batching", ["longest", "max_length"])
def test_long_max_length_uses_small_chunks(tokenizer, batching):
    """A very long max_length (2**19) gives the default chunk of
    4 * batch_size = 8 lines, so batches cross a chunk boundary here; they
    must be the reference batches all the same."""
    ds = make_dataset(
        LINES, tokenizer, batch_size=2, max_length=2**19, batching=batching
    )
    rows, _ = reference_rows(tokenizer, LINES, 2**19)
    batches = as_lists(ds)
    assert len(batches) == 4  # 7 rows
    token_ids = [f["token_ids"] for f, *_ in batches]
    for i, ids in enumerate(token_ids):
        expected = rows[2 * i : 2 * i + 2]
        width = (
            max(len(r) for r in expected) if batching == "longest" else 2**19
        )
        np.testing.assert_array_equal(
            ids,
            pad(
                expected,
                width,
                2 if batching == "max_length" else len(expected),
            ),
        )


def test_max_length_drop_remainder(tokenizer):
    ds = make_dataset(
        LINES,
        tokenizer,
        batch_size=3,
        max_length=8,
        batching="max_length",
        drop_remainder=True,
    )
    assert ds.element_spec[0]["token_ids"].shape.as_list() == [3, 8]
    assert len(as_lists(ds)) == 2


def test_bucket_pads_to_boundaries_with_bounded_shapes(tokenizer):
    lines = LINES * 5
    ds = make_dataset(
        lines,
        tokenizer,
        batch_size=2,
        max_length=10,
        batching="bucket",
        num_buckets=3,
    )
    boundaries = pipeline_info(ds).boundaries
    assert len(boundaries) <= 3 and boundaries[-1] == 10
    rows, truncated = reference_rows(tokenizer, lines, 10)
    seen = []
    for features, labels, weights in as_lists(ds):
        mask = features["padding_mask"]
        # Each row's targets: every real token but its last.
        following = np.pad(mask[:, 1:], [(0, 0), (0, 1)])
        np.testing.assert_array_equal(weights, mask * following)
        length = features["token_ids"].shape[1]
        assert length in boundaries
        assert features["token_ids"].shape[0] == 2
        real = mask.sum(axis=1)
        # Each row sits in the smallest bucket that holds it.
        smallest = [b for b in boundaries if b >= real.max()][0]
        assert length == smallest or not mask.any()
        for row, m in zip(features["token_ids"], mask):
            if m.any():
                seen.append(row[m > 0].tolist())
        np.testing.assert_array_equal(
            labels, np.pad(features["token_ids"][:, 1:], [[0, 0], [0, 1]])
        )
    assert sorted(seen) == sorted(rows)
    result = stats(ds)
    assert result["shapes"] <= 3
    assert result["truncated"] == truncated


def test_bucket_tokens_per_batch_and_explicit_boundaries(tokenizer):
    ds = make_dataset(
        LINES * 8,
        tokenizer,
        batch_size=1,
        max_length=16,
        batching="bucket",
        bucket_boundaries=[4, 8],
        tokens_per_batch=16,
    )
    assert pipeline_info(ds).boundaries == [4, 8, 16]
    for features, *_ in as_lists(ds):
        rows, length = features["token_ids"].shape
        assert rows == 16 // length
    # A row longer than the last boundary (8) goes to the max_length bucket.
    assert stats(ds)["shapes"] == 3


def test_pack_rows_segments_and_positions(tokenizer):
    ds = make_dataset(
        LINES, tokenizer, batch_size=2, max_length=8, batching="pack"
    )
    features_spec, labels_spec, weights_spec = ds.element_spec
    assert set(features_spec) == {
        "token_ids",
        "padding_mask",
        "example_ids",
        "positions",
    }
    for spec in [*features_spec.values(), labels_spec, weights_spec]:
        assert spec.shape.as_list() == [2, 8]
    rows, _ = reference_rows(tokenizer, LINES, 10**6)
    stream = [t for row in rows for t in row]
    batches = as_lists(ds)
    token_ids = np.concatenate([f["token_ids"] for f, *_ in batches])
    mask = np.concatenate([f["padding_mask"] for f, *_ in batches]) > 0
    # Nothing lost: the same tokens, and every example whole in one
    # segment, except that one longer than 8 is cut into pieces of 8.
    assert sorted(token_ids[mask].tolist()) == sorted(stream)
    segments = np.concatenate([f["example_ids"] for f, *_ in batches])
    got = sorted(
        token_ids[r][segments[r] == s].tolist()
        for r in range(len(segments))
        for s in range(1, segments[r].max() + 1)
    )
    assert got == sorted(
        row[i : i + 8] for row in rows for i in range(0, len(row), 8)
    )
    for features, labels, weights in batches:
        segments = features["example_ids"]
        positions = features["positions"]
        np.testing.assert_array_equal(segments > 0, features["padding_mask"])
        for r in range(segments.shape[0]):
            for s in range(8):
                if segments[r, s] == 0:
                    assert positions[r, s] == 0 and labels[r, s] == 0
                    assert weights[r, s] == 0
                    continue
                first = s == 0 or segments[r, s - 1] != segments[r, s]
                expected = 0 if first else positions[r, s - 1] + 1
                assert positions[r, s] == expected
                last = s == 7 or segments[r, s + 1] != segments[r, s]
                target = 0 if last else features["token_ids"][r, s + 1]
                assert labels[r, s] == target
                # A target exactly where the next token is of the example.
                assert weights[r, s] == (0.0 if last else 1.0)
            # Segments count 1, 2, ... from each row's start.
            used = sorted(set(segments[r][segments[r] > 0].tolist()))
            assert used == list(range(1, len(used) + 1))
    assert stats(ds)["truncated"] == 0


def test_pack_splits_a_document_longer_than_max_length(tokenizer):
    line = "the quick brown fox jumps over the lazy dog again and again"
    ds = make_dataset([line], tokenizer, batch_size=1, max_length=4)
    assert stats(ds)["truncated"] == 1  # "longest" truncates ...
    ds = make_dataset(
        [line], tokenizer, batch_size=1, max_length=4, batching="pack"
    )
    batches = as_lists(ds)
    expected = [1] + line_ids(tokenizer, line) + [2]
    got = [
        t for f, *_ in batches for t in f["token_ids"][f["padding_mask"] > 0]
    ]
    assert got == expected  # ... "pack" splits and keeps every token.
    assert len(batches) == 4
    for features, *_ in batches:
        m = features["padding_mask"][0] > 0
        assert features["example_ids"][0][m].tolist() == [1] * m.sum()
        assert features["positions"][0][m].tolist() == list(range(m.sum()))


# --- Tasks ---


def test_encode_gives_features_only(tokenizer):
    ds = make_dataset(
        LINES, tokenizer, task="encode", batch_size=4, max_length=6
    )
    assert set(ds.element_spec) == {"token_ids", "padding_mask", "segment_ids"}
    rows, _ = reference_rows(tokenizer, LINES, 6)
    features = next(iter(ds))
    longest = max(len(r) for r in rows[:4])
    np.testing.assert_array_equal(
        features["token_ids"].numpy(), pad(rows[:4], longest)
    )
    # Token types of single texts: sentence A (0) everywhere.
    assert not features["segment_ids"].numpy().any()


def test_encode_with_labels(tokenizer):
    pairs = [("the cat", 1), ("", 0), ("a dog", 0), ("one", 1)]
    ds = make_dataset(
        pairs,
        tokenizer,
        task="encode",
        batch_size=2,
        max_length=6,
        batching="max_length",
    )
    batches = as_lists(ds)
    labels = np.concatenate([labels for _, labels, _ in batches])
    weights = np.concatenate([weights for *_, weights in batches])
    # The empty example is skipped with its label; the fill row gets
    # label 0 and weight 0, where the real rows weigh 1.
    assert labels.tolist() == [1, 0, 1, 0]
    assert weights.tolist() == [1.0, 1.0, 1.0, 0.0]
    assert batches[0][0]["token_ids"].shape == (2, 6)


def test_seq2seq_shapes_and_tokens(tokenizer):
    pairs = [("the cat sat", "a dog"), ("one", "two words mat")]
    ds = make_dataset(
        pairs,
        tokenizer,
        task="seq2seq",
        batch_size=2,
        max_length=5,
        batching="max_length",
    )
    features, labels, weights = next(iter(ds))
    assert set(features) == {
        "encoder_token_ids",
        "encoder_padding_mask",
        "decoder_token_ids",
        "decoder_padding_mask",
    }
    for value in [*features.values(), labels, weights]:
        assert value.shape == (2, 5)
    source = [1] + line_ids(tokenizer, "the cat sat") + [2]
    target = line_ids(tokenizer, "two words mat")
    assert features["encoder_token_ids"][0].numpy().tolist() == source
    decoder = features["decoder_token_ids"][1].numpy().tolist()
    assert decoder == [1] + target + [0]
    assert labels[1].numpy().tolist() == target + [2, 0]
    mask = features["decoder_padding_mask"].numpy()
    np.testing.assert_array_equal(mask, labels.numpy() != 0)
    # Every decoder target is real: target + <eos>, nothing else.
    np.testing.assert_array_equal(weights.numpy(), mask)


# --- Tutorial parity ---

PAIRS = [
    ("I love deep learning", "我爱深度学习"),
    ("The weather is nice today", "今天天气很好"),
    ("She reads a book", "她在读书"),
    ("We are learning Transformers", "我们在学习变换器"),
    ("Good morning", "早上好"),
]


def collate_fn(batch, src_vocab, tgt_vocab):
    """The tutorial's PyTorch `collate_fn`, in plain Python.

    src: ids padded with 0; tgt: [<sos>] + ids + [<eos>], padded with 0
    (`pad_sequence(..., batch_first=True, padding_value=0)`).
    """
    src = [[src_vocab[w] for w in s.split()] for s, _ in batch]
    tgt = [
        [tgt_vocab["<sos>"]] + [tgt_vocab[c] for c in t] + [tgt_vocab["<eos>"]]
        for _, t in batch
    ]

    def pad_sequence(rows):
        width = max(len(r) for r in rows)
        return [r + [0] * (width - len(r)) for r in rows]

    return pad_sequence(src), pad_sequence(tgt)


def test_tutorial_collate_fn_parity():
    source_tokenizer = VocabularyTokenizer(split="whitespace")
    source_tokenizer.adapt([s for s, _ in PAIRS])
    target_tokenizer = VocabularyTokenizer(split="character")
    target_tokenizer.adapt([t for _, t in PAIRS])
    ds = make_dataset(
        PAIRS,
        source_tokenizer,
        target_tokenizer=target_tokenizer,
        task="seq2seq",
        batch_size=2,
        batching="longest",
        max_length=32,
        add_special_tokens=False,
    )
    src_vocab = {t: i for i, t in enumerate(source_tokenizer.get_vocabulary())}
    tgt_vocab = {t: i for i, t in enumerate(target_tokenizer.get_vocabulary())}
    batches = as_lists(ds)
    assert len(batches) == 3
    for i, (features, labels, weights) in enumerate(batches):
        src_batch, tgt_batch = collate_fn(
            PAIRS[2 * i : 2 * i + 2], src_vocab, tgt_vocab
        )
        assert features["encoder_token_ids"].tolist() == src_batch
        tgt = np.concatenate(
            [features["decoder_token_ids"][:, :1], labels], axis=1
        )
        assert tgt.tolist() == tgt_batch
        np.testing.assert_array_equal(weights, features["decoder_padding_mask"])


# --- Sources ---


def flat_tokens(dataset):
    out = []
    for features, *_ in dataset:
        ids = features["token_ids"].numpy()
        out.extend(ids[features["padding_mask"].numpy() > 0].tolist())
    return out


def test_files_globs_and_datasets_give_the_same_tokens(tmp_path, tokenizer):
    first, second = LINES[:5], LINES[5:]
    (tmp_path / "a.txt").write_text("\n".join(first) + "\n", "utf-8")
    (tmp_path / "b.txt").write_text("\n".join(second) + "\n", "utf-8")
    kwargs = dict(batch_size=2, max_length=32, deterministic=True)
    expected = sorted(flat_tokens(make_dataset(LINES, tokenizer, **kwargs)))
    for source in [
        str(tmp_path / "*.txt"),
        [tmp_path / "a.txt", tmp_path / "b.txt"],
        tf.data.Dataset.from_tensor_slices(LINES),
    ]:
        got = flat_tokens(make_dataset(source, tokenizer, **kwargs))
        assert sorted(got) == expected, source
    single = make_dataset(str(tmp_path / "a.txt"), tokenizer, **kwargs)
    rows, _ = reference_rows(tokenizer, first, 32)
    assert flat_tokens(single) == [t for row in rows for t in row]


def test_pairs_as_two_columns_or_a_dataset(tokenizer):
    sources = ["the cat", "a dog", "one"]
    targets = ["mat", "two words", "cat"]
    kwargs = dict(task="seq2seq", batch_size=3, max_length=8)
    want = as_lists(
        make_dataset(list(zip(sources, targets)), tokenizer, **kwargs)
    )
    for source in [
        (sources, targets),
        tf.data.Dataset.from_tensor_slices((sources, targets)),
    ]:
        got = as_lists(make_dataset(source, tokenizer, **kwargs))
        for (f1, l1, w1), (f2, l2, w2) in zip(want, got):
            np.testing.assert_array_equal(l1, l2)
            np.testing.assert_array_equal(w1, w2)
            for key in f1:
                np.testing.assert_array_equal(f1[key], f2[key])


# --- Shuffle and cache ---


def test_shuffle_is_seeded_complete_and_reshuffles(tokenizer):
    lines = [f"{w} {v}" for w in LINES[4].split() for v in ("cat", "dog")]
    kwargs = dict(batch_size=4, max_length=8, shuffle=100, seed=7, chunk_size=8)
    ds = make_dataset(lines, tokenizer, **kwargs)
    first = flat_tokens(ds)
    second = flat_tokens(ds)
    again = flat_tokens(make_dataset(lines, tokenizer, **kwargs))
    plain = flat_tokens(
        make_dataset(lines, tokenizer, batch_size=4, max_length=8)
    )
    assert sorted(first) == sorted(plain) == sorted(second)
    assert first == again  # same seed, same first epoch
    assert first != plain and first != second  # shuffled, anew each epoch


def test_cache_in_memory_and_in_files(tmp_path, tokenizer):
    want = flat_tokens(
        make_dataset(LINES, tokenizer, batch_size=2, max_length=8)
    )
    for cache in [True, str(tmp_path / "cache")]:
        ds = make_dataset(
            LINES, tokenizer, batch_size=2, max_length=8, cache=cache
        )
        assert flat_tokens(ds) == want
        assert flat_tokens(ds) == want


# --- Statistics ---


def test_stats_keys_values_and_printing(tokenizer):
    ds = make_dataset(
        LINES, tokenizer, batch_size=3, max_length=8, batching="max_length"
    )
    result = stats(ds)
    rows, truncated = reference_rows(tokenizer, LINES, 8)
    real = sum(len(r) for r in rows)
    assert result == {
        "batches": 3,
        "real_tokens": real,
        "padded_tokens": 3 * 3 * 8 - real,
        "padding_efficiency": real / 72,
        "targets": real - len(rows),  # every token but each row's last
        "fill_rows": 3 * 3 - len(rows),  # all-padding rows of the last batch
        "truncated": truncated,
        "skipped": 2,  # the two blank lines
        "shapes": 1,
    }
    assert isinstance(result, dict)
    text = str(result)
    assert "padding_efficiency" in text and f"{real / 72:.4f}" in text
    assert stats(ds, max_batches=1)["batches"] == 1
    # Any dataset works; truncation is then unknown.
    foreign = ds.map(lambda *element: element)
    other = stats(foreign)
    assert other["truncated"] is None and other["skipped"] is None
    assert other["real_tokens"] == real
    assert other["targets"] == real - len(rows)
    # ... unless the record of the original is passed explicitly.
    info = pipeline_info(ds)
    assert pipeline_info(foreign) is None
    assert stats(foreign, info=info)["truncated"] == truncated
    assert stats(foreign, info=info)["skipped"] == 2
    assert info.num_batches == 3 and info.boundaries is None
    with pytest.raises(TypeError, match=r"`info` must be a `PipelineInfo`"):
        stats(foreign, info={"truncated": 0})
    plain = tf.data.Dataset.from_tensors(tf.constant([[5, 6, 0]]))
    assert stats(plain)["padding_efficiency"] == pytest.approx(2 / 3)


# --- Bad input ---


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            dict(batching="foo"),
            ValueError,
            r"`batching` must be one of .*batching='foo'",
        ),
        (dict(task="mask"), ValueError, r"`task` must be one of .*task='mask'"),
        (dict(batch_size=0), ValueError, r"batch_size=0"),
        (
            dict(max_length=2),
            ValueError,
            r"`max_length` must leave room .*max_length=2",
        ),
        (dict(shuffle=-1), ValueError, r"shuffle=-1"),
        (dict(cache=1), TypeError, r"cache=1"),
        (
            dict(bucket_boundaries=[4, 2]),
            ValueError,
            r"bucket_boundaries=\[4, 2\]",
        ),
        (dict(bucket_boundaries=[40]), ValueError, r"max_length=8"),
        (dict(drop_remainder="yes"), TypeError, r"drop_remainder='yes'"),
        (dict(skip_empty=None), TypeError, r"skip_empty=None"),
        (dict(target_tokenizer="x"), ValueError, r"target_tokenizer"),
        (dict(data_service=5050), TypeError, r"data_service=5050"),
        (dict(separator=2), ValueError, r'separator.*batching="stream"'),
        (
            dict(label_vocabulary=["a"]),
            ValueError,
            r'`label_vocabulary` maps .*task="encode"',
        ),
    ],
)
def test_bad_arguments(tokenizer, kwargs, error, message):
    arguments = dict(batch_size=2, max_length=8)
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        make_dataset(["a b"], tokenizer, **arguments)


def test_bad_sources(tmp_path, tokenizer):
    kwargs = dict(batch_size=2, max_length=8)
    with pytest.raises(ValueError, match=r"columns of lengths \[2, 1\]"):
        make_dataset((["a", "b"], ["c"]), tokenizer, task="seq2seq", **kwargs)
    with pytest.raises(ValueError, match=r"source\[1\]=\('b',\)"):
        make_dataset([("a", "c"), ("b",)], tokenizer, task="seq2seq", **kwargs)
    with pytest.raises(ValueError, match=r"source\[1\]=\('b', 'c', 'd'\)"):
        make_dataset([("a", "c"), ("b", "c", "d")], tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"matches no file.*nothing\*\.txt"):
        make_dataset(str(tmp_path / "nothing*.txt"), tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"non-empty list"):
        make_dataset([], tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"needs \(source, target\) pairs"):
        make_dataset(["a"], tokenizer, task="seq2seq", **kwargs)
    with pytest.raises(ValueError, match=r'task="lm"` takes texts'):
        make_dataset([("a", "b")], tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"element_spec"):
        batched = tf.data.Dataset.from_tensor_slices(["a"]).batch(1)
        make_dataset(batched, tokenizer, **kwargs)
    with pytest.raises(
        ValueError, match=r"batching='pack' with task='seq2seq'"
    ):
        make_dataset(
            [("a", "b")], tokenizer, task="seq2seq", batching="pack", **kwargs
        )


def test_bad_tokenizers(tokenizer):
    kwargs = dict(batch_size=2, max_length=8)
    with pytest.raises(TypeError, match=r"tokenizer='bert' \(of type str\)"):
        make_dataset(["a"], "bert", **kwargs)
    wrapped = VocabularyTokenizer(
        tokenizer.get_vocabulary(), add_special_tokens=True
    )
    with pytest.raises(ValueError, match=r"add_special_tokens=False"):
        make_dataset(["a"], wrapped, **kwargs)
    # A vocabulary with no [CLS]/[SEP]: fine without specials, an error with.
    no_specials = WordPieceTokenizer(["[PAD]", "[UNK]", "a", "b"])
    make_dataset(["a"], no_specials, add_special_tokens=False, **kwargs)
    with pytest.raises(ValueError, match=r"has only special_tokens=\{"):
        make_dataset(["a"], no_specials, **kwargs)
    with pytest.raises(ValueError, match=r'task="seq2seq".*target_tokenizer'):
        make_dataset(
            [("a", "b")],
            tokenizer,
            target_tokenizer=no_specials,
            task="seq2seq",
            **kwargs,
        )


def test_bucket_leftovers_move_up_instead_of_fill_rows():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["a b c d e"])
    # With the start and end tokens: lengths 3, 4, 3 (bucket 4)
    # and 7 (bucket 8).
    lines = ["a", "a b", "b", "a b c d e"]
    kwargs = dict(
        batch_size=2, max_length=8, batching="bucket", bucket_boundaries=[4]
    )
    batches = as_lists(make_dataset(lines, tokenizer, **kwargs))
    shapes = [f["token_ids"].shape for f, *_ in batches]
    # The third bucket-4 row joins the bucket-8 row: no all-padding row.
    assert shapes == [(2, 4), (2, 8)]
    assert all(f["padding_mask"].any(axis=1).all() for f, *_ in batches)
    ids = [
        t for f, *_ in batches for t in f["token_ids"][f["padding_mask"] > 0]
    ]
    assert len(ids) == 3 + 4 + 3 + 7
    dropped = make_dataset(lines, tokenizer, drop_remainder=True, **kwargs)
    assert [f["token_ids"].shape for f, *_ in as_lists(dropped)] == [(2, 4)]


@pytest.mark.parametrize("batching", ["longest", "max_length", "bucket"])
def test_encode_without_labels_yields_features_only(batching):
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["a b c", "d e"])
    ds = make_dataset(
        ["a b c", "d e", "a"],
        tokenizer,
        task="encode",
        batch_size=2,
        max_length=8,
        batching=batching,
    )
    batches = list(ds)
    keys = {"token_ids", "padding_mask", "segment_ids"}
    assert all(set(b) == keys for b in batches)
    real = sum(
        int(tf.reduce_sum(tf.cast(b["padding_mask"], "int32"))) for b in batches
    )
    assert real == (3 + 2) + (2 + 2) + (1 + 2)  # tokens + <sos>/<eos>


# --- Row selection, truncation and specials (select_rows / pad_rows) -------


def rows_reference(rows, index, capacity, start, end):
    out, cut = [], []
    for r in index:
        kept = rows[r] if capacity is None else rows[r][:capacity]
        out.append(
            ([start] if start is not None else [])
            + kept
            + ([end] if end is not None else [])
        )
        cut.append(capacity is not None and len(rows[r]) > capacity)
    return out, cut


@pytest.mark.parametrize(
    "start, end", [(7, 8), (7, None), (None, 8), (None, None)]
)
@pytest.mark.parametrize("capacity", [1, 3, 6])
def test_select_rows_and_pad_rows_match_reference(start, end, capacity):
    rng = np.random.default_rng(capacity)
    rows = [
        rng.integers(10, 99, rng.integers(0, 6)).tolist() for _ in range(40)
    ]
    ragged = tf.ragged.constant(rows, tf.int32, ragged_rank=1)
    index = [r for r in range(40) if rows[r]][::-1]  # also reordered
    want, want_cut = rows_reference(rows, index, capacity, start, end)
    got, cut = select_rows(
        ragged, tf.constant(index, tf.int64), capacity, start, end
    )
    assert got.to_list() == want
    assert cut.numpy().tolist() == want_cut
    width = capacity + 3
    dense, lengths, cut = pad_rows(
        ragged, tf.constant(index, tf.int64), capacity, start, end, width
    )
    assert dense.shape == (len(index), width)
    assert lengths.numpy().tolist() == [len(row) for row in want]
    assert [
        row[:n] for row, n in zip(dense.numpy().tolist(), lengths.numpy())
    ] == want
    assert all(
        not any(row[n:]) for row, n in zip(dense.numpy(), lengths.numpy())
    )
    assert cut.numpy().tolist() == want_cut


def _dataset_nodes(dataset):
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    return list(graph.node)


@pytest.mark.parametrize("batching", ["longest", "max_length", "bucket"])
def test_batches_are_handed_out_without_per_batch_threads(tokenizer, batching):
    # Issue 15, steady state: no `prefetch` after the batches (its
    # hand-over between threads costs more than cutting a batch), no
    # function run once per batch in "bucket" mode, and the one per-batch
    # function of "longest" (the cut) runs inline, on the calling thread
    # (`use_inter_op_parallelism=False`), not through the inter-op pool.
    dataset = make_dataset(
        LINES * 10, tokenizer, batch_size=4, max_length=8, batching=batching
    )
    nodes = _dataset_nodes(dataset)
    ops = [node.op for node in nodes]
    assert "PrefetchDataset" not in ops
    # Maps after the batching (not the source's line maps).
    maps = [
        node
        for node in nodes
        if node.op == "MapDataset"
        and node.input[0].startswith(("Rebatch", "FlatMap"))
    ]
    if batching == "longest":
        assert len(maps) == 1
        assert not maps[0].attr["use_inter_op_parallelism"].b
    else:
        assert not maps
    if batching == "bucket":
        # The batches come from slices of padded groups, not an unbatch.
        assert "UnbatchDataset" not in ops
        assert "FlatMapDataset" in ops
    # The batches themselves are as before (pinned in
    # test_pinned_batches.py); here, every row of every batch is real or
    # a fill row, and the cut leaves no all-padding column.
    for features, *_ in dataset:
        mask = features["padding_mask"].numpy()
        if batching == "longest":
            assert mask[:, -1].any()


# --- "stream": texts joined and cut into full rows (group_texts) ---------


def stream_reference(tokenizer, lines, start=(), end=()):
    """The stream by hand: each non-empty line's ids with the separator."""
    stream = []
    for line in lines:
        ids = line_ids(tokenizer, line)
        if ids:
            stream += [*start, *ids, *end]
    return stream


def check_stream(batches, stream, batch_size, length, whole=True):
    """Every batch against the stream: rows of `length` cut in order, each
    label the next token of the stream, weights 0 only past its last
    token (and, with `whole`, no token lost or added)."""
    ids = np.concatenate([f["token_ids"].ravel() for f, *_ in batches])
    mask = np.concatenate([f["padding_mask"].ravel() for f, *_ in batches])
    labels = np.concatenate([y.ravel() for _, y, _ in batches])
    weights = np.concatenate([w.ravel() for *_, w in batches])
    for features, *_ in batches:
        assert features["token_ids"].shape == (batch_size, length)
    count = len(stream) if whole else len(ids)
    np.testing.assert_array_equal(ids[:count], stream[:count])
    assert mask[:count].all() and not mask[count:].any()
    assert not ids[count:].any()
    np.testing.assert_array_equal(labels[: count - 1], stream[1:count])
    expected = np.zeros(len(ids))
    expected[: count - 1 if whole else count] = 1
    np.testing.assert_array_equal(weights, expected)


@pytest.mark.parametrize("chunk_size", [1, 3, 100])
@pytest.mark.parametrize("batch_size", [1, 2, 3])
def test_stream_joins_texts_and_cuts_full_rows(
    tokenizer, batch_size, chunk_size
):
    """Rows of exactly max_length from one stream, whatever the chunks:
    every token once, labels across texts and rows, a last partial row
    filled and weighted 0."""
    ds = make_dataset(
        LINES,
        tokenizer,
        batch_size=batch_size,
        max_length=5,
        batching="stream",
        chunk_size=chunk_size,
    )
    eos = tokenizer.special_tokens["eos"]
    stream = stream_reference(tokenizer, LINES, end=[eos])
    batches = as_lists(ds)
    assert len(batches) == -(-len(stream) // (batch_size * 5))
    check_stream(batches, stream, batch_size, 5)
    result = stats(ds)
    assert result["real_tokens"] == len(stream)
    assert result["targets"] == len(stream) - 1
    assert result["truncated"] == 0 and result["skipped"] == 2
    assert pipeline_info(ds).separator == [eos]


def test_stream_drop_remainder_keeps_whole_batches(tokenizer):
    eos = tokenizer.special_tokens["eos"]
    stream = stream_reference(tokenizer, LINES, end=[eos])
    ds = make_dataset(
        LINES,
        tokenizer,
        batch_size=2,
        max_length=4,
        batching="stream",
        drop_remainder=True,
    )
    batches = as_lists(ds)
    assert len(batches) == len(stream) // 8
    # Every position of a whole batch has its next token: all targets.
    check_stream(batches, stream, 2, 4, whole=False)
    assert ds.element_spec[0]["token_ids"].shape.as_list() == [2, 4]


def test_stream_separators(tokenizer):
    kwargs = dict(batch_size=2, max_length=6, batching="stream")
    for separator, end in [(7, [7]), ([], []), ([3, 4], [3, 4]), ("a", None)]:
        ds = make_dataset(LINES, tokenizer, separator=separator, **kwargs)
        if end is None:  # a token of the vocabulary, by name
            end = [tokenizer.token_to_id("a")]
        stream = stream_reference(tokenizer, LINES, end=end)
        check_stream(as_lists(ds), stream, 2, 6)
        assert pipeline_info(ds).separator == end
    # A tokenizer with a start token only puts it before each text.
    only_start = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "a", "b"])
    assert set(only_start.special_tokens) == {"pad", "unk", "cls"}
    texts = ["a b", "", "b", "a a b"]
    ds = make_dataset(texts, only_start, **kwargs)
    stream = stream_reference(only_start, texts, start=[2])
    check_stream(as_lists(ds), stream, 2, 6)
    assert pipeline_info(ds).separator == [2]
    # Bad separators say what is wrong.
    with pytest.raises(ValueError, match=r"separator='zebra'.*not a token"):
        make_dataset(LINES, tokenizer, separator="zebra", **kwargs)
    size = tokenizer.vocabulary_size()
    with pytest.raises(ValueError, match=rf"ids must be in \[0, {size}\)"):
        make_dataset(LINES, tokenizer, separator=[99], **kwargs)
    with pytest.raises(TypeError, match=r"separator=1.5"):
        make_dataset(LINES, tokenizer, separator=1.5, **kwargs)


def test_stream_shuffles_and_shards_without_loss(tokenizer):
    lines = [f"{w} {v}" for w in LINES[4].split() for v in ("cat", "dog")]
    eos = tokenizer.special_tokens["eos"]
    kwargs = dict(batch_size=2, max_length=5, batching="stream", chunk_size=4)
    shuffled = as_lists(
        make_dataset(lines, tokenizer, shuffle=100, seed=3, **kwargs)
    )
    stream = stream_reference(tokenizer, lines, end=[eos])
    got = np.concatenate(
        [f["token_ids"][f["padding_mask"] > 0] for f, *_ in shuffled]
    )
    assert sorted(got.tolist()) == sorted(stream)
    assert got.tolist() != stream  # the texts come in another order
    halves = [
        as_lists(make_dataset(lines, tokenizer, shard=(2, i), **kwargs))
        for i in range(2)
    ]
    for i, batches in enumerate(halves):
        check_stream(
            batches, stream_reference(tokenizer, lines[i::2], end=[eos]), 2, 5
        )


def test_stream_is_for_language_models(tokenizer):
    kwargs = dict(batch_size=2, max_length=8, batching="stream")
    with pytest.raises(ValueError, match=r'batching="stream"` joins texts'):
        make_dataset(LINES, tokenizer, task="encode", **kwargs)
    with pytest.raises(ValueError, match=r"batching='stream'` is for"):
        make_dataset([("a", "b")], tokenizer, task="seq2seq", **kwargs)


# --- Skipped examples, and skip_empty=False for predict ------------------


def test_in_memory_skips_warn_and_are_counted(tokenizer, tmp_path):
    kwargs = dict(batch_size=3, max_length=8)
    with pytest.warns(
        SkippedExamplesWarning,
        match=r"^2 of the 9 examples of `source` give no token.*"
        r"`skip_empty=False`",
    ):
        ds = make_dataset(LINES, tokenizer, **kwargs)
    assert stats(ds)["skipped"] == 2
    # A file source is not read ahead: no warning, but `stats` counts.
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedExamplesWarning)
        from_file = make_dataset(str(path), tokenizer, **kwargs)
        kept = make_dataset(["a b", "one"], tokenizer, **kwargs)
    assert stats(from_file)["skipped"] == 2
    assert stats(kept)["skipped"] == 0


@pytest.mark.parametrize("batching", ["longest", "max_length"])
@pytest.mark.parametrize("task", ["encode", "lm"])
def test_skip_empty_false_keeps_one_row_per_input(
    tokenizer, batching, task, tmp_path
):
    """For predict: every input its row, in input order, the empty ones as
    `export_text_model` serves them; no fill row after the last."""
    from tf_input.export import export_text_model

    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedExamplesWarning)
        ds = make_dataset(
            LINES,
            tokenizer,
            task=task,
            batch_size=4,
            max_length=8,
            batching=batching,
            skip_empty=False,
        )
    batches = list(ds)
    features = [b[0] if isinstance(b, tuple) else b for b in batches]
    assert [int(f["token_ids"].shape[0]) for f in features] == [4, 4, 1]
    token_ids = [f["token_ids"].numpy() for f in features]
    masks = [f["padding_mask"].numpy() for f in features]
    token_ids = np.concatenate(
        [np.pad(t, [(0, 0), (0, 8 - t.shape[1])]) for t in token_ids]
    )
    masks = np.concatenate(
        [np.pad(m, [(0, 0), (0, 8 - m.shape[1])]) for m in masks]
    )
    token_input = keras.Input((None,), dtype="int32", name="token_ids")
    model = keras.Model(token_input, token_input * 1)
    module = export_text_model(
        model, tokenizer, str(tmp_path / "m"), max_length=8
    )
    served = module.features(tf.constant(LINES))
    width = served["token_ids"].shape[1]
    np.testing.assert_array_equal(token_ids[:, :width], served["token_ids"])
    np.testing.assert_array_equal(masks[:, :width], served["padding_mask"])
    assert stats(ds)["skipped"] == 0
    if task == "lm":  # a blank text's row: <sos> -> <eos>, one target
        weights = np.concatenate([b[2].numpy().sum(axis=1) for b in batches])
        assert weights[1] == weights[3] == 1


def test_skip_empty_false_needs_input_order(tokenizer):
    kwargs = dict(batch_size=2, max_length=8, skip_empty=False)
    for bad, message in [
        (dict(batching="bucket"), r"batching='bucket'"),
        (dict(batching="pack"), r"batching='pack'"),
        (dict(shuffle=True), r"shuffle=10000"),
        (dict(drop_remainder=True), r"drop_remainder=True"),
    ]:
        with pytest.raises(ValueError, match=r"skip_empty=False.*" + message):
            make_dataset(LINES, tokenizer, **kwargs, **bad)


# --- String labels --------------------------------------------------------


def test_label_vocabulary_names_string_labels(tokenizer):
    kwargs = dict(task="encode", batch_size=2, max_length=8)
    source = [("the cat", "pos"), ("a dog", "neg"), ("one", "pos")]
    for vocabulary, want in [
        (["neg", "pos"], [1, 0, 1]),
        ({"pos": 7, "neg": 3}, [7, 3, 7]),
    ]:
        ds = make_dataset(
            source, tokenizer, label_vocabulary=vocabulary, **kwargs
        )
        got = np.concatenate([y.numpy() for _, y, _ in ds])
        assert got.tolist() == want
        assert ds.element_spec[1].dtype == tf.int32
    # Without it, two strings are a sentence pair: no labels.
    pairs = make_dataset(source, tokenizer, **kwargs)
    assert isinstance(pairs.element_spec, dict)
    assert next(iter(pairs))["segment_ids"].numpy().any()
    # Three strings with it: a pair and its label.
    triples = [("the cat", "a dog", "pos"), ("one", "two", "neg")]
    ds = make_dataset(
        triples, tokenizer, label_vocabulary=["neg", "pos"], **kwargs
    )
    features, labels, weights = next(iter(ds))
    assert labels.numpy().tolist() == [1, 0]
    assert features["segment_ids"].numpy().any()
    assert weights.numpy().tolist() == [1.0, 1.0]


def test_label_vocabulary_errors(tokenizer):
    kwargs = dict(task="encode", batch_size=2, max_length=8)
    source = [("the cat", "pos"), ("a dog", "meh")]
    columns = tf.data.Dataset.from_tensor_slices(tuple(map(list, zip(*source))))
    for given in (source, columns):
        ds = make_dataset(
            given, tokenizer, label_vocabulary=["neg", "pos"], **kwargs
        )
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"not in `label_vocabulary` \(neg, pos\).*\[meh\]",
        ):
            list(ds)
    for bad, error, message in [
        ("pos", TypeError, r"list of label names"),
        ([1, 2], TypeError, r"with strings"),
        (["a", "a"], ValueError, r"each label once"),
        ({"a": -1}, ValueError, r"integers >= 0"),
    ]:
        with pytest.raises(error, match=message):
            make_dataset(source, tokenizer, label_vocabulary=bad, **kwargs)
    with pytest.raises(ValueError, match=r"labels are numbers already"):
        make_dataset(
            [("the cat", 1)], tokenizer, label_vocabulary=["a"], **kwargs
        )
    with pytest.raises(ValueError, match=r"single texts, which has no labels"):
        make_dataset(["the cat"], tokenizer, label_vocabulary=["a"], **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batching": "longest"},
        {"batching": "bucket"},
        {"batching": "pack"},
        {"batching": "stream"},
        {"batching": "longest", "source": "file"},
    ],
    ids=["longest", "bucket", "pack", "stream", "text-file"],
)
def test_make_dataset_again_and_again_keeps_no_function(
    tmp_path, tokenizer, kwargs
):
    # A sweep or a server that calls `make_dataset` again and again must
    # not grow the process: once a dataset is dropped, no function of it
    # stays in the eager context or the default graph. (Called eagerly,
    # `Dataset.reduce` keeps its function there and `Dataset.scan` keeps
    # its own in the default graph, for the life of the process.)
    from tensorflow.python.eager import context

    kwargs = dict(kwargs)
    source = LINES
    if kwargs.pop("source", None) == "file":
        source = tmp_path / "lines.txt"
        source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    graph = tf.compat.v1.get_default_graph()

    def functions():
        return (
            set(context.context().list_function_names()),
            set(graph._functions),
        )

    def one():
        ds = make_dataset(
            source, tokenizer, batch_size=2, max_length=8, **kwargs
        )
        if source is LINES:  # in memory: the epoch was counted
            assert ds.cardinality() > 0
        next(iter(ds))
        stats(ds)  # counts the skipped examples
        del ds
        gc.collect()

    one()
    before = functions()
    for _ in range(2):
        one()
        assert functions() == before
