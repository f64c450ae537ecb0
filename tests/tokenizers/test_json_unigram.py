"""A Unigram `tokenizer.json` (`load_tokenizer` -> `UnigramTokenizer`)
against HF `tokenizers` loading the same file.

The files are made from the real `.model`s in shared/data/sentencepiece
the way transformers' converters write them (`unigram_json.py`): ALBERT's
normalizer chain, the generic SentencePiece one (T5 / XLM-R), the
"first" prepend scheme without splitting, and byte fallback.
"""

import base64
import json

import hypothesis
import hypothesis.strategies as st
import keras
import numpy as np
import pytest
import tensorflow as tf
import tokenizers as hf_tokenizers

from tests.shared_data import corpora
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.tokenizers import unigram_json
from tests.tokenizers.offsets_testing import assert_parity
from tf_input import load_tokenizer
from tf_input.tokenizers import UnigramTokenizer
from tf_input.tokenizers.engines import viterbi_blocks
from tf_input.tokenizers.hf.normalizers.precompiled import charsmap_rules

pytestmark = requires_shared_data

# (model, converter variant): the default suite's five cover each
# variant once and each model at least once; the slow suite takes all.
DEFAULT = [
    ("albert", "albert"),
    ("ja", "spm"),
    ("botchan", "bytes"),
    ("albert", "first"),
    ("ja", "t5"),
]
ALL = [(m, k) for m in unigram_json.MODELS for k in unigram_json.KINDS]
SLOW = [pair for pair in ALL if pair not in DEFAULT]

ADVERSARIAL = [
    "",
    " ",
    "   ",
    "\t",
    "a  b   c",
    "  leading and trailing  ",
    "tab\tinside\tand\ttrailing\t",
    "line\r\nbreak\rcr\nlf",
    "\r\n",
    "x\r\ny",
    "▁ already ▁▁ escaped▁",
    "ﬁ ﬂ ℌ ① ㍿ Ｈｅｌｌｏ　ｗｏｒｌｄ",  # NFKC-affected
    "e\u0301 a\u0301\u0302 Ａ\u0301 ｶ\u3099 \u0301alone",  # combining
    "👩‍👩‍👧‍👦 👍🏽 🇯🇵🇫🇷 ©\u200d© ☃\ufe0f",  # ZWJ, modifiers, flags
    "日本語のテキストです。漢字とかなが混ざっている。",
    "紅樓夢第一回甄士隱夢幻識通靈",
    "한국어 텍스트 ᄀ\u1161 가나다",
    "\x00 \x01 \x7f \u200b \u2028 \ufeff control",
    "\U0001f600\U0001f680\U00010348 \ue000 \U000e0041",  # unknown chars
    "☃☃☃ ☃ x☃y",
    "<unk> x<unk>y <s> </s> <pad>",
    "[CLS] a [SEP] b [MASK]c",
    "``quoted'' and \"plain\"",
    "Hello, World! It's 2024 -- (test) £5 – done.",
    "a" * 300,
    "word " * 200,
    "ÀÉÎÕÜ àéîõü ß ẞ İ ı",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("unigram")


_CACHE = {}


def _pair(folder, name, kind):
    key = (name, kind)
    if key not in _CACHE:
        path, reference = unigram_json.write(folder, name, kind)
        _CACHE[key] = (path, reference, load_tokenizer(path))
    return _CACHE[key]


def _check(reference, tokenizer, lines, special=False):
    """Ids (with and without the template) and decoding, line by line."""
    ids = []
    for start in range(0, len(lines), 1024):
        ids += tokenizer(lines[start : start + 1024]).to_list()
    expected = [
        e.ids for e in reference.encode_batch(lines, add_special_tokens=False)
    ]
    bad = [i for i, (a, b) in enumerate(zip(ids, expected)) if a != b]
    assert not bad, [(lines[i], expected[i], ids[i]) for i in bad[:3]]
    decoded = []
    for start in range(0, len(lines), 1024):
        batch = tf.ragged.constant(ids[start : start + 1024], tf.int32)
        if batch.shape[0]:
            decoded += [t.decode() for t in tokenizer.detokenize(batch).numpy()]
    hf_decoded = reference.decode_batch(ids, skip_special_tokens=False)
    bad = [i for i, (a, b) in enumerate(zip(decoded, hf_decoded)) if a != b]
    assert not bad, [(lines[i], hf_decoded[i], decoded[i]) for i in bad[:3]]
    if special:
        with_special = [
            e.ids
            for e in reference.encode_batch(lines, add_special_tokens=True)
        ]
        template = tokenizer.templates()["single"]
        for line_ids, want in zip(ids, with_special):
            got = [
                i for piece, _ in template
                for i in (line_ids if piece == "$A" else [piece])
            ]  # fmt: skip
            assert got == want


def _sample(lines, count):
    step = max(1, len(lines) // count)
    return lines[::step][:count]


@pytest.mark.parametrize("name, kind", DEFAULT)
def test_corpus_sample_and_adversarial_match_hf(folder, name, kind):
    _, reference, tokenizer = _pair(folder, name, kind)
    lines = list(ADVERSARIAL)
    for corpus in corpora().values():
        lines += _sample(corpus, 80)
    _check(reference, tokenizer, lines, special=True)


def test_one_long_word_among_many_costs_no_dense_matrix(folder):
    # The ids of each word are stitched into their line by position, not
    # by `tf.repeat`, which tiles [words, longest word]: here 4,000 words
    # and one of 60,000 byte-fallback tokens would need 1.9 GB that way.
    _, reference, tokenizer = _pair(folder, "albert", "bytes")
    line = "a b " * 2000 + "☃" * 20000
    ids, starts, ends = tokenizer.tokenize_with_offsets([line], unit="char")
    encoding = reference.encode(line, add_special_tokens=False)
    assert ids.to_list() == [encoding.ids]
    assert list(zip(starts.to_list()[0], ends.to_list()[0])) == [
        tuple(o) for o in encoding.offsets
    ]
    assert tokenizer([line]).to_list() == [encoding.ids]


@pytest.mark.parametrize("name, kind", [("botchan", "bytes"), DEFAULT[0]])
def test_runs_of_unknown_characters_match_hf(folder, name, kind):
    """Words whose every character has no piece but its own (control
    characters, unknown symbols), in a batch beside words with several
    paths, at every length."""
    import random

    _, reference, tokenizer = _pair(folder, name, kind)
    rng = random.Random(0)
    unknown = [chr(c) for c in [*range(1, 9), *range(14, 28), 0x7F]]
    unknown += ["\U0001f600", "\U00010348", "\ue000", "☃"]
    lines = ["".join(rng.choices(unknown, k=n)) for n in (1, 2, 7, 300, 5000)]
    lines += [
        " ".join(
            "".join(rng.choices(unknown + list("ab▁the"), k=rng.randint(1, 9)))
            for _ in range(rng.randint(1, 12))
        )
        for _ in range(200)
    ]
    lines += ["the \x01\x02 cat", "\x01" * 40 + " the", "x\x01", "\x01x"]
    _check(reference, tokenizer, lines)


# --- Long words: the search in blocks (engines/viterbi_blocks.py) -----------
def _long_words():
    import random

    rng = random.Random(1)
    size = viterbi_blocks.LONG_WORD + 905
    return [
        "a" * size,  # HF's choice among equal paths: "aaa" + "a" or ...
        "a" * (size + 1),
        "".join(rng.choices("0123456789", k=size)),
        "".join(rng.choices("abcdefghij", k=size + 3000)),
        "".join(rng.choices([chr(c) for c in range(1, 32)], k=size)),
        "internationalization" * (size // 20),
        "吾輩は猫である名前はまだ無い" * (size // 14),
        "☃x" * size,
        "the " + "ab" * size + " cat and the dog",
    ]


@pytest.mark.parametrize(
    "name, kind", [("albert", "albert"), ("botchan", "bytes"), ("ja", "spm")]
)
def test_long_words_search_in_blocks_as_hf(folder, name, kind):
    """One word of thousands of characters: ids and offsets equal HF's,
    ties between equal paths included (one run of one letter)."""
    _, reference, tokenizer = _pair(folder, name, kind)
    lines = _long_words()
    # The file's scores are float32: its long words take the blocks.
    exact = tokenizer._unigram._exact_characters
    assert exact > max(len(line) for line in lines)
    _check(reference, tokenizer, lines)
    assert_parity(tokenizer, reference, lines[:3] + lines[-3:])


@pytest.mark.parametrize("name, kind", [("albert", "albert"), ("ja", "t5")])
def test_blocks_on_every_word_of_a_corpus_sample(
    folder, name, kind, monkeypatch
):
    """With the threshold at 8 characters, most words of ordinary text
    (and every line of Chinese, which has no spaces) take the blocks,
    in batches beside words that do not: the same ids and offsets."""
    path, reference, _ = _pair(folder, name, kind)
    monkeypatch.setattr(viterbi_blocks, "LONG_WORD", 8)
    tokenizer = load_tokenizer(path)  # traced anew, with the threshold
    lines = list(ADVERSARIAL)
    for corpus in corpora().values():
        lines += _sample(corpus, 60)
    _check(reference, tokenizer, lines)
    assert_parity(tokenizer, reference, lines)


def test_exact_characters_reads_the_scores():
    # float32 scores (every file converted from a `.model`): long words.
    float32 = np.float32([-4.1202917, -11.175809, -0.5, -21.2]).tolist()
    assert viterbi_blocks.exact_characters(float32) > 10**6
    # Scores with every bit of a float64 (0.1): sums round, no blocks.
    assert viterbi_blocks.exact_characters([-0.1, -2.0]) < 2
    assert viterbi_blocks.exact_characters([0.0, -2.0]) == 2**53
    assert viterbi_blocks.exact_characters([0.0]) == 2**62
    assert viterbi_blocks.exact_characters([float("-inf"), -2.0]) == 0


def test_block_size():
    long = viterbi_blocks.LONG_WORD + 1
    assert int(viterbi_blocks.block_size(long, 16, 10**9)) == 65  # sqrt
    assert int(viterbi_blocks.block_size(long, 80, 10**9)) == 80  # a piece
    assert int(viterbi_blocks.block_size(long, 16, long - 1)) == long
    assert int(viterbi_blocks.block_size(300, 16, 10**9)) == 300


def test_search_of_no_word():
    # The engine's search is reached with the distinct words the word
    # cache misses; none is a batch of no character.
    search = tf.function(viterbi_blocks.search)
    back, on_path = search(
        tf.constant([0], tf.int64), tf.zeros([0, 16], tf.float64), 10**9
    )
    assert back.shape == [0] and on_path.shape == [0]


def test_rounding_scores_search_one_step_a_character(folder):
    """A file whose scores use every bit of a float64 keeps the one-step
    search, whose sums are HF's own, on a long word too."""

    def rounding(data):
        vocab = data["model"]["vocab"]
        for k, entry in enumerate(vocab):
            entry[1] = entry[1] * (1 + 1e-9 * ((k % 7) - 3)) + 0.1

    path = _variant(folder, rounding)
    tokenizer = load_tokenizer(path)
    assert tokenizer._unigram._exact_characters < viterbi_blocks.LONG_WORD
    reference = hf_tokenizers.Tokenizer.from_file(str(path))
    _check(reference, tokenizer, ["a" * 5000, "ab" * 3000 + " the cat"])


@pytest.mark.slow
@pytest.mark.parametrize("name, kind", ALL)
def test_whole_corpora_match_hf(folder, name, kind):
    _, reference, tokenizer = _pair(folder, name, kind)
    _check(reference, tokenizer, list(ADVERSARIAL), special=True)
    for corpus in corpora().values():
        _check(reference, tokenizer, corpus)


_INTERESTING = list(
    " \t\r\n▁ ☃©\u200d\ufe0f\u0301\u0302\u3099ﬁ①Ａｶ가ᄀ\u1161日本"
) + [
    "👩",
    "🏽",
    "🇯",
    "<unk>",
    "[CLS]",
    "[MASK]",
    "</s>",
    "``",
    "''",
    "  ",
]
_TEXT = st.lists(
    st.one_of(
        st.sampled_from(_INTERESTING),
        st.characters(codec="utf-8"),
        st.text(alphabet="abcdefghij ", min_size=1, max_size=6),
    ),
    max_size=24,
).map("".join)


def _fuzz(folder, name, kind, examples):
    _, reference, tokenizer = _pair(folder, name, kind)

    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
        derandomize=True,
    )
    @hypothesis.given(st.lists(_TEXT, min_size=1, max_size=8))
    def check(lines):
        _check(reference, tokenizer, lines)

    check()


def test_fuzz_matches_hf(folder):
    # 500 batches of up to 8 strings each (every pair: `-m slow`).
    _fuzz(folder, "albert", "albert", 500)


@pytest.mark.slow
@pytest.mark.parametrize("name, kind", ALL)
def test_long_fuzz_matches_hf(folder, name, kind):
    _fuzz(folder, name, kind, 1500)


def test_round_trip_and_detokenize_of_hf_ids(folder):
    _, reference, tokenizer = _pair(folder, "ja", "spm")
    text = "日本語のテキスト and English text."
    ids = tokenizer(text).numpy().tolist()
    assert ids == reference.encode(text, add_special_tokens=False).ids
    assert tokenizer.detokenize(ids).numpy().decode() == reference.decode(ids)
    assert reference.decode(ids) == text  # nfkc leaves this text alone


def test_add_special_tokens_from_the_template(folder):
    path, reference, _ = _pair(folder, "albert", "albert")
    tokenizer = load_tokenizer(path, add_special_tokens=True)
    texts = ["Hello world", "", "[CLS] inside"]
    want = [e.ids for e in reference.encode_batch(texts)]
    assert tokenizer(texts).to_list() == want
    assert tokenizer.start_ids == [tokenizer.token_to_id("[CLS]")]
    assert tokenizer.end_ids == [tokenizer.token_to_id("[SEP]")]
    assert tokenizer.special_tokens["unk"] == tokenizer.token_to_id("<unk>")


def test_skip_special_tokens_like_hf(folder):
    path, reference, _ = _pair(folder, "albert", "albert")
    tokenizer = load_tokenizer(path, add_special_tokens=True)
    texts = ["Hello world", "", "[CLS] inside [MASK] x", "<pad> y <unk>"]
    ids = [e.ids for e in reference.encode_batch(texts)]
    special = sorted(
        i for i, t in reference.get_added_tokens_decoder().items() if t.special
    )
    assert special and any(i in special for row in ids for i in row[1:-1])
    batch = tf.ragged.constant(ids, tf.int32)
    for skip in (False, True):
        got = tokenizer.detokenize(batch, skip_special_tokens=skip).numpy()
        want = reference.decode_batch(ids, skip_special_tokens=skip)
        assert [g.decode() for g in got] == want


def test_config_and_keras_file_hold_no_vocabulary(folder, tmp_path):
    # The config names the file by digest; the file is an asset (the
    # round trips: `test_contract_and_a_moved_saved_model_...`).
    path, _, tokenizer = _pair(folder, "botchan", "bytes")
    assert len(json.dumps(tokenizer.get_config())) < 2000
    file = tmp_path / "unigram.keras"
    keras.Sequential([tokenizer]).save(file)
    assert file.stat().st_size < 2 * path.stat().st_size
    clone = UnigramTokenizer.from_config(tokenizer.get_config())
    text = tf.constant(["A bytes ☃ fallback test", "e\u0301"])
    assert clone(text).to_list() == tokenizer(text).to_list()


def test_a_keras_file_without_its_asset_is_a_clear_error(
    folder, tmp_path, monkeypatch
):
    import zipfile

    from tf_input.tokenizers import _assets

    _, _, tokenizer = _pair(folder, "botchan", "spm")
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, tokenizer(inputs))
    file = tmp_path / "unigram.keras"
    model.save(file)
    damaged = tmp_path / "damaged.keras"
    with zipfile.ZipFile(file) as src, zipfile.ZipFile(damaged, "w") as dst:
        names = src.namelist()
        assert any(n.endswith("/tokenizer.json") for n in names)
        for name in names:
            if name.endswith("/tokenizer.json"):  # another asset instead
                dst.writestr(name.replace("tokenizer.json", "other"), b"")
            else:
                dst.writestr(name, src.read(name))
    # A process that did not take the config itself: the text must come
    # from the asset (tests/tokenizers/test_assets.py has every family).
    monkeypatch.setattr(_assets, "KNOWN", _assets.Recent())
    with pytest.raises(ValueError, match="'tokenizer.json' is missing"):
        keras.saving.load_model(damaged)


def test_strip_accents_removes_what_hf_removes():
    # Every code point, in one batch: HF's StripAccents vs ours.
    from tokenizers import normalizers

    from tf_input.tokenizers.hf.normalizers.strip_accents import StripAccents

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    hf = normalizers.StripAccents()
    want = [c for c in chars if hf.normalize_str(c) == ""]
    got = StripAccents()(tf.constant(["x" + c for c in chars])).numpy()
    removed = [c for c, g in zip(chars, got) if g == b"x"]
    assert removed == want


def test_grapheme_clusters_join_as_hf_segments_them():
    # ALBERT's charsmap maps a no-break space (2 bytes) to " ". HF's
    # Precompiled looks a cluster under 6 bytes up whole, so for each BMP
    # character c, nbsp + c gives " " alone exactly when c joins the
    # nbsp's cluster (c dropped); else " " + c's own rule.
    from tokenizers import normalizers

    from tf_input.tokenizers.hf.normalizers.graphemes import cluster_starts

    blob = unigram_json.read_proto(
        "albert"
    ).normalizer_spec.precompiled_charsmap
    rules = charsmap_rules(blob)
    precompiled = normalizers.Precompiled(blob)
    chars = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000]
    hf = [
        precompiled.normalize_str("\u00a0" + c) == " " and rules.get(c, c)
        for c in chars
    ]
    pairs = tf.constant([[0xA0, ord(c)] for c in chars], tf.int32)
    row_start = tf.tile([True, False], [len(chars)])
    starts = cluster_starts(tf.reshape(pairs, [-1]), row_start)
    ours = ~starts.numpy().reshape(-1, 2)[:, 1]
    joined = [c for c, h, o in zip(chars, hf, ours) if bool(h) != o]
    assert not joined, [hex(ord(c)) for c in joined[:20]]
    assert sum(map(bool, hf)) > 1000  # marks, ZWJ, spacing marks


def test_charsmap_rules_read_the_trie(folder):
    proto = unigram_json.read_proto("albert")
    rules = charsmap_rules(proto.normalizer_spec.precompiled_charsmap)
    assert rules["ﬁ"] == "fi"
    assert rules["①"] == "1"
    assert len(rules) > 1000


def _variant(folder, change):
    path, _, _ = _pair(folder, "botchan", "spm")
    data = json.loads(path.read_text("utf-8"))
    change(data)
    out = folder / "bad" / "tokenizer.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d.update(normalizer={"type": "Fancy"}),
            "normalizer type 'Fancy' is not supported",
        ),
        (
            lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
            "pre_tokenizer .*Whitespace.* is not supported",
        ),
        (
            lambda d: d["pre_tokenizer"].update(replacement="_"),
            "pre_tokenizer .* is not supported",
        ),
        (
            lambda d: d.update(
                pre_tokenizer={
                    "type": "Sequence",
                    "pretokenizers": [
                        {"type": "WhitespaceSplit"},
                        {"type": "Metaspace", "prepend_scheme": "first"},
                    ],
                }
            ),
            "other than 'first'",
        ),
        (
            lambda d: d.update(decoder={"type": "Magic"}),
            "decoder type 'Magic' is not supported: supported are ByteLevel",
        ),
        (lambda d: d["model"].update(unk_id=None), "without an integer unk_id"),
        (lambda d: d["model"].update(unk_id=10**6), "outside the vocabulary"),
        (
            lambda d: d["model"].update(byte_fallback=True),
            "byte_fallback with some of the 256 tokens",
        ),
        (lambda d: d["model"]["vocab"].__setitem__(5, ["x"]), "entry 5"),
        (
            lambda d: d["normalizer"]["normalizers"][0].update(
                precompiled_charsmap="not base64!"
            ),
            "not valid base64",
        ),
        (
            lambda d: d["normalizer"]["normalizers"][0].update(
                precompiled_charsmap=base64.b64encode(b"\x10\x00").decode()
            ),
            "shorter than 4 bytes",
        ),
        (
            lambda d: d["added_tokens"][0].update(normalized=True),
            "normalized=True",
        ),
    ],
)
def test_unsupported_or_corrupt_parts_name_the_path(folder, change, message):
    path = _variant(folder, change)
    with pytest.raises(ValueError, match=message) as info:
        load_tokenizer(path)
    assert str(path) in str(info.value)


def test_a_fault_of_the_engine_is_not_a_file_error(folder, monkeypatch):
    # A ValueError raised by the Viterbi engine (a bug) reaches the caller
    # as it is, not as a TokenizerFileError blaming the file.
    from tf_input.tokenizers.engines import viterbi
    from tf_input.tokenizers.loading import TokenizerFileError

    path, _, _ = _pair(folder, "botchan", "spm")
    bug = ValueError("a bug in the engine")

    def broken(*args, **kwargs):
        raise bug

    monkeypatch.setattr(viterbi.Viterbi, "__init__", broken)
    with pytest.raises(ValueError) as info:
        load_tokenizer(path)
    assert info.value is bug
    assert not isinstance(info.value, TokenizerFileError)


def test_truncated_file_names_the_path(folder):
    path, _, _ = _pair(folder, "botchan", "spm")
    text = path.read_text("utf-8")
    cut = folder / "cut" / "tokenizer.json"
    cut.parent.mkdir(exist_ok=True)
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON.*truncated") as info:
        load_tokenizer(cut)
    assert str(cut) in str(info.value)


def test_contract_and_a_moved_saved_model_in_plain_tensorflow(folder):
    # A fresh process loads the moved SavedModel with `import tensorflow`
    # alone (no tensorflow_text, no tf_input) and gives HF's ids and text;
    # the last text's long word takes the search in blocks, a function
    # of its own in the SavedModel's library.
    _, reference, tokenizer = _pair(folder, "albert", "albert")
    assert tokenizer.uses_core_ops_only
    long_word = "ab" * (viterbi_blocks.LONG_WORD // 2 + 7)
    texts = [
        "Hello  ＷＯＲＬＤ e\u0301 ☃ x\r\ny",
        " [MASK] 日本",
        f"a {long_word} b",
    ]
    want = [
        e.ids for e in reference.encode_batch(texts, add_special_tokens=False)
    ]
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference.decode_batch(want, False),
    )


def test_a_process_keeps_only_the_last_few_json_texts(folder):
    # `get_config` keeps the file's text for a clone in the same process,
    # but only the last `KEPT` texts: a process that builds many
    # tokenizers must not hold all their files. A config whose text was
    # dropped makes a layer that asks for its asset, not a wrong one.
    from tf_input.tokenizers import _assets

    _, _, tokenizer = _pair(folder, "botchan", "bytes")
    text = tf.constant(["A bytes ☃ fallback test"])
    config = tokenizer.get_config()
    assert UnigramTokenizer.from_config(config)(text).to_list() == (
        tokenizer(text).to_list()
    )
    for i in range(_assets.KEPT):
        _assets.KNOWN.remember(f"another file {i}".encode())
    assert len(_assets.KNOWN) == _assets.KEPT
    orphan = UnigramTokenizer.from_config(config)
    with pytest.raises(ValueError, match="has no tokenizer.json yet"):
        orphan.get_config()
    # The next `get_config` keeps the text again.
    clone = UnigramTokenizer.from_config(tokenizer.get_config())
    assert clone(text).to_list() == tokenizer(text).to_list()
