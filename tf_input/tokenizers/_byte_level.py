"""GPT-2's byte alphabet: each byte as a printable character.

Byte-level BPE vocabularies (GPT-2, RoBERTa, Llama 3, Qwen, tiktoken
through `tf_input.load_tokenizer`) spell every token in this alphabet;
`token_to_bytes` undoes it, `byte_level` applies it, and `rank_pairs`
derives tiktoken's merges from a rank vocabulary.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input.tokenizers._tables import lookup_table


def _byte_alphabet():
    """GPT-2's printable stand-in for each byte: `alphabet[byte] -> str`."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    alphabet = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in alphabet:
            alphabet[b] = chr(256 + shifted)
            shifted += 1
    return [alphabet[b] for b in range(256)]


ALPHABET = _byte_alphabet()
# str.translate to one Latin-1 character per byte; characters below 0x144
# that are not in the alphabet become U+FFFF, which Latin-1 cannot encode.
_TO_LATIN1 = {c: "\uffff" for c in range(0x144)}
_TO_LATIN1.update({ord(char): chr(b) for b, char in enumerate(ALPHABET)})


def token_to_bytes(token):
    """`(bytes, is_byte_level)`: what a token stands for, HF's `ByteLevel`
    decoder rule (a token with a character outside the alphabet is its
    own UTF-8)."""
    try:
        return token.translate(_TO_LATIN1).encode("latin-1"), True
    except UnicodeEncodeError:
        return token.encode("utf-8"), False


def byte_level(raw):
    """The byte-level spelling (GPT-2's alphabet) of `raw` bytes."""
    return "".join(ALPHABET[b] for b in raw)


def rank_pairs(token_bytes):
    """tiktoken's merges: every split of a token into two tokens.

    `token_bytes[i]` is the bytes of token `i` (None for no token).
    Returns int64 `[n, 3]` (left, right, merged) and the ranks (the merged
    token's id): BPE merges the adjacent pair whose concatenation has the
    lowest rank. Vectorised (all cuts of all tokens, looked up at once):
    for o200k's 200k tokens, much faster than a Python loop.
    """
    known = [i for i, raw in enumerate(token_bytes) if raw is not None]
    table = lookup_table(
        [token_bytes[i] for i in known], known, -1, key_dtype=tf.string
    )
    long = [i for i in known if len(token_bytes[i]) > 1]
    if not long:
        return np.zeros([0, 3], np.int64), np.zeros([0], np.int64)
    cuts = np.array([len(token_bytes[i]) - 1 for i in long], np.int64)
    owner = np.repeat(np.arange(len(long)), cuts)
    first = np.repeat(np.cumsum(cuts) - cuts, cuts)
    cut = np.arange(len(owner)) - first + 1
    strings = tf.gather(tf.constant([token_bytes[i] for i in long]), owner)
    left = table.lookup(
        tf.strings.substr(strings, np.zeros_like(cut), cut)
    ).numpy()
    right = table.lookup(
        tf.strings.substr(strings, cut, np.full_like(cut, 1 << 30))
    ).numpy()
    found = (left >= 0) & (right >= 0)
    merged = np.array(long, np.int64)[owner[found]]
    ids = np.stack([left[found], right[found], merged], 1)
    return ids, merged.copy()
