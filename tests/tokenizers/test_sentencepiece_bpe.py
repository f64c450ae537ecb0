"""SentencePiece BPE on the core-ops engine (`sentencepiece/_bpe.py`).

Parity with `sentencepiece` 0.2.3 on BPE models without normalization
rules (Mistral, Llama 2 style), trained here so that every case runs
without ../shared/data, and on the real Mistral models and corpora.
"""

import base64
import functools
import json
import random
import time
import zipfile

import keras
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
from tf_input import load_tokenizer
from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
from tf_input.tokenizers.sentencepiece._proto import _read_model

TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "def main():\n    return  1  +  2\n\n        pass",
    "    indented    code    with    runs    of    spaces",
    "Il était une fois un petit prince qui habitait une planète.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "吾輩は猫である。名前はまだ無い。凤姐儿笑道",
    "aaaa aaaa aaa bbbb abab ababab",
] * 8
TRICKY = [
    "",
    " ",
    "   ",
    "\t\n\r",
    "Hello world",
    "  leading and trailing  ",
    "    return  1  +  2",
    " " * 17 + "x" + " " * 9,
    "a\tb\nc\rd",
    "\x00\x01\x7f control",
    "ﬁne ﬁ Ⅳ ½ ＡＢＣ",
    "吾輩は猫である 凤姐儿 Сергей",
    "😀 👍🏽 \U00020000 \U0010ffff",
    "\u2581 literal \u2581\u2581",
    "\ufffd replacement \ue000",
    "<sep> @@ user<sep>@@x",
    "<s> </s> <unk> <0x41>",
    "aaaaaaaaaaaaa abababababab",
    "x" * 300,
    "The quick brown fox " * 20,
]
MODELS = {
    # Whitespace kept (runs of "▁" are pieces, merges cross "▁"), byte
    # fallback, user-defined pieces: Llama / Mistral style.
    "kept": dict(
        vocab_size=400,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        split_by_whitespace=False,
        allow_whitespace_only_pieces=True,
        byte_fallback=True,
        user_defined_symbols=["<sep>", "@@"],
    ),
    # Extra whitespace removed, no byte fallback (unknown -> unk id).
    "collapsed": dict(
        vocab_size=300,
        normalization_rule_name="identity",
        user_defined_symbols=["@@"],
    ),
    # No dummy prefix.
    "no_prefix": dict(
        vocab_size=500,
        normalization_rule_name="identity",
        add_dummy_prefix=False,
        byte_fallback=True,
    ),
}


@functools.lru_cache(maxsize=None)
def trained(name):
    return sentencepiece_model(
        TRAINING_TEXT,
        model_type="bpe",
        character_coverage=0.99,
        hard_vocab_limit=False,
        **MODELS[name],
    )


@functools.lru_cache(maxsize=None)
def pair(name):
    proto = trained(name)
    tokenizer = SentencePieceTokenizer(proto)
    assert tokenizer.uses_core_ops_only
    return tokenizer, spm.SentencePieceProcessor(model_proto=proto)


@functools.lru_cache(maxsize=None)
def mistral(folder, name):
    path = str(data_path(folder, name))
    tokenizer = SentencePieceTokenizer(path)
    assert tokenizer.uses_core_ops_only
    return tokenizer, spm.SentencePieceProcessor(model_file=path)


MISTRAL = [
    ("sentencepiece", "mistral-7b-v0.3-tokenizer.model"),
    ("llm/mistral_v1", "tokenizer.model"),
]


def as_lists(ids):
    return [list(map(int, row)) for row in ids.to_list()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trained_models_match_sentencepiece(name):
    tokenizer, reference = pair(name)
    assert as_lists(tokenizer(TRICKY)) == reference.encode(TRICKY)
    ids = tf.ragged.constant(reference.encode(TRICKY), tf.int32)
    decoded = tokenizer.detokenize(ids).numpy().tolist()
    assert decoded == [t.encode() for t in reference.decode(ids.to_list())]


@functools.lru_cache(maxsize=None)
def crafted():
    """The "kept" model plus pieces that cross "▁" and runs of "▁" that
    share one score (as Mistral's do: -1e9), and a piece whose score beats
    the pieces it is made of."""
    model = _read_model(trained("kept"))
    pieces = list(zip(model.pieces, model.scores, model.types))
    low = min(model.scores) - 1
    extra = [("\u2581" * n, low) for n in range(2, 9)]
    extra += [("e\u2581", -3.0), ("e\u2581\u2581", -2.5), ("s\u2581the", -2.0)]
    extra += [("\u2581\u2581a", low), ("a\u2581\u2581", low)]
    extra += [("abab", 5.0), ("ab", -50.0)]
    known = {p for p, _, _ in pieces}
    pieces += [(p, s, 1) for p, s in extra if p not in known]
    return model.serialize(pieces)


def test_merges_cross_spaces_and_equal_scores_go_leftmost():
    proto = crafted()
    tokenizer = SentencePieceTokenizer(proto)
    assert tokenizer.uses_core_ops_only
    reference = spm.SentencePieceProcessor(model_proto=proto)
    texts = [
        " " * n + "a" + " " * m + "e" * k
        for n in range(12)
        for m in (0, 1, 2, 5)
        for k in (0, 1)
    ]
    texts += ["the  cats  the", "abababab ab", "e  e   e    the", "a  a  "]
    got = as_lists(tokenizer(texts))
    assert got == reference.encode(texts)
    pieces = {reference.id_to_piece(i) for row in got for i in row}
    assert {"e\u2581\u2581", "\u2581\u2581\u2581\u2581"} <= pieces


@pytest.mark.parametrize("extra, fused, dense", [
    # A piece "xΩ" whose "Ω" is no piece: a chunk of several characters
    # may hold a character without a piece, so byte fallback stays a pass
    # after the merges.
    ([("x\u03a9", -1.0), ("\u03a9y", -1.5)], False, False),
    # A piece beyond the dense table's code points: one-character chunks
    # take the hash table.
    ([("\U000e0041", -1.0), ("a\U000e0041", -1.2)], True, False),
    # The "kept" model as it is (Mistral's case): fused and dense.
    ([], True, True),
])  # fmt: skip
def test_byte_fallback_in_the_chunk_assembly_and_after_it(extra, fused, dense):
    model = _read_model(trained("kept"))
    pieces = list(zip(model.pieces, model.scores, model.types))
    pieces += [(p, s, 1) for p, s in extra]
    proto = model.serialize(pieces)
    tokenizer = SentencePieceTokenizer(proto)
    engine = tokenizer._engine.char_bpe
    assert engine._fused == fused
    assert (getattr(engine, "_final_dense", None) is not None) == dense
    reference = spm.SentencePieceProcessor(model_proto=proto)
    texts = TRICKY + [
        "x\u03a9 \u03a9 \u03a9y x\u03a9y xx\u03a9\u03a9 \u03a9\u03a9y",
        "\U000e0041 a\U000e0041 \U000e0041\U000e0041 b\U000e0041a",
        "凤姐儿笑道 😀😀 x😀y \u03a9😀 a\U000e0041😀",
    ]
    assert as_lists(tokenizer(texts)) == reference.encode(texts)


@requires_shared_data
@pytest.mark.parametrize("folder, name", MISTRAL)
def test_mistral_tricky_texts_and_space_runs(folder, name):
    tokenizer, reference = mistral(folder, name)
    texts = TRICKY + [" " * n + "x" for n in range(100)]
    texts += ["a" + " " * n + "b" + " " * (n // 3) for n in range(70)]
    texts += ["\u2581" * n + " " * n for n in range(40)]
    texts += ["\t" * n + "def f():" for n in range(6)]
    assert as_lists(tokenizer(texts)) == reference.encode(texts)
    ids = reference.encode(texts)
    decoded = tokenizer.detokenize(tf.ragged.constant(ids, tf.int32))
    want = [t.encode() for t in reference.decode(ids)]
    assert decoded.numpy().tolist() == want


@requires_shared_data
def test_long_runs_of_spaces_take_linear_time():
    # Equal scores merge one at a time (leftmost first); runs of "▁" are
    # merged in blocks of 16 before the loop (`_runs_of_one_character`).
    tokenizer, reference = mistral(*MISTRAL[0])
    assert tokenizer._engine.char_bpe._runs is not None
    texts = [" " * 1_000_000, ("x" + " " * 37) * 20_000, " " * 4097 + "y"]
    start = time.perf_counter()
    got = as_lists(tokenizer(texts))
    seconds = time.perf_counter() - start
    assert got == reference.encode(texts)
    assert seconds < 30  # a loose bound: quadratic time would pass it


def test_invalid_utf8_is_replaced_byte_by_byte_like_sentencepiece():
    tokenizer, reference = pair("kept")
    raw = [b"\xff", b"a\xe2\x82b", b"\xed\xa0\x80", b"\xc0\xaf", b"ok\x80"]
    raw += [b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf z"]
    rng = random.Random(3)
    raw += [
        bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
        for _ in range(300)
    ]
    assert as_lists(tokenizer(tf.constant(raw))) == [
        reference.encode(r) for r in raw
    ]


lines = text_lines(
    TRICKY[:-2] + ["<sep>", "@@", "  ", "\t", "▁▁"], alphabet=" \u2581ab"
)


@settings(max_examples=500, deadline=None)
@given(batch=st.lists(lines, min_size=1, max_size=8))
def test_fuzz_matches_sentencepiece(batch):
    tokenizer, reference = pair("kept")
    assert as_lists(tokenizer(batch)) == reference.encode(batch)


@requires_shared_data
def test_mistral_v1_sample_of_every_corpus():
    tokenizer, reference = mistral(*MISTRAL[1])
    for name, texts in corpora().items():
        sample = texts[:: max(1, len(texts) // 300)]
        assert as_lists(tokenizer(sample)) == reference.encode(sample), name


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("folder, name", MISTRAL)
def test_mistral_every_corpus_line(folder, name):
    tokenizer, reference = mistral(folder, name)
    bad = {}
    for corpus, texts in corpora().items():
        want = reference.encode(texts)
        got = tokenizer(texts)
        lengths = np.array([len(w) for w in want])
        if (
            not np.array_equal(got.row_lengths().numpy(), lengths)
            or [i for w in want for i in w] != got.flat_values.numpy().tolist()
        ):
            bad[corpus] = sum(g != w for g, w in zip(as_lists(got), want))
        decoded = tokenizer.detokenize(tf.ragged.constant(want, tf.int32))
        assert decoded.numpy().tolist() == [
            t.encode() for t in reference.decode(want)
        ], corpus
    assert not bad, bad


def test_contract():
    # The SavedModel, moved, loads with a plain `import tensorflow`; the
    # `.keras` file's model comes from its asset (a fresh process has no
    # digest cache).
    tokenizer, reference = pair("kept")
    texts = ["Hello  world 凤姐儿 😀", "    return  1", "<sep>@@"] + TRICKY
    want = reference.encode(texts)
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference.decode(want),
    )


def test_models_with_normalization_rules_keep_the_library_op():
    # BPE models with a precompiled charsmap (nmt_nfkc) are not on the
    # engine yet; they stay exact on TF Text's op.
    proto = sentencepiece_model(
        TRAINING_TEXT, model_type="bpe", vocab_size=500, hard_vocab_limit=False
    )
    tokenizer = SentencePieceTokenizer(proto)
    assert not tokenizer.uses_core_ops_only
    reference = spm.SentencePieceProcessor(model_proto=proto)
    assert as_lists(tokenizer(TRICKY)) == reference.encode(TRICKY)


# --- Saving: the model is a Keras asset, paths respect safe mode ------------
def test_keras_file_keeps_the_model_as_an_asset(tmp_path):
    tokenizer, reference = pair("kept")
    path = tmp_path / "tokenizer.keras"
    keras.Sequential([tokenizer]).save(path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        config = archive.read("config.json")
        asset = [n for n in names if n.endswith("sentencepiece.model")]
        assert len(asset) == 1 and archive.read(asset[0]) == tokenizer.proto
    assert len(config) < 4000  # no base64 model inside
    assert base64.b64encode(tokenizer.proto[:64]) not in config
    loaded = keras.saving.load_model(path).layers[0]
    assert as_lists(loaded(TRICKY)) == reference.encode(TRICKY)


def test_a_corrupt_asset_is_a_clear_error(tmp_path):
    tokenizer, _ = pair("kept")
    layer = SentencePieceTokenizer.from_config(
        {**tokenizer.get_config(), "proto_sha256": "0" * 64}
    )
    with pytest.raises(ValueError, match="no model yet"):
        layer(["x"])
    (tmp_path / "sentencepiece.model").write_bytes(tokenizer.proto)
    with pytest.raises(ValueError, match="SHA-256"):
        layer.load_assets(str(tmp_path))


def test_old_base64_configs_still_load():
    tokenizer, reference = pair("kept")
    config = tokenizer.get_config()
    config["proto"] = base64.b64encode(tokenizer.proto).decode("ascii")
    del config["proto_sha256"]
    restored = SentencePieceTokenizer.from_config(config)
    assert as_lists(restored(TRICKY)) == reference.encode(TRICKY)


def test_a_path_in_a_config_is_refused(tmp_path):
    # A config may not make `load_model` read a file, in Keras' safe mode
    # or not; the error says how to build the tokenizer from the file.
    tokenizer, reference = pair("kept")
    path = tmp_path / "x.model"
    path.write_bytes(tokenizer.proto)
    config = {**tokenizer.get_config(), "proto": str(path)}
    with pytest.raises(ValueError, match="may not make Keras read a file"):
        SentencePieceTokenizer.from_config(config)
    serialized = keras.saving.serialize_keras_object(tokenizer)
    serialized["config"] = config
    for safe_mode in (True, False):
        with pytest.raises(ValueError, match=r"SentencePieceTokenizer\("):
            keras.saving.deserialize_keras_object(
                serialized, safe_mode=safe_mode
            )
    restored = SentencePieceTokenizer(str(path))
    assert as_lists(restored(TRICKY)) == reference.encode(TRICKY)


# --- The Mistral v1 tokenizer.json, against HF tokenizers --------------------
MISTRAL_JSON = data_path("llm", "mistral_v1", "tokenizer.json")
# v0.3: no normalizer, a Metaspace("▁", prepend_scheme="first") instead.
JSONS = {
    "v1": MISTRAL_JSON,
    "v0.3": data_path("sentencepiece", "mistral-7b-v0.3-tokenizer.json"),
}


@functools.lru_cache(maxsize=None)
def json_pair(version="v1"):
    import tokenizers

    tokenizer = load_tokenizer(JSONS[version])
    assert type(tokenizer).__name__ == "MetaspaceBytePairTokenizer"
    assert tokenizer.uses_core_ops_only
    return tokenizer, tokenizers.Tokenizer.from_file(str(JSONS[version]))


def hf_ids(reference, texts, add_special_tokens=False):
    return [
        e.ids
        for e in reference.encode_batch(
            texts, add_special_tokens=add_special_tokens
        )
    ]


JSON_TRICKY = TRICKY + [
    "<s>Hello</s> <unk>",
    " <s> x",
    "a<s>",
    " " * 9 + "indented",
    "\u2581\u2581x",
]


@requires_shared_data
@pytest.mark.parametrize("version", sorted(JSONS))
def test_mistral_json_tricky_texts_and_decoding(version):
    tokenizer, reference = json_pair(version)
    want = hf_ids(reference, JSON_TRICKY)
    assert as_lists(tokenizer(JSON_TRICKY)) == want
    with_bos = hf_ids(reference, JSON_TRICKY, add_special_tokens=True)
    assert tokenizer.start_ids == [1] and tokenizer.end_ids == []
    assert all(w == [1] + v for w, v in zip(with_bos, want))
    decoded = tokenizer.detokenize(tf.ragged.constant(want, tf.int32))
    assert decoded.numpy().tolist() == [
        t.encode() for t in reference.decode_batch(want, False)
    ]
    # Byte pieces that do not form UTF-8 decode as HF's ByteFallback does.
    ids = [[35, 250, 264], [240, 162, 160], [243, 162], [28705, 1]]
    decoded = tokenizer.detokenize(tf.ragged.constant(ids, tf.int32))
    assert decoded.numpy().tolist() == [
        t.encode() for t in reference.decode_batch(ids, False)
    ]


@requires_shared_data
@pytest.mark.parametrize("version", sorted(JSONS))
def test_mistral_json_invalid_utf8_as_python_replace(version):
    tokenizer, reference = json_pair(version)
    rng = random.Random(5)
    raw = [
        bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
        for _ in range(200)
    ]
    texts = [r.decode("utf-8", "replace") for r in raw]
    assert as_lists(tokenizer(tf.constant(raw))) == hf_ids(reference, texts)


@requires_shared_data
@settings(max_examples=500, deadline=None)
@given(batch=st.lists(lines, min_size=1, max_size=8))
def test_fuzz_mistral_json_matches_hf(batch):
    for version in sorted(JSONS):
        tokenizer, reference = json_pair(version)
        assert as_lists(tokenizer(batch)) == hf_ids(reference, batch)


@requires_shared_data
@pytest.mark.parametrize("version", sorted(JSONS))
def test_mistral_json_sample_of_every_corpus(version):
    tokenizer, reference = json_pair(version)
    for name, texts in corpora().items():
        sample = texts[:: max(1, len(texts) // 300)]
        assert as_lists(tokenizer(sample)) == hf_ids(reference, sample), name


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("version", sorted(JSONS))
def test_mistral_json_every_corpus_line(version):
    tokenizer, reference = json_pair(version)
    bad = {}
    for corpus, texts in corpora().items():
        want = hf_ids(reference, texts)
        got = as_lists(tokenizer(texts))
        bad[corpus] = sum(g != w for g, w in zip(got, want))
        decoded = tokenizer.detokenize(tf.ragged.constant(want, tf.int32))
        assert decoded.numpy().tolist() == [
            t.encode() for t in reference.decode_batch(want, False)
        ], corpus
    assert not any(bad.values()), bad


# The same class's contract runs every time on Gemma's layouts
# (test_metaspace_byte_pair.py); Mistral's file with the slow tests.
@pytest.mark.slow
@requires_shared_data
def test_mistral_json_contract(tmp_path):
    tokenizer, reference = json_pair()
    path = tmp_path / "tokenizer.keras"
    keras.Sequential([tokenizer]).save(path)
    with zipfile.ZipFile(path) as archive:
        assert len(archive.read("config.json")) < 4000
    texts = ["Hello  world 凤姐儿 😀", " <s>x"] + JSON_TRICKY
    want = hf_ids(reference, texts)
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference.decode_batch(want, False),
    )


@requires_shared_data
def test_bad_sentencepiece_style_json_names_the_path(tmp_path):
    text = MISTRAL_JSON.read_text(encoding="utf-8")
    truncated = tmp_path / "truncated" / "tokenizer.json"
    truncated.parent.mkdir()
    truncated.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match="truncated") as info:
        load_tokenizer(truncated)
    assert str(truncated) in str(info.value)
    data = json.loads(text)
    data["model"]["merges"][5] = "▁t nosuchtoken"
    broken = tmp_path / "broken" / "tokenizer.json"
    broken.parent.mkdir()
    broken.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="merge 5") as info:
        load_tokenizer(broken)
    assert str(broken) in str(info.value)
