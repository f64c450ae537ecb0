import math

import numpy as np
import pytest

from tests import references
from tf_input.block import InputBlock
from tf_input.tokenizers import VocabularyTokenizer
from tf_input.trace import TraceRow
from tf_input.trace import format_rows
from tf_input.trace import trace

TEXT = "I love deep learning"


def tokenizer(**kwargs):
    result = VocabularyTokenizer(**kwargs)
    result.adapt([TEXT, "deep nets"])
    return result


def test_rows_match_direct_computation(capsys):
    tok = tokenizer(add_special_tokens=True)
    block = InputBlock(tok.vocabulary_size(), 8, dropout=0.5)
    rows = trace(TEXT, tok, block)
    assert all(isinstance(row, TraceRow) for row in rows)
    steps = [row.step for row in rows]
    assert steps == [
        "raw string",
        "tokens [S]",
        "ids [S]",
        "batch [B, S]",
        "token embedding [B, S, D]",
        "+ position (sinusoidal)",
        "output [B, S, D]",
    ]
    by_step = dict(zip(steps, rows))
    assert by_step["raw string"].value.item() == TEXT
    assert by_step["tokens [S]"].value.tolist() == [
        "<sos>",
        "I",
        "love",
        "deep",
        "learning",
        "<eos>",
    ]
    ids = tok(TEXT).numpy()
    np.testing.assert_array_equal(by_step["ids [S]"].value, ids)
    assert by_step["ids [S]"].dtype == "int32"
    assert by_step["batch [B, S]"].shape == (1, 6)
    table = block.token_embedding.embeddings.numpy().astype("float64")
    embedded = table[ids][None] * math.sqrt(8)
    row = by_step["token embedding [B, S, D]"]
    assert (row.shape, row.dtype) == ((1, 6, 8), "float32")
    np.testing.assert_allclose(row.value, embedded, rtol=1e-6)
    assert "sqrt(8) = 2.8284" in row.note
    positioned = embedded + references.sinusoid(np.arange(6), 8)[None]
    np.testing.assert_allclose(
        by_step["+ position (sinusoidal)"].value, positioned, atol=2e-6
    )
    # Inference mode: dropout is off, the output is the positioned value.
    output = by_step["output [B, S, D]"]
    np.testing.assert_allclose(output.value, positioned, atol=2e-6)
    assert "padding mask [[1, 1, 1, 1, 1, 1]]" in output.note
    printed = capsys.readouterr().out
    assert printed.strip() == format_rows(rows).strip()
    assert "token embedding [B, S, D]    [1, 6, 8]" in printed


def test_segments_positions_norm_and_rope():
    tok = tokenizer()
    block = InputBlock(
        tok.vocabulary_size(),
        4,
        position="learned",
        max_length=8,
        num_segments=2,
        positions_input=True,
        normalization="layer",
    )
    rows = trace(TEXT, tok, block, print_fn=None)
    steps = [row.step for row in rows]
    assert steps[4:] == [
        "token embedding [B, S, D]",
        "+ segment embedding",
        "+ position (learned)",
        "normalization (layer)",
        "output [B, S, D]",
    ]
    np.testing.assert_allclose(rows[-2].value, rows[-1].value, atol=1e-6)
    rope = InputBlock(tok.vocabulary_size(), 4, position="rope")
    rows = trace(TEXT, tok, rope, print_fn=None)
    assert rows[5].step == "+ position (rope)"
    assert "block.rotary" in rows[5].note
    np.testing.assert_array_equal(rows[5].value, rows[4].value)


def test_bad_arguments():
    tok = tokenizer()
    block = InputBlock(tok.vocabulary_size(), 4)
    with pytest.raises(TypeError, match=r"`text` must be one Python string"):
        trace(["a"], tok, block)
    with pytest.raises(TypeError, match=r"`tokenizer` must be a tf_input"):
        trace("a", "vocab.txt", block)
    with pytest.raises(TypeError, match=r"`block` must be a tf_input Inp"):
        trace("a", tok, "block")


def test_every_token_is_shown_and_long_rows_end_with_an_ellipsis():
    # The demo's question: 9 tokens, all shown, EOS included.
    question = "BOS NEGATIVE 30 subtract NEGATIVE 34 EOS"
    tok = VocabularyTokenizer(split="whitespace_digits")
    tok.adapt([question])
    block = InputBlock(tok.vocabulary_size(), 8)
    rows = trace(question, tok, block, print_fn=None)
    tokens = "['BOS', 'NEGATIVE', '3', '0', 'subtract', 'NEGATIVE', '3', "
    assert rows[1].sample() == tokens + "'4', 'EOS']"
    ids = tok(question).numpy().tolist()
    assert rows[2].sample() == str(ids)
    assert rows[3].sample() == str(ids)  # [1, S]: the one row
    # Longer than num_tokens: the first ones, then how many are left out.
    assert rows[2].sample(num_tokens=4) == (
        f"[{ids[0]}, {ids[1]}, {ids[2]}, {ids[3]}, … (5 more)]"
    )


def test_embedding_rows_say_which_position_and_features_are_shown():
    tok = tokenizer(add_special_tokens=True)
    block = InputBlock(tok.vocabulary_size(), 8)
    rows = trace(TEXT, tok, block, print_fn=None, num_values=3)
    embedding = rows[4]
    want = embedding.value[0, 0, :3]
    shown = embedding.sample(num_values=3)
    assert shown.startswith("pos 0, features 0-2 of 8: [")
    assert shown.endswith("] …")
    numbers = [float(x) for x in shown.split("[")[1].split("]")[0].split()]
    np.testing.assert_allclose(numbers, want, atol=1e-4)
    # All the features fit: no ellipsis.
    assert not embedding.sample(num_values=8).endswith("…")
    printed = format_rows(rows, num_values=3)
    assert "pos 0, features 0-2 of 8" in printed
