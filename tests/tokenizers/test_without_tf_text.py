"""Every tokenizer family without TF Text installed (`tf_input[text]` is an
extra): a fresh process where `import tensorflow_text` fails builds each
family from its real files and gives the ids of the process that has it,
and the routes that need TF Text's ops say what to install."""

import json
import subprocess
import sys

import pytest
import sentencepiece as spm
import tensorflow as tf
import tokenizers

from tests.shared_data import SHARED_DATA
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tests.testing import sentencepiece_model
from tests.tokenizers.test_sentencepiece import TRAINING_TEXT
from tests.tokenizers.test_sentencepiece import TRICKY
from tf_input.tokenizers import SentencePieceTokenizer
from tf_input.tokenizers import load_tokenizer

# What each family is loaded from (paths under the shared data).
_FILES = {
    "wordpiece vocab.txt": "bert/bert-base-uncased-vocab.txt",
    "wordpiece tokenizer.json": "llm/bert_uncased/tokenizer.json",
    "byte-level BPE vocab.json": "gpt2/vocab.json",
    "byte-level BPE tokenizer.json": "llm/qwen3/tokenizer.json",
    "metaspace BPE tokenizer.json": "llm/mistral_v1/tokenizer.json",
    "sentencepiece BPE .model": "sentencepiece/mistral-7b-v0.3-tokenizer.model",
    "sentencepiece unigram .model": "sentencepiece/albert-base-v2-spiece.model",
    "sentencepiece unigram .model (ja)": "sentencepiece/sp-test-ja.model",
}

# The child: TF Text cannot be imported (as if not installed).
_CHILD = r"""
import json, sys
sys.modules["tensorflow_text"] = None
request = json.loads(sys.stdin.read())
from tf_input.tokenizers import SentencePieceTokenizer, load_tokenizer

out = {"ids": {}, "core": {}, "errors": {}}
for name, path in request["files"].items():
    tokenizer = load_tokenizer(path)
    out["ids"][name] = tokenizer(request["texts"]).to_list()
    out["core"][name] = tokenizer.uses_core_ops_only
for name, (path, options) in request["refused"].items():
    try:
        SentencePieceTokenizer(path, **options)
    except ImportError as error:
        out["errors"][name] = str(error)
out["imported"] = sorted(
    m for m, v in sys.modules.items() if m.startswith("tensorflow_t") and v
)
print(json.dumps(out))
"""


def _texts():
    texts = list(TRICKY)
    for corpus in ("wikitext-2-raw-test.txt", "hongloumeng.txt"):
        lines = read_lines(SHARED_DATA / "corpora" / corpus)
        texts += [line for line in lines if line.strip()][:25]
    return texts


# The fast sibling: the families closest to TF Text (a unigram and a BPE
# `.model`, WordPiece, which ran on TF Text's ops before).
_FAST = (
    "wordpiece vocab.txt",
    "sentencepiece BPE .model",
    "sentencepiece unigram .model",
)


@requires_shared_data
@pytest.mark.parametrize(
    "families",
    [
        pytest.param(_FAST, id="fast"),
        pytest.param(tuple(_FILES), id="every", marks=pytest.mark.slow),
    ],
)
def test_every_family_runs_without_tensorflow_text(tmp_path, families):
    texts = _texts()
    files = {name: str(SHARED_DATA / _FILES[name]) for name in families}
    # A BPE model with normalization rules (nmt_nfkc) runs only on TF
    # Text's op; so does a unigram model when TF Text is asked for.
    charsmap_bpe = tmp_path / "bpe_nfkc.model"
    charsmap_bpe.write_bytes(
        sentencepiece_model(
            TRAINING_TEXT,
            model_type="bpe",
            vocab_size=300,
            hard_vocab_limit=False,
        )
    )
    refused = {
        "BPE with a charsmap": (str(charsmap_bpe), {}),
        "tf_text_unigram=True": (
            files["sentencepiece unigram .model"],
            {"tf_text_unigram": True},
        ),
    }
    request = {"files": files, "texts": texts, "refused": refused}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    out = json.loads(child.stdout.splitlines()[-1])

    assert out["imported"] == []
    assert all(out["core"].values()), out["core"]
    for name, path in files.items():
        if path.endswith(".model"):
            reference = spm.SentencePieceProcessor(model_file=path)
            want = reference.encode(texts)
        elif path.endswith("tokenizer.json"):
            reference = tokenizers.Tokenizer.from_file(path)
            encoded = reference.encode_batch(texts, add_special_tokens=False)
            want = [e.ids for e in encoded]
        else:
            want = load_tokenizer(path)(texts).to_list()
        assert out["ids"][name] == want, name

    for name, message in out["errors"].items():
        assert 'pip install "tf_input[text]"' in message, name
    assert set(out["errors"]) == set(refused)
    assert "normalization rules" in out["errors"]["BPE with a charsmap"]
    assert (
        "tf_text_unigram=None or False" in out["errors"]["tf_text_unigram=True"]
    )
    # Here, with TF Text, the same charsmap BPE model loads (library op).
    with_text = SentencePieceTokenizer(str(charsmap_bpe))
    assert not with_text.uses_core_ops_only


def test_tf_input_does_not_import_tensorflow_text():
    # TF Text is imported only by the tokenizers that run its ops.
    code = (
        "import sys, tf_input, tf_input.tokenizers, tf_input.data, "
        "tf_input.export; "
        "print([m for m in sys.modules if m.startswith('tensorflow_text')])"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.strip().splitlines()[-1] == "[]"


def test_tf_text_unigram_none_follows_the_installation():
    # This process has TF Text: `None` (the default) takes its ops, and the
    # config keeps `None`, so a file saved here loads where it is missing.
    from tests.tokenizers.test_sentencepiece import trained

    tokenizer = SentencePieceTokenizer(trained("unigram"))
    assert tokenizer.tf_text_unigram is None
    assert tokenizer.get_config()["tf_text_unigram"] is None
    assert not tokenizer.uses_core_ops_only
    core = SentencePieceTokenizer(trained("unigram"), tf_text_unigram=False)
    texts = tf.constant(TRICKY)
    assert core(texts).to_list() == tokenizer(texts).to_list()
