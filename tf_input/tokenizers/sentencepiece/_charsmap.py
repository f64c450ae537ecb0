"""A `precompiled_charsmap`: the normalization rules of a `.model` file.

The rules are read by the one charsmap reader
(`hf.normalizers.precompiled`); this module walks them for the facts the
routing needs (sentencepiece's longest-key walk). The rules themselves
are applied by TF Text's ops.
"""

from __future__ import annotations

import struct

from tf_input.tokenizers.hf.normalizers.precompiled import CharsmapError
from tf_input.tokenizers.hf.normalizers.precompiled import read_charsmap
from tf_input.tokenizers.hf.normalizers.precompiled import replacement
from tf_input.tokenizers.sentencepiece._proto import _ProtoError

# An empty normalization trie: every transition fails (see DecodePrecompiled-
# Charsmap in TF Text). Used where the fast op must not normalize.
_EMPTY_CHARSMAP = struct.pack("<I", 1024) + bytes(1024) + b"\0"


def _first_chars(children, node, prefix=b""):
    """`[(char, node)]`: the paths of one UTF-8 character below `node`."""
    out = []
    for byte, child in children.get(node, ()):
        path = prefix + bytes([byte])
        lead = path[0]
        need = (
            1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        )
        if len(path) == need:
            try:
                out.append((path.decode("utf-8"), child))
            except UnicodeDecodeError:
                pass
        elif len(path) < need:
            out += _first_chars(children, child, path)
    return out


def _read_trie(blob):
    """`(children, values, strings)` of a `precompiled_charsmap` (the one
    reader, `hf.normalizers.precompiled`); a corrupt one is a
    `_ProtoError`, as the rest of a bad `.model` file."""
    try:
        return read_charsmap(blob)
    except CharsmapError as error:
        raise _ProtoError(str(error)) from None


def _replacement(strings, value):
    try:
        text = replacement(strings, value)
    except CharsmapError as error:
        raise _ProtoError(str(error)) from None
    return text.decode("utf-8", "replace")


def _charsmap_facts(blob, is_bad):
    """What routing needs to know about a `precompiled_charsmap`.

    The rules are a Darts-clone double array (a DAG that shares suffixes)
    from key bytes to an offset into a block of NUL-terminated replacement
    strings. Returns `(first, single, unsafe, after_space, spaced)`: the first
    characters of all keys, the characters that are keys on their own, the
    first characters of keys whose replacement satisfies `is_bad(text)`,
    the second characters of keys that start with a space, and the
    characters that are keys on their own with a space in their
    replacement.
    """
    children, values, strings = _read_trie(blob)
    verdicts = {}
    for value in set(values.values()):
        verdicts[value] = is_bad(_replacement(strings, value))
    parents = {}
    for parent, edges in children.items():
        for _, kid in edges:
            parents.setdefault(kid, []).append(parent)
    bad = {node for node, value in values.items() if verdicts[value]}
    stack = list(bad)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in bad:
                bad.add(parent)
                stack.append(parent)
    firsts = _first_chars(children, 0)
    single = {c for c, node in firsts if node in values}
    unsafe = {c for c, node in firsts if node in bad}
    after_space = set()
    for c, node in firsts:
        if c == " ":
            after_space |= {c2 for c2, _ in _first_chars(children, node)}
    spaced = {
        c
        for c, node in firsts
        if node in values and " " in _replacement(strings, values[node])
    }
    return {c for c, _ in firsts}, single, unsafe, after_space, spaced


def _character_rules(blob):
    """`(rules, seconds)`: the replacement of each character that is a key
    on its own, `{char: text}`, and the second characters of the longer
    keys.

    In a text without a character of `seconds` no longer key matches, so
    it normalizes character by character.
    """
    children, values, strings = _read_trie(blob)
    rules, seconds = {}, set()
    for c, node in _first_chars(children, 0):
        if node in values:
            rules[c] = _replacement(strings, values[node])
        seconds |= {c2 for c2, _ in _first_chars(children, node)}
    return rules, seconds
