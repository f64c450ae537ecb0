"""Eager calls of every tokenizer run one traced graph (base `Tokenizer`).

They must give exactly what the same call gives inside a graph, honour
`add_special_tokens` when it is changed after a call, and answer an empty
batch without a graph call.
"""

import json
import logging

import pytest
import tensorflow as tf

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import BytePairTokenizer
from tf_input import SentencePieceTokenizer
from tf_input import VocabularyTokenizer
from tf_input import WordPieceTokenizer
from tf_input import load_tokenizer

LINES = ["The cat sat.", "", "  héllo\tworld  ", "日本語 123 456"]


def _vocabulary():
    return VocabularyTokenizer(
        vocabulary=["<pad>", "<sos>", "<eos>", "<unk>", "The", "cat"]
    )


def _wordpiece():
    return WordPieceTokenizer.from_vocab_file(
        str(data_path("bert", "bert-base-uncased-vocab.txt"))
    )


def _byte_pair():
    return BytePairTokenizer.from_files(
        str(data_path("gpt2", "vocab.json")),
        str(data_path("gpt2", "merges.txt")),
    )


def _unigram():
    return SentencePieceTokenizer(
        str(data_path("sentencepiece", "albert-base-v2-spiece.model"))
    )


def _sentencepiece_bpe():
    return SentencePieceTokenizer(
        str(data_path("sentencepiece", "mistral-7b-v0.3-tokenizer.model"))
    )


MAKERS = {
    "vocabulary": _vocabulary,
    "wordpiece": pytest.param(_wordpiece, marks=requires_shared_data),
    "byte_pair": pytest.param(_byte_pair, marks=requires_shared_data),
    "unigram": pytest.param(_unigram, marks=requires_shared_data),
    "sentencepiece_bpe": pytest.param(
        _sentencepiece_bpe, marks=requires_shared_data
    ),
}


_BUILT = {}


def _built(make):
    """One tokenizer per kind for the module: building them is the slow
    part. Each test sets `add_special_tokens` itself."""
    if make not in _BUILT:
        _BUILT[make] = make()
    return _BUILT[make]


_GRAPHS = {}


def _in_graph(tokenizer, texts):
    """The same call traced by the user: `add_special_tokens` is read at
    trace time, so one trace per tokenizer and value."""
    key = (id(tokenizer), tokenizer.add_special_tokens)
    if key not in _GRAPHS:
        _GRAPHS[key] = tf.function(
            tokenizer.__call__,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
    return _GRAPHS[key](tf.constant(texts, tf.string))


def _same(a, b):
    assert isinstance(a, tf.RaggedTensor) and isinstance(b, tf.RaggedTensor)
    assert a.dtype == b.dtype == tf.int32
    assert a.row_splits.dtype == b.row_splits.dtype
    assert a.to_list() == b.to_list()


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_eager_equals_graph_and_follows_add_special_tokens(make):
    tokenizer = _built(make)
    for flag in [False, True, False]:
        # Changed after the first eager call: the eager path is traced per
        # value of the flag, never frozen at the first one.
        tokenizer.add_special_tokens = flag
        eager = tokenizer(LINES)
        _same(eager, _in_graph(tokenizer, LINES))
        scalar = tokenizer(LINES[0])
        assert scalar.dtype == tf.int32 and scalar.shape.rank == 1
        assert scalar.numpy().tolist() == eager[0].numpy().tolist()
    tokenizer.add_special_tokens = True
    wrapped = tokenizer([LINES[0]])[0].numpy().tolist()
    tokenizer.add_special_tokens = False
    plain = tokenizer([LINES[0]])[0].numpy().tolist()
    assert wrapped == tokenizer.start_ids + plain + tokenizer.end_ids


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_empty_batch(make):
    tokenizer = _built(make)
    for flag in [False, True]:
        tokenizer.add_special_tokens = flag
        for empty in ([], tf.constant([], tf.string)):
            _same(tokenizer(empty), _in_graph(tokenizer, []))
            assert tokenizer(empty).shape.as_list() == [0, None]
        # An all-empty batch skips the tokenizer's graph eagerly: the same
        # rows as the full computation, special tokens included.
        _same(tokenizer(["", ""]), _in_graph(tokenizer, ["", ""]))
        rows = tokenizer(["", ""]).to_list()
        ids = tokenizer.start_ids + tokenizer.end_ids if flag else []
        assert rows == [ids, ids]
    # Nothing traced for an empty batch: it is answered directly.
    tokenizer._eager = type(tokenizer._eager)()
    tokenizer([])
    assert not tokenizer._eager._graphs


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _tiny_tokenizer_json(path, letters):
    """A byte-level BPE `tokenizer.json` of its own vocabulary."""
    a, b = letters
    vocab = {a: 0, b: 1, a + b: 2}
    path.write_text(
        json.dumps(
            {
                "model": {"type": "BPE", "vocab": vocab, "merges": [[a, b]]},
                "pre_tokenizer": {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                },
                "decoder": {"type": "ByteLevel"},
            }
        )
    )
    return path


def test_five_tokenizers_called_eagerly_trace_no_warning(tmp_path):
    # TensorFlow counts the traces of a `tf.function` by its Python code:
    # one function per tokenizer, of the same code, warned "5 out of the
    # last 5 calls ... triggered tf.function retracing" at the fifth.
    handler = _Records()
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        for i, letters in enumerate(["ab", "cd", "ef", "gh", "ij", "kl"]):
            path = _tiny_tokenizer_json(tmp_path / f"{i}.json", letters)
            tokenizer = load_tokenizer(path)
            text = letters + letters[0]
            assert tokenizer([text]).to_list() == [[2, 0]]
            assert tokenizer(text).numpy().tolist() == [2, 0]
            assert tokenizer.detokenize([[2, 0]]).numpy().tolist() == [
                text.encode()
            ]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    retracing = [m for m in handler.messages if "retracing" in m]
    assert not retracing
