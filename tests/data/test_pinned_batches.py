"""Every batch of `make_dataset`, pinned: tasks x batching modes x options.

The fixture (`fixtures/pinned_batches.json`, written by
`python -m tests.data.pinned`) holds a SHA-256 of each configuration's
batches and its `stats`, computed by the code before the graph-size work
on the chunk functions. Any change to the chunk functions must leave them
bit for bit as they were (the digest covers features and labels; sample
weights are checked against their rule). A few configurations run in the
default suite; the rest are `slow`.
"""

import json

import pytest

from tests.data import pinned
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import WordPieceTokenizer
from tf_input.data import make_dataset

DEFAULT = {
    "lm-max_length",
    "lm-longest",
    "lm-bucket",
    "lm-pack",
    "lm-pack-512",
    "pairs-bucket",
}
EXPECTED = json.loads(pinned.FIXTURE.read_text())
# The corpus keeps its blank lines on purpose: they are skipped.
pytestmark = pytest.mark.filterwarnings(
    "ignore::tf_input.data.SkippedExamplesWarning"
)


@pytest.fixture(scope="module")
def setting():
    tokenizer = WordPieceTokenizer.from_vocab_file(
        str(data_path("bert", "bert-base-uncased-vocab.txt"))
    )
    return tokenizer, pinned.configurations(pinned.corpus())


def test_fixture_covers_every_configuration():
    names = set(pinned.configurations([""] * 4))
    assert names == set(EXPECTED)
    assert DEFAULT <= names


@requires_shared_data
@pytest.mark.parametrize(
    "name",
    [
        name if name in DEFAULT else pytest.param(name, marks=pytest.mark.slow)
        for name in sorted(EXPECTED)
    ],
)
def test_batches_are_as_pinned(setting, name):
    tokenizer, configs = setting
    kwargs = dict(configs[name])
    source = kwargs.pop("source")
    got = pinned.summary(make_dataset(source, tokenizer, **kwargs))
    assert got.pop("weights_ok")
    assert got == EXPECTED[name]
