"""SentencePiece-style BPE `tokenizer.json` files in every layout HF writes.

The layouts of transformers' converters for SentencePiece BPE models,
built here with HF `tokenizers`' own classes on a BPE trained here (and,
with ../shared/data, on Mistral v0.3's vocabulary), each checked against
HF: Gemma 3 (no normalizer, `Split(" ", MergedWithPrevious)`, decoder
Replace + ByteFallback + Fuse), the earlier Gemma (normalizer
`Replace(" ", "▁")`, no pre-tokenizer, the same decoder, "\\t" as a piece
in place of `<0x09>`, non-special added tokens), Llama legacy
(`Prepend` + `Replace`, decoder with `Strip`), Llama without legacy
(`Metaspace(split=false)`) and the generic converter's BPE (`Metaspace`
with `split`, the `Metaspace` decoder, no byte fallback).
"""

import functools
import json
import pathlib
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from tokenizers import AddedToken
from tokenizers import Regex
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors
from tokenizers import trainers

from tests.shared_data import corpora
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tests.testing import run_tokenizer_test
from tests.testing import text_lines
from tests.tokenizers.test_sentencepiece_bpe import (
    TRAINING_TEXT as SENTENCEPIECE_TEXT,
)
from tests.tokenizers.test_sentencepiece_bpe import (
    TRICKY as SENTENCEPIECE_TRICKY,
)
from tf_input import load_tokenizer

SPACE = "\u2581"
TRAINING_TEXT = (
    SENTENCEPIECE_TEXT
    + [
        "<h1>Title</h1>\n\n<table><tr><td>x</td></tr></table>",
    ]
    * 8
)
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
# Gemma's added tokens: turn markers (special), runs of "\n" and of "▁"
# and HTML tags (not special).
ADDED = (
    [AddedToken(t, special=True) for t in ("<start_of_turn>", "<end_of_turn>")]
    + [
        AddedToken("\n" * n, special=False, normalized=False)
        for n in range(2, 8)
    ]
    + [
        AddedToken(SPACE * n, special=False, normalized=False)
        for n in range(2, 8)
    ]
    + [
        AddedToken(t, special=False, normalized=False)
        for t in ("<h1>", "</h1>", "<table>")
    ]
)
TRICKY = SENTENCEPIECE_TRICKY + [
    "a\tb\nc\rd\t\t",
    "\u2581\u2581\u2581x",
    "<bos>Hello<eos> <unk>",
    "<start_of_turn>user\nhi<end_of_turn>\n\n\n<h1>x</h1>\n\n",
    "<table> <table><h1></h1>",
]


def section(name, component):
    """The `tokenizer.json` section `name` that HF writes for `component`."""
    tokenizer = Tokenizer(models.BPE())
    setattr(tokenizer, name, component)
    return json.loads(tokenizer.to_str())[name]


REPLACE_FALLBACK_FUSE = [
    decoders.Replace(SPACE, " "),
    decoders.ByteFallback(),
    decoders.Fuse(),
]
# The sections of each layout (None: the section is null).
LAYOUTS = {
    "gemma3": dict(
        normalizer=None,
        pre_tokenizer=pre_tokenizers.Split(" ", "merged_with_previous"),
        decoder=decoders.Sequence(REPLACE_FALLBACK_FUSE),
    ),
    "gemma": dict(
        normalizer=normalizers.Replace(" ", SPACE),
        pre_tokenizer=None,
        decoder=decoders.Sequence(REPLACE_FALLBACK_FUSE),
    ),
    "llama_legacy": dict(
        normalizer=normalizers.Sequence(
            [normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)]
        ),
        pre_tokenizer=None,
        decoder=decoders.Sequence(
            REPLACE_FALLBACK_FUSE + [decoders.Strip(" ", 1, 0)]
        ),
    ),
    "llama": dict(
        normalizer=None,
        pre_tokenizer=pre_tokenizers.Metaspace(
            prepend_scheme="first", split=False
        ),
        decoder=decoders.Sequence(
            REPLACE_FALLBACK_FUSE + [decoders.Strip(" ", 1, 0)]
        ),
    ),
    "spm": dict(
        normalizer=normalizers.Sequence(
            [
                normalizers.Strip(left=False, right=True),
                normalizers.Replace(Regex(" {2,}"), SPACE),
            ]
        ),
        pre_tokenizer=pre_tokenizers.Metaspace(prepend_scheme="always"),
        decoder=decoders.Metaspace(prepend_scheme="always"),
    ),
}


def with_layout(data, layout, bos="<bos>"):
    """A copy of a parsed `tokenizer.json` in `layout`: its sections, and
    for "gemma" Gemma's vocabulary quirk ("\\t" in place of `<0x09>`) and
    added tokens; "spm" has no byte fallback."""
    data = json.loads(json.dumps(data))
    for name, component in LAYOUTS[layout].items():
        data[name] = None if component is None else section(name, component)
    model = data["model"]
    if layout == "spm":
        model["byte_fallback"] = False
        model["fuse_unk"] = True
    if layout == "gemma":
        vocab = model["vocab"]
        vocab["\t"] = vocab.pop("<0x09>")
    tokenizer = Tokenizer.from_str(json.dumps(data))
    if layout.startswith("gemma"):
        tokenizer.add_tokens(ADDED)
    if bos in model["vocab"]:
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, model["vocab"][bos])]
        )
    return json.loads(tokenizer.to_str())


@functools.lru_cache(maxsize=None)
def trained_file():
    """A BPE over characters trained on `TRAINING_TEXT` (line = one word,
    merges across "▁"), plus the 256 byte tokens: the parsed file."""
    tokenizer = Tokenizer(
        models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    )
    tokenizer.normalizer = normalizers.Replace(" ", SPACE)
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=SPECIALS, show_progress=False
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    data = json.loads(tokenizer.to_str())
    vocab = data["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    return data


@functools.lru_cache(maxsize=None)
def _pair(text):
    """`(ours, HF's)` for a `tokenizer.json` text, loaded from a file."""
    folder = pathlib.Path(tempfile.mkdtemp())
    path = folder / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    tokenizer = load_tokenizer(path)
    assert type(tokenizer).__name__ == "MetaspaceBytePairTokenizer"
    assert tokenizer.uses_core_ops_only
    return tokenizer, Tokenizer.from_str(text)


def trained(layout):
    """`(ours, HF's)` for the trained BPE in `layout`."""
    return _pair(json.dumps(with_layout(trained_file(), layout)))


@functools.lru_cache(maxsize=None)
def mistral(layout):
    """`(ours, HF's)` for Mistral v0.3's vocabulary in `layout`."""
    path = data_path("sentencepiece", "mistral-7b-v0.3-tokenizer.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return _pair(json.dumps(with_layout(data, layout, bos="<s>")))


def hf_ids(reference, texts, add_special_tokens=False):
    encoded = reference.encode_batch(
        texts, add_special_tokens=add_special_tokens
    )
    return [e.ids for e in encoded]


def as_lists(ids):
    return [list(map(int, row)) for row in ids.to_list()]


def check_decoding(tokenizer, reference, ids):
    ragged = tf.ragged.constant(ids, tf.int32, inner_shape=())
    for skip in (False, True):
        got = tokenizer.detokenize(ragged, skip_special_tokens=skip)
        want = reference.decode_batch(ids, skip_special_tokens=skip)
        assert got.numpy().tolist() == [t.encode() for t in want]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layouts_match_hf(layout):
    tokenizer, reference = trained(layout)
    want = hf_ids(reference, TRICKY)
    assert as_lists(tokenizer(TRICKY)) == want
    check_decoding(tokenizer, reference, want)
    tokenizer.add_special_tokens = True
    try:
        with_bos = hf_ids(reference, TRICKY, add_special_tokens=True)
        assert as_lists(tokenizer(TRICKY)) == with_bos
    finally:
        tokenizer.add_special_tokens = False
    assert all(w[0] == 2 and w[1:] == v for w, v in zip(with_bos, want))


def test_gemma_layouts_keep_their_added_tokens_and_tab_piece():
    for layout in ("gemma", "gemma3"):
        tokenizer, reference = trained(layout)
        texts = ["\n\n\n\n x\t<h1>", SPACE * 9 + "<end_of_turn>\t"]
        want = hf_ids(reference, texts)
        assert as_lists(tokenizer(texts)) == want
        tokens = {reference.id_to_token(i) for row in want for i in row}
        assert {"\n" * 4, "<h1>", "<end_of_turn>"} <= tokens
        if layout == "gemma":
            assert "\t" in tokens and SPACE * 7 in tokens


lines = text_lines(
    ["<bos>", "<start_of_turn>", "\n\n", "<h1>", "\t", "<0x41>"],
    alphabet=" \u2581ab\n\t",
)


# Gemma's layouts in every run; the converters' other layouts, whose
# engine paths these share, with the slow tests.
FUZZED = [
    layout
    if layout in ("gemma3", "gemma")
    else pytest.param(layout, marks=pytest.mark.slow)
    for layout in sorted(LAYOUTS)
]


@pytest.mark.parametrize("layout", FUZZED)
@settings(max_examples=150, deadline=None)
@given(batch=st.lists(lines, min_size=1, max_size=8))
def test_fuzz_matches_hf(layout, batch):
    tokenizer, reference = trained(layout)
    want = hf_ids(reference, batch)
    assert as_lists(tokenizer(batch)) == want
    check_decoding(tokenizer, reference, want)


def test_every_code_point_matches_hf():
    # Byte fallback for every character without a piece, in lines of 256
    # consecutive code points (surrogates left out: no UTF-8 holds them).
    points = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    texts = [
        "".join(map(chr, points[i : i + 256]))
        for i in range(0, len(points), 256)
    ]
    for layout in ("gemma3", "gemma"):
        tokenizer, reference = trained(layout)
        want = hf_ids(reference, texts)
        got = tokenizer(texts)
        assert got.row_lengths().numpy().tolist() == [len(w) for w in want]
        assert got.flat_values.numpy().tolist() == [i for w in want for i in w]


def test_contract():
    # The SavedModel, moved, loads with a plain `import tensorflow`.
    tokenizer, reference = trained("gemma3")
    texts = ["Hello  world 凤姐儿 😀", "<start_of_turn>x\n\n"] + TRICKY
    want = hf_ids(reference, texts)
    run_tokenizer_test(
        tokenizer,
        texts,
        expected_ids=want,
        expected_detokenized=reference.decode_batch(want, False),
    )


# --- Byte fallback: only the byte tokens a text needs must exist -------------
def without(tokens):
    """The trained "gemma3" file with `tokens` gone from the vocabulary
    (their ids left unused)."""
    data = with_layout(trained_file(), "gemma3")
    for token in tokens:
        del data["model"]["vocab"][token]
    return _pair(json.dumps(data))


def test_a_missing_byte_token_is_an_error_only_where_a_text_needs_it():
    tokenizer, reference = without(["<0xC3>", "<0x09>"])
    assert as_lists(tokenizer([""])) == [[]]
    fine = ["plain ascii", "凤姐儿 😀", "é is in the vocabulary"]
    assert "é" in trained_file()["model"]["vocab"]
    assert as_lists(tokenizer(fine)) == hf_ids(reference, fine)
    for text in ["a\tb", "ü"]:  # <0x09>; ü is C3 BC
        name = "<0x09>" if "\t" in text else "<0xC3>"
        with pytest.raises(tf.errors.InvalidArgumentError, match=name):
            tokenizer([text])
        graph = tf.function(lambda t: tokenizer(t).flat_values)
        with pytest.raises(tf.errors.InvalidArgumentError, match=name):
            graph(tf.constant([text]))
    # Decoding never needs them.
    check_decoding(tokenizer, reference, [[35, 36, 37]])


# --- What is not supported is named -------------------------------------------
@pytest.mark.parametrize("section, value, match", [
    (
        "pre_tokenizer",
        {"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": SPACE, "split": False},
            {"type": "Digits", "individual_digits": True},
        ]},
        "a Metaspace together with other pre-tokenizers",
    ),
    (
        "pre_tokenizer",
        {"type": "ByteLevel", "add_prefix_space": False},
        "a ByteLevel pre-tokenizer is not supported for a SentencePiece",
    ),
    (
        "pre_tokenizer",
        {"type": "BertPreTokenizer"},
        "the pre-tokenizer type 'BertPreTokenizer' is not supported",
    ),
    (
        "decoder",
        {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Nope"}]},
        "the decoder type 'Nope' is not supported",
    ),
    (
        "decoder",
        {"type": "Strip", "content": " ", "start": "1", "stop": 0},
        "a Strip decoder needs one character 'content' and integers",
    ),
])  # fmt: skip
def test_unsupported_sections_are_named(tmp_path, section, value, match):
    data = with_layout(trained_file(), "gemma3")
    data[section] = value
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        load_tokenizer(path)
    assert str(path) in str(info.value)


# --- Mistral v0.3's vocabulary in the Gemma layouts, on the corpora -----------
GEMMA_LAYOUTS = ["gemma3", "gemma"]
CORPORA = [
    "tinyshakespeare.txt",
    "wikitext-2-raw-test.txt",
    "hongloumeng.txt",
    "emoji-test.txt",
]


@requires_shared_data
@pytest.mark.parametrize(
    "layout", ["gemma3", pytest.param("gemma", marks=pytest.mark.slow)]
)
def test_mistral_vocabulary_sample_of_every_corpus(layout):
    tokenizer, reference = mistral(layout)
    for name, texts in corpora().items():
        sample = texts[:: max(1, len(texts) // 200)] + TRICKY
        want = hf_ids(reference, sample)
        assert as_lists(tokenizer(sample)) == want, name
        check_decoding(tokenizer, reference, want)


@pytest.mark.slow
@requires_shared_data
@pytest.mark.parametrize("layout", GEMMA_LAYOUTS)
def test_mistral_vocabulary_every_corpus_line(layout):
    tokenizer, reference = mistral(layout)
    texts = corpora()
    bad = {}
    for name in CORPORA:
        want = hf_ids(reference, texts[name])
        got = tokenizer(texts[name])
        lengths = np.array([len(w) for w in want])
        same = np.array_equal(got.row_lengths().numpy(), lengths) and (
            got.flat_values.numpy().tolist() == [i for w in want for i in w]
        )
        if not same:
            bad[name] = sum(g != w for g, w in zip(as_lists(got), want))
        check_decoding(tokenizer, reference, want)
    assert not bad, bad
