"""File sources: strict UTF-8, other encodings, BOMs and line endings.

The reference is Python's own reading of the file: `open(path, newline=None,
encoding=...)`, universal newlines, one line per `\\n`, `\\r\\n` or lone
`\\r`.
"""

import codecs
import io
import random

import pytest
import tensorflow as tf

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input import VocabularyTokenizer
from tf_input.data import make_dataset
from tf_input.data import sources
from tf_input.data.sources import as_dataset


def read(path, **kwargs):
    dataset, is_pairs = as_dataset(path, **kwargs)
    assert not is_pairs
    return [x.decode("utf-8") for x in dataset.as_numpy_iterator()]


def python_lines(data, encoding="utf-8-sig", errors="strict"):
    """The lines Python reads from `data` (bytes), line ends removed."""
    text = io.TextIOWrapper(
        io.BytesIO(data), encoding=encoding, errors=errors, newline=None
    ).read()
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def write(tmp_path, data, name="f.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# --- Line ends -----------------------------------------------------------
def test_cr_only_file_is_three_lines_not_one(tmp_path):
    # TextLineDataset gave one line, "hello worldsecond linethird".
    path = write(tmp_path, b"hello world\rsecond line\rthird")
    assert read(path) == ["hello world", "second line", "third"]


def test_lone_cr_in_a_crlf_file_ends_a_line(tmp_path):
    path = write(tmp_path, b"one two\r\nthree\rfour\r\nfive\r\n")
    assert read(path) == ["one two", "three", "four", "five"]


def test_crlf_lf_and_blank_lines_as_python(tmp_path):
    data = b"a\r\r\nb\n\nc\r\n\r\nd\r"
    assert read(write(tmp_path, data)) == python_lines(data)
    assert python_lines(data) == ["a", "", "b", "", "c", "", "d"]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64])
def test_chunk_boundaries_never_change_the_lines(tmp_path, monkeypatch, chunk):
    # Files are read in chunks; a "\r\n", a BOM or a multi-byte character
    # may straddle two chunks.
    monkeypatch.setattr(sources, "_CHUNK_BYTES", chunk)
    rng = random.Random(chunk)
    alphabet = ["a", "b", " ", "\n", "\r", "\r\n", "é", "😀", "\ufeff"]
    text = "".join(rng.choice(alphabet) for _ in range(400))
    for data in [codecs.BOM_UTF8 + text.encode(), b"\r" + text.encode()]:
        path = write(tmp_path, data)
        assert read(path) == python_lines(data)


@requires_shared_data
def test_real_corpora_read_as_python_reads_them():
    # WikiText has CRLF line ends, the others LF.
    for name in ["wikitext-2-raw-test.txt", "botchan.txt", "hongloumeng.txt"]:
        path = data_path("corpora", name)
        assert read(str(path)) == python_lines(path.read_bytes()), name


def test_several_files_keep_their_own_line_ends(tmp_path):
    write(tmp_path, b"a\rb", "1.txt")
    write(tmp_path, b"\xef\xbb\xbfc\r\nd\n", "2.txt")
    assert sorted(read(str(tmp_path / "*.txt"))) == ["a", "b", "c", "d"]


# --- Byte-order marks and encodings ----------------------------------------
def test_utf8_bom_is_dropped_not_a_first_token(tmp_path):
    # The BOM was part of the first word: a word vocabulary made "hello"
    # unknown (and GPT-2 gave 'ï', '»', '¿', 'hello').
    path = write(tmp_path, codecs.BOM_UTF8 + b"hello world\nhello\n")
    assert read(path) == ["hello world", "hello"]
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["hello world"])
    ds = make_dataset(
        path, tokenizer, batch_size=2, max_length=8, add_special_tokens=False
    )
    ids = next(iter(ds))[0]["token_ids"].numpy().tolist()
    hello, world = (
        tokenizer.token_to_id("hello"),
        tokenizer.token_to_id("world"),
    )
    assert ids == [[hello, world], [hello, 0]]
    # Only at the start of a file: elsewhere U+FEFF is a character.
    path = write(tmp_path, b"a\n\xef\xbb\xbfb\n", "g.txt")
    assert read(path) == ["a", "\ufeffb"]
    assert read(path, encoding="utf-8-sig") == ["a", "\ufeffb"]


@pytest.mark.parametrize(
    "encoding, name",
    [
        ("utf-16", "UTF-16-LE"),
        ("utf-16-be", "UTF-16-BE"),
        ("utf-32", "UTF-32-LE"),
        ("utf-32-be", "UTF-32-BE"),
    ],
)
def test_utf16_and_utf32_files_are_errors_naming_them(tmp_path, encoding, name):
    data = "hello world\n".encode(encoding)
    if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE)):
        bom = codecs.BOM_UTF16_BE if "16" in encoding else codecs.BOM_UTF32_BE
        data = bom + data
    path = write(tmp_path, data, "corpus.txt")
    with pytest.raises(ValueError, match=f"corpus.txt.*{name} byte-order"):
        read(path)
    with pytest.raises(ValueError, match="corpus.txt"):
        read(path, errors="replace")


def test_utf16_without_bom_is_an_error(tmp_path):
    path = write(tmp_path, "hello world\nsecond\n".encode("utf-16-le"))
    with pytest.raises(ValueError, match="f.txt.*50% NUL.*without a byte"):
        read(path)


def test_invalid_utf8_names_the_file_and_first_bad_line(tmp_path):
    data = b"fine\r\nalso fine\rcaf\xe9\nbad \xff again\n"
    path = write(tmp_path, data, "latin.txt")
    message = r"latin.txt\W+is not valid UTF-8: line\W+3\W+is the first"
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        read(path)
    # Surrogates and overlong forms are invalid too, as in Python.
    for i, bad in enumerate(
        [b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]
    ):
        path = write(tmp_path, b"ok\n" + bad + b"\n", f"{i}.txt")
        with pytest.raises(tf.errors.InvalidArgumentError, match="line\\W+2"):
            read(path)


def test_first_bad_line_across_chunks_and_files(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "_CHUNK_BYTES", 4)
    write(tmp_path, b"a\nb\n", "1.txt")
    write(tmp_path, b"one\ntwo\nthree\nf\xc3our\nfive\n", "2.txt")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"2.txt\W+is not.*line\W+4\W"
    ):
        read(str(tmp_path / "*.txt"))


def test_latin1_and_replace(tmp_path):
    data = "café\r\nnaïve ÿ\n".encode("latin-1")
    path = write(tmp_path, data)
    assert read(path, encoding="latin-1") == ["café", "naïve ÿ"]
    assert read(path, encoding="ISO-8859-1") == ["café", "naïve ÿ"]
    assert read(path, errors="replace") == ["caf\ufffd", "na\ufffdve \ufffd"]
    # Random bytes (random line ends included): U+FFFD where Python's
    # errors="replace" puts one, and Latin-1 as Python decodes it.
    rng = random.Random(0)
    raw = bytes(rng.randrange(1, 256) for _ in range(3000))
    path = write(tmp_path, raw, "random.txt")
    assert read(path, errors="replace") == python_lines(raw, "utf-8", "replace")
    assert read(path, encoding="latin-1") == python_lines(raw, "latin-1")


def test_bad_encoding_and_errors_arguments(tmp_path):
    path = write(tmp_path, b"a\n")
    with pytest.raises(ValueError, match="`encoding` must be one of.*utf-16"):
        read(path, encoding="utf-16")
    with pytest.raises(ValueError, match="encoding='nope'"):
        read(path, encoding="nope")
    with pytest.raises(ValueError, match="`errors` must be one of"):
        read(path, errors="ignore")


def test_texts_given_directly_keep_replacement(tokenizer=None):
    tokenizer = VocabularyTokenizer()
    tokenizer.adapt(["a b"])
    bad = tf.constant([b"a \xff b"])
    ds = make_dataset(
        tf.data.Dataset.from_tensor_slices(bad),
        tokenizer,
        batch_size=1,
        max_length=8,
        add_special_tokens=False,
    )
    want = tokenizer(bad).to_list()
    assert next(iter(ds))[0]["token_ids"].numpy().tolist() == want
    with pytest.raises(ValueError, match="`encoding` applies to file"):
        as_dataset(["a"], encoding="latin-1")
    with pytest.raises(ValueError, match="`errors` applies to file"):
        as_dataset(["a"], errors="replace")
