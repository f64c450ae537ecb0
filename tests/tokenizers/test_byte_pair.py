"""BytePairTokenizer: id-for-id parity with Hugging Face `tokenizers`.

The reference is HF's byte-level BPE: `models.BPE` from the same files with
the `ByteLevel` pre-tokenizer (`add_prefix_space=False`) and decoder, and
the special tokens added with `add_special_tokens` (what
`ByteLevelBPETokenizer` builds; both give the reference ids of
../shared/data/gpt2/encoded_tokens_fr.json). The GPT-2 vocabulary and the
corpora run when ../shared/data is present; the other checks use a small
vocabulary trained here with HF's own BPE trainer.
"""

import json
import random

import numpy as np
import pytest
import tensorflow as tf
import tokenizers as hf_tokenizers
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.testing import text_lines
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers._byte_level import ALPHABET

VOCAB = data_path("gpt2", "vocab.json")
MERGES = data_path("gpt2", "merges.txt")
EOT = "<|endoftext|>"

# Probe points: the letters and numbers that Oniguruma 6.9.10 (HF
# tokenizers 0.2x) has in `\p{L}` / `\p{N}` and TF 2.21's RE2 lacks (new in
# Unicode 16.0). Regex classes are built from Oniguruma's own table
# (`_unicode`), which has them all.
_EXTRA_LETTERS = (
    (0x1C89, 0x1C8A), (0xA7CB, 0xA7CD), (0xA7DA, 0xA7DC), (0x105C0, 0x105F3),
    (0x10D4A, 0x10D65), (0x10D6F, 0x10D85), (0x10EC2, 0x10EC4),
    (0x11380, 0x11389), (0x1138B, 0x1138B), (0x1138E, 0x1138E),
    (0x11390, 0x113B5), (0x113B7, 0x113B7), (0x113D1, 0x113D1),
    (0x113D3, 0x113D3), (0x11BC0, 0x11BE0), (0x13460, 0x143FA),
    (0x16100, 0x1611D), (0x16D40, 0x16D6C), (0x18CFF, 0x18CFF),
    (0x1E5D0, 0x1E5ED), (0x1E5F0, 0x1E5F0), (0x2EBF0, 0x2EE5D),
)  # fmt: skip
_EXTRA_NUMBERS = (
    (0x10D40, 0x10D49), (0x116D0, 0x116E3), (0x11BF0, 0x11BF9),
    (0x16130, 0x16139), (0x16D70, 0x16D79), (0x1CCF0, 0x1CCF9),
    (0x1E5F1, 0x1E5FA),
)  # fmt: skip

# Whitespace runs (GPT-2's `\s+(?!\S)`), contractions, numbers, Unicode.
ADVERSARIAL = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    " \n",
    "\n ",
    " \t ",
    "a",
    "a ",
    "a  ",
    "a   ",
    " a",
    "  a",
    "   a",
    "a  b",
    "a   b",
    "a \t b",
    "a\t\tb",
    "a\n\nb",
    "a \n\n b",
    "a\r\n\r\nb",
    "a\r\n \r\n  b",
    "hello   world  ",
    "  leading and trailing  ",
    "x\u00a0y x \u00a0y x\u00a0 y \u00a0\u00a0x x\u00a0\u00a0",
    "x\u3000\u3000y \u2028\u2029 \u0085x a\x0bb a\x0c b \x0b\x0b!",
    "\u2000\u2001\u2002\u2003 \u200a\u202f\u205f\u1680 end",
    # Not whitespace for HF (but `str.isspace()` or "space-like"):
    "\x1c\x1d\x1e\x1f \u200b\u180e\u2060\ufeffBOM",
    "it's I'm we're you've they'll he'd don't",
    "IT'S I'M WE'RE YOU'VE THEY'LL HE'D DON'T 'S 'T 'Re",
    "'s 't 're 've 'm 'll 'd ''s ''' x's' 'll've 'sup",
    " 's  's \n's 1's !'s rock'n'roll l'été ’s",
    "123 1234567890123456789 3.14159 1,000,000  42  ",
    "٣٤٥ ²³ Ⅻ ½ ١٢٣abc 12ab34",
    "👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 👍🏽 🇫🇷🇩🇪 1️⃣ ❤️",
    "e\u0301 a\u0308\u0301 Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ \u0915\u094d\u0937 ก่",
    "日本語のテキスト 中文，标点！ 한국어 텍스트 ｆｕｌｌｗｉｄｔｈ 〜",
    "مرحبا بالعالم שלום עולם \u202ehello\u202c abc\u200fdef",
    "\x00 a\x00b \x7f \x1b[31mred\x1b[0m \x01\x02",
    "\uffff \U0010ffff \ue000 \U0001f600",
    "\U00010d4a\U00010d40 \U00013460\U0002ebf0 \U0001e5f1x",  # Unicode 16
    f"Hello, World! {EOT} next",
    f"a{EOT}b {EOT}{EOT}  {EOT}  x  {EOT}\n\n",
    "<|endoftext <|endoftext| <||endoftext|> <|ENDOFTEXT|>",
    "a" * 1000,
    "ab" * 500,
    " " * 300,
    "\n" * 300 + "x",
    "😀" * 100,
]

INVALID_UTF8 = [
    b"\xff",
    b"abc\xc3",
    b"\xed\xa0\x80 surrogate",
    b"\xc0\xaf overlong",
    b"\xf4\x90\x80\x80 too big",
    b"ok \xfe\xff ok",
    b"\xe2\x82 cut",
    b"\x80\x80\x80",
]


# --- References -------------------------------------------------------------
def hf_reference(vocab, merges, special_tokens=()):
    """HF byte-level BPE from a vocab (path or dict) and merges."""
    if isinstance(vocab, dict):
        pairs = [tuple(m.split(" ")) for m in merges]
        model = hf_tokenizers.models.BPE(vocab=vocab, merges=pairs)
    else:
        model = hf_tokenizers.models.BPE.from_file(str(vocab), str(merges))
    tokenizer = hf_tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False
    )
    tokenizer.decoder = hf_tokenizers.decoders.ByteLevel()
    if special_tokens:
        tokenizer.add_special_tokens(list(special_tokens))
    return tokenizer


def ours_ids(tokenizer, texts):
    return tokenizer(tf.constant(texts, tf.string)).to_list()


def hf_ids(reference, texts):
    return [e.ids for e in reference.encode_batch(list(texts))]


def assert_parity(tokenizer, reference, texts):
    got = ours_ids(tokenizer, texts)
    want = hf_ids(reference, texts)
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(texts)} differ, first: {bad[0]!r}"


def assert_round_trip(tokenizer, texts):
    ids = tokenizer(tf.constant(texts, tf.string))
    back = [x.decode("utf-8") for x in tokenizer.detokenize(ids).numpy()]
    bad = [(t, b) for t, b in zip(texts, back) if t != b]
    assert not bad, f"{len(bad)}/{len(texts)} differ, first: {bad[0]!r}"


# --- Fixtures ---------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt2():
    if not VOCAB.exists():
        # As `requires_shared_data`: CI has the data, a bare checkout not.
        pytest.skip(
            f"real data not found at {VOCAB} (set TF_INPUT_SHARED_DATA)"
        )
    return BytePairTokenizer.from_files(VOCAB, MERGES)


@pytest.fixture(scope="module")
def hf_gpt2():
    if not VOCAB.exists():
        # As `requires_shared_data`: CI has the data, a bare checkout not.
        pytest.skip(
            f"real data not found at {VOCAB} (set TF_INPUT_SHARED_DATA)"
        )
    return hf_reference(VOCAB, MERGES, [EOT])


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    """A 600-token byte-level BPE trained here by HF (no shared data)."""
    text = (
        ADVERSARIAL * 3
        + ["The quick brown fox jumps over the lazy dog's back. " * 3] * 20
        + ["Il était une fois 123 456 789, l'été à Paris.\n\n  Fin  "] * 20
        + ["日本語と中文と한국어。 Ünïcödé ΑΒΓ δεζ мир"] * 20
    )
    model = hf_tokenizers.Tokenizer(hf_tokenizers.models.BPE())
    model.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False
    )
    trainer = hf_tokenizers.trainers.BpeTrainer(
        vocab_size=600,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=hf_tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    model.train_from_iterator(text, trainer)
    folder = tmp_path_factory.mktemp("bpe_small")
    vocab_json, merges_txt = model.model.save(str(folder))
    return vocab_json, merges_txt


@pytest.fixture(scope="module")
def small(small_files):
    return BytePairTokenizer.from_files(*small_files)


@pytest.fixture(scope="module")
def hf_small(small_files):
    return hf_reference(*small_files, special_tokens=[EOT])


# --- Docstring-level behaviour ----------------------------------------------
def test_scalar_gives_1d_int32_and_batch_gives_ragged(small):
    scalar = small("hello world")
    assert isinstance(scalar, tf.Tensor) and scalar.shape.rank == 1
    assert scalar.dtype == tf.int32
    batch = small(["hello world", "", "a"])
    assert isinstance(batch, tf.RaggedTensor)
    assert batch.dtype == tf.int32 and batch.shape.as_list() == [3, None]
    assert batch[0].numpy().tolist() == scalar.numpy().tolist()
    assert batch[1].numpy().tolist() == []


def test_rejects_rank_2_and_non_strings(small):
    with pytest.raises(ValueError, match="shape"):
        small(tf.constant([["a"]]))
    with pytest.raises(TypeError, match="strings"):
        small.tokenize(tf.constant([1, 2]))


def test_small_vocabulary_parity_and_round_trip(small, hf_small):
    assert_parity(small, hf_small, ADVERSARIAL)
    assert_round_trip(small, ADVERSARIAL)


def test_vocabulary_api(small, small_files):
    with open(small_files[0], encoding="utf-8") as f:
        vocab = json.load(f)
    assert small.vocabulary_size() == len(vocab)
    assert small.get_vocabulary()[vocab["Ġ"]] == "Ġ"
    assert small.token_to_id(EOT) == vocab[EOT]
    assert small.id_to_token(vocab[EOT]) == EOT
    with pytest.raises(ValueError, match="not in the vocabulary"):
        small.token_to_id("no such token")


# --- GPT-2 and the shared corpora -------------------------------------------
@requires_shared_data
def test_french_golden_file(gpt2):
    with open(data_path("gpt2", "encoded_tokens_fr.json"), "rb") as f:
        golden = json.load(f)
    ids = gpt2(golden["text"]).numpy().tolist()
    assert ids == golden["token_ids"]
    assert [gpt2.id_to_token(i) for i in ids] == golden["bpe_tokens"]
    assert gpt2.detokenize(ids).numpy().decode() == golden["text"]


@requires_shared_data
def test_gpt2_vocabulary_and_special_tokens(gpt2):
    assert gpt2.vocabulary_size() == 50257
    assert gpt2.token_to_id("Hello") == 15496
    assert gpt2.token_to_id("Ġworld") == 995
    assert gpt2.special_tokens == {"bos": 50256, "eos": 50256}
    assert gpt2("Hello world").numpy().tolist() == [15496, 995]


DEFAULT_CORPORA = [
    "wikitext-2-raw-test.txt",
    "emoji-test.txt",
    "zh_gsdsimp-ud-test.conllu",
]
SLOW_CORPORA = [
    "tinyshakespeare.txt",
    "botchan.txt",
    "hongloumeng.txt",
    "wagahaiwa_nekodearu.txt",
]


@requires_shared_data
@pytest.mark.parametrize(
    "name",
    DEFAULT_CORPORA
    + ["tatoeba"]
    + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW_CORPORA],
)
def test_corpus_parity_and_round_trip(gpt2, hf_gpt2, name):
    all_corpora = corpora()
    if name == "tatoeba":
        lines = [
            line
            for key, value in all_corpora.items()
            if key.startswith("tatoeba.")
            for line in value
        ]
    else:
        lines = all_corpora[name]
    for start in range(0, len(lines), 4096):
        chunk = lines[start : start + 4096]
        assert_parity(gpt2, hf_gpt2, chunk)
        assert_round_trip(gpt2, chunk)


@requires_shared_data
def test_adversarial_parity_and_round_trip(gpt2, hf_gpt2):
    assert_parity(gpt2, hf_gpt2, ADVERSARIAL)
    assert_round_trip(gpt2, ADVERSARIAL)


def _probes(code_points):
    """Each code point in the contexts where the regex classes matter."""
    out = []
    for c in code_points:
        ch = chr(c)
        out.append(f"a{ch}1{ch}!{ch}{ch}a {ch}a{ch} {ch}{ch}  '{ch}{ch}\n{ch}")
    return out


def _interesting_code_points(step):
    points = set(range(0, 0x110000, step))
    for a, b in _EXTRA_LETTERS + _EXTRA_NUMBERS:
        points.update({a - 1, a, b, b + 1})
    points.update(
        ord(c)
        for c in "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
    )
    points.update(range(0x2000, 0x200C))
    points.update(range(0x1C, 0x21))
    return sorted(c for c in points if not 0xD800 <= c < 0xE000)


@requires_shared_data
def test_code_point_classes_match_hf_sampled(gpt2, hf_gpt2):
    probes = _probes(_interesting_code_points(step=97))
    assert_parity(gpt2, hf_gpt2, probes)


@requires_shared_data
@pytest.mark.slow
def test_code_point_classes_match_hf_everywhere(gpt2, hf_gpt2):
    points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(points), 20000):
        assert_parity(gpt2, hf_gpt2, _probes(points[start : start + 20000]))


# --- Special tokens ---------------------------------------------------------
@requires_shared_data
def test_special_tokens_are_kept_whole(gpt2, hf_gpt2):
    texts = [
        EOT,
        f"{EOT}{EOT}",
        f"a{EOT}b",
        f" {EOT} ",
        f"x  {EOT}\n\n{EOT}",
        f"!!{EOT}!!",
        f"it's{EOT}'s",
    ]
    assert_parity(gpt2, hf_gpt2, texts)
    assert_round_trip(gpt2, texts)
    assert gpt2(f"a{EOT}b").numpy().tolist() == [64, 50256, 65]


def test_no_special_tokens_splits_them_like_hf(small_files):
    plain = BytePairTokenizer(*small_files, unsplittable_tokens=[])
    reference = hf_reference(*small_files)
    assert_parity(plain, reference, [f"a{EOT}b", EOT, f" {EOT}  {EOT}"])
    assert plain.special_tokens == {}


def test_add_special_tokens_wraps_with_bos_and_eos(small):
    eot = small.token_to_id(EOT)
    assert small.special_tokens == {"bos": eot, "eos": eot}
    config = {**small.get_config(), "add_special_tokens": True}
    wrapped = BytePairTokenizer.from_config(config)
    a = small.token_to_id("a")
    assert wrapped("a").numpy().tolist() == [eot, a, eot]
    assert wrapped(["", "a"]).to_list() == [[eot, eot], [eot, a, eot]]


def test_roberta_style_roles():
    vocab = {c: i for i, c in enumerate(ALPHABET)}
    for token in ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]:
        vocab[token] = len(vocab)
    tokenizer = BytePairTokenizer(vocab, [], add_special_tokens=True)
    roles = tokenizer.special_tokens
    assert roles == {
        "bos": 256,
        "cls": 256,
        "pad": 257,
        "eos": 258,
        "sep": 258,
        "unk": 259,
        "mask": 260,
    }
    assert tokenizer("a").numpy().tolist() == [256, vocab["a"], 258]


# --- Fuzzing ----------------------------------------------------------------
_PIECES = [
    EOT,
    "'s",
    "'S",
    "'ll",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u3000",
    "123",
    "👨\u200d👩\u200d👧",
    "e\u0301",
    "日本",
]
_TEXT = text_lines(
    _PIECES, alphabet=" \t\n\r\x0b\x0c\x85\xa0'sa1!", max_pieces=8
)


@requires_shared_data
@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_fuzz_parity_and_round_trip(gpt2, hf_gpt2, texts):
    assert_parity(gpt2, hf_gpt2, texts)
    assert_round_trip(gpt2, texts)


@requires_shared_data
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(raw=st.lists(st.binary(max_size=24), min_size=1, max_size=8))
def test_fuzz_invalid_utf8_is_replaced_like_python(gpt2, hf_gpt2, raw):
    repaired = [r.decode("utf-8", "replace") for r in raw]
    ids = gpt2(tf.constant(raw, tf.string))
    assert ids.to_list() == hf_ids(hf_gpt2, repaired)
    back = gpt2.detokenize(ids)
    assert [b.decode("utf-8") for b in back.numpy()] == repaired


# --- Bad input --------------------------------------------------------------
def test_bad_input_never_crashes(small, hf_small):
    texts = ["", " ", "\t\n\r ", "\x00\x01\x02\x1f\x7f", "\n" * 1000]
    assert_parity(small, hf_small, texts)
    assert_round_trip(small, texts)
    # Invalid UTF-8: replaced by U+FFFD, as bytes.decode("utf-8", "replace").
    repaired = [r.decode("utf-8", "replace") for r in INVALID_UTF8]
    assert ours_ids(small, INVALID_UTF8) == hf_ids(hf_small, repaired)
    back = small.detokenize(small(tf.constant(INVALID_UTF8)))
    assert [b.decode("utf-8") for b in back.numpy()] == repaired


def test_one_megabyte_line_and_a_long_word(small, hf_small):
    line = ("The quick brown fox, 1234 times: l'été!\n\n  " * 30000)[: 1 << 20]
    rng = random.Random(0)
    word = "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 17)
    )
    assert_parity(small, hf_small, [line, word])
    assert_round_trip(small, [line, word])


def test_detokenize_partial_characters_like_hf(small, hf_small):
    ids = small("日本").numpy().tolist()
    for cut in range(len(ids) + 1):
        got = small.detokenize(tf.constant(ids[:cut], tf.int32))
        got = got.numpy().decode("utf-8")
        assert got == hf_small.decode(ids[:cut], skip_special_tokens=False)


def test_vocabulary_without_every_byte_drops_them_like_hf():
    vocab = {c: i for i, c in enumerate("abcĠ")}
    vocab.update({"ab": 4, "Ġa": 5, "Ġab": 6})
    merges = ["a b", "Ġ a", "Ġa b"]
    ours = BytePairTokenizer(vocab, merges, unsplittable_tokens=[])
    texts = ["ab ab", "a-b x", "ébc", " ab!"]
    assert_parity(ours, hf_reference(vocab, merges), texts)


def test_unordered_merges_match_hf():
    """Merges listed before the merges that make their parts."""
    rng = random.Random(0)
    letters = "abcd"
    vocab = {c: i for i, c in enumerate(ALPHABET)}
    merges = []
    tokens = list(letters)
    while len(merges) < 40:
        left, right = rng.choice(tokens), rng.choice(tokens)
        if left + right in vocab or len(left + right) > 5:
            continue
        vocab[left + right] = len(vocab)
        tokens.append(left + right)
        merges.append(f"{left} {right}")
    rng.shuffle(merges)
    ours = BytePairTokenizer(vocab, merges, unsplittable_tokens=[])
    assert not ours._engine.all_at_once
    texts = [
        "".join(rng.choice(letters) for _ in range(30)) for _ in range(200)
    ]
    assert_parity(ours, hf_reference(vocab, merges), texts)


# --- The tokenizer contract --------------------------------------------------
def test_contract(small, hf_small):
    texts = ADVERSARIAL[:30]
    run_tokenizer_test(
        small,
        texts,
        expected_ids=hf_ids(hf_small, texts),
        expected_detokenized=texts,
    )


def test_config_names_the_files_contents_by_digest(small, small_files):
    # The vocabulary and merges are a Keras asset (tests/tokenizers/
    # test_assets.py); the config names them by SHA-256.
    config = small.get_config()
    assert config["vocabulary"] is None and config["merges"] is None
    assert config["added_tokens"] is None
    assert len(config["vocabulary_sha256"]) == 64
    assert config["unsplittable_tokens"] == [EOT]
    asset = json.loads(small._asset_bytes())
    with open(small_files[0], encoding="utf-8") as f:
        assert asset["vocabulary"] == json.load(f)
    assert isinstance(asset["merges"], list)
    assert asset["added_tokens"] is None  # `unsplittable_tokens` instead


# --- Errors -----------------------------------------------------------------
def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tiny_files(tmp_path):
    vocab = {"a": 0, "b": 1, "ab": 2}
    return (
        _write(tmp_path / "bpe_vocab.json", json.dumps(vocab)),
        _write(tmp_path / "bpe_merges.txt", "#version: 0.2\na b\n"),
    )


def test_tiny_files_load(tiny_files):
    tokenizer = BytePairTokenizer.from_files(*tiny_files)
    assert tokenizer("ab").numpy().tolist() == [2]
    assert tokenizer.special_tokens == {}


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON: Expecting property name"),
        ("[1, 2]", "must be a non-empty JSON object"),
        ("{}", "must be a non-empty JSON object"),
        ('{"a": "0", "b": 1}', "every id must be an integer"),
        ('{"a": 0, "b": 2}', "id 1 is missing"),
        ('{"a": 0, "b": 0, "c": 1}', "id 0 is used by"),
        ('{"a": 0, "": 1}', "every token must be a non-empty string"),
    ],
)
def test_corrupt_vocabulary_file(tiny_files, content, message):
    vocab, merges = tiny_files
    _write(vocab, content)
    with pytest.raises(ValueError, match=message) as info:
        BytePairTokenizer.from_files(vocab, merges)
    assert str(vocab) in str(info.value)


@pytest.mark.parametrize(
    "content, message",
    [
        ("#version: 0.2\na b c\n", "line 2: a merge is two tokens"),
        ("a  b\n", "line 1: a merge is two tokens"),
        ("ab\n", "line 1: a merge is two tokens"),
        ("a b\na z\n", "line 2: token 'z' of merge 'a z' is not in"),
        ("b a\n", "line 1: token 'ba' of merge 'b a' is not in"),
    ],
)
def test_corrupt_merges_file(tiny_files, content, message):
    vocab, merges = tiny_files
    _write(merges, content)
    with pytest.raises(ValueError, match=message) as info:
        BytePairTokenizer.from_files(vocab, merges)
    assert str(merges) in str(info.value)


def test_missing_and_unreadable_files(tiny_files, tmp_path):
    vocab, merges = tiny_files
    missing = tmp_path / "nope" / "vocab.json"
    with pytest.raises(FileNotFoundError, match="Vocabulary file .*nope"):
        BytePairTokenizer.from_files(missing, merges)
    with pytest.raises(FileNotFoundError, match="Merges file .*nope"):
        BytePairTokenizer.from_files(vocab, tmp_path / "nope" / "merges.txt")
    vocab.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        BytePairTokenizer.from_files(vocab, merges)


def test_bad_arguments():
    vocab = {"a": 0, "b": 1, "ab": 2}
    with pytest.raises(TypeError, match="`vocabulary` must be a dict"):
        BytePairTokenizer(3, ["a b"])
    with pytest.raises(TypeError, match="`merges` must be a list"):
        BytePairTokenizer(vocab, 3)
    with pytest.raises(ValueError, match=r"`merges\[0\]` must be a string"):
        BytePairTokenizer(vocab, [3])
    with pytest.raises(ValueError, match="pretokenizer='llama3'"):
        BytePairTokenizer(vocab, ["a b"], pretokenizer="llama3")
    with pytest.raises(TypeError, match="`unsplittable_tokens` must be None"):
        BytePairTokenizer(vocab, ["a b"], unsplittable_tokens="ab")
    with pytest.raises(ValueError, match="'<s>' is not in the vocabulary"):
        BytePairTokenizer(vocab, ["a b"], unsplittable_tokens=["<s>"])
    with pytest.raises(ValueError, match="non-empty strings"):
        BytePairTokenizer(vocab, ["a b"], unsplittable_tokens=[""])
    with pytest.raises(TypeError, match="`vocab_json` must be a file path"):
        BytePairTokenizer.from_files(vocab, "merges.txt")
    tokenizer = BytePairTokenizer(vocab, [("a", "b")])
    assert tokenizer("ab").numpy().tolist() == [2]
    with pytest.raises(ValueError, match="outside"):
        tokenizer.detokenize([0, 7])
    with pytest.raises(TypeError, match="integer ids"):
        tokenizer.detokenize(tf.constant([0.5]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"add_special_tokens": "yes"}, "`add_special_tokens` must be True"),
        ({"ignore_merges": 1}, r"`ignore_merges` must be.*\(of type int\)"),
        ({"split_special_tokens": "no"}, "split_special_tokens='no'"),
        ({"pretokenizer": 3}, r"`pretokenizer` must be 'gpt2', None or"),
        ({"unsplittable_tokens": [3]}, r"`unsplittable_tokens\[0\]` must"),
        ({"roles": {"bos": 3}}, r"`roles\['bos'\]` must be a token"),
    ],
)
def test_arguments_of_a_wrong_type(kwargs, message):
    vocab = {"a": 0, "b": 1, "ab": 2}
    with pytest.raises(TypeError, match=message):
        BytePairTokenizer(vocab, ["a b"], **kwargs)


def test_special_tokens_is_the_deprecated_name_of_unsplittable_tokens(
    small_files,
):
    with pytest.warns(DeprecationWarning, match="now `unsplittable_tokens`"):
        old = BytePairTokenizer(*small_files, special_tokens=[])
    new = BytePairTokenizer(*small_files, unsplittable_tokens=[])
    texts = [f"a{EOT}b", EOT]
    assert ours_ids(old, texts) == ours_ids(new, texts)
    assert old.get_config()["unsplittable_tokens"] == []
    assert "special_tokens" not in old.get_config()
    with pytest.raises(ValueError, match="old name of `unsplittable_tokens`"):
        BytePairTokenizer(
            *small_files, special_tokens=[], unsplittable_tokens=[]
        )
    # A config written before the rename loads without a warning.
    config = {**new.get_config()}
    config["special_tokens"] = config.pop("unsplittable_tokens")
    assert ours_ids(BytePairTokenizer.from_config(config), texts) == (
        ours_ids(new, texts)
    )


def test_proper_ordering_is_detected(small):
    assert small._engine.all_at_once
    assert np.all(small._engine.byte_ids.numpy() >= 0)
