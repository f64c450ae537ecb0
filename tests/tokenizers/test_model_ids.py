"""`load_tokenizer("org/name")`: model ids through huggingface_hub's cache.

The tests build the cache's layout on disk (`models--org--name/refs/main`
naming a snapshot folder that holds the files, as `hf download` leaves
it) and run a fresh process with the Hub disabled (`HF_HUB_OFFLINE=1`,
`HF_HUB_CACHE` the test's folder): nothing is downloaded.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data

pytestmark = requires_shared_data

_SCRIPT = r"""
import json, os, sys
from tf_input import load_tokenizer

texts = ["Hello world!", "naïve 東京 123 [SEP]", ""]
bert, albert, elsewhere = sys.argv[1:]


def ids(tokenizer):
    return tokenizer(texts).to_list()


def error(name):
    try:
        load_tokenizer(name)
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None


by_id = load_tokenizer("google-bert/bert-base-uncased")
by_uri = load_tokenizer("hf://google-bert/bert-base-uncased")
albert_by_id = load_tokenizer("albert/albert-base-v2")
results = {
    "local": ids(load_tokenizer(bert)),
    "by_id": ids(by_id),
    "by_uri": ids(by_uri),
    "classes": [type(t).__name__ for t in (by_id, by_uri, albert_by_id)],
    "albert": ids(albert_by_id),
    "albert_local": ids(load_tokenizer(albert)),
    "not_cached": error("nobody/missing-model"),
    "bad_uri": error("hf://not a model id"),
}
os.chdir(elsewhere)  # holds a folder "google-bert/bert-base-uncased"
results["local_wins"] = type(
    load_tokenizer("google-bert/bert-base-uncased")
).__name__
print(json.dumps(results))
"""


def _snapshot(cache, name, files):
    """A snapshot of `name` in a huggingface_hub cache at `cache`."""
    repo = cache / ("models--" + name.replace("/", "--"))
    snapshot = repo / "snapshots" / "0123456789abcdef"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef")
    for target, source in files.items():
        (snapshot / target).symlink_to(source)


def _run(tmp_path):
    cache = tmp_path / "hub"
    bert = data_path("llm/bert_uncased/tokenizer.json")
    albert = data_path("sentencepiece/albert-base-v2-spiece.model")
    # A repository with several files: its tokenizer.json is read.
    _snapshot(
        cache,
        "google-bert/bert-base-uncased",
        {"tokenizer.json": bert, "spiece.model": albert},
    )
    _snapshot(cache, "albert/albert-base-v2", {"spiece.model": albert})
    elsewhere = tmp_path / "cwd"
    local = elsewhere / "google-bert" / "bert-base-uncased"
    local.mkdir(parents=True)
    (local / "spiece.model").symlink_to(albert)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(bert), str(albert), str(elsewhere)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("offline"))


def test_a_cached_model_id_loads_its_tokenizer_json(offline):
    assert offline["by_id"] == offline["local"]
    assert offline["by_uri"] == offline["local"]
    assert offline["local"][0] == [7592, 2088, 999]  # hello world !
    # tokenizer.json is read, not the .model beside it.
    assert offline["classes"][:2] == ["WordPieceTokenizer"] * 2


def test_a_repository_without_tokenizer_json_loads_its_one_file(offline):
    assert offline["classes"][2] == "SentencePieceTokenizer"
    assert offline["albert"] == offline["albert_local"]
    assert len(offline["albert"][0]) > 1


def test_a_local_folder_of_that_name_wins(offline):
    assert offline["local_wins"] == "SentencePieceTokenizer"


def test_not_cached_and_offline_gives_the_download_command(offline):
    kind, message = offline["not_cached"]
    assert kind == "FileNotFoundError"
    assert "'nobody/missing-model' is not in the Hugging Face cache" in message
    assert 'hf download nobody/missing-model --include "tokenizer.json"' in (
        message
    )


def test_a_malformed_hf_uri_is_an_error(offline):
    kind, message = offline["bad_uri"]
    assert kind == "ValueError"
    assert "expected 'hf://org/name'" in message


def test_without_huggingface_hub_the_error_names_the_extra(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['huggingface_hub'] = None\n"
            "from tf_input import load_tokenizer\n"
            "try:\n"
            "    load_tokenizer('Qwen/Qwen3-8B')\n"
            "except FileNotFoundError as e:\n"
            "    print(e)\n",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "looks like a Hugging Face model id" in done.stdout
    assert 'pip install "tf_input[hub]"' in done.stdout
