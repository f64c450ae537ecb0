"""A `precompiled_charsmap`: the normalization rules of a `.model` file.

The rules are a Darts-clone double array (a DAG that shares suffixes) from
key bytes to an offset into a block of NUL-terminated replacement strings.
This module reads the facts the routing needs from it; the rules themselves
are applied by TF Text's ops.
"""

from __future__ import annotations

import struct

import numpy as np

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
    """`(children, values, strings)` of a `precompiled_charsmap`: the trie's
    edges `{node: [(byte, child)]}`, the replacement offset of each node
    that ends a key, and the block of replacement strings."""
    if len(blob) < 4:
        raise _ProtoError("precompiled_charsmap is shorter than 4 bytes")
    (trie_size,) = struct.unpack_from("<I", blob, 0)
    if trie_size % 4 or trie_size == 0 or 4 + trie_size > len(blob):
        raise _ProtoError("precompiled_charsmap has a bad trie size")
    units = np.frombuffer(blob, "<u4", trie_size // 4, 4).astype(np.int64)
    strings = blob[4 + trie_size :]
    count = len(units)
    offsets = (units >> 10) << ((units & (1 << 9)) >> 6)
    labels = units & ((1 << 31) | 0xFF)
    codes = np.arange(1, 256)
    children, values = {}, {}
    seen = np.zeros(count, bool)
    seen[0] = True
    frontier = np.array([0])
    while frontier.size:
        child = (frontier ^ offsets[frontier])[:, None] ^ codes[None, :]
        inside = child < count
        inside &= labels[np.where(inside, child, 0)] == codes[None, :]
        rows, cols = np.nonzero(inside)
        kids = child[rows, cols]
        for parent, byte, kid in zip(
            frontier[rows].tolist(), codes[cols].tolist(), kids.tolist()
        ):
            children.setdefault(parent, []).append((byte, kid))
        for kid in kids[((units[kids] >> 8) & 1) == 1].tolist():
            leaf = kid ^ int(offsets[kid])
            if leaf >= count:
                raise _ProtoError("a normalization rule points outside")
            values[kid] = int(units[leaf]) & ((1 << 31) - 1)
        frontier = np.unique(kids[~seen[kids]])
        seen[frontier] = True
    return children, values, strings


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
        end = strings.find(b"\0", value)
        if value >= len(strings) or end < 0:
            raise _ProtoError("a normalization rule has no replacement")
        text = strings[value:end].decode("utf-8", "replace")
        verdicts[value] = is_bad(text)
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


def _replacement(strings, value):
    end = strings.find(b"\0", value)
    return strings[value:end].decode("utf-8", "replace")


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
