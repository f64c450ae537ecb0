"""SentencePieceTokenizer: id-for-id parity with `sentencepiece` 0.2.3.

Small models are trained here with `sentencepiece` (a test extra) so that
every case runs without ../shared/data; the real models and corpora run
when that folder is present.
"""

import functools
import itertools
import random
import time

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.testing import sentencepiece_model
from tests.testing import text_lines
from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer

TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "I love deep learning; tokenizers must be exact.",
    "Il était une fois un petit prince qui habitait une planète.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "吾輩は猫である。名前はまだ無い。",
    "凤姐儿笑道：“亲戚们不大走动，都疏远了。”",
    "Numbers 1234 and 56.78 -- ﬁne ligatures, ½ and Ⅳ.",
    "Emoji 😀👍🏽 and full-width ＡＢＣ，．！",
    "    indented line\twith a tab and  double  spaces ",
] * 8
# Texts that exercise normalization, whitespace and unknown characters.
TRICKY = [
    "",
    " ",
    "   ",
    "\t\n\r",
    "Hello world",
    "  leading and trailing  ",
    "a\tb\nc\rd",
    "\x00\x01\x7f control",
    "ﬁne ﬁ Ⅳ ½ ＡＢＣ",
    "e\u0301 é e\u0300\u0301",
    "吾輩は猫である",
    "凤姐儿 Сергей",
    "😀 👍🏽 \U00020000 \U0010ffff",
    "\u2581 literal \u2581",
    "\ue000 private use",
    "\ufffd replacement",
    "<sep> @@ user <sep>",
    "x" * 300,
    "The quick brown fox " * 20,
]
# Each trained model: name -> `SentencePieceTrainer.train` options.
MODELS = {
    # Unigram with nmt_nfkc rules, user-defined pieces and byte fallback.
    "unigram": dict(
        model_type="unigram",
        vocab_size=600,
        user_defined_symbols=["<sep>", "@@", "ﬁ"],
        byte_fallback=True,
    ),
    "bpe": dict(model_type="bpe", vocab_size=600, user_defined_symbols=["@@"]),
    # No normalization rules and whitespace kept, as in Llama-style models.
    "unigram_identity": dict(
        model_type="unigram",
        vocab_size=550,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
    ),
    "unigram_suffix": dict(
        model_type="unigram", vocab_size=550, treat_whitespace_as_suffix=True
    ),
}


@functools.lru_cache(maxsize=None)
def trained(name):
    """The serialized `.model` of `MODELS[name]`."""
    return sentencepiece_model(
        TRAINING_TEXT,
        character_coverage=0.98,
        hard_vocab_limit=False,
        **MODELS[name],
    )


@functools.lru_cache(maxsize=None)
def tokenizer_and_reference(name):
    proto = trained(name)
    return (
        SentencePieceTokenizer(proto),
        spm.SentencePieceProcessor(model_proto=proto),
    )


def as_lists(ids):
    return [list(map(int, row)) for row in ids.to_list()]


# --- Parity on trained models -------------------------------------------------
@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_sentencepiece_on_tricky_texts(name):
    tokenizer, reference = tokenizer_and_reference(name)
    texts = TRICKY + TRAINING_TEXT[:9]
    assert as_lists(tokenizer(texts)) == reference.encode(texts)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_detokenize_matches_sentencepiece_decode(name):
    tokenizer, reference = tokenizer_and_reference(name)
    rng = random.Random(0)
    size = reference.get_piece_size()
    sequences = reference.encode(TRICKY)
    sequences += [
        [rng.randrange(size) for _ in range(rng.randrange(8))]
        for _ in range(300)
    ]
    got = tokenizer.detokenize(tf.ragged.constant(sequences, tf.int32))
    want = [reference.decode(s).encode("utf-8") for s in sequences]
    assert got.numpy().tolist() == want


def test_byte_fallback_pieces_decode_like_sentencepiece():
    tokenizer, reference = tokenizer_and_reference("unigram")
    byte = {b: reference.piece_to_id(f"<0x{b:02X}>") for b in range(256)}
    space = reference.piece_to_id("\u2581")
    # Valid, truncated, overlong, surrogate and out-of-range sequences,
    # next to ordinary pieces and to control pieces.
    raw = [b"\xe2\x82\xac", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80"]
    raw += [b"\xf4\x90\x80\x80", b"\xf0\x9f\x98\x80", b"a\x80", b"\xff"]
    sequences = [[byte[b] for b in r] for r in raw]
    sequences += [[space, space] + s + [1, 2] + s for s in sequences]
    got = tokenizer.detokenize(tf.ragged.constant(sequences, tf.int32))
    want = [reference.decode(s).encode("utf-8") for s in sequences]
    assert got.numpy().tolist() == want


lines = text_lines(TRICKY[:-2] + ["<sep>", "@@", "ﬁ", "  ", "\t"])


@settings(max_examples=500, deadline=None)
@given(batch=st.lists(lines, min_size=1, max_size=8))
def test_fuzz_unigram_matches_sentencepiece(batch):
    tokenizer, reference = tokenizer_and_reference("unigram")
    assert as_lists(tokenizer(batch)) == reference.encode(batch)


@settings(max_examples=500, deadline=None)
@given(batch=st.lists(lines, min_size=1, max_size=8))
def test_fuzz_bpe_matches_sentencepiece(batch):
    tokenizer, reference = tokenizer_and_reference("bpe")
    assert as_lists(tokenizer(batch)) == reference.encode(batch)


# --- Bad input ------------------------------------------------------------
def test_invalid_utf8_is_replaced_like_sentencepiece():
    # Each byte that does not start a valid character becomes U+FFFD,
    # exactly as `sentencepiece` does before tokenizing.
    tokenizer, reference = tokenizer_and_reference("unigram")
    raw = [b"\xff", b"a\xe2\x82b", b"\xed\xa0\x80", b"\xc0\xaf", b"ok\x80"]
    rng = random.Random(1)
    raw += [
        bytes(rng.randrange(256) for _ in range(rng.randrange(10)))
        for _ in range(200)
    ]
    want = [reference.encode(r) for r in raw]
    assert as_lists(tokenizer(tf.constant(raw))) == want


@pytest.mark.parametrize("name", ["unigram", "bpe"])
def test_one_megabyte_line_does_not_crash(name):
    tokenizer, reference = tokenizer_and_reference(name)
    line = ("The quick brown fox 凤姐儿 😀\t" * 40_000)[:1_000_000]
    ids = tokenizer(line)
    assert ids.dtype == tf.int32 and ids.shape.rank == 1
    # Past ~25,000 tokens sentencepiece re-centres its float32 scores (see
    # the class docstring); the first 20,000 ids must match.
    assert ids.numpy().tolist()[:20_000] == reference.encode(line)[:20_000]


# Lines the fast op would treat differently (tabs, a literal "▁", NUL,
# invalid UTF-8, ...) are normalized by the library op inside TF Text,
# which merges a run of unknown pieces by copying it for each character:
# quadratic (1 MB of control characters took 66 s, sentencepiece 0.05 s).
# They now take one of three ways (`UnigramGraph._normalize`):
# the whitespace rules alone, the merging model, or a byte-fallback model
# for space-free runs of 4 KB or more. All must give sentencepiece's ids.
SECOND_ROUTE = [
    "\t" + "\x01\x02\x85\x1f" * 1500,
    "a\tb  c \u2581 ",
    "  \t lead and trail \t  \u2581",
    "\t" + "ab" * 2500,
    "\u2581" + "ＡＢ" * 1400 + " x\ty",
    "\t\x00 nul \x00",
    "\u2581\u2581 \u2581",
    "\t" + "😀\U00020000" * 1100,
    "\t" + "e\u0301ﬁ" * 1500 + " \t",
]
SECOND_ROUTE_BYTES = [x.encode() for x in SECOND_ROUTE] + [
    b"\xff" + "ＡＢ".encode() * 1400 + " x\ty".encode(),
    b"\xff" + "e\u0301ﬁ日本".encode() * 600,
    b"\t\xff" * 2500,
    b"\xe3\x81 a\tb",
    bytes(random.Random(0).randrange(1, 256) for _ in range(6000)),
]


@pytest.mark.parametrize(
    "name", ["unigram", "unigram_identity", "unigram_suffix"]
)
def test_second_route_lines_match_sentencepiece(name):
    tokenizer, reference = tokenizer_and_reference(name)
    got = as_lists(tokenizer(tf.constant(SECOND_ROUTE_BYTES)))
    assert got == [reference.encode(x) for x in SECOND_ROUTE_BYTES]
    # Random lines from an alphabet of what sends a line there.
    rng = random.Random(name)
    alphabet = ["a", "b", " ", "  ", "\t", "\n", "\x00", "\x01", "\x85"]
    alphabet += ["\u2581", "\u3000", "ｱ", "Ａ", "e\u0301", "日本", "😀"]
    alphabet += ["\U00020000", "\ufffd", "<sep>", "@@", "ﬁ"]
    lines = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        for _ in range(1500)
    ]
    got = as_lists(tokenizer(tf.constant(lines)))
    assert got == [reference.encode(x) for x in lines]


@pytest.mark.parametrize(
    "name, first, unit",
    [("unigram_identity", b"", "\t"), ("unigram", b"\xff", "Ａ")],
)
def test_second_route_takes_linear_time(name, first, unit):
    # A loose check (the speed itself is measured in bench_hostile.py):
    # tabs take the whitespace rules; full-width letters after an invalid
    # byte (which sends the line to the second route) the byte-fallback
    # model. 4x the text must take well under 16x the time.
    tokenizer, _ = tokenizer_and_reference(name)

    def text(size):
        return tf.constant(first + unit.encode() * (size // len(unit.encode())))

    # Interleaved, the fastest of 5 each, in CPU time (all of this
    # process's threads): a test or job running beside this one (make test
    # runs two workers) then barely moves either size; wall time under a
    # load of 10-15 on 2 cores failed this check.
    texts = {size: text(size) for size in (250_000, 1_000_000)}
    times = {size: [] for size in texts}
    for size, line in texts.items():
        tokenizer(line)
    for _ in range(5):
        for size, line in texts.items():
            start = time.process_time()
            tokenizer(line)
            times[size].append(time.process_time() - start)
    small, large = min(times[250_000]), min(times[1_000_000])
    assert large < 8 * small, (small, large)


def test_empty_and_whitespace_give_no_ids():
    tokenizer, _ = tokenizer_and_reference("unigram")
    ids = tokenizer(["", " ", "\t \n", "   "])
    assert ids.to_list() == [[], [], [], []]
    assert tokenizer("").shape == (0,)


def test_empty_batch():
    tokenizer, _ = tokenizer_and_reference("unigram")
    ids = tokenizer(tf.constant([], tf.string))
    assert ids.shape.as_list() == [0, None]


# --- API ------------------------------------------------------------------
def test_scalar_gives_1d_and_batch_gives_ragged():
    tokenizer, reference = tokenizer_and_reference("unigram")
    one = tokenizer("Hello world")
    assert one.dtype == tf.int32 and one.shape.rank == 1
    assert one.numpy().tolist() == reference.encode("Hello world")
    batch = tokenizer(["Hello", "world again"])
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.dtype == tf.int32 and batch.shape.as_list() == [2, None]


def test_add_special_tokens_puts_bos_and_eos_around_each_row():
    proto = trained("unigram")
    reference = spm.SentencePieceProcessor(model_proto=proto)
    tokenizer = SentencePieceTokenizer(proto, add_special_tokens=True)
    texts = ["Hello world", ""]
    want = reference.encode(texts, add_bos=True, add_eos=True)
    assert as_lists(tokenizer(texts)) == want
    one = tokenizer("Hello").numpy().tolist()
    assert one == reference.encode("Hello", add_bos=True, add_eos=True)
    assert tokenizer.detokenize(tokenizer(texts)).numpy().tolist() == [
        b"Hello world",
        b"",
    ]


def test_special_tokens_are_the_models_ids():
    tokenizer, reference = tokenizer_and_reference("unigram")
    assert tokenizer.special_tokens == {"unk": 0, "bos": 1, "eos": 2}
    assert reference.pad_id() == -1  # Absent, so not listed.


def test_vocabulary_is_the_pieces_in_id_order():
    tokenizer, reference = tokenizer_and_reference("bpe")
    size = reference.get_piece_size()
    vocabulary = tokenizer.get_vocabulary()
    assert vocabulary == [reference.id_to_piece(i) for i in range(size)]
    assert tokenizer.vocabulary_size() == size
    assert tokenizer.token_to_id("@@") == reference.piece_to_id("@@")
    assert tokenizer.id_to_token(3) == reference.id_to_piece(3)


def test_detokenize_scalar_and_dense_input():
    tokenizer, reference = tokenizer_and_reference("bpe")
    ids = reference.encode("Hello world")
    want = reference.decode(ids).encode("utf-8")
    assert tokenizer.detokenize(ids).numpy() == want
    dense = tf.constant([ids, ids])
    assert tokenizer.detokenize(dense).numpy().tolist() == [want] * 2


@pytest.mark.parametrize(
    "name, fresh_process",
    [
        ("unigram", True),
        # The library op for BPE (a precompiled charsmap); the core-ops
        # BPE engine has its own call in test_sentencepiece_bpe.py.
        ("bpe", False),
    ],
)
def test_contract(name, fresh_process):
    tokenizer, reference = tokenizer_and_reference(name)
    texts = TRICKY * 2 + TRAINING_TEXT[:9]
    want = reference.encode(texts)
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference.decode(want),
        fresh_process=fresh_process,
    )


def test_dense_ids_in_a_traced_function():
    tokenizer, reference = tokenizer_and_reference("unigram")
    texts = TRICKY * 3
    traced = tf.function(lambda x: tokenizer(x).to_tensor())
    dense = traced(tf.constant(texts[:6])).numpy()
    assert [list(r[r != 0]) for r in dense] == [
        [i for i in row if i != 0] for row in reference.encode(texts[:6])
    ]


def test_config_round_trip_gives_identical_ids():
    proto = trained("unigram")
    tokenizer = SentencePieceTokenizer(proto, add_special_tokens=True)
    config = tokenizer.get_config()
    # The model is a Keras asset; the config names it by digest, and in
    # this process `from_config` finds it by that digest.
    assert config["proto"] is None and len(config["proto_sha256"]) == 64
    restored = SentencePieceTokenizer.from_config(config)
    assert restored.get_config() == config
    assert as_lists(restored(TRICKY)) == as_lists(tokenizer(TRICKY))


def test_path_and_bytes_give_the_same_tokenizer(tmp_path):
    proto = trained("bpe")
    path = tmp_path / "tiny.model"
    path.write_bytes(proto)
    from_path = SentencePieceTokenizer(str(path))
    from_pathlib = SentencePieceTokenizer(path)
    from_bytes = SentencePieceTokenizer(proto)
    for tokenizer in (from_path, from_pathlib):
        assert tokenizer.proto == from_bytes.proto == proto
        assert as_lists(tokenizer(TRICKY)) == as_lists(from_bytes(TRICKY))


# --- Errors ---------------------------------------------------------------
def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.model"
    with pytest.raises(FileNotFoundError, match="nope.model"):
        SentencePieceTokenizer(str(path))


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "it is empty"),
        (b"\xff\xff\xff\xff", "not a valid protocol buffer"),
        (b"hello, I am a text file\n", "not a valid protocol buffer"),
        (b"\x12\x00", "has no pieces"),
    ],
)
def test_corrupt_file_names_the_path_and_the_problem(tmp_path, content, reason):
    path = tmp_path / "broken.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"broken.model.*{reason}"):
        SentencePieceTokenizer(str(path))


def test_truncated_model_is_a_clear_error(tmp_path):
    path = tmp_path / "cut.model"
    path.write_bytes(trained("unigram")[:1000])
    with pytest.raises(ValueError, match="cut.model"):
        SentencePieceTokenizer(str(path))


def test_char_models_are_refused():
    proto = sentencepiece_model(TRAINING_TEXT, model_type="char")
    with pytest.raises(ValueError, match="model type 'char' is not supported"):
        SentencePieceTokenizer(proto)


@pytest.mark.parametrize("proto", [None, 3, ["a.model"]])
def test_proto_of_the_wrong_type(proto):
    with pytest.raises(TypeError, match="`proto` must be the path"):
        SentencePieceTokenizer(proto)


def test_non_string_input_is_refused():
    tokenizer, _ = tokenizer_and_reference("bpe")
    with pytest.raises(TypeError, match="expects strings"):
        tokenizer(tf.constant([1, 2]))


# --- The real models on the real corpora (../shared/data) ------------------
SHARED_MODELS = [
    "mistral-7b-v0.3-tokenizer.model",
    "albert-base-v2-spiece.model",
    pytest.param("sp-test-botchan-unigram-1000.model", marks=pytest.mark.slow),
    pytest.param("sp-test-ja.model", marks=pytest.mark.slow),
]


@functools.lru_cache(maxsize=None)
def shared_corpora():
    return corpora()


def flat(rows):
    """`(values, lengths)` numpy arrays of a list of id lists."""
    lengths = np.array([len(r) for r in rows], np.int64)
    values = np.fromiter(itertools.chain.from_iterable(rows), np.int32)
    return values, lengths


@requires_shared_data
@pytest.mark.parametrize("model", SHARED_MODELS)
def test_identical_to_sentencepiece_on_every_corpus_line(model):
    path = str(data_path("sentencepiece", model))
    tokenizer = SentencePieceTokenizer(path)
    reference = spm.SentencePieceProcessor(model_file=path)
    mismatches = {}
    for name, texts in shared_corpora().items():
        if not texts:
            continue
        want = reference.encode(texts)
        values, lengths = flat(want)
        got = tokenizer(texts)
        if not (
            np.array_equal(got.row_lengths().numpy(), lengths)
            and np.array_equal(got.values.numpy(), values)
        ):
            bad = [
                i for i, (a, b) in enumerate(zip(as_lists(got), want)) if a != b
            ]
            mismatches[name] = (len(bad), len(texts), texts[bad[0]][:80])
        ids = tf.RaggedTensor.from_row_lengths(values, lengths)
        decoded = tokenizer.detokenize(ids).numpy().tolist()
        assert decoded == [t.encode("utf-8") for t in reference.decode(want)]
    assert not mismatches, mismatches


@requires_shared_data
def test_mistral_lines_starting_with_whitespace_follow_sentencepiece():
    # HF's tokenizer.json for Mistral differs here; the .model file rules.
    path = str(data_path("sentencepiece", "mistral-7b-v0.3-tokenizer.model"))
    reference = spm.SentencePieceProcessor(model_file=path)
    texts = [" Hello", "  Hello", "\tHello", " ", "    indented code"]
    got = as_lists(SentencePieceTokenizer(path)(texts))
    assert got == reference.encode(texts)
    assert reference.id_to_piece(got[1][0]) == "\u2581\u2581"


@requires_shared_data
def test_real_model_in_a_batched_tf_data_pipeline():
    path = str(data_path("sentencepiece", "albert-base-v2-spiece.model"))
    tokenizer = SentencePieceTokenizer(path)
    reference = spm.SentencePieceProcessor(model_file=path)
    texts = shared_corpora()["hongloumeng.txt"][:3000]
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(1024)
    ds = ds.map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE)
    got = [row for batch in ds for row in as_lists(batch)]
    assert got == reference.encode(texts)
