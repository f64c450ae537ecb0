"""HF decoders in the graph (`hf.decoders.Decoder`) against HF's own.

Each decoder HF defines, alone and in the chains real files hold, on
token lists drawn from pieces that each decoder treats specially; the
reference is the `tokenizers` decoder object's `decode`.
"""

import json

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from tokenizers import Regex
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models

from tf_input.tokenizers.hf.decoders import Decoder
from tf_input.tokenizers.hf.spec import SpecError

# Tokens that some decoder treats specially, and plain ones.
PIECES = [
    "a", "bc", "é", "凤", "😀", " ", "  ", "\u2581", "\u2581a", "a\u2581",
    "\u2581\u2581b", "<0x41>", "<0x0a>", "<0xE2>", "<0x82>", "<0xAC>",
    "<0xC3>", "<0xFF>", "<0x+A>", "<0x4G>", "<0x41", "##", "##ab", "@@x",
    " .", ".", " ?", "n't", " n't", " 's", "'", " ' ", " do not", "do",
    "<pad>", "|", "a|b", "</w>", "ab</w>", "Ġ", "Ġthe", "Ã©", "ð", "Ċ",
    "\\1", "$1",
]  # fmt: skip
SPACE = "\u2581"
LLAMA = [
    decoders.Replace(SPACE, " "),
    decoders.ByteFallback(),
    decoders.Fuse(),
    decoders.Strip(" ", 1, 0),
]
DECODERS = {
    "byte_fallback": decoders.ByteFallback(),
    "fuse": decoders.Fuse(),
    "replace": decoders.Replace(SPACE, " "),
    "replace_regex": decoders.Replace(Regex("[ab]+"), "\\1$"),
    "strip_start": decoders.Strip(" ", 1, 0),
    "strip_both": decoders.Strip("a", 2, 1),
    "metaspace": decoders.Metaspace(),
    "metaspace_first": decoders.Metaspace(prepend_scheme="first"),
    "metaspace_never": decoders.Metaspace(prepend_scheme="never"),
    "byte_level": decoders.ByteLevel(),
    "word_piece": decoders.WordPiece(),
    "word_piece_plain": decoders.WordPiece(prefix="@@", cleanup=False),
    "ctc": decoders.CTC(),
    "ctc_plain": decoders.CTC(pad_token="a", cleanup=False),
    "bpe": decoders.BPEDecoder(),
    # The chains of real files: Llama / Mistral, Gemma (no Strip), and
    # orders no converter writes.
    "llama": decoders.Sequence(LLAMA),
    "gemma": decoders.Sequence(LLAMA[:3]),
    "reversed": decoders.Sequence(LLAMA[::-1]),
    "fallback_then_metaspace": decoders.Sequence(
        [decoders.ByteFallback(), decoders.Metaspace()]
    ),
    "fuse_then_word_piece": decoders.Sequence(
        [decoders.Fuse(), decoders.WordPiece(), decoders.Strip("a", 0, 2)]
    ),
    "byte_level_then_bpe": decoders.Sequence(
        [decoders.ByteLevel(), decoders.BPEDecoder(suffix="b")]
    ),
    "nested": decoders.Sequence(
        [decoders.Sequence([decoders.CTC()]), decoders.Sequence(LLAMA)]
    ),
}


def description(decoder):
    """The `tokenizer.json` `decoder` section HF writes for `decoder`."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.decoder = decoder
    return json.loads(tokenizer.to_str())["decoder"]


def graph_decode(spec, rows):
    """`Decoder(spec)` on token lists (each token's id: its index)."""
    tokens = sorted({t for row in rows for t in row})
    index = {t: i for i, t in enumerate(tokens)}
    ids = tf.ragged.constant(
        [[index[t] for t in row] for row in rows],
        tf.int32,
        row_splits_dtype=tf.int64,
        inner_shape=(),
    )
    decoded = Decoder(spec, tokens or [""])(ids).numpy().tolist()
    return [d.decode("utf-8") for d in decoded]


def check_decoder(decoder, batch):
    """`Decoder` gives HF's decode on each row where HF gives one (its
    `Strip` with a `stop` panics on a token of `content` only that is
    shorter than `start + stop`, or an empty one)."""
    got = graph_decode(description(decoder), batch)
    for row, text in zip(batch, got):
        try:
            want = decoder.decode(row)
        except BaseException:  # pyo3's PanicException derives from it
            assert decoder.__class__.__name__ in ("Strip", "Sequence")
            continue
        assert text == want, row


rows = st.lists(
    st.lists(
        st.one_of(
            st.sampled_from(PIECES),
            st.text(st.characters(codec="utf-8"), max_size=3),
        ),
        max_size=8,
    ),
    min_size=1,
    max_size=6,
)


# Orders no converter writes, made to test the chaining itself: with the
# slow tests (the chains of real files run every time).
SYNTHETIC = {
    "reversed",
    "nested",
    "fallback_then_metaspace",
    "byte_level_then_bpe",
    "fuse_then_word_piece",
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow)
        if name in SYNTHETIC
        else name
        for name in sorted(DECODERS)
    ],
)
@settings(max_examples=60, deadline=None)
@given(batch=rows)
def test_decoders_match_hf(name, batch):
    check_decoder(DECODERS[name], batch)


def test_edge_rows_match_hf():
    # Empty rows, one token, runs of byte tokens that are and are not
    # UTF-8 (one U+FFFD per byte token), byte tokens across rows.
    batch = [
        [],
        [""],
        ["<0xE2>", "<0x82>", "<0xAC>", "<0xE2>", "<0x82>"],
        ["<0xE2>"],
        ["<0x82>", "<0xAC>", "x", "<0x41>"],
        [SPACE, SPACE + "a", "a" + SPACE],
    ]
    for decoder in DECODERS.values():
        check_decoder(decoder, batch)


def test_no_decoder_joins_tokens_with_spaces():
    # HF's `decode` without a decoder; an empty Sequence joins with "".
    batch = [["a", "b", SPACE], []]
    assert graph_decode(None, batch) == ["a b \u2581", ""]
    empty = {"type": "Sequence", "decoders": []}
    assert graph_decode(empty, batch) == ["ab\u2581", ""]


@pytest.mark.parametrize("spec, match", [
    ({"type": "Unknown"}, "the decoder type 'Unknown' is not supported"),
    (
        {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "X"}]},
        "decoder type 'X' is not supported: supported are ByteLevel, ",
    ),
    ({"type": "Strip", "content": "ab", "start": 1, "stop": 0}, "one charac"),
    ({"type": "Strip", "content": " ", "start": -1, "stop": 0}, ">= 0"),
    ({"type": "Strip", "content": " ", "start": 1001, "stop": 0}, "1000"),
    ({"type": "BPEDecoder", "suffix": ""}, "'suffix' must be a non-empty"),
    ({"type": "CTC", "word_delimiter_token": 3}, "'word_delimiter_token'"),
    ({"type": "WordPiece", "cleanup": "yes"}, "'cleanup' must be true"),
    ({"type": "Replace", "pattern": {"Regex": "a*"}, "content": ""}, "empty"),
    ({"type": "Metaspace", "replacement": "_"}, "replacement"),
])  # fmt: skip
def test_unsupported_decoders_are_named(spec, match):
    with pytest.raises(SpecError, match=match):
        Decoder(spec, ["a"])
