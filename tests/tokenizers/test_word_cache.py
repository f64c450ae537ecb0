"""`WordCache`: the unigram `.model` core route keeps each word's search
across batches. Results are the same with and without it, its memory is
bounded, a fingerprint shared by two words cannot mix them up, and it
works under concurrent calls, in `tf.data` and in a SavedModel."""

import pytest
import sentencepiece as spm
import tensorflow as tf

from tests.shared_data import SHARED_DATA
from tests.shared_data import requires_shared_data
from tests.tokenizers.offsets_testing import hf_rows
from tests.tokenizers.offsets_testing import rows
from tests.tokenizers.test_sentencepiece import tokenizer_and_reference
from tf_input.tokenizers import SentencePieceTokenizer
from tf_input.tokenizers.engines.word_cache import WordCache


def _lengths(words):
    """A stand-in search: each word's ids are its size, repeated size
    times; its number is a third of its size. Counts its calls."""
    calls = []

    def search(words):
        calls.append(words.shape[0])
        n = tf.strings.length(words)
        splits = tf.concat([[0], tf.cumsum(tf.cast(n, tf.int64))], 0)
        return tf.repeat(n, n), splits, tf.cast(n, tf.float64) / 3

    return search, calls


def _rows(result):
    values, splits, numbers = result
    rows = tf.RaggedTensor.from_row_splits(values, splits).to_list()
    return rows, numbers.numpy().tolist()


def test_a_kept_word_is_not_searched_again():
    search, calls = _lengths(None)
    cache = WordCache("tf_input_test_cache_kept")
    words = tf.constant(["ab", "c", "dddd"])
    first = _rows(cache(words, search))
    assert first == ([[2, 2], [1], [4, 4, 4, 4]], [2 / 3, 1 / 3, 4 / 3])
    assert calls == [3]
    again = _rows(cache(tf.constant(["dddd", "e", "ab"]), search))
    assert again == ([[4, 4, 4, 4], [1], [2, 2]], [4 / 3, 1 / 3, 2 / 3])
    assert calls == [3, 1]  # only "e" was new
    assert int(cache.size()) == 4
    empty = _rows(cache(tf.constant([], tf.string), search))
    assert empty == ([], [])


def test_memory_is_bounded():
    search, _ = _lengths(None)
    cache = WordCache("tf_input_test_cache_bound", capacity=4, max_bytes=3)
    cache(tf.constant(["a", "bb", "ccc", "dddd"]), search)
    # "dddd" is longer than max_bytes: searched, not kept.
    assert int(cache.size()) == 3
    cache(tf.constant(["e", "f", "g", "h"]), search)
    # Below capacity when the batch came: its new words are kept.
    assert int(cache.size()) == 7
    cache(tf.constant(["i", "j"]), search)
    assert int(cache.size()) == 7  # full: nothing more
    got = _rows(cache(tf.constant(["i", "dddd", "a"]), search))
    assert got[0] == [[1], [4, 4, 4, 4], [1]]


def test_a_fingerprint_shared_by_two_words_does_not_mix_them():
    # Plant another word's value under the fingerprint of "ab": the
    # lookup compares the stored word and searches "ab" itself.
    search, calls = _lengths(None)
    cache = WordCache("tf_input_test_cache_collision")
    cache(tf.constant(["xyz"]), search)
    key = tf.bitcast(tf.fingerprint(tf.constant(["xyz"])), tf.int64)
    value = cache._table.lookup(key)
    target = tf.bitcast(tf.fingerprint(tf.constant(["ab"])), tf.int64)
    cache._table.insert(target, value)
    got = _rows(cache(tf.constant(["ab", "xyz"]), search))
    assert got == ([[2, 2], [3, 3, 3]], [2 / 3, 1.0])
    assert calls == [1, 1]


def test_builds_of_one_model_share_one_cache():
    tokenizer, _ = tokenizer_and_reference("unigram")
    first = SentencePieceTokenizer(tokenizer.proto, tf_text_unigram=False)
    first(tf.constant(["a few words, once"]))
    graph = first._engine
    size = int(graph._cache.size())
    assert size > 0
    second = SentencePieceTokenizer(tokenizer.proto, tf_text_unigram=False)
    assert int(second._engine._cache.size()) == size


def _corpus_lines(count):
    lines = []
    for corpus in ("wikitext-2-raw-test.txt", "hongloumeng.txt"):
        text = (SHARED_DATA / "corpora" / corpus).read_text("utf-8")
        lines += text.split("\n")[:count]
    return lines


@requires_shared_data
def test_unigram_model_same_ids_with_and_without_the_cache():
    data = (
        SHARED_DATA / "sentencepiece" / "albert-base-v2-spiece.model"
    ).read_bytes()
    reference = spm.SentencePieceProcessor(model_proto=data)
    cached = SentencePieceTokenizer(data, tf_text_unigram=False)
    plain = SentencePieceTokenizer(data, tf_text_unigram=False)
    plain._engine._cache = WordCache("tf_input_test_cache_off", capacity=0)
    lines = _corpus_lines(60)
    expected = reference.encode(lines)
    # Twice: the second pass reads every word from the cache.
    for _ in range(2):
        assert cached(tf.constant(lines)).to_list() == expected
    assert plain(tf.constant(lines)).to_list() == expected
    assert int(plain._engine._cache.size()) == 0
    # Offsets read the same cache.
    ids, _, _ = cached.tokenize_with_offsets(tf.constant(lines))
    assert ids.to_list() == expected


def _in_parallel_map(tokenizer, lines):
    """Each line's ids from three passes of a `tf.data` map with four
    parallel calls (batches of 8), which share the tokenizer's cache."""
    batches = (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(8)
        .repeat(3)
        .map(tokenizer, num_parallel_calls=4, deterministic=True)
    )
    return [row for batch in batches for row in batch.to_list()]


@requires_shared_data
def test_concurrent_calls_in_tf_data_and_a_saved_model(tmp_path):
    data = (
        SHARED_DATA / "sentencepiece" / "sp-test-botchan-unigram-1000.model"
    ).read_bytes()
    reference = spm.SentencePieceProcessor(model_proto=data)
    tokenizer = SentencePieceTokenizer(data, tf_text_unigram=False)
    lines = _corpus_lines(80)
    got = _in_parallel_map(tokenizer, lines)
    assert got == reference.encode(lines) * 3

    module = tf.Module()
    module.tokenizer = tokenizer
    module.serve = tf.function(
        lambda texts: tokenizer(texts).to_tensor(-1),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path))
    # The words kept so far are not saved: the SavedModel starts empty.
    saved = [
        name
        for name, _ in tf.train.list_variables(
            str(tmp_path / "variables" / "variables")
        )
    ]
    assert saved == ["_CHECKPOINTABLE_OBJECT_GRAPH"], saved
    loaded = tf.saved_model.load(str(tmp_path))
    for _ in range(2):
        served = loaded.serve(tf.constant(lines)).numpy().tolist()
        assert [[i for i in row if i >= 0] for row in served] == (
            reference.encode(lines)
        )


# --- The other engines: BPE's merged words and chunks, Unigram's words ---
def _qwen3():
    from tf_input.tokenizers import load_tokenizer

    path = SHARED_DATA / "llm" / "qwen3" / "tokenizer.json"
    return load_tokenizer(str(path)), path


def _bpe(kind, folder):
    """A tokenizer, its reference's ids of `lines`, and the engine that
    holds its cache."""
    import tokenizers

    from tf_input.tokenizers import load_tokenizer

    if kind == "unigram":
        # A Unigram tokenizer.json (ALBERT's, as transformers converts
        # it): the Viterbi engine keeps searched words.
        from tests.tokenizers import unigram_json

        reference = unigram_json.build("albert", "albert")
        path = folder / "tokenizer.json"
        reference.save(str(path))
        tokenizer = load_tokenizer(str(path))
        return tokenizer, _hf_encode(reference), tokenizer._unigram
    if kind == "sentencepiece":
        path = SHARED_DATA / "sentencepiece" / "mistral-7b-v0.3-tokenizer.model"
        tokenizer = SentencePieceTokenizer(str(path))
        reference = spm.SentencePieceProcessor(model_file=str(path))
        return tokenizer, reference.encode, tokenizer._engine.char_bpe
    path = SHARED_DATA / "llm" / kind / "tokenizer.json"
    tokenizer = load_tokenizer(str(path))
    reference = tokenizers.Tokenizer.from_file(str(path))
    return tokenizer, _hf_encode(reference), tokenizer._engine


def _hf_encode(reference):
    def encode(lines):
        batch = reference.encode_batch(lines, add_special_tokens=False)
        return [e.ids for e in batch]

    return encode


@requires_shared_data
@pytest.mark.parametrize(
    "kind", ["qwen3", "mistral_v1", "sentencepiece", "unigram"]
)
def test_other_engines_same_ids_with_and_without_the_cache(kind, tmp_path):
    # Byte-level BPE keeps merged words; character-level BPE (Mistral's
    # tokenizer.json and .model) keeps merged chunks; the Unigram
    # tokenizer.json engine keeps searched words.
    tokenizer, reference, engine = _bpe(kind, tmp_path)
    plain, _, plain_engine = _bpe(kind, tmp_path)
    plain_engine._cache = WordCache(f"tf_input_test_off_{kind}", capacity=0)
    lines = _corpus_lines(60)
    expected = reference(lines)
    for _ in range(2):
        assert tokenizer(tf.constant(lines)).to_list() == expected
    assert int(engine._cache.size()) > 0
    assert plain(tf.constant(lines)).to_list() == expected
    assert int(plain_engine._cache.size()) == 0
    # Parallel calls in tf.data share the cache.
    got = _in_parallel_map(tokenizer, lines)
    assert got == expected * 3


@requires_shared_data
def test_a_cached_tokenizer_runs_on_a_tf_data_service_worker():
    from tf_input.data import make_dataset

    tokenizer, _ = _qwen3()
    lines = [line for line in _corpus_lines(30) if line.strip()]
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    kwargs = dict(batch_size=4, max_length=32, batching="pack")
    local = make_dataset(lines, tokenizer, **kwargs)
    remote = make_dataset(
        lines, tokenizer, data_service=dispatcher.target, **kwargs
    )
    for want, got in zip(local, remote, strict=True):
        for name in want[0]:
            assert (
                want[0][name].numpy().tolist() == got[0][name].numpy().tolist()
            )
        assert want[1].numpy().tolist() == got[1].numpy().tolist()
    del worker, dispatcher


@requires_shared_data
def test_unigram_offsets_same_with_and_without_their_cache(tmp_path):
    # The Viterbi keeps each word's tokens with their spans in a second
    # cache, which `tokenize_with_offsets` reads.
    import tokenizers

    tokenizer, _, engine = _bpe("unigram", tmp_path)
    plain, _, plain_engine = _bpe("unigram", tmp_path)
    plain_engine._spans_cache = WordCache(
        "tf_input_test_off_unigram_spans", capacity=0
    )
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    lines = _corpus_lines(60)
    expected = hf_rows(reference, lines)
    for _ in range(2):  # the second pass reads every word from the cache
        assert rows(tokenizer, lines) == expected
    assert int(engine._spans_cache.size()) > 0
    assert rows(plain, lines) == expected
    assert int(plain_engine._spans_cache.size()) == 0
