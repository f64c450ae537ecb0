"""Sentence pairs in `make_dataset(task="encode")`: templates, token types
and truncation, against Hugging Face `tokenizers` (the BERT vocabulary)."""

import itertools

import numpy as np
import pytest
import tensorflow as tf
import tokenizers

from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tf_input import VocabularyTokenizer
from tf_input import WordPieceTokenizer
from tf_input.data import SkippedExamplesWarning
from tf_input.data import make_dataset
from tf_input.data import stats
from tf_input.data.cutting import pair_lengths


@pytest.fixture(scope="module")
def hf_bert():
    return tokenizers.BertWordPieceTokenizer(
        str(data_path("bert", "bert-base-uncased-vocab.txt")), lowercase=True
    )


@pytest.fixture(scope="module")
def bert():
    return WordPieceTokenizer.from_vocab_file(
        data_path("bert", "bert-base-uncased-vocab.txt")
    )


def hf_lengths(hf, la, lb, max_length, strategy):
    """What HF keeps of texts of `la` and `lb` one-token words."""
    hf.enable_truncation(max_length, strategy=strategy)
    try:
        encoding = hf.encode("the " * la, "a " * lb)
    except Exception:  # HF: "Sequence to truncate too short"
        return None
    types = np.array(encoding.type_ids)
    return int((types == 0).sum()) - 2, int((types == 1).sum()) - 1


@requires_shared_data
@pytest.mark.parametrize(
    "strategy", ["longest_first", "only_first", "only_second"]
)
def test_truncation_rule_matches_hf_on_every_small_case(hf_bert, strategy):
    lengths = list(itertools.product(range(1, 13), repeat=2))
    for max_length in (4, 7, 10):
        a = tf.constant([la for la, _ in lengths], tf.int64)
        b = tf.constant([lb for _, lb in lengths], tf.int64)
        keep_a, keep_b, ok = pair_lengths(a, b, max_length - 3, strategy)
        for i, (la, lb) in enumerate(lengths):
            want = hf_lengths(hf_bert, la, lb, max_length, strategy)
            if want is None:
                assert not ok[i], (la, lb, max_length)
            else:
                assert ok[i], (la, lb, max_length)
                got = (int(keep_a[i]), int(keep_b[i]))
                assert got == want, (la, lb, max_length, strategy)


def corpus_pairs(name, count):
    lines = [x for x in read_lines(data_path("corpora", name)) if x.strip()]
    return list(zip(lines[:count], lines[1 : count + 1]))


@requires_shared_data
@pytest.mark.parametrize(
    "corpus, max_length, strategy",
    [
        ("wikitext-2-raw-test.txt", 64, "longest_first"),
        pytest.param(
            "wikitext-2-raw-test.txt",
            512,
            "longest_first",
            marks=pytest.mark.slow,  # few pairs are cut at 512
        ),
        ("tinyshakespeare.txt", 16, "longest_first"),
        ("wikitext-2-raw-test.txt", 128, "only_first"),
        ("tinyshakespeare.txt", 24, "only_second"),
    ],
)
def test_pairs_match_hf_encode(hf_bert, bert, corpus, max_length, strategy):
    pairs = corpus_pairs(corpus, 300)
    hf_bert.enable_truncation(max_length, strategy=strategy)
    length_a = bert([a for a, _ in pairs]).row_lengths().numpy()
    length_b = bert([b for _, b in pairs]).row_lengths().numpy()
    want, kept, cut = [], [], 0
    for (a, b), la, lb in zip(pairs, length_a, length_b):
        try:
            encoding = hf_bert.encode(a, b)
        except Exception:
            continue  # HF cannot truncate this pair so: tested below
        if la and lb:  # the pipeline skips a pair with an empty side
            want.append((encoding.ids, encoding.type_ids))
            kept.append((a, b))
            cut += la + lb + 3 > max_length
    assert len(kept) > 150
    ds = make_dataset(
        kept,
        bert,
        task="encode",
        batch_size=32,
        max_length=max_length,
        truncation=strategy,
    )
    got = []
    for features in ds:
        mask = features["padding_mask"].numpy() > 0
        for ids, types, m in zip(
            features["token_ids"].numpy(), features["segment_ids"].numpy(), mask
        ):
            got.append((ids[m].tolist(), types[m].tolist()))
    assert got == want
    assert stats(ds)["truncated"] == cut


@requires_shared_data
def test_a_pair_the_strategy_cannot_fit_is_an_error(bert):
    long_b = "word " * 40
    with pytest.raises(tf.errors.InvalidArgumentError, match="only_first"):
        ds = make_dataset(
            [("a short one", long_b)],
            bert,
            task="encode",
            batch_size=1,
            max_length=16,
            truncation="only_first",
        )
        list(ds)


def toy():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["the cat sat", "a dog ran far"])
    return tokenizer


@pytest.mark.parametrize("batching", ["longest", "max_length", "bucket"])
def test_pair_sources_and_labels(batching):
    tokenizer = toy()
    sos, eos = tokenizer.start_ids[0], tokenizer.end_ids[0]
    ids = {
        t: tokenizer.token_to_id(t) for t in "the cat sat a dog ran far".split()
    }
    triples = [("the cat", "a dog ran", 1), ("sat", "far", 0), ("", "cat", 1)]
    want_rows = [
        [
            sos,
            ids["the"],
            ids["cat"],
            eos,
            ids["a"],
            ids["dog"],
            ids["ran"],
            eos,
        ],
        [sos, ids["sat"], eos, ids["far"], eos],
    ]
    want_types = [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1]]
    sources = {
        "triples": triples,
        "columns": tuple(list(c) for c in zip(*triples)),
        "dataset": tf.data.Dataset.from_tensor_slices(
            tuple(list(c) for c in zip(*triples))
        ),
    }
    if batching != "longest":  # the sources once; the modes on one
        sources = {"triples": triples}
    for name, source in sources.items():
        kwargs = dict(
            task="encode",
            batch_size=2,
            max_length=12,
            batching=batching,
            bucket_boundaries=[12],
        )
        if name == "dataset":  # not in memory: counted by `stats` only
            ds = make_dataset(source, tokenizer, **kwargs)
        else:
            with pytest.warns(SkippedExamplesWarning, match=r"1 of the 3"):
                ds = make_dataset(source, tokenizer, **kwargs)
        rows, types, labels, weights = [], [], [], []
        for features, label, weight in ds:
            mask = features["padding_mask"].numpy() > 0
            for r, t, m in zip(
                features["token_ids"].numpy(),
                features["segment_ids"].numpy(),
                mask,
            ):
                if m.any():
                    rows.append(r[m].tolist())
                    types.append(t[m].tolist())
            labels.extend(label.numpy().tolist())
            weights.extend(weight.numpy().tolist())
        assert rows == want_rows, name  # the pair with an empty side skipped
        assert types == want_types, name
        assert labels[:2] == [1, 0], name
        # Two real rows: one full batch, each row a target.
        assert weights == [1.0, 1.0], name
        assert stats(ds)["skipped"] == 1, name
    if batching != "longest":
        return
    # Pairs without labels yield features only.
    with pytest.warns(SkippedExamplesWarning, match=r"1 of the 3"):
        ds = make_dataset(
            [(a, b) for a, b, _ in triples],
            tokenizer,
            task="encode",
            batch_size=2,
            max_length=12,
        )
    assert isinstance(ds.element_spec, dict)


def test_file_templates_are_followed():
    """A `tokenizer.json`-style pair template (RoBERTa's `<s> a </s></s> b
    </s>`, all type 0) is what the pipeline builds."""
    tokenizer = toy()
    sos, eos = tokenizer.start_ids[0], tokenizer.end_ids[0]
    tokenizer._templates = {
        "single": [(sos, 0), ("$A", 0), (eos, 0)],
        "pair": [(sos, 0), ("$A", 0), (eos, 0), (eos, 0), ("$B", 0), (eos, 0)],
    }
    ds = make_dataset(
        [("the cat", "far")],
        tokenizer,
        task="encode",
        batch_size=1,
        max_length=7,
    )
    features = next(iter(ds))
    the, cat, far = (tokenizer.token_to_id(t) for t in ("the", "cat", "far"))
    # 7 - 4 specials = 3 tokens: longest_first keeps "the cat" and "far".
    assert features["token_ids"].numpy().tolist() == [
        [sos, the, cat, eos, eos, far, eos]
    ]
    assert not features["segment_ids"].numpy().any()


def test_pair_errors():
    tokenizer = toy()
    with pytest.raises(ValueError, match=r"`truncation` must be one of"):
        make_dataset(
            [("a", "b")],
            tokenizer,
            task="encode",
            batch_size=1,
            max_length=8,
            truncation="longest",
        )
    with pytest.raises(ValueError, match=r"sentence pairs cannot follow"):
        make_dataset(
            [("a", "b")],
            tokenizer,
            task="encode",
            batch_size=1,
            max_length=8,
            batching="pack",
        )
    with pytest.raises(ValueError, match=r"room for the 3 special tokens"):
        make_dataset(
            [("a", "b")], tokenizer, task="encode", batch_size=1, max_length=3
        )
