import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tf_input import VocabularyTokenizer

ARITHMETIC = "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"


def python_reference(lines, split):
    """The tutorials' tokenizer in plain Python: vocab in first-seen order."""

    def pieces(line):
        if split == "character":
            return [c for c in line if not c.isspace()]
        return line.split()

    vocabulary = {"<pad>": 0, "<sos>": 1, "<eos>": 2, "<unk>": 3}
    for line in lines:
        for piece in pieces(line):
            vocabulary.setdefault(piece, len(vocabulary))
    return list(vocabulary), [[vocabulary[p] for p in pieces(x)] for x in lines]


def test_arithmetic_example_from_the_spec():
    tokenizer = VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt([ARITHMETIC, "BOS POSITIVE 04 EOS"])
    vocabulary = tokenizer.get_vocabulary()
    assert vocabulary[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"]
    tokens = [vocabulary[i] for i in tokenizer(ARITHMETIC).numpy()]
    assert tokens == ["BOS", "NEGATIVE", "3", "0", "subtract", "NEGATIVE"] + [
        "3",
        "4",
        "EOS",
    ]
    assert "30" not in vocabulary and "04" not in vocabulary


def test_numbers_in_the_vocabulary_stay_whole():
    vocabulary = ["<pad>", "<sos>", "<eos>", "<unk>", "30", "3", "4"]
    tokenizer = VocabularyTokenizer(vocabulary, split="whitespace_digits")
    assert tokenizer("30 34 3x").numpy().tolist() == [4, 5, 6, 3]


def test_a_long_number_among_many_words_is_cut_without_a_dense_matrix():
    # A number's digits are counted out by position, not by `tf.repeat`,
    # which tiles [words, longest number]: 20,000 words and a number of
    # 100,000 digits would need 16 GB that way.
    tokenizer = VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt(["a 0 1 2 3 4 5 6 7 8 9"])
    digits = "".join(str(i % 10) for i in range(100_000))
    ids = tokenizer("a " * 20_000 + digits).numpy().tolist()
    assert len(ids) == 120_000
    index = {t: tokenizer.token_to_id(t) for t in "a0123456789"}
    assert ids[:20_000] == [index["a"]] * 20_000
    assert ids[20_000:] == [index[d] for d in digits]


def test_special_tokens_and_unknowns():
    tokenizer = VocabularyTokenizer(add_special_tokens=True)
    tokenizer.adapt(["a b c"])
    assert tokenizer.special_tokens == {"pad": 0, "bos": 1, "eos": 2, "unk": 3}
    assert tokenizer("a zzz c").numpy().tolist() == [1, 4, 3, 6, 2]
    assert tokenizer.token_to_id("b") == 5
    assert tokenizer.id_to_token(6) == "c"


def test_scalar_batch_and_ragged():
    tokenizer = VocabularyTokenizer(["<pad>", "<sos>", "<eos>", "<unk>", "x"])
    scalar = tokenizer("x x")
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32
    assert scalar.shape == (2,)
    batch = tokenizer(["x", "", "x x x"])
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.to_list() == [[4], [], [4, 4, 4]]


def test_lowercase():
    tokenizer = VocabularyTokenizer(lowercase=True)
    tokenizer.adapt(["Hello WORLD", "ÉCOLE"])
    assert tokenizer.get_vocabulary()[4:] == ["hello", "world", "école"]


def test_detokenize():
    tokenizer = VocabularyTokenizer(split="whitespace_digits")
    tokenizer.adapt([ARITHMETIC])
    ids = tokenizer([ARITHMETIC, "BOS EOS"])
    text = tokenizer.detokenize(ids).numpy().tolist()
    assert text == [b"BOS NEGATIVE 3 0 subtract NEGATIVE 3 4 EOS", b"BOS EOS"]
    dense = ids.to_tensor()  # trailing padding ids are dropped
    assert tokenizer.detokenize(dense).numpy().tolist() == text
    chars = VocabularyTokenizer(split="character")
    chars.adapt(["我爱你"])
    assert chars.detokenize(chars("我 爱你")).numpy().decode() == "我爱你"
    with pytest.raises(
        ValueError, match=r"outside \[0, vocabulary_size=7\).*id: 8"
    ):
        chars.detokenize([1, 8])
    # int64 ids are checked before the cast to int32 (2**32 + 4 is not 4).
    wide = tf.constant([1, 2**32 + 4], tf.int64)
    with pytest.raises(ValueError, match="id: 4294967300"):
        chars.detokenize(wide)
    assert chars.detokenize(tf.constant([4, 5], tf.int64)).numpy() == (
        chars.detokenize([4, 5]).numpy()
    )
    # skip_special_tokens leaves out the ids of `special_tokens`.
    specials = sorted(set(chars.special_tokens.values()))
    assert specials == [0, 1, 2, 3]
    kept = chars.detokenize([1, 4, 0, 5, 3, 2]).numpy().decode()
    assert kept == "<sos>我<pad>爱<unk><eos>"
    skipped = chars.detokenize([1, 4, 0, 5, 3, 2], skip_special_tokens=True)
    assert skipped.numpy().decode() == "我爱"


def test_adapt_from_dataset_equals_list():
    lines = ["the cat sat", "on the mat", "the end"]
    a = VocabularyTokenizer()
    a.adapt(tf.data.Dataset.from_tensor_slices(lines))
    b = VocabularyTokenizer()
    b.adapt(lines)
    assert a.get_vocabulary() == b.get_vocabulary()
    assert a.get_vocabulary() == python_reference(lines, "whitespace")[0]


@requires_shared_data
@pytest.mark.parametrize(
    "split", ["whitespace", pytest.param("character", marks=pytest.mark.slow)]
)
def test_matches_python_reference_on_every_corpus(split):
    for name, lines in corpora().items():
        vocabulary, want = python_reference(lines, split)
        tokenizer = VocabularyTokenizer(split=split)
        tokenizer.adapt(lines)
        assert tokenizer.get_vocabulary() == vocabulary, name
        got = tokenizer(lines)
        lengths = got.row_lengths().numpy()
        want_lengths = np.array([len(row) for row in want])
        same_length = int((lengths == want_lengths).sum())
        assert same_length == len(lines), f"{name}: {same_length}/{len(lines)}"
        flat = np.fromiter((i for row in want for i in row), "int32")
        np.testing.assert_array_equal(got.flat_values.numpy(), flat, name)


SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
WORDS = VocabularyTokenizer(SPECIALS)
CHARS = VocabularyTokenizer(SPECIALS, split="character")
STRINGS = [tf.TensorSpec([None], tf.string)]
split_words = tf.function(
    lambda t: WORDS._pieces(t, None), input_signature=STRINGS
)
split_chars = tf.function(
    lambda t: CHARS._pieces(t, None), input_signature=STRINGS
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=8))
def test_fuzz_splitting_against_python(lines):
    # The pieces, before the lookup: one TF call per example keeps 500
    # examples fast. Adapt and lookup are checked on the real corpora.
    texts = tf.constant(lines)
    words = split_words(texts).to_list()
    assert words == [[w.encode() for w in line.split()] for line in lines]
    chars = split_chars(texts).to_list()
    assert chars == [[c.encode() for c in x if not c.isspace()] for x in lines]


def test_bad_input_never_crashes():
    tokenizer = VocabularyTokenizer(split="character")
    tokenizer.adapt(["ab"])
    weird = [
        b"",
        b"   ",
        b"\xff\xfe broken \xc3",
        b"\x00\x01\x7f",
        "é" * 1_000_000,
    ]
    ids = tokenizer(tf.constant(weird))
    assert ids.nrows() == len(weird)
    # Invalid UTF-8 bytes become U+FFFD (unknown here), never a crash.
    assert ids[2].numpy().tolist()[0] == 3
    words = VocabularyTokenizer(split="whitespace_digits")
    words.adapt(["1 2"])
    assert words(tf.constant(weird)).nrows() == len(weird)


def test_contract():
    tokenizer = VocabularyTokenizer(split="whitespace_digits", lowercase=True)
    tokenizer.adapt([ARITHMETIC, "a b", "b c d"])
    lines = [ARITHMETIC, "bos 123 eos", "a b", "b c d", "", "a", "zz 7"]
    vocabulary = tokenizer.get_vocabulary()

    def pieces(line):
        # Words, but a number that is not a token is its digits.
        for word in line.lower().split():
            if word not in vocabulary and word.isdigit():
                yield from word
            else:
                yield word

    want = [
        [vocabulary.index(p) if p in vocabulary else 3 for p in pieces(x)]
        for x in lines
    ]
    run_tokenizer_test(
        tokenizer,
        lines,
        expected_ids=want,
        expected_detokenized=[
            " ".join(vocabulary[i] for i in row) for row in want
        ],
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"split": "words"}, "split.*'words'"),
        ({"specials": ("<pad>", "<unk>")}, "4 distinct non-empty strings"),
        ({"specials": ("a", "a", "b", "c")}, "4 distinct"),
        ({"specials": ("a", "", "b", "c")}, "4 distinct"),
        (
            {"vocabulary": ["<pad>", "x"]},
            r"Missing: \['<sos>', '<eos>', '<unk>'\]",
        ),
        (
            {"vocabulary": ["<pad>", "<sos>", "<eos>", "<unk>", "x", "x"]},
            r"Duplicated: \['x'\]",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VocabularyTokenizer(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lowercase": "yes"}, "`lowercase` must be True or False"),
        ({"add_special_tokens": 1}, r"add_special_tokens=1 \(of type int\)"),
        ({"vocabulary": "abc"}, "`vocabulary` must be a list of token"),
        ({"vocabulary": ["<pad>", 3]}, r"`vocabulary\[1\]` must be a token"),
        ({"specials": "abcd"}, "`specials` must be 4 distinct"),
        ({"specials": ("a", None, "b", "c")}, r"specials\[1\]=None"),
    ],
)
def test_arguments_of_a_wrong_type(kwargs, match):
    with pytest.raises(TypeError, match=match):
        VocabularyTokenizer(**kwargs)


def test_bad_calls():
    with pytest.raises(ValueError, match="no vocabulary yet.*adapt"):
        VocabularyTokenizer()("a b")
    tokenizer = VocabularyTokenizer(["<pad>", "<sos>", "<eos>", "<unk>"])
    with pytest.raises(TypeError, match="expects strings.*int32"):
        tokenizer(tf.constant([1, 2]))
    with pytest.raises(
        ValueError, match=r"scalar string or a 1-D batch.*\(1, 2\)"
    ):
        tokenizer(tf.constant([["a", "b"]]))
    with pytest.raises(TypeError, match="integer ids.*float32"):
        tokenizer.detokenize(tf.constant([1.0]))
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tokenizer.token_to_id("zzz")
    with pytest.raises(ValueError, match=r"id=4"):
        tokenizer.id_to_token(4)


def test_compute_output_spec():
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["a b"])
    batch = tokenizer.compute_output_spec(keras.KerasTensor((4,), "string"))
    assert batch.shape == (4, None)
    assert batch.dtype == "int32" and batch.ragged
    line = tokenizer.compute_output_spec(keras.KerasTensor((), "string"))
    assert line.shape == (None,) and not line.ragged
