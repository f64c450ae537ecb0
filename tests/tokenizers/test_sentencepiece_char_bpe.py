"""The pieces of the character BPE engine (`sentencepiece/_bpe.py`) against
independent Python references."""

import random

import tensorflow as tf

from tf_input.tokenizers.sentencepiece._bpe import replace_invalid_bytes


def per_byte_replace(raw):
    """sentencepiece's rule, written directly: at each position the valid
    UTF-8 character that starts there (1 to 4 bytes, strict), else one
    U+FFFD for the byte."""
    out, i = [], 0
    while i < len(raw):
        for size in (1, 2, 3, 4):
            try:
                char = raw[i : i + size].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(char)
            i += size
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out).encode()


def test_invalid_bytes_become_one_replacement_each():
    raw = [b"", b"\xff", b"a\xe2\x82b", b"\xed\xa0\x80", b"\xc0\xaf"]
    raw += [b"ok\x80", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf"]
    raw += ["\ufffd ok".encode(), "héllo 中文 😀".encode(), b"\xef\xbf"]
    rng = random.Random(7)
    alphabet = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED]
    alphabet += [0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0, 0x9F, 0x90, 0x8F, 0xBD]
    for _ in range(20_000):
        size = rng.randrange(16)
        if rng.random() < 0.5:
            raw.append(bytes(rng.choice(alphabet) for _ in range(size)))
        else:
            raw.append(bytes(rng.randrange(256) for _ in range(size)))
    raw.append(bytes(rng.randrange(256) for _ in range(100_000)))
    got = replace_invalid_bytes(tf.constant(raw)).numpy().tolist()
    want = [per_byte_replace(r) for r in raw]
    assert sum(g != w for g, w in zip(got, want)) == 0
    # Valid lines come back as they were.
    assert all(g == r for g, r, w in zip(got, raw, want) if r == w)
    assert sum(r != w for r, w in zip(raw, want)) > 10_000
