"""load_tokenizer on today's LLM files: id for id with HF and tiktoken.

The references are Hugging Face `tokenizers` for every `tokenizer.json`
(`Tokenizer.from_file`, `encode_batch(add_special_tokens=...)`, `decode`)
and tiktoken for the rank files (`tiktoken.Encoding` with tiktoken's own
patterns, `encode(text, allowed_special="all")`), on the files of
../shared/data/llm. The default suite runs a spread of lines from every
corpus, the adversarial set and a short fuzz per vocabulary; `-m slow`
runs every line of every corpus and a 500-case fuzz.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tiktoken
import tokenizers as hf_tokenizers
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from tiktoken.load import load_tiktoken_bpe

import tf_input
from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.tiktoken_patterns import TIKTOKEN_PATTERNS
from tests.tokenizers.test_byte_pair import ADVERSARIAL
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import WordPieceTokenizer
from tf_input.tokenizers import load_tokenizer
from tf_input.tokenizers.loading import TokenizerFileError

pytestmark = requires_shared_data

LLM = data_path("llm")
FAMILIES = ["qwen3", "cl100k", "o200k", "deepseek_v4", "bert_uncased"]
RANK_FILES = {
    "cl100k": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}
# What today's tokenizers trip on: digit runs, contractions in capitals,
# CRLF and whitespace runs, NFD input (Qwen normalizes to NFC), combining
# marks, Hangul jamo, emoji ZWJ sequences, CJK, special tokens in text.
LLM_ADVERSARIAL = [
    "2000 20000 1234567 3.14159 1,000,000 ١٢٣٤ １２３ ²³ 12ab34",
    "DON'T I'M YOU'RE WE'VE THEY'LL HE'D IT'S don't i'm 'S 'll'd",
    "line one\r\nline two\r\n\r\n  indented\r\n\t\ttabbed\r\n",
    "a  b   c    d\t\te \t f\n\n\ng \n \n h   \n",
    "e\u0301cole cafe\u0301 A\u030a Ω \u212b \u1e9b\u0323 \u0958 \ufb01",
    "\u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8 \u0b47\u0b3e \u0dd9\u0dcf",
    "Zalgo: Z\u0336\u0321\u0322\u0327a\u0300\u0301\u0302l\u0303g\u0304o",
    "👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 👍🏽 🇫🇷 1️⃣ ❤️",
    "日本語のテキスト 中文，标点！ 한국어 텍스트 ｆｕｌｌｗｉｄｔｈ",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    " <|endoftext|> <|endoftext|><|endoftext|>x<|endoftext",
    "<think>\nreason\n</think>\n\nanswer <tool_call>{}</tool_call>",
    "<｜begin▁of▁sentence｜>Hi<｜end▁of▁sentence｜><｜User｜>q",
    "[CLS] the [MASK] sat [SEP] [mask] [UNK]",
    "<|fim_prefix|>def f(<|fim_suffix|>):<|fim_middle|>",
]
TEXTS = ADVERSARIAL + LLM_ADVERSARIAL


def sample_lines(per_corpus):
    """`per_corpus` lines spread evenly over every corpus (all of them
    for None)."""
    out = []
    for lines in corpora().values():
        if per_corpus is None or len(lines) <= per_corpus:
            out.extend(lines)
        else:
            step = len(lines) / per_corpus
            out.extend(lines[int(i * step)] for i in range(per_corpus))
    return out


# --- References and fixtures -------------------------------------------------
_CACHE = {}


def ours(name, **kwargs):
    key = (name, tuple(sorted(kwargs.items())))
    if key not in _CACHE:
        if name.endswith(".tiktoken"):
            family = name.split(".")[0]
            _CACHE[key] = load_tokenizer(
                LLM / family / f"{family}_base.tiktoken",
                pattern=family,
                special_token_ids=RANK_FILES[family],
                **kwargs,
            )
        else:
            _CACHE[key] = load_tokenizer(
                LLM / name / "tokenizer.json", **kwargs
            )
    return _CACHE[key]


def hf(name):
    key = ("hf", name)
    if key not in _CACHE:
        _CACHE[key] = hf_tokenizers.Tokenizer.from_file(
            str(LLM / name / "tokenizer.json")
        )
    return _CACHE[key]


def tik(family):
    key = ("tiktoken", family)
    if key not in _CACHE:
        _CACHE[key] = tiktoken.Encoding(
            family,
            pat_str=TIKTOKEN_PATTERNS[family],
            mergeable_ranks=load_tiktoken_bpe(
                str(LLM / family / f"{family}_base.tiktoken")
            ),
            special_tokens=RANK_FILES[family],
        )
    return _CACHE[key]


def reference_ids(name, texts, add_special_tokens=False):
    if name.endswith(".tiktoken"):
        encoding = tik(name.split(".")[0])
        return [encoding.encode(t, allowed_special="all") for t in texts]
    encodings = hf(name).encode_batch(
        list(texts), add_special_tokens=add_special_tokens
    )
    return [e.ids for e in encodings]


def reference_decode(name, ids, skip_special_tokens=False):
    if name.endswith(".tiktoken"):
        encoding = tik(name.split(".")[0])
        return [encoding.decode(row) for row in ids]
    return [hf(name).decode(row, skip_special_tokens) for row in ids]


def our_ids(tokenizer, texts):
    out = []
    for start in range(0, len(texts), 4096):
        batch = tf.constant(texts[start : start + 4096], tf.string)
        out += tokenizer(batch).to_list()
    return out


def assert_same_ids(name, tokenizer, texts, add_special_tokens=False):
    got = our_ids(tokenizer, texts)
    want = reference_ids(name, texts, add_special_tokens)
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{name}: {len(bad)}/{len(texts)} differ; first {bad[0]}"
    return got


def _ragged(rows):
    flat = np.array([i for row in rows for i in row], np.int32)
    lengths = np.array([len(row) for row in rows], np.int64)
    return tf.RaggedTensor.from_row_lengths(flat, lengths)


def assert_decodes_like_reference(name, tokenizer, ids, skip=False):
    got = []
    for start in range(0, len(ids), 4096):
        batch = _ragged(ids[start : start + 4096])
        text = tokenizer.detokenize(batch, skip_special_tokens=skip)
        got += [t.decode("utf-8") for t in text.numpy()]
    want = reference_decode(name, ids, skip)
    bad = [(i, g, w) for i, g, w in zip(ids, got, want) if g != w]
    assert not bad, f"{name}: {len(bad)}/{len(ids)} differ; first {bad[0]}"
    return got


ALL = FAMILIES + ["cl100k.tiktoken", "o200k.tiktoken"]
BYTE_LEVEL = [n for n in ALL if n != "bert_uncased"]


# --- Parity ------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_parity_on_a_spread_of_every_corpus_and_the_adversarial_set(name):
    texts = sample_lines(40) + TEXTS
    tokenizer = ours(name)
    ids = assert_same_ids(name, tokenizer, texts)
    decoded = assert_decodes_like_reference(name, tokenizer, ids)
    if name in BYTE_LEVEL and name != "qwen3":
        # Byte-level BPE without a normalizer: the exact text back.
        assert decoded == texts


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_parity_on_every_line_of_every_corpus(name):
    texts = sample_lines(None)
    tokenizer = ours(name)
    ids = assert_same_ids(name, tokenizer, texts)
    decoded = assert_decodes_like_reference(name, tokenizer, ids)
    if name in BYTE_LEVEL and name != "qwen3":
        assert decoded == texts


def test_qwen3_round_trip_is_exact_on_nfc_text():
    """Qwen's NFC normalizer changes only non-NFC text."""
    tokenizer = ours("qwen3")
    texts = [
        t
        for t in sample_lines(40) + TEXTS
        if hf("qwen3").normalizer.normalize_str(t) == t
    ]
    back = tokenizer.detokenize(tokenizer(texts))
    assert [b.decode("utf-8") for b in back.numpy()] == texts


def test_qwen3_chat_tokens():
    tokenizer = ours("qwen3")
    assert tokenizer("<|im_start|>user").numpy().tolist() == [151644, 872]
    # <think> is a non-special added token: found in text, kept by decode
    # even with skip_special_tokens.
    ids = tokenizer("<think>x</think>").numpy().tolist()
    assert ids[0] == 151667 and ids[-1] == 151668
    back = tokenizer.detokenize(ids, skip_special_tokens=True)
    assert back.numpy().decode() == "<think>x</think>"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen3", "deepseek_v4", "cl100k"])
def test_split_special_tokens_equals_hf_encode_special_tokens(name):
    tokenizer = ours(name, split_special_tokens=True)
    reference = hf_tokenizers.Tokenizer.from_file(
        str(LLM / name / "tokenizer.json")
    )
    reference.encode_special_tokens = True
    texts = LLM_ADVERSARIAL
    want = [
        e.ids for e in reference.encode_batch(texts, add_special_tokens=False)
    ]
    assert our_ids(tokenizer, texts) == want


@pytest.mark.parametrize(
    "name",
    [
        "bert_uncased",
        # No tokens in their templates: nothing is added (slow: 12 s).
        *(
            pytest.param(n, marks=pytest.mark.slow)
            for n in ("qwen3", "o200k", "cl100k", "deepseek_v4")
        ),
    ],
)
def test_add_special_tokens_equals_hf(name):
    tokenizer = ours(name, add_special_tokens=True)
    texts = ["Hello world", "", " a b ", "<|im_start|>x"]
    assert_same_ids(name, tokenizer, texts, add_special_tokens=True)


@pytest.mark.parametrize("name", FAMILIES)
def test_templates_equal_hf_single_and_pair(name):
    tokenizer = ours(name)
    reference = hf(name)
    templates = tokenizer.templates()
    a, b = "first text", "second one"
    ids_a, ids_b = (our_ids(tokenizer, [t])[0] for t in (a, b))

    def fill(template):
        ids, types = [], []
        for piece, type_id in template:
            part = {"$A": ids_a, "$B": ids_b}.get(piece, [piece])
            ids += part
            types += [type_id] * len(part)
        return ids, types

    single = reference.encode(a)
    assert fill(templates["single"]) == (single.ids, single.type_ids)
    pair = reference.encode(a, b)
    assert fill(templates["pair"]) == (pair.ids, pair.type_ids)
    start = [
        p
        for p, _ in templates["single"][: templates["single"].index(("$A", 0))]
    ]
    assert tokenizer.start_ids == start


# --- Roles -------------------------------------------------------------------
def test_roles_come_from_the_files():
    qwen = ours("qwen3")
    # tokenizer_config.json: eos <|im_end|>, pad <|endoftext|>, no bos.
    assert qwen.special_tokens == {"eos": 151645, "pad": 151643}
    assert qwen.padding_id == 151643
    assert (qwen.start_ids, qwen.end_ids) == ([], [])
    deepseek = ours("deepseek_v4")
    assert deepseek.special_tokens == {"bos": 0, "eos": 1, "pad": 1}
    assert deepseek.start_ids == []  # its post-processor adds nothing
    for name in ("cl100k", "o200k"):
        roles = ours(name).special_tokens
        eot = ours(name).token_to_id("<|endoftext|>")
        assert roles == {"bos": eot, "eos": eot, "unk": eot}
        assert ours(name).padding_id is None
    bert = ours("bert_uncased")
    assert bert.padding_id == 0 and bert.start_ids == [101]
    assert bert.end_ids == [102]


def test_rank_files_have_no_roles_unless_given():
    tokenizer = ours("cl100k.tiktoken")
    assert tokenizer.special_tokens == {} and tokenizer.padding_id is None
    assert tokenizer.vocabulary_size() == 100277
    with_roles = load_tokenizer(
        LLM / "cl100k" / "cl100k_base.tiktoken",
        pattern="llama3",
        special_token_ids={"<|endoftext|>": 100257},
        roles={"eos": "<|endoftext|>"},
    )
    assert with_roles.special_tokens == {"eos": 100257}


def _small_rank_file(folder, name="small.tiktoken"):
    """The first 5,000 ranks of cl100k: a rank file too."""
    lines = (LLM / "cl100k" / "cl100k_base.tiktoken").read_bytes()
    path = folder / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\n".join(lines.split(b"\n")[:5000]) + b"\n")
    return path


def test_the_old_name_of_special_token_ids_still_works_with_a_warning(
    tmp_path,
):
    path = _small_rank_file(tmp_path)
    kwargs = {"pattern": "llama3", "roles": {"eos": "<|x|>"}}
    new = load_tokenizer(path, special_token_ids={"<|x|>": 5000}, **kwargs)
    with pytest.warns(DeprecationWarning, match="`special_token_ids=`"):
        old = load_tokenizer(path, special_tokens={"<|x|>": 5000}, **kwargs)
    assert old.special_tokens == new.special_tokens == {"eos": 5000}
    texts = ["a<|x|>b", "hello world"]
    assert our_ids(old, texts) == our_ids(new, texts)
    with pytest.warns(DeprecationWarning):
        with pytest.raises(TypeError, match="not also its deprecated name"):
            load_tokenizer(
                path,
                special_token_ids={"<|x|>": 5000},
                special_tokens={"<|x|>": 5000},
                **kwargs,
            )


def test_vocabulary_gaps_are_no_tokens():
    tokenizer = ours("cl100k")  # ids 100256, 100261..100275 are unused
    assert tokenizer.vocabulary_size() == 100277
    assert tokenizer.id_to_token(100257) == "<|endoftext|>"
    with pytest.raises(ValueError, match="no token"):
        tokenizer.id_to_token(100261)
    # HF's decode drops such ids; so does ours.
    assert tokenizer.detokenize([9906, 100261]).numpy() == b"Hello"
    assert hf("cl100k").decode([9906, 100261]) == "Hello"


# --- Decoding ----------------------------------------------------------------
@pytest.mark.parametrize("name", BYTE_LEVEL)
def test_detokenize_any_ids_like_the_reference(name):
    """Random ids (cut characters, special tokens) decode as HF / tiktoken
    decode them, with and without skip_special_tokens."""
    tokenizer = ours(name)
    rng = np.random.default_rng(0)
    valid = [i for i, t in enumerate(tokenizer.get_vocabulary()) if t]
    rows = [
        [valid[j] for j in rng.integers(0, len(valid), rng.integers(0, 12))]
        for _ in range(200)
    ]
    assert_decodes_like_reference(name, tokenizer, rows)
    if not name.endswith(".tiktoken"):
        assert_decodes_like_reference(name, tokenizer, rows, skip=True)


@pytest.mark.parametrize("name", ["bert_uncased", "mistral_v1"])
def test_skip_special_tokens_like_the_reference(name):
    """WordPiece and SentencePiece-style BPE files decode with and without
    their special tokens as HF does (the byte-level ones: above)."""
    tokenizer = ours(name)
    special = sorted(
        {
            t.content: i
            for i, t in hf(name).get_added_tokens_decoder().items()
            if t.special
        }.values()
    )
    assert special and tokenizer._special_ids() == special
    rng = np.random.default_rng(1)
    texts = sample_lines(10) + TEXTS[:20]
    rows = []
    for row in our_ids(tokenizer, texts):
        for _ in range(3):  # specials at the ends and inside
            at = int(rng.integers(0, len(row) + 1))
            row = row[:at] + [int(rng.choice(special))] + row[at:]
        rows.append(row)
    assert_decodes_like_reference(name, tokenizer, rows)
    assert_decodes_like_reference(name, tokenizer, rows, skip=True)
    with pytest.raises(TypeError, match="skip_special_tokens='yes'"):
        tokenizer.detokenize(rows[0], skip_special_tokens="yes")


# --- Fuzz --------------------------------------------------------------------
_PIECES = [
    "<|im_start|>",
    "<|endoftext|>",
    "<｜begin▁of▁sentence｜>",
    "[MASK]",
    "'s",
    "'LL",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u3000",
    "2024",
    "1234567",
    "👨\u200d👩\u200d👧",
    "e\u0301",
    "\u1100\u1161",
    "日本",
    "한국",
    "x/y",
]
_TEXT = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=12),
        st.text(st.sampled_from(" \t\n\r\x0b\x0c\x85\xa0'sSt1!/é"), max_size=8),
        st.sampled_from(_PIECES),
    ),
    max_size=8,
).map("".join)
_FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)


@pytest.mark.parametrize("name", ALL)
@settings(_FUZZ, max_examples=60)
@given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_fuzz(name, texts):
    ids = assert_same_ids(name, ours(name), texts)
    assert_decodes_like_reference(name, ours(name), ids)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
@settings(_FUZZ, max_examples=500)
@given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_fuzz_500(name, texts):
    ids = assert_same_ids(name, ours(name), texts)
    assert_decodes_like_reference(name, ours(name), ids)


# --- Saving and serving ------------------------------------------------------
def test_config_and_keras_round_trip_and_size(tmp_path):
    tokenizer = ours("cl100k")
    config = tokenizer.get_config()
    json.dumps(config)
    restored = BytePairTokenizer.from_config(config)
    texts = TEXTS[-20:]
    assert our_ids(restored, texts) == our_ids(tokenizer, texts)
    model = keras.Sequential([keras.Input((), dtype="string"), tokenizer])
    path = tmp_path / "cl100k.keras"
    model.save(path)
    size = os.path.getsize(path)
    vocabulary_files = os.path.getsize(LLM / "cl100k" / "tokenizer.json")
    assert size <= 2 * vocabulary_files, (size, vocabulary_files)
    loaded = keras.saving.load_model(path)
    layer = loaded.layers[-1]
    assert type(layer) is BytePairTokenizer
    assert our_ids(layer, texts) == our_ids(tokenizer, texts)


def _contract(name, tokenizer, texts, **kwargs):
    """`run_tokenizer_test` with the reference's ids and decoding."""
    want = reference_ids(name, texts)
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference_decode(name, want),
        **kwargs,
    )


@pytest.mark.slow  # the byte-level family's contract: test_byte_pair.py
def test_contract_of_a_qwen_shaped_file(tmp_path, small_json):
    """Qwen 3's normalizer (NFC) and regex (the lookahead), added tokens:
    core TF ops only, from a moved folder, in a fresh process too (the
    real files: `test_contract_every_family`, `-m slow`)."""
    path = _write_json(tmp_path / "tokenizer.json", small_json)
    reference = hf_tokenizers.Tokenizer.from_file(str(path))
    want = [e.ids for e in reference.encode_batch(TEXTS)]
    run_tokenizer_test(
        load_tokenizer(path),
        TEXTS,
        expected_ids=want,
        expected_detokenized=reference.decode_batch(want, False),
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", BYTE_LEVEL)
def test_contract_every_family(name):
    _contract(name, ours(name), TEXTS)


# --- Files and errors --------------------------------------------------------
def _small_tokenizer_json(folder):
    """A 400-token byte-level BPE trained by HF, saved in `folder`."""
    tokenizer = hf_tokenizers.Tokenizer(hf_tokenizers.models.BPE())
    tokenizer.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False
    )
    trainer = hf_tokenizers.trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=hf_tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TEXTS * 3, trainer)
    tokenizer.decoder = hf_tokenizers.decoders.ByteLevel()
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
    _write_json(folder / "tokenizer_config.json", config)
    return tokenizer


def test_every_form_of_path(tmp_path):
    reference = _small_tokenizer_json(tmp_path / "small")
    by_folder = load_tokenizer(tmp_path / "small")
    by_file = load_tokenizer(tmp_path / "small" / "tokenizer.json")
    assert isinstance(by_folder, BytePairTokenizer)
    want = [e.ids for e in reference.encode_batch(TEXTS)]
    assert our_ids(by_folder, TEXTS) == want == our_ids(by_file, TEXTS)
    assert by_folder.special_tokens == {"eos": 0, "pad": 0}
    assert tf_input.load_tokenizer is load_tokenizer
    # A rank file named tokenizer.model (as Llama 3 ships it) is told from
    # SentencePiece by its content; the first 5,000 ranks of cl100k are a
    # rank file too.
    rank = _small_rank_file(tmp_path, "llama/tokenizer.model")
    small = load_tokenizer(rank, pattern="llama3")
    assert isinstance(small, BytePairTokenizer)
    assert small.vocabulary_size() == 5000
    ranks = load_tiktoken_bpe(str(rank))
    encoding = tiktoken.Encoding(
        "small",
        pat_str=TIKTOKEN_PATTERNS["cl100k"],
        mergeable_ranks=ranks,
        special_tokens={},
    )
    assert our_ids(small, TEXTS) == [encoding.encode(t) for t in TEXTS]
    spm = load_tokenizer(LLM / "mistral_v1" / "tokenizer.model")
    assert type(spm).__name__ == "SentencePieceTokenizer"
    assert isinstance(load_tokenizer(data_path("gpt2")), BytePairTokenizer)
    bert = load_tokenizer(data_path("bert", "bert-base-uncased-vocab.txt"))
    assert isinstance(bert, WordPieceTokenizer)


def test_folders_with_several_or_no_tokenizers(tmp_path):
    with pytest.raises(ValueError, match="several tokenizer files"):
        load_tokenizer(data_path("bert"))
    # Files of different kinds are listed too, never one picked silently:
    # a tokenizer.json beside the rank file or the SentencePiece model.
    listed = {
        "cl100k": r"tokenizer\.json \(Hugging Face tokenizer\.json\), "
        r"cl100k_base\.tiktoken \(tiktoken rank file\)",
        "mistral_v1": r"tokenizer\.json \(Hugging Face tokenizer\.json\), "
        r"tokenizer\.model \(SentencePiece model\)",
    }
    for name, files in listed.items():
        with pytest.raises(ValueError, match=files + r"\. Pass the path"):
            load_tokenizer(LLM / name)
    mixed = tmp_path / "mixed"
    _small_tokenizer_json(mixed)
    (mixed / "vocab.txt").write_text("[UNK]\nthe\n")
    with pytest.raises(ValueError, match=r"tokenizer\.json .*, vocab\.txt"):
        load_tokenizer(mixed)
    assert isinstance(load_tokenizer(mixed / "vocab.txt"), WordPieceTokenizer)
    with pytest.raises(FileNotFoundError, match="No tokenizer file"):
        load_tokenizer(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_tokenizer(tmp_path / "nope.json")


def _write_json(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_json(tmp_path_factory):
    """A small tokenizer.json shaped like Qwen's: NFC, a Split regex then
    ByteLevel, merges as pairs."""
    folder = tmp_path_factory.mktemp("small_json") / "small"
    _small_tokenizer_json(folder)
    data = json.loads((folder / "tokenizer.json").read_text("utf-8"))
    qwen = json.loads((LLM / "qwen3" / "tokenizer.json").read_text("utf-8"))
    data["normalizer"] = qwen["normalizer"]
    data["pre_tokenizer"] = qwen["pre_tokenizer"]
    return data


def test_truncated_and_corrupt_files(tmp_path):
    text = (LLM / "cl100k" / "tokenizer.json").read_text("utf-8")
    truncated = tmp_path / "tokenizer.json"
    truncated.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON.*truncated") as info:
        load_tokenizer(truncated)
    assert str(truncated) in str(info.value)
    binary = tmp_path / "x.json"
    binary.write_bytes(b"\xff\xfe{")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_tokenizer(binary)
    no_model = _write_json(tmp_path / "tokenizer.json", {"version": "1.0"})
    with pytest.raises(ValueError, match="neither a tokenizer.json"):
        load_tokenizer(no_model)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["model"].update(type="Nonsense"), "unknown model type"),
        (
            lambda d: d["model"].update(byte_fallback=True),
            "SentencePiece-style",
        ),
        (
            lambda d: d["model"].update(type="Unigram"),
            "a Unigram 'vocab' must be a non-empty list",
        ),
        (
            lambda d: d.update(normalizer={"type": "Fancy"}),
            "normalizer type 'Fancy' is not supported",
        ),
        (
            lambda d: d.update(pre_tokenizer={"type": "Fancy"}),
            "pre-tokenizer type 'Fancy' is not supported",
        ),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(
                pattern={"Regex": r"\p{L}+(?=x)|\s+"}
            ),
            r"lookaround `\(\?=x\)` cannot be matched",
        ),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(
                pattern={"Regex": r"\p{Han}+|\s+"}
            ),
            r"property `\\p\{Han\}` is not supported",
        ),
        (
            lambda d: d.update(decoder={"type": "WordPiece"}),
            "decoder .* is not supported",
        ),
        (lambda d: d["model"].update(dropout=0.1), "dropout"),
        (lambda d: d["model"].pop("vocab"), "missing: vocab"),
        (
            lambda d: d["model"]["merges"].__setitem__(0, ["Ġ", "nope"]),
            "token 'nope' of merge",
        ),
    ],
)
def test_bad_tokenizer_json(tmp_path, small_json, change, message):
    data = json.loads(json.dumps(small_json))
    change(data)
    path = _write_json(tmp_path / "tokenizer.json", data)
    with pytest.raises(ValueError, match=message) as info:
        load_tokenizer(path)
    assert str(path) in str(info.value)


def test_a_missing_field_is_a_file_error_naming_it(tmp_path, small_json):
    for change, field in [
        (lambda d: d["model"].pop("merges"), "merges"),
        (lambda d: d["model"].pop("vocab"), "vocab"),
        (
            lambda d: d.update(
                post_processor={"type": "TemplateProcessing", "pair": []}
            ),
            "single",
        ),
    ]:
        data = json.loads(json.dumps(small_json))
        change(data)
        path = _write_json(tmp_path / "tokenizer.json", data)
        with pytest.raises(TokenizerFileError) as info:
            load_tokenizer(path)
        message = str(info.value)
        assert str(path) in message
        assert f"a required field is missing: {field}" in message


def test_a_fault_of_the_code_is_not_a_file_error(
    tmp_path, small_json, monkeypatch
):
    # A bug inside an engine keeps its own type and traceback: it is not
    # reported as a fault of the file.
    path = _write_json(tmp_path / "tokenizer.json", small_json)

    def broken(*args, **kwargs):
        raise KeyError("a bug in the tables")

    monkeypatch.setattr(BytePairTokenizer, "_build_tables", broken)
    with pytest.raises(KeyError, match="a bug in the tables") as info:
        load_tokenizer(path)
    assert not isinstance(info.value, TokenizerFileError)
    assert info.traceback[-1].name == "broken"


WORDPIECE_JSON = {
    "model": {
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "max_input_chars_per_word": 100,
        "vocab": {
            "[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4,
            "the": 5, "cat": 6, "##s": 7,
        },
    },
    "normalizer": {"type": "BertNormalizer", "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
}  # fmt: skip


def _engine_fault(monkeypatch, cls, error):
    """`cls.__init__` raises `error`, as a bug inside the engine would."""

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(cls, "__init__", broken)


@pytest.mark.parametrize("error", [ValueError, TypeError])
@pytest.mark.parametrize("family", ["byte_level_bpe", "wordpiece"])
def test_a_value_or_type_error_of_an_engine_is_not_a_file_error(
    tmp_path, small_json, monkeypatch, family, error
):
    # Only the checks on the file's contents (vocabulary, merges, added
    # tokens...) become a TokenizerFileError: an engine's own ValueError
    # or TypeError is a bug, and reaches the caller as it was raised.
    from tf_input.tokenizers.engines.byte_level_bpe import ByteLevelBPE
    from tf_input.tokenizers.engines.wordpiece import BertWordPiece

    data = small_json if family == "byte_level_bpe" else WORDPIECE_JSON
    path = _write_json(tmp_path / "tokenizer.json", data)
    assert load_tokenizer(path)("the cats").shape[0] >= 1
    bug = error("a bug in the engine")
    engine = ByteLevelBPE if family == "byte_level_bpe" else BertWordPiece
    _engine_fault(monkeypatch, engine, bug)
    with pytest.raises(error) as info:
        load_tokenizer(path)
    assert info.value is bug
    assert not isinstance(info.value, TokenizerFileError)


@pytest.mark.parametrize(
    "family, change, message",
    [
        (
            "byte_level_bpe",
            lambda d: d["model"]["merges"].__setitem__(0, ["Ġ", "nope"]),
            r"merges\[0\]`: token 'nope' of merge \['Ġ', 'nope'\] is not in",
        ),
        (
            "byte_level_bpe",
            lambda d: d["model"]["merges"].__setitem__(0, 7),
            r"merges\[0\]` must be a string 'a b' or a pair",
        ),
        (
            "byte_level_bpe",
            lambda d: d["model"].update(merges="merges.txt"),
            "a BPE 'merges' must be a list",
        ),
        (
            "byte_level_bpe",
            lambda d: d["model"]["vocab"].update({"Ġzz": "7"}),
            "every id must be an integer",
        ),
        (
            "byte_level_bpe",
            lambda d: d["model"]["vocab"].update({"Ġzz": 0}),
            "each once; id 0 is used by",
        ),
        (
            "wordpiece",
            lambda d: d["model"].update(unk_token="[NOPE]"),
            r"unknown token '\[NOPE\]' is not in the vocabulary",
        ),
        (
            "wordpiece",
            lambda d: d["model"].update(unk_token=5),
            "'unk_token' must be a non-empty string",
        ),
        (
            "wordpiece",
            lambda d: d["model"].update(max_input_chars_per_word="100"),
            "'max_input_chars_per_word' must be an integer >= 1",
        ),
        (
            "wordpiece",
            lambda d: d["model"]["vocab"].update({"a\ud800": 8}),
            "lone surrogate",
        ),
        (
            "wordpiece",
            lambda d: d["model"]["vocab"].update({"dog": "8"}),
            "WordPiece ids must be integers",
        ),
    ],
)
def test_a_fault_of_the_vocabulary_or_merges_is_a_file_error(
    tmp_path, small_json, family, change, message
):
    data = small_json if family == "byte_level_bpe" else WORDPIECE_JSON
    data = json.loads(json.dumps(data))
    change(data)
    path = _write_json(tmp_path / "tokenizer.json", data)
    with pytest.raises(TokenizerFileError, match=message) as info:
        load_tokenizer(path)
    assert str(info.value).startswith(repr(str(path)))


def test_the_base_of_the_bad_files_loads(tmp_path, small_json):
    path = _write_json(tmp_path / "tokenizer.json", small_json)
    reference = hf_tokenizers.Tokenizer.from_file(str(path))
    want = [e.ids for e in reference.encode_batch(TEXTS)]
    assert our_ids(load_tokenizer(path), TEXTS) == want


def test_sentencepiece_style_bpe_with_an_unknown_pre_tokenizer_is_a_clear_error(
    tmp_path,
):
    # Mistral v1's tokenizer.json loads (test_sentencepiece_bpe.py), and so
    # do Gemma's pre-tokenizers (test_metaspace_byte_pair.py); a type that
    # is not supported is an error that names it and what is.
    data = json.loads((LLM / "mistral_v1" / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "Whitespace"}
    path = _write_json(tmp_path / "tokenizer.json", data)
    message = "pre-tokenizer type 'Whitespace' is not supported: supported"
    with pytest.raises(ValueError, match=message) as info:
        load_tokenizer(path)
    assert str(path) in str(info.value)


def test_bad_rank_files(tmp_path):
    good = (LLM / "cl100k" / "cl100k_base.tiktoken").read_bytes()
    path = tmp_path / "x.tiktoken"
    with pytest.raises(ValueError, match="pass `pattern=`") as info:
        load_tokenizer(LLM / "o200k" / "o200k_base.tiktoken")
    assert "o200k_base.tiktoken" in str(info.value)
    lines = good.split(b"\n")
    for bad, message in [
        (b"IQ== 0\nIg== x\n", "line 2: a rank file line"),
        (b"IQ== 0\n!!!! 1\n", "line 2: a rank file line"),
        (b"IQ== 0\nIQ== 1\n", "line 2: the token b'!' is listed twice"),
        (b"IQ== 0\nIg== 5\n", "ranks must be 0..1"),
        (b"\n".join(lines[:100] + [b"broken"]), "line 101"),
    ]:
        path.write_bytes(bad)
        with pytest.raises(ValueError, match=message) as info:
            load_tokenizer(path, pattern="cl100k")
        assert str(path) in str(info.value)
    path.write_bytes(b"IQ== 0\nIg== 1\n")
    with pytest.raises(ValueError, match="is a rank"):
        load_tokenizer(path, pattern="gpt2", special_token_ids={"<x>": 1})
    for kwargs, message in [
        ({"pattern": 3}, r"`pattern` must be a name or a regex"),
        ({"special_token_ids": ["<x>"]}, "`special_token_ids` must be a dict"),
        ({"special_token_ids": {"<x>": "5"}}, r"special_token_ids\['<x>'\]"),
        ({"special_token_ids": {5: 5}}, "Received the key 5 \\(of type int"),
        ({"split_special_tokens": 1}, "`split_special_tokens` must be True"),
    ]:
        with pytest.raises(TypeError, match=message):
            load_tokenizer(path, **{"pattern": "gpt2", **kwargs})
    with pytest.raises(ValueError, match="for tiktoken rank files"):
        load_tokenizer(LLM / "qwen3", pattern="cl100k")


def test_bad_arguments():
    with pytest.raises(TypeError, match="`path` must be"):
        load_tokenizer(3)
    with pytest.raises(TypeError, match="`add_special_tokens` must be"):
        load_tokenizer(LLM / "qwen3", add_special_tokens="yes")
    # An option of the wrong type is the caller's mistake, not the file's.
    with pytest.raises(TypeError, match="split_special_tokens='no'") as info:
        load_tokenizer(LLM / "qwen3", split_special_tokens="no")
    assert not isinstance(info.value, TokenizerFileError)
    with pytest.raises(TypeError, match="Unknown option"):
        load_tokenizer(LLM / "bert_uncased", lowercase=False)


# --- Command line ----------------------------------------------------------
def test_command_line_lists_folders_with_several_tokenizers(capsys):
    from tf_input import cli

    # Two vocab.txt files; five SentencePiece files (.model and a .json):
    # an error that lists them, never the first one picked.
    folders = {
        "bert": ["bert-base-chinese-vocab.txt", "bert-base-uncased-vocab.txt"],
        "sentencepiece": [
            "mistral-7b-v0.3-tokenizer.json",
            "albert-base-v2-spiece.model",
            "sp-test-ja.model",
        ],
    }
    for name, files in folders.items():
        folder = str(data_path(name))
        for command in ("tokenize", "trace"):
            assert cli.main([command, "--vocab", folder, "I love it."]) == 2
            out = capsys.readouterr()
            assert not out.out and "several tokenizer files" in out.err
            assert all(f in out.err for f in files)
