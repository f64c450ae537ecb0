"""Vocabularies as Keras assets: `config.json` holds options and a SHA-256.

For every tokenizer that keeps its vocabulary as an asset: the config is
small and names the file by digest; the asset holds the file; a `.keras`
file saved by tf_input 0.1.0.dev0 (vocabulary inside the config) still
loads; and a `.keras` file whose asset is missing or altered fails when
it is loaded, with an error that names the file.

The files of tests/tokenizers/data were made by tf_input 0.1.0.dev0:

    vocab = {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "abc": 6,
             "<|endoftext|>": 7}
    bpe = BytePairTokenizer(vocab, ["a b", "Ġ ab", "ab c"],
                            add_special_tokens=True, name="byte_pair")
    keras.Sequential([bpe]).save("byte_pair_0.1.0.dev0.keras")
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                  "cat", "##s", "sat", "."]
    wp = WordPieceTokenizer(vocabulary, max_word_length=7, name="word_piece")
    keras.Sequential([wp]).save("word_piece_0.1.0.dev0.keras")

and unigram_0.1.0.dev0.keras by the code before JsonFileTokenizer joined
`VocabularyAsset` (the same asset and config key, saved by its own code):

    unigram = UnigramTokenizer(json.dumps(UNIGRAM_JSON), name="unigram")
    keras.Sequential([unigram]).save("unigram_0.1.0.dev0.keras")
"""

import hashlib
import json
import pathlib
import zipfile

import keras
import pytest

from tests.testing import sentencepiece_model
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import SentencePieceTokenizer
from tf_input.tokenizers import VocabularyTokenizer
from tf_input.tokenizers import WordPieceTokenizer
from tf_input.tokenizers import _assets
from tf_input.tokenizers.metaspace_byte_pair_tokenizer import (
    MetaspaceBytePairTokenizer,
)
from tf_input.tokenizers.unigram_tokenizer import UnigramTokenizer

DATA = pathlib.Path(__file__).parent / "data"
BPE_VOCAB = {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "abc": 6}
BPE_VOCAB["<|endoftext|>"] = 7
BPE_MERGES = ["a b", "Ġ ab", "ab c"]
WP_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s"]
WP_VOCAB += ["sat", "."]
TEXTS = ["abc abc", "ab<|endoftext|>", "The cats sat.", "dogs"]
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
S = "\u2581"
UNK = {"id": 0, "content": "<unk>", "special": True, "normalized": False}
UNIGRAM_JSON = {
    "model": {
        "type": "Unigram",
        "unk_id": 0,
        "byte_fallback": False,
        "vocab": [
            ["<unk>", 0.0], [S + "abc", -1.0], [S + "the", -1.5],
            ["s", -2.0], ["a", -3.0], ["b", -3.0], ["c", -3.0], [S, -2.5],
            ["cat", -2.0], [S + "sat", -2.0], [".", -2.0],
        ],
    },
    "normalizer": None,
    "pre_tokenizer": {
        "type": "Metaspace", "replacement": S, "prepend_scheme": "always",
        "split": True,
    },
    "decoder": {
        "type": "Metaspace", "replacement": S, "prepend_scheme": "always",
        "split": True,
    },
    "added_tokens": [UNK],
}  # fmt: skip
# Llama 2's shape: a Metaspace without split, the SentencePiece decoder.
METASPACE_BPE_JSON = {
    "model": {
        "type": "BPE",
        "unk_token": "<unk>",
        "fuse_unk": True,
        "vocab": {
            "<unk>": 0, S: 1, "a": 2, "b": 3, "c": 4, "ab": 5, S + "ab": 6,
            "abc": 7, S + "abc": 8,
        },
        "merges": [["a", "b"], [S, "ab"], ["ab", "c"], [S + "ab", "c"]],
    },
    "normalizer": None,
    "pre_tokenizer": {
        "type": "Metaspace", "replacement": S, "prepend_scheme": "first",
        "split": False,
    },
    "decoder": {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": S}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    },
    "added_tokens": [UNK],
}  # fmt: skip


def _byte_pair():
    return BytePairTokenizer(BPE_VOCAB, BPE_MERGES, name="byte_pair")


def _word_piece():
    return WordPieceTokenizer(WP_VOCAB, name="word_piece")


def _vocabulary():
    tokenizer = VocabularyTokenizer(name="vocabulary")
    tokenizer.adapt(TEXTS)
    return tokenizer


def _unigram():
    return UnigramTokenizer(json.dumps(UNIGRAM_JSON), name="unigram")


def _metaspace_byte_pair():
    text = json.dumps(METASPACE_BPE_JSON)
    return MetaspaceBytePairTokenizer(text, name="metaspace_byte_pair")


def _sentence_piece():
    proto = sentencepiece_model(
        ["the cat sat on the mat", "a dog sat on a log"] * 10,
        vocab_size=40,
        hard_vocab_limit=False,
    )
    return SentencePieceTokenizer(proto, name="sentence_piece")


# (make, asset file, config key of its digest)
FAMILIES = {
    "byte_pair": (_byte_pair, "vocabulary.json", "vocabulary_sha256"),
    "word_piece": (_word_piece, "vocabulary.json", "vocabulary_sha256"),
    "sentence_piece": (
        _sentence_piece,
        "sentencepiece.model",
        "proto_sha256",
    ),
    "vocabulary": (_vocabulary, "vocabulary.json", "vocabulary_sha256"),
    "unigram": (_unigram, "tokenizer.json", "tokenizer_json_sha256"),
    "metaspace_byte_pair": (
        _metaspace_byte_pair,
        "tokenizer.json",
        "tokenizer_json_sha256",
    ),
}
# The argument that the asset replaces, None in every config.
IN_THE_ASSET = ("vocabulary", "merges", "proto", "tokenizer_json")


@pytest.fixture
def fresh_process(monkeypatch):
    """Forgets the vocabularies this process remembers by digest (for
    same-process clones), as a process that only loads the file would."""

    def forget():
        monkeypatch.setattr(_assets, "KNOWN", _assets.Recent())

    return forget


def _save(tokenizer, path):
    keras.Sequential([tokenizer]).save(path)
    return path


def _rewrite(path, *, drop=(), replace=None):
    """The `.keras` archive at `path` without the members `drop`, with the
    contents of `replace` (`{member: bytes}`)."""
    replace = replace or {}
    with zipfile.ZipFile(path) as archive:
        members = [(i, archive.read(i.filename)) for i in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in members:
            if info.filename not in drop:
                archive.writestr(info, replace.get(info.filename, data))


def _asset_member(path, name):
    with zipfile.ZipFile(path) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith("/" + name)]
    return member


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_config_names_the_asset_by_digest(family, tmp_path):
    make, asset, key = FAMILIES[family]
    tokenizer = make()
    config = tokenizer.get_config()
    assert all(config.get(name) is None for name in IN_THE_ASSET)
    path = _save(tokenizer, tmp_path / "t.keras")
    with zipfile.ZipFile(path) as archive:
        data = archive.read(_asset_member(path, asset))
        saved = json.loads(archive.read("config.json"))
    assert hashlib.sha256(data).hexdigest() == config[key]
    assert len(json.dumps(saved)) < 4000
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded(TEXTS).to_list() == tokenizer(TEXTS).to_list()
    assert loaded.get_config() == config


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_keras_file_without_its_asset_fails_when_loaded(
    family, tmp_path, fresh_process
):
    make, asset, _ = FAMILIES[family]
    path = _save(make(), tmp_path / "t.keras")
    # The only asset of the archive: Keras calls no `load_assets` at all.
    _rewrite(path, drop=[_asset_member(path, asset)])
    fresh_process()
    with pytest.raises(ValueError, match=f"{asset}.*is missing") as info:
        keras.saving.load_model(path)
    assert family in str(info.value)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_keras_file_missing_one_of_two_assets_fails(
    family, tmp_path, fresh_process
):
    make, asset, _ = FAMILIES[family]
    other = _word_piece() if family != "word_piece" else _byte_pair()
    path = tmp_path / "t.keras"
    keras.Sequential([make(), other]).save(path)
    with zipfile.ZipFile(path) as archive:
        # Keras names a layer's asset folder after its class.
        (member,) = [
            n
            for n in archive.namelist()
            if n.endswith("/" + asset) and f"/{family}_tokenizer/" in n
        ]
    _rewrite(path, drop=[member])
    fresh_process()
    with pytest.raises(ValueError, match=f"{asset}.*is missing"):
        keras.saving.load_model(path)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("fresh", [False, True])
def test_an_altered_asset_fails_when_loaded(
    family, fresh, tmp_path, fresh_process
):
    make, asset, key = FAMILIES[family]
    tokenizer = make()
    path = _save(tokenizer, tmp_path / "t.keras")
    member = _asset_member(path, asset)
    with zipfile.ZipFile(path) as archive:
        data = archive.read(member)
    altered = data.replace(b"a", b"b", 1)
    assert altered != data
    _rewrite(path, replace={member: altered})
    if fresh:
        fresh_process()
    with pytest.raises(ValueError, match="SHA-256") as info:
        keras.saving.load_model(path)
    assert asset in str(info.value)
    assert tokenizer.get_config()[key] in str(info.value)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_layer_waiting_for_its_asset_says_so(family, tmp_path):
    make, asset, key = FAMILIES[family]
    tokenizer = make()
    config = {**tokenizer.get_config(), key: "0" * 64}
    layer = type(tokenizer).from_config(config)
    with pytest.raises(ValueError, match="yet: it was made by `from_config`"):
        layer(["x"])
    with pytest.raises(ValueError, match="yet"):
        layer.get_vocabulary()
    # An asset that is not what the config names is refused.
    folder = tmp_path / "assets"
    folder.mkdir()
    tokenizer.save_assets(str(folder))
    with pytest.raises(ValueError, match="SHA-256"):
        layer.load_assets(str(folder))


@pytest.mark.parametrize(
    "family, bad",
    [
        ("byte_pair", b"[1, 2]"),
        ("byte_pair", b"\xff"),
        ("word_piece", b"{}"),
        ("vocabulary", b'["<pad>", 1]'),
        ("unigram", b"\xff"),
        ("unigram", b"[1]"),
        ("metaspace_byte_pair", b'{"model": {"type": "BPE"}}'),
    ],
)
def test_an_unreadable_asset_names_the_file(family, bad, tmp_path):
    make, asset, key = FAMILIES[family]
    config = make().get_config()
    del config[key]  # No digest to check against: the contents are read.
    layer = type(make()).from_config(
        {**config, key: hashlib.sha256(bad).hexdigest()}
    )
    (tmp_path / asset).write_bytes(bad)
    with pytest.raises(ValueError, match=f"could not read .*{asset}"):
        layer.load_assets(str(tmp_path))


@pytest.mark.parametrize(
    "name, want",
    [
        ("byte_pair_0.1.0.dev0.keras", [[7, 6, 5, 2, 7], [7, 4, 7, 7]]),
        ("word_piece_0.1.0.dev0.keras", [[5, 6, 7, 8, 9], [1]]),
    ],
)
def test_keras_files_of_0_1_0_dev0_still_load(name, want, tmp_path):
    """Their configs hold the vocabulary itself; loaded and saved again,
    they hold a digest and the vocabulary is an asset."""
    with zipfile.ZipFile(DATA / name) as archive:
        old = json.loads(archive.read("config.json"))
    old_config = old["config"]["layers"][0]["config"]
    assert "vocabulary" in old_config
    texts = TEXTS[:2] if name.startswith("byte_pair") else TEXTS[2:]
    loaded = keras.saving.load_model(DATA / name).layers[0]
    assert loaded(texts).to_list() == want
    # The old config alone, too (what `from_config` gets from such a file).
    layer = keras.saving.deserialize_keras_object(old["config"]["layers"][0])
    assert layer(texts).to_list() == want
    again = _save(loaded, tmp_path / "again.keras")
    with zipfile.ZipFile(again) as archive:
        new = json.loads(archive.read("config.json"))
        assert any(n.endswith("/vocabulary.json") for n in archive.namelist())
    new_config = new["config"]["layers"][0]["config"]
    assert new_config["vocabulary"] is None
    assert len(new_config["vocabulary_sha256"]) == 64
    assert keras.saving.load_model(again).layers[0](texts).to_list() == want


def _layer_config(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("config.json"))


@pytest.mark.parametrize("fresh", [False, True])
def test_a_vocabulary_tokenizer_saved_before_adapt_loads_without_one(
    fresh, tmp_path, fresh_process
):
    """Its config names no file (digest None) and its `.keras` file holds
    none; it loads as it was saved, ready for `adapt`."""
    tokenizer = VocabularyTokenizer(split="character", name="vocabulary")
    config = tokenizer.get_config()
    assert config["vocabulary"] is None
    assert config["vocabulary_sha256"] is None
    clone = VocabularyTokenizer.from_config(config)
    assert (
        repr(clone)
        == "<VocabularyTokenizer name='vocabulary', no vocabulary yet>"
    )
    path = _save(tokenizer, tmp_path / "t.keras")
    with zipfile.ZipFile(path) as archive:
        assert not [n for n in archive.namelist() if n.startswith("assets/")]
    if fresh:
        fresh_process()
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded.get_config() == config
    with pytest.raises(ValueError, match="no vocabulary yet.*adapt"):
        loaded(["ab"])
    loaded.adapt(["ab"])
    assert loaded.get_vocabulary() == SPECIALS + ["a", "b"]
    assert loaded(["ba"]).to_list() == [[5, 4]]


def test_a_vocabulary_tokenizer_config_keeps_up_with_adapt(tmp_path):
    """`adapt` again changes the digest and the saved file."""
    tokenizer = _vocabulary()
    first = tokenizer.get_config()["vocabulary_sha256"]
    tokenizer.adapt(["other words"])
    second = tokenizer.get_config()["vocabulary_sha256"]
    assert first != second
    path = _save(tokenizer, tmp_path / "t.keras")
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded.get_vocabulary() == SPECIALS + ["other", "words"]


def test_vocabulary_tokenizer_configs_holding_the_vocabulary_still_load(
    tmp_path, fresh_process
):
    """Configs written before the vocabulary became an asset hold the
    token list itself (and a `.keras` file no asset)."""
    tokenizer = _vocabulary()
    tokens = tokenizer.get_vocabulary()
    old_config = {**tokenizer.get_config(), "vocabulary": tokens}
    del old_config["vocabulary_sha256"]
    fresh_process()
    layer = VocabularyTokenizer.from_config(old_config)
    assert layer.get_vocabulary() == tokens
    assert layer(TEXTS).to_list() == tokenizer(TEXTS).to_list()
    # The same as a `.keras` file: the old layer config, no asset.
    path = _save(tokenizer, tmp_path / "t.keras")
    saved = _layer_config(path)
    saved["config"]["layers"][0]["config"] = old_config
    _rewrite(
        path,
        drop=[_asset_member(path, "vocabulary.json")],
        replace={"config.json": json.dumps(saved).encode()},
    )
    fresh_process()
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded(TEXTS).to_list() == tokenizer(TEXTS).to_list()
    assert loaded.get_config() == tokenizer.get_config()


def test_a_unigram_keras_file_saved_before_the_mixin_still_loads(
    tmp_path, fresh_process
):
    """Its asset and config key are those of today's files."""
    want = _unigram()(TEXTS).to_list()
    config = _layer_config(DATA / "unigram_0.1.0.dev0.keras")
    old = config["config"]["layers"][0]["config"]
    assert old["tokenizer_json"] is None
    assert len(old["tokenizer_json_sha256"]) == 64
    fresh_process()  # The text comes from the asset.
    loaded = keras.saving.load_model(DATA / "unigram_0.1.0.dev0.keras")
    assert loaded.layers[0](TEXTS).to_list() == want
    again = _save(loaded.layers[0], tmp_path / "again.keras")
    assert keras.saving.load_model(again).layers[0](TEXTS).to_list() == want


def _with_added_tokens(count):
    """The small BPE with `count` added tokens after its vocabulary (Llama
    3 has 256 reserved ones), the first two of them in `TEXTS`."""
    added = [
        {"id": 8 + i, "content": f"<|reserved_{i}|>", "special": True}
        for i in range(count)
    ]
    return BytePairTokenizer(
        BPE_VOCAB, BPE_MERGES, added_tokens=added, name="byte_pair"
    )


ADDED_TEXTS = ["abc<|reserved_0|>", "<|reserved_1|> ab"]


def test_byte_pair_added_tokens_are_in_the_asset(tmp_path, fresh_process):
    tokenizer = _with_added_tokens(300)
    want = tokenizer(ADDED_TEXTS).to_list()
    assert want == [[6, 8], [9, 5]]
    config = tokenizer.get_config()
    assert config["added_tokens"] is None
    assert len(json.dumps(config)) < 2000
    path = _save(tokenizer, tmp_path / "t.keras")
    with zipfile.ZipFile(path) as archive:
        asset = json.loads(archive.read(_asset_member(path, "vocabulary.json")))
    assert len(asset["added_tokens"]) == 300
    fresh_process()
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded(ADDED_TEXTS).to_list() == want
    assert loaded.get_config() == config


def test_byte_pair_configs_holding_the_added_tokens_still_load(
    tmp_path, fresh_process
):
    """Configs written before the added tokens moved into the asset hold
    them, and their asset has only the vocabulary and merges."""
    tokenizer = _with_added_tokens(3)
    want = tokenizer(ADDED_TEXTS).to_list()
    asset = json.loads(tokenizer._asset_bytes())
    added = asset.pop("added_tokens")
    old_asset = json.dumps(asset).encode()
    old_config = {
        **tokenizer.get_config(),
        "added_tokens": added,
        "vocabulary_sha256": hashlib.sha256(old_asset).hexdigest(),
    }
    path = _save(tokenizer, tmp_path / "t.keras")
    saved = _layer_config(path)
    saved["config"]["layers"][0]["config"] = old_config
    _rewrite(
        path,
        replace={
            "config.json": json.dumps(saved).encode(),
            _asset_member(path, "vocabulary.json"): old_asset,
        },
    )
    fresh_process()
    loaded = keras.saving.load_model(path).layers[0]
    assert loaded(ADDED_TEXTS).to_list() == want
    # Saved again, the added tokens are in the asset.
    assert loaded.get_config() == tokenizer.get_config()
    # A clone in the same process, of the old config and asset.
    fresh_process()
    _assets.KNOWN.remember(old_asset)
    clone = BytePairTokenizer.from_config(old_config)
    assert clone(ADDED_TEXTS).to_list() == want
