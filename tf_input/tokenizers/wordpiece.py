"""BERT WordPiece in the TensorFlow graph, id for id with Hugging Face.

`WordPieceTokenizer` reproduces `tokenizers.BertWordPieceTokenizer` (the Rust
`BertNormalizer`, `BertPreTokenizer` and `WordPiece` of Hugging Face
`tokenizers`) with TensorFlow string ops, so it runs in `tf.data`, in
`tf.function` and in a SavedModel.

How Hugging Face tokenizes a line, step by step:

0. Special tokens: `BertWordPieceTokenizer` registers the vocabulary's
   `[UNK]`, `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]` as added tokens, which
   are cut out of the raw text first (case-sensitively: `"[MASK]"` is one
   token, `"[mask]"` is three).
1. `clean_text`: drop NUL, U+FFFD and every "other" character except
   tab, LF and CR (categories Cc, Cf and Co as of Unicode 8, the version of
   the Rust `unicode_categories` crate; unassigned code points are kept),
   and treat the White_Space characters as spaces.
2. `handle_chinese_chars`: put spaces around CJK ideographs. These are
   BERT's ranges, except that the Rust code starts one of them at U+2B920
   where BERT has U+2B820.
3. `strip_accents` (defaults to `lowercase`): NFD, then drop nonspacing
   marks (Mn as of Unicode 8).
4. `lowercase`: Rust's `char::to_lowercase`, one character at a time. There
   is no final-sigma rule (`Σ` always becomes `σ`) and no case folding
   (`ß`, `ς`, full-width letters and `…` stay as they are, unlike TF Text's
   `NFKC_CF` and `case_fold_utf8`).
5. `BertPreTokenizer`: split on whitespace, and make every punctuation
   character (ASCII punctuation, or category P* as of Unicode 8) a word.
6. `WordPiece`: greedy longest-match-first with `##` continuations. A word
   of more than 100 characters, or one the vocabulary cannot cover, becomes
   `[UNK]`.

The TensorFlow version normalizes with regexes, TF Text's NFD and
`tf.strings.lower`, then lets TF Text's `FastWordpieceTokenizer` do steps 2,
5 and 6 in one op: its split agrees with HF's on whitespace and CJK and on
all but a few punctuation characters, which get fixed up beforehand. Every
difference between the TF ops (RE2, ICU) and the Rust crates is listed
below and corrected, or, where it can only matter for a vocabulary holding
the characters involved, corrected for such vocabularies.

The character tables below were read off `tokenizers` 0.23.3 by running
every code point through it, and checked against TF 2.21 / TF Text 2.21
(`tests/tokenizers/test_wordpiece.py -m slow` repeats that check). They are
explicit ranges, not `\\p{..}` classes, because RE2 and ICU follow newer
Unicode versions than the Rust crates do. Each entry is a hexadecimal code
point or an inclusive range `A-B`.
"""

from __future__ import annotations

import os
import re
import unicodedata

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from tf_input._validation import check_positive_int
from tf_input.tokenizers._templates import parse_templates
from tf_input.tokenizers.base import Tokenizer

# Step 1: what `clean_text` removes (NUL, U+FFFD, and Cc/Cf/Co as of
# Unicode 8 except tab, LF and CR). The soft hyphen U+00AD, the zero-width
# joiner U+200D and the byte-order mark U+FEFF are among them.
_CONTROL = (
    "0000-0008 000B-000C 000E-001F 007F-009F 00AD 0600-0605 061C 06DD 070F "
    "180E 200B-200F 202A-202E 2060-2064 2066-206F E000-F8FF FEFF FFF9-FFFB "
    "FFFD 110BD 1BCA0-1BCA3 1D173-1D17A E0001 E0020-E007F F0000-FFFFD "
    "100000-10FFFD"
)
# Step 1: what `clean_text` turns into a space: White_Space, less U+000B,
# U+000C and U+0085, which are control characters and were dropped above
# (and less the space itself).
_WHITESPACE = "0009-000A 000D 00A0 1680 2000-200A 2028-2029 202F 205F 3000"
# Step 2: CJK ideographs, as in the Rust `is_chinese_char`.
_CJK = (
    "3400-4DBF 4E00-9FFF F900-FAFF 20000-2A6DF 2A700-2B73F 2B740-2B81F "
    "2B920-2CEAF 2F800-2FA1F"
)
# Step 3: nonspacing marks (Mn as of Unicode 8, plus U+1734, which was Mn
# then).
_NONSPACING_MARKS = (
    "0300-036F 0483-0487 0591-05BD 05BF 05C1-05C2 05C4-05C5 05C7 0610-061A "
    "064B-065F 0670 06D6-06DC 06DF-06E4 06E7-06E8 06EA-06ED 0711 0730-074A "
    "07A6-07B0 07EB-07F3 0816-0819 081B-0823 0825-0827 0829-082D 0859-085B "
    "08E3-0902 093A 093C 0941-0948 094D 0951-0957 0962-0963 0981 09BC "
    "09C1-09C4 09CD 09E2-09E3 0A01-0A02 0A3C 0A41-0A42 0A47-0A48 0A4B-0A4D "
    "0A51 0A70-0A71 0A75 0A81-0A82 0ABC 0AC1-0AC5 0AC7-0AC8 0ACD 0AE2-0AE3 "
    "0B01 0B3C 0B3F 0B41-0B44 0B4D 0B56 0B62-0B63 0B82 0BC0 0BCD 0C00 "
    "0C3E-0C40 0C46-0C48 0C4A-0C4D 0C55-0C56 0C62-0C63 0C81 0CBC 0CBF 0CC6 "
    "0CCC-0CCD 0CE2-0CE3 0D01 0D41-0D44 0D4D 0D62-0D63 0DCA 0DD2-0DD4 0DD6 "
    "0E31 0E34-0E3A 0E47-0E4E 0EB1 0EB4-0EB9 0EBB-0EBC 0EC8-0ECD 0F18-0F19 "
    "0F35 0F37 0F39 0F71-0F7E 0F80-0F84 0F86-0F87 0F8D-0F97 0F99-0FBC 0FC6 "
    "102D-1030 1032-1037 1039-103A 103D-103E 1058-1059 105E-1060 1071-1074 "
    "1082 1085-1086 108D 109D 135D-135F 1712-1714 1732-1734 1752-1753 "
    "1772-1773 17B4-17B5 17B7-17BD 17C6 17C9-17D3 17DD 180B-180D 18A9 "
    "1920-1922 1927-1928 1932 1939-193B 1A17-1A18 1A1B 1A56 1A58-1A5E 1A60 "
    "1A62 1A65-1A6C 1A73-1A7C 1A7F 1AB0-1ABD 1B00-1B03 1B34 1B36-1B3A 1B3C "
    "1B42 1B6B-1B73 1B80-1B81 1BA2-1BA5 1BA8-1BA9 1BAB-1BAD 1BE6 1BE8-1BE9 "
    "1BED 1BEF-1BF1 1C2C-1C33 1C36-1C37 1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED "
    "1CF4 1CF8-1CF9 1DC0-1DF5 1DFC-1DFF 20D0-20DC 20E1 20E5-20F0 2CEF-2CF1 "
    "2D7F 2DE0-2DFF 302A-302D 3099-309A A66F A674-A67D A69E-A69F A6F0-A6F1 "
    "A802 A806 A80B A825-A826 A8C4 A8E0-A8F1 A926-A92D A947-A951 A980-A982 "
    "A9B3 A9B6-A9B9 A9BC A9E5 AA29-AA2E AA31-AA32 AA35-AA36 AA43 AA4C AA7C "
    "AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEC-AAED AAF6 ABE5 ABE8 ABED "
    "FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A 10A01-10A03 "
    "10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F 10AE5-10AE6 11001 "
    "11038-11046 1107F-11081 110B3-110B6 110B9-110BA 11100-11102 "
    "11127-1112B 1112D-11134 11173 11180-11181 111B6-111BE 111CA-111CC "
    "1122F-11231 11234 11236-11237 112DF 112E3-112EA 11300-11301 1133C "
    "11340 11366-1136C 11370-11374 114B3-114B8 114BA 114BF-114C0 "
    "114C2-114C3 115B2-115B5 115BC-115BD 115BF-115C0 115DC-115DD "
    "11633-1163A 1163D 1163F-11640 116AB 116AD 116B0-116B5 116B7 "
    "1171D-1171F 11722-11725 11727-1172B 16AF0-16AF4 16B30-16B36 "
    "16F8F-16F92 1BC9D-1BC9E 1D167-1D169 1D17B-1D182 1D185-1D18B "
    "1D1AA-1D1AD 1D242-1D244 1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 "
    "1DA9B-1DA9F 1DAA1-1DAAF 1E8D0-1E8D6 E0100-E01EF"
)
# Step 5: punctuation (ASCII punctuation, P* as of Unicode 8, and U+166D and
# U+111C9, which were Po then).
_PUNCTUATION = (
    "0021-002F 003A-0040 005B-0060 007B-007E 00A1 00A7 00AB 00B6-00B7 00BB "
    "00BF 037E 0387 055A-055F 0589-058A 05BE 05C0 05C3 05C6 05F3-05F4 "
    "0609-060A 060C-060D 061B 061E-061F 066A-066D 06D4 0700-070D 07F7-07F9 "
    "0830-083E 085E 0964-0965 0970 0AF0 0DF4 0E4F 0E5A-0E5B 0F04-0F12 0F14 "
    "0F3A-0F3D 0F85 0FD0-0FD4 0FD9-0FDA 104A-104F 10FB 1360-1368 1400 "
    "166D-166E 169B-169C 16EB-16ED 1735-1736 17D4-17D6 17D8-17DA 1800-180A "
    "1944-1945 1A1E-1A1F 1AA0-1AA6 1AA8-1AAD 1B5A-1B60 1BFC-1BFF 1C3B-1C3F "
    "1C7E-1C7F 1CC0-1CC7 1CD3 2010-2027 2030-2043 2045-2051 2053-205E "
    "207D-207E 208D-208E 2308-230B 2329-232A 2768-2775 27C5-27C6 27E6-27EF "
    "2983-2998 29D8-29DB 29FC-29FD 2CF9-2CFC 2CFE-2CFF 2D70 2E00-2E2E "
    "2E30-2E42 3001-3003 3008-3011 3014-301F 3030 303D 30A0 30FB A4FE-A4FF "
    "A60D-A60F A673 A67E A6F2-A6F7 A874-A877 A8CE-A8CF A8F8-A8FA A8FC "
    "A92E-A92F A95F A9C1-A9CD A9DE-A9DF AA5C-AA5F AADE-AADF AAF0-AAF1 ABEB "
    "FD3E-FD3F FE10-FE19 FE30-FE52 FE54-FE61 FE63 FE68 FE6A-FE6B FF01-FF03 "
    "FF05-FF0A FF0C-FF0F FF1A-FF1B FF1F-FF20 FF3B-FF3D FF3F FF5B FF5D "
    "FF5F-FF65 10100-10102 1039F 103D0 1056F 10857 1091F 1093F 10A50-10A58 "
    "10A7F 10AF0-10AF6 10B39-10B3F 10B99-10B9C 11047-1104D 110BB-110BC "
    "110BE-110C1 11140-11143 11174-11175 111C5-111C9 111CD 111DB "
    "111DD-111DF 11238-1123D 112A9 114C6 115C1-115D7 11641-11643 "
    "1173C-1173E 12470-12474 16A6E-16A6F 16AF5 16B37-16B3B 16B44 1BC9F "
    "1DA87-1DA8B"
)
# Step 5 as TF Text's `FastWordpieceTokenizer` does it differs on these:
# it splits words on the first group (P* in ICU's newer Unicode, and
# BERT's U+2B820 range), Hugging Face only on the second.
_TF_TEXT_ONLY_PUNCTUATION = (
    "061D 09FD 0A76 0C77 0C84 1B4E-1B4F 1B7D-1B7F 2E43-2E4F 2E52-2E5D "
    "10D6E 10EAD 10F55-10F59 10F86-10F89 113D4-113D5 113D7-113D8 "
    "1144B-1144F 1145A-1145B 1145D 11660-1166C 116B9 1183B 11944-11946 "
    "119E2 11A3F-11A46 11A9A-11A9C 11A9E-11AA2 11B00-11B09 11BE1 "
    "11C41-11C45 11C70-11C71 11EF7-11EF8 11F43-11F4F 11FFF 12FF1-12FF2 "
    "16D6D-16D6F 16E97-16E9A 16FE2 1E5FF 1E95E-1E95F 2B820-2B91F"
)
_HF_ONLY_PUNCTUATION = "166D 111C9"
# Step 3: combining marks (added in Unicode 10-16) whose canonical combining
# class the Rust `unicode-normalization` crate does not know, so it neither
# decomposes nor reorders them, while ICU's NFD does.
_NFD_DIFFERENCES = (
    "07FD 0897-089F 08CA-08D3 09FE 0C3C 0D3B-0D3C 0EBA 1715 1ABF-1ACE "
    "1DF6-1DFA A82C 105C9 105E4 10D24-10D27 10D69-10D6D 10EAB-10EAC "
    "10EFD-10EFF 10F46-10F50 10F82-10F85 11070 1133B 11383 11385 1138E "
    "11391 113C5 113C7-113C8 113CE-113D0 1145E 11839-1183A 11938 "
    "1193D-1193E 11943 119E0 11A34 11A47 11A99 11D42 11D44-11D45 11D97 "
    "11F41-11F42 16121-16128 1612F 16D68-16D6A 16FF0-16FF1 1E08F "
    "1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF"
)
# Step 3: the non-starters (canonical combining class not 0, as in the ICU
# inside TensorFlow 2.21) that step 3 keeps, i.e. that are not nonspacing
# marks of Unicode 8: spacing marks such as viramas, and marks newer than
# Unicode 8. Read off ICU by putting every code point between marks of
# classes 1 and 240 and seeing whether NFD moved it (see `_nfd_run_setup`).
_KEPT_NON_STARTERS = (
    "07FD 0897-089F 08CA-08E1 09FE 0C3C 0D3B-0D3C 0EBA 1715 1ABF-1ACE 1B44 "
    "1BAA 1BF2-1BF3 1DF6-1DFB 302E-302F A82C A953 A9C0 10D24-10D27 "
    "10D69-10D6D 10EAB-10EAC 10EFD-10EFF 10F46-10F50 10F82-10F85 11070 "
    "111C0 11235 1133B 1134D 113CE-113D0 11442 11446 1145E 116B6 "
    "11839-1183A 1193D-1193E 11943 119E0 11A34 11A47 11A99 11C3F 11D42 "
    "11D44-11D45 11D97 11F41-11F42 1612F 16FF0-16FF1 1D165-1D166 "
    "1D16D-1D172 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 "
    "1E026-1E02A 1E08F 1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF "
    "1E5EE-1E5EF 1E944-1E94A"
)
# Step 4: capital letters (Unicode 14-16) that Rust lowercases and the ICU
# inside TensorFlow does not. `A-B>C` maps A..B onto C, C+1, ...
_LOWERCASE_ADDITIONS = (
    "1C89>1C8A 2C2F>2C5F A7C0>A7C1 A7CB>0264 A7CC>A7CD A7CE>A7CF A7D0>A7D1 "
    "A7D2>A7D3 A7D4>A7D5 A7D6>A7D7 A7D8>A7D9 A7DA>A7DB A7DC>019B "
    "10570-1057A>10597 1057C-1058A>105A3 1058C-10592>105B3 "
    "10594-10595>105BB 10D50-10D65>10D70 16EA0-16EB8>16EBB"
)
# A private-use character: `clean_text` drops them all, so it cannot occur
# in normalized text and can mark characters that NFD must not reorder.
_MARKER = "\ue000"
# Noncharacters (never assigned): kept by `clean_text`, split by neither
# side and unchanged by NFD and lowercasing, so one can stand in for a
# character the vocabulary does not have, or for a special token.
_STAND_INS = [
    *range(0xFDD0, 0xFDF0),
    *(p + 0xFFFE for p in range(0x10000, 0x110000, 0x10000)),
]
# HF's WordPiece decoder (`cleanup=True`) applies these, in this order, to
# every token after adding its leading space.
_DECODER_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)
# Rust's `str::trim_end` (used on each vocabulary line) strips White_Space.
_TRAILING_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SPECIAL_TOKENS = {
    "pad": "[PAD]",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}


def _ranges(spec):
    """`"0041-005A 00C0"` -> `[(0x41, 0x5A), (0xC0, 0xC0)]`."""
    out = []
    for item in spec.split():
        first, _, last = item.partition("-")
        out.append((int(first, 16), int(last or first, 16)))
    return out


def _code_points(spec):
    return {c for first, last in _ranges(spec) for c in range(first, last + 1)}


def _escape(code_point):
    return f"\\x{{{code_point:X}}}"


def _class_body(spec):
    """The inside of an RE2 character class `[...]` for `spec`."""
    parts = []
    for first, last in _ranges(spec):
        parts.append(_escape(first))
        if last != first:
            parts.append("-" + _escape(last))
    return "".join(parts)


def _python_class(spec):
    """The same class as `_class_body`, in Python `re` syntax."""
    return "".join(
        f"\\U{first:08X}" + (f"-\\U{last:08X}" if last != first else "")
        for first, last in _ranges(spec)
    )


# After BertPreTokenizer a word holds no whitespace, no dropped character,
# and punctuation or CJK only as a one-character word of its own.
_NOT_INSIDE_WORDS = re.compile(
    f"[ {_python_class(_CONTROL)}{_python_class(_WHITESPACE)}"
    f"{_python_class(_PUNCTUATION)}{_python_class(_CJK)}]"
)
# Special tokens of BERT's form, whose name normalization only lowercases.
_BRACKETED = re.compile(r"\[[A-Za-z0-9]+\]")
_WORDS_ALONE = re.compile(
    f"[{_python_class(_PUNCTUATION)}{_python_class(_CJK)}]"
)


def _lowercase_additions():
    """`{capital: small}` from `_LOWERCASE_ADDITIONS`."""
    out = {}
    for item in _LOWERCASE_ADDITIONS.split():
        source, target = item.split(">")
        ((first, last),) = _ranges(source)
        for c in range(first, last + 1):
            out[chr(c)] = chr(int(target, 16) + c - first)
    return out


def _read_vocabulary_file(path):
    """The tokens of a `vocab.txt`, one per line, as HF's `read_file` does.

    Each line loses its trailing whitespace (Rust's `trim_end`); empty lines
    are tokens too; a final newline does not start another token.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"WordPieceTokenizer vocabulary file not found: {path!r}. Pass "
            "the path of a BERT `vocab.txt` (one token per line) or a list "
            "of tokens."
        ) from None
    except OSError as error:
        raise OSError(
            f"Could not read the WordPieceTokenizer vocabulary file "
            f"{path!r}: {error}."
        ) from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"The WordPieceTokenizer vocabulary file {path!r} is not valid "
            f"UTF-8 (byte {error.start}: {data[error.start : error.end]!r}). "
            "A `vocab.txt` is UTF-8 text with one token per line."
        ) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(
            f"The WordPieceTokenizer vocabulary file {path!r} is empty. "
            "A `vocab.txt` has one token per line."
        )
    return [line.rstrip(_TRAILING_WHITESPACE) for line in lines], path


@keras.saving.register_keras_serializable(package="tf_input")
class WordPieceTokenizer(Tokenizer):
    """BERT's WordPiece tokenizer, with the same ids as Hugging Face.

    Gives, for every input, the ids of Hugging Face `tokenizers`'
    `BertWordPieceTokenizer(vocab, lowercase=..., strip_accents=...)`
    (`clean_text=True`, `handle_chinese_chars=True`) with the same vocabulary:
    BERT's text cleanup, spaces around CJK ideographs, accent stripping,
    plain per-character lowercasing (no case folding: `ß`, `ς` and
    full-width punctuation are kept), punctuation splitting, then greedy
    longest-match-first WordPiece with `##` continuations. A word of more
    than `max_word_length` characters, or one the vocabulary cannot cover,
    becomes the unknown token. It is tested id for id against
    `tokenizers` on 36 languages, emoji, Chinese and Japanese novels,
    WikiText and every Unicode code point.

    As in `BertWordPieceTokenizer` (and `transformers`' `BertTokenizerFast`),
    the special tokens `[UNK]`, `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]` found
    in the text itself keep their ids: `"Paris is the [MASK]."` holds id
    103 on bert-base-uncased. The match is case-sensitive and on the raw
    text.

    Invalid UTF-8 is not an error: each bad byte sequence becomes U+FFFD,
    which BERT's cleanup then drops (so `b"ab\\xffc"` tokenizes as `"abc"`).

    Runs in `tf.data.Dataset.map` (map batches, not single lines), in
    `tf.function` and in a SavedModel. It uses TF Text ops (NFD and
    `FastWordpieceTokenizer`), so a process that loads such a SavedModel
    must `import tensorflow_text` first.

    `detokenize` follows `tokenizers`' `decode(ids, skip_special_tokens=
    False)`: `##` pieces join the previous piece, other pieces are
    separated by a space, special tokens are kept, and the decoder's
    cleanup removes the space before `.`, `?`, `!` and `,`. Lowercasing and
    accent stripping cannot be undone.

    Args:
        vocabulary: list of str (id = position), or the path of a BERT
            `vocab.txt` (one token per line). The tokens are stored in
            `get_config`, so saved models need no extra file.
        lowercase: bool. Lowercase the text. Defaults to `True` (uncased
            BERT); use `False` for cased vocabularies.
        strip_accents: bool or None. Decompose (NFD) and drop nonspacing
            marks. `None` follows `lowercase`. Defaults to `None`.
        unknown_token: str. The token for words the vocabulary cannot
            cover; it must be in the vocabulary. Defaults to `"[UNK]"`.
        max_word_length: int. Words with more characters become the unknown
            token. Defaults to `100`, as in BERT.
        add_special_tokens: bool. Put `[CLS]` before and `[SEP]` after each
            sequence; both must be in the vocabulary. Defaults to `False`.
        templates: None or `{"single": [...], "pair": [...]}` with items
            `[piece, type_id]` (`piece` a token id, `"$A"` or `"$B"`), the
            special tokens that `add_special_tokens=True` adds and
            `templates()` returns, as a `tokenizer.json` post-processor
            gives them (`tf_input.load_tokenizer` passes them). None
            (default): `[CLS] $A [SEP]`.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a string, a list of strings, or a string tensor of shape
            `[]` or `[N]`.

    Returns:
        int32 ids: a 1-D tensor for a scalar string, a `tf.RaggedTensor`
        of shape `[N, None]` for a batch.

    Example:

    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
    ...               "cat", "##s", "sat", "."]
    >>> tokenizer = tf_input.tokenizers.WordPieceTokenizer(vocabulary)
    >>> tokenizer("The cats sat.").numpy().tolist()
    [5, 6, 7, 8, 9]
    >>> tokenizer(["The Cat", "dogs", "the [MASK] sat"]).to_list()
    [[5, 6], [1], [5, 4, 8]]
    >>> tokenizer.detokenize([5, 6, 7, 8, 9]).numpy().decode()
    'the cats sat.'
    >>> tokenizer.special_tokens
    {'pad': 0, 'unk': 1, 'cls': 2, 'sep': 3, 'mask': 4}
    >>> tf_input.tokenizers.WordPieceTokenizer(
    ...     vocabulary, add_special_tokens=True)("the cat").numpy().tolist()
    [2, 5, 6, 3]
    """

    def __init__(
        self,
        vocabulary,
        *,
        lowercase=True,
        strip_accents=None,
        unknown_token="[UNK]",
        max_word_length=100,
        add_special_tokens=False,
        templates=None,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        if not isinstance(lowercase, bool):
            raise ValueError(
                "`lowercase` must be True or False. "
                f"Received: lowercase={lowercase!r}."
            )
        if strip_accents is not None and not isinstance(strip_accents, bool):
            raise ValueError(
                "`strip_accents` must be None, True or False. "
                f"Received: strip_accents={strip_accents!r}."
            )
        if not isinstance(unknown_token, str) or not unknown_token:
            raise ValueError(
                "`unknown_token` must be a non-empty string. "
                f"Received: unknown_token={unknown_token!r}."
            )
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.unknown_token = unknown_token
        self.max_word_length = check_positive_int(
            "max_word_length", max_word_length
        )
        self.vocabulary = self._checked_vocabulary(vocabulary)
        self._token_index = {t: i for i, t in enumerate(self.vocabulary)}
        if unknown_token not in self._token_index:
            raise ValueError(
                f"The unknown token {unknown_token!r} is not in the "
                f"vocabulary ({len(self.vocabulary)} tokens). Add it, or "
                "pass the vocabulary's own unknown token as `unknown_token`."
            )
        self._unknown_id = self._token_index[unknown_token]
        self.templates_config = templates
        missing = [t for t in ("[CLS]", "[SEP]") if t not in self._token_index]
        if templates is not None:
            parsed, self._start_ids, self._end_ids = parse_templates(
                templates, len(self.vocabulary)
            )
            self._templates = parsed
        else:
            if add_special_tokens and missing:
                raise ValueError(
                    "`add_special_tokens=True` puts [CLS] and [SEP] around "
                    f"each sequence, but the vocabulary has no {missing}. "
                    "Use add_special_tokens=False."
                )
            if not missing:
                self._start_ids = [self._token_index["[CLS]"]]
                self._end_ids = [self._token_index["[SEP]"]]
        self._build_graph_constants()

    @classmethod
    def from_vocab_file(cls, path, **kwargs):
        """Reads a BERT `vocab.txt` (one token per line, id = line number).

        Args:
            path: str or path-like.
            **kwargs: the other `WordPieceTokenizer` arguments.
        """
        return cls(vocabulary=os.fspath(path), **kwargs)

    # --- Setup --------------------------------------------------------------
    def _checked_vocabulary(self, vocabulary):
        source = "the vocabulary"
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary, path = _read_vocabulary_file(vocabulary)
            source = f"the vocabulary file {path!r}"
        elif isinstance(vocabulary, (list, tuple)):
            bad = [t for t in vocabulary if not isinstance(t, str)]
            if bad:
                raise TypeError(
                    "`vocabulary` must be a list of strings or the path of a "
                    f"vocab.txt. Received a list holding {bad[0]!r} (of type "
                    f"{type(bad[0]).__name__})."
                )
            vocabulary = list(vocabulary)
        else:
            raise TypeError(
                "`vocabulary` must be a list of strings or the path of a "
                f"vocab.txt. Received: vocabulary of type "
                f"{type(vocabulary).__name__}."
            )
        if not vocabulary:
            raise ValueError(
                "`vocabulary` is empty. Pass a list of tokens or the path "
                "of a BERT vocab.txt."
            )
        seen = {}
        for i, token in enumerate(vocabulary):
            try:
                token.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    f"Token {token!r} (id {i}) in {source} is not valid "
                    "Unicode text: it holds a lone surrogate."
                ) from None
            if token in seen:
                raise ValueError(
                    f"Every token in {source} must be unique, because ids "
                    f"are positions. {token!r} is at ids {seen[token]} and "
                    f"{i}."
                )
            seen[token] = i
        return vocabulary

    def _build_graph_constants(self):
        """Regexes, fixes and WordPiece models for the call."""
        self._strip = (
            self.lowercase if self.strip_accents is None else self.strip_accents
        )
        self._model_vocabulary = self._matchable_tokens()
        vocabulary_chars = set(
            "".join(t for t in self._model_vocabulary if _MARKER not in t)
        )
        self._drop_pattern = f"[{_class_body(_CONTROL)}]"
        self._mark_pattern = f"[{_class_body(_NONSPACING_MARKS)}]"
        # Some differences between the TF ops and the Rust code only matter
        # if the vocabulary holds a character involved: otherwise the word
        # holding it is `[UNK]` on both sides. Such fixes are added to the
        # graph only when needed (never for the BERT vocabularies).
        #
        # Step 4: ICU applies the final-sigma rule; Rust always gives `σ`.
        self._fix_sigma = bool(vocabulary_chars & {"σ", "ς"})
        # Step 4: capitals newer than the ICU inside TensorFlow.
        self._lowercase_fixes = []
        if self.lowercase:
            self._lowercase_fixes = [
                (capital, small)
                for capital, small in _lowercase_additions().items()
                if capital in vocabulary_chars or small in vocabulary_chars
            ]
        # Step 3: marks whose NFD differs between ICU and Rust.
        self._nfd_protected = ""
        self._nfd_recompose = []
        if self._strip:
            self._nfd_fix_setup(vocabulary_chars)
        # Noncharacters that no token uses: the first stands in for
        # characters the vocabulary does not have, the others for special
        # tokens.
        free = [chr(c) for c in _STAND_INS if chr(c) not in vocabulary_chars]
        self._stand_in = free[0]
        self._nfd_run_setup()
        specials, reserved = self._special_token_setup(free[1:])
        self._split_fix_setup(vocabulary_chars, reserved)
        # Steps 2, 5 and 6: TF Text's WordPiece with its own split, which
        # agrees with HF's on whitespace and CJK.
        self._line_model = self._wordpiece_model(no_pretokenization=False)
        # Which ids are `##` continuations (special tokens never are).
        continuation = [t.startswith("##") for t in self.vocabulary]
        for token in specials:
            continuation[self._token_index[token]] = False
        self._continuation = tf.constant(continuation)
        self._vocabulary_tensor = tf.constant(self.vocabulary)

    def _special_token_setup(self, free):
        """Step 0: the vocabulary's special tokens, matched in raw text.

        `BertWordPieceTokenizer` registers `[UNK]` (its unknown token),
        `[SEP]`, `[CLS]`, `[PAD]` and `[MASK]`, those the vocabulary has,
        as added tokens, which HF cuts out of the raw text before
        normalizing (case-sensitively: "[MASK]" is id 103, "[mask]" is "[",
        "mask", "]"). Here each becomes a word holding a noncharacter from
        `free`, which TF Text's vocabulary maps to its id: one regex turns
        every "[NAME]" into " ?NAME? " (? a noncharacter), and any other
        special token gets a noncharacter of its own.

        Returns the special tokens and the noncharacters used.
        """
        names = [self.unknown_token, "[SEP]", "[CLS]", "[PAD]", "[MASK]"]
        specials = sorted(
            {t for t in names if t in self._token_index}, key=len, reverse=True
        )
        bracketed = [t for t in specials if _BRACKETED.fullmatch(t)]
        others = [t for t in specials if t not in bracketed]
        used = free[: len(others) + bool(bracketed)]
        self._special_patterns = []
        if bracketed:
            mark = used[-1]
            alternatives = "|".join(t[1:-1] for t in bracketed)
            self._special_patterns.append(
                (rf"\[({alternatives})\]", f" {mark}\\1{mark} ")
            )
            for token in bracketed:
                # Step 4 is all normalization does to an ASCII name.
                name = token[1:-1].lower() if self.lowercase else token[1:-1]
                index = self._token_index[token]
                self._model_vocabulary[index] = f"{mark}{name}{mark}"
        for token, sentinel in zip(others, used):
            self._model_vocabulary[self._token_index[token]] = sentinel
            self._special_patterns.append((_literal(token), f" {sentinel} "))
        return specials, "".join(used)

    def _split_fix_setup(self, vocabulary_chars, reserved):
        """Step 5 as TF Text does it, corrected where it differs from HF's.

        TF Text's split needs spaces around the characters only HF splits
        on, and a stand-in for the ones only TF Text splits on. As
        normalization neither makes nor changes these characters, one scan
        of the raw text (which also checks the UTF-8 and looks for the
        `reserved` noncharacters) says whether a batch needs any of it.
        """
        tf_text_only = _code_points(_TF_TEXT_ONLY_PUNCTUATION)
        in_vocabulary = {c for c in tf_text_only if chr(c) in vocabulary_chars}
        reserved = "".join(_escape(ord(c)) for c in reserved)
        self._plain_pattern = (
            r"[^\x{D800}-\x{DFFF}"
            f"{self._long_run_class}"
            f"{_class_body(_TF_TEXT_ONLY_PUNCTUATION)}"
            f"{_class_body(_HF_ONLY_PUNCTUATION)}{reserved}]*"
        )
        self._reserved_pattern = f"[{reserved}]" if reserved else None
        self._hf_only_pattern = f"([{_class_body(_HF_ONLY_PUNCTUATION)}])"
        stand_for = sorted(tf_text_only - in_vocabulary)
        self._stand_in_pattern = None
        if stand_for:
            self._stand_in_pattern = f"[{''.join(map(_escape, stand_for))}]"
        # A TF-Text-only punctuation character that the vocabulary has
        # cannot be stood in for: lines holding one take the exact path.
        self._exact_path_pattern = None
        if in_vocabulary:
            self._exact_path_pattern = (
                "(?s).*[" + "".join(map(_escape, sorted(in_vocabulary))) + "].*"
            )
            # Steps 1, 2 and 5 with HF's own classes: spaces around CJK and
            # punctuation, whitespace to spaces.
            self._split_pattern = (
                f"([{_class_body(_CJK)}{_class_body(_PUNCTUATION)}])"
                f"|[{_class_body(_WHITESPACE)}]"
            )
            self._word_model = self._wordpiece_model(no_pretokenization=True)

    def _matchable_tokens(self):
        """The vocabulary for TF Text, without tokens HF can never match.

        HF's WordPiece only sees words, so a token holding whitespace,
        punctuation, CJK or a dropped character inside a word (`"[CLS]"`,
        `"a b"`, `"##!"`), or longer than a word may be, never matches.
        TF Text's WordPiece can match a token holding a space across two
        words, and fails to build on some control characters and on long
        tokens; each such token becomes, for TF Text only, a unique string
        that no normalized text contains. So does the unknown token, which
        TF Text only needs to know by name.
        """
        out = []
        for i, token in enumerate(self.vocabulary):
            body = token[2:] if token.startswith("##") else token
            alone = body == token and _WORDS_ALONE.fullmatch(body)
            matchable = 0 < len(body) <= self.max_word_length and (
                alone or not _NOT_INSIDE_WORDS.search(body)
            )
            if not matchable or i == self._unknown_id:
                token = f"{_MARKER}{i}"
            out.append(token)
        return out

    def _wordpiece_model(self, no_pretokenization):
        # A character has at most 4 bytes, so TF Text's byte limit never
        # cuts a word of `max_word_length` characters short; longer words
        # are found after the fact.
        try:
            return tf_text.FastWordpieceTokenizer(
                self._model_vocabulary,
                suffix_indicator="##",
                max_bytes_per_word=4 * self.max_word_length,
                token_out_type=tf.int32,
                unknown_token=self._model_vocabulary[self._unknown_id],
                no_pretokenization=no_pretokenization,
            )
        except RuntimeError as error:
            raise ValueError(
                "TF Text could not build a WordPiece model from this "
                f"vocabulary ({len(self.vocabulary)} tokens): {error}"
            ) from None

    def _nfd_run_setup(self):
        """Keeps step 3 linear: ICU's NFD reorders marks by insertion sort.

        Its canonical reordering is quadratic in a run of non-starters:
        100,000 marks in descending combining class (U+0345 U+0301 U+0316
        U+0334, 25,000 times) took 4.9 s here, 0.014 s in HF `tokenizers`
        (353x). Two exact rewrites before NFD keep every run short:

        - nonspacing marks whose NFD is only nonspacing non-starters (734
          of them) are dropped with step 1's controls: step 3 drops them
          anyway, and taking elements out of a run does not change the
          order a stable sort by combining class gives the others;
        - a run of more than `max_word_length` non-starters that step 3
          keeps (`_KEPT_NON_STARTERS`; such lines take the rare path) makes
          its word longer than `max_word_length`, `[UNK]` whatever the
          order: it becomes `max_word_length + 1` stand-ins. (RE2 counts to
          1000, so with `max_word_length >= 1000` this one is not done.)
        """
        self._long_run_class, self._long_run_pattern = "", None
        if not self._strip:
            return
        marks = _code_points(_NONSPACING_MARKS)
        # Unicode 8 characters: their decompositions and classes are
        # stable, so Python's tables give ICU's.
        dropped = [
            c
            for c in sorted(marks)
            if all(
                ord(x) in marks and unicodedata.combining(x)
                for x in unicodedata.normalize("NFD", chr(c))
            )
        ]
        spec = " ".join(f"{c:X}" for c in dropped)
        self._drop_pattern = f"[{_class_body(_CONTROL)}{_class_body(spec)}]"
        if self.max_word_length < 1000:
            self._long_run_class = _class_body(_KEPT_NON_STARTERS)
            self._long_run_pattern = (
                f"[{self._long_run_class}]{{{self.max_word_length + 1},}}"
            )

    def _nfd_fix_setup(self, vocabulary_chars):
        """Protects the `_NFD_DIFFERENCES` characters the vocabulary uses.

        Around NFD, each such character is wrapped in `_MARKER`s: a marker
        is a starter, so ICU cannot reorder marks across the character
        (Rust treats it as a starter too). ICU's decomposition of it is
        then put back together, and the markers go with the nonspacing
        marks.
        """
        candidates = sorted(_code_points(_NFD_DIFFERENCES))
        with tf.init_scope():
            decomposed = tf_text.normalize_utf8(
                tf.constant([chr(c) for c in candidates]), "NFD"
            ).numpy()
        marks = {chr(c) for c in _code_points(_NONSPACING_MARKS)}
        protected = []
        for c, nfd in zip(candidates, decomposed):
            nfd = nfd.decode("utf-8")
            # Nonspacing marks are dropped after NFD: they cannot matter.
            if not (set(chr(c) + nfd) - marks) & vocabulary_chars:
                continue
            protected.append(c)
            if nfd != chr(c):
                pattern = "".join(map(_escape, map(ord, _MARKER + nfd)))
                self._nfd_recompose.append(
                    (
                        pattern + _escape(ord(_MARKER)),
                        _MARKER + chr(c) + _MARKER,
                    )
                )
        if protected:
            self._nfd_protected = "".join(map(_escape, protected))
            self._mark_pattern = (
                f"[{_class_body(_NONSPACING_MARKS)}{_escape(ord(_MARKER))}]"
            )

    # --- Tokenize -----------------------------------------------------------
    # No Python control flow depends on tensors here, so AutoGraph (which
    # took seconds to convert these methods) is skipped.
    @tf.autograph.experimental.do_not_convert
    def _tokenize_batch(self, texts):
        # One scan of the raw text decides whether the rare fixes are
        # needed at all.
        plain = tf.strings.regex_full_match(texts, self._plain_pattern)
        texts = tf.cond(
            tf.reduce_all(plain),
            lambda: self._mark_special_tokens(texts),
            lambda: self._fix_rare_characters(texts),
        )
        texts = self._normalize(texts)
        # Steps 2, 5 and 6 in one op.
        ids, starts, ends = self._line_model.tokenize_with_offsets(texts)
        ids = self._unknown_long_words(ids, starts, ends, texts)
        if self._exact_path_pattern is None:
            return ids
        redo = tf.strings.regex_full_match(texts, self._exact_path_pattern)
        return tf.cond(
            tf.reduce_any(redo),
            lambda: self._replace_rows(ids, texts, redo),
            lambda: ids,
        )

    def _mark_special_tokens(self, texts):
        """Step 0: each special token -> its noncharacter, as a word."""
        for pattern, rewrite in self._special_patterns:
            texts = tf.strings.regex_replace(texts, pattern, rewrite)
        return texts

    def _fix_rare_characters(self, texts):
        """Invalid UTF-8, noncharacters, and where the two splits differ."""
        # Invalid UTF-8 -> U+FFFD, which step 1 then drops.
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        # The text's own copies of the special tokens' noncharacters are
        # words the vocabulary cannot cover, as the stand-in is.
        if self._reserved_pattern is not None:
            texts = tf.strings.regex_replace(
                texts, self._reserved_pattern, self._stand_in
            )
        texts = self._mark_special_tokens(texts)
        texts = tf.strings.regex_replace(texts, self._hf_only_pattern, r" \1 ")
        if self._stand_in_pattern is not None:
            texts = tf.strings.regex_replace(
                texts, self._stand_in_pattern, self._stand_in
            )
        if self._long_run_pattern is not None:
            # Runs of kept non-starters, once step 1 has dropped what lies
            # between them (see `_nfd_run_setup`).
            texts = tf.strings.regex_replace(texts, self._drop_pattern, "")
            texts = tf.strings.regex_replace(
                texts,
                self._long_run_pattern,
                self._stand_in * (self.max_word_length + 1),
            )
        return texts

    def _normalize(self, texts):
        """BertNormalizer's steps 1, 3 and 4.

        Whitespace and CJK need no spaces here: TF Text's split treats them
        as HF does.
        """
        # Step 1: drop control and format characters (ZWJ, soft hyphen, ...).
        texts = tf.strings.regex_replace(texts, self._drop_pattern, "")
        if self._strip:
            # Step 3: NFD, then drop nonspacing marks ("café" -> "cafe").
            if self._nfd_protected:
                texts = tf.strings.regex_replace(
                    texts,
                    f"([{self._nfd_protected}])",
                    _MARKER + r"\1" + _MARKER,
                )
            texts = tf_text.normalize_utf8(texts, "NFD")
            for pattern, rewrite in self._nfd_recompose:
                texts = tf.strings.regex_replace(texts, pattern, rewrite)
            texts = tf.strings.regex_replace(texts, self._mark_pattern, "")
        if self.lowercase:
            # Step 4: per-character lowercase, with `Σ` -> `σ` everywhere.
            if self._fix_sigma:
                texts = tf.strings.regex_replace(texts, "Σ", "σ")
            for capital, small in self._lowercase_fixes:
                texts = tf.strings.regex_replace(
                    texts, _escape(ord(capital)), small
                )
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    def _unknown_long_words(self, ids, starts, ends, texts):
        """Step 6: a word over `max_word_length` characters -> `[UNK]`.

        A word is a piece that is not a `##` continuation plus the
        continuations after it; its byte span comes from the offsets. Only
        a word of more than `max_word_length` bytes can have more than
        `max_word_length` characters, and only those are counted.

        Plain tensors, no ragged ops and no `tf.cond`: `tf.data` pays for
        every op of a map function each time it starts an iterator, and
        these ops cost little when no word is long.
        """
        pieces = ids.flat_values
        starts_word = tf.logical_not(tf.gather(self._continuation, pieces))
        word = tf.cumsum(tf.cast(starts_word, "int64")) - 1  # [pieces]
        first = tf.squeeze(tf.where(starts_word), axis=1)  # [words]
        word_start = tf.gather(starts.flat_values, first)
        word_bytes = tf.math.segment_max(ends.flat_values, word) - word_start
        candidates = tf.squeeze(
            tf.where(word_bytes > self.max_word_length), axis=1
        )
        row = tf.searchsorted(
            ids.row_splits, tf.gather(first, candidates), side="right"
        )
        chars = tf.strings.length(
            tf.strings.substr(
                tf.gather(texts, row - 1),
                tf.gather(word_start, candidates),
                tf.gather(word_bytes, candidates),
            ),
            unit="UTF8_CHAR",
        )
        long = tf.scatter_nd(
            tf.expand_dims(candidates, 1),
            chars > self.max_word_length,
            tf.shape(word_start, out_type=tf.int64),
        )
        in_long_word = tf.gather(long, word)  # [pieces]
        # The first piece of a long word becomes `[UNK]`, the others go.
        keep = tf.logical_or(tf.logical_not(in_long_word), starts_word)
        pieces = tf.where(in_long_word, self._unknown_id, pieces)
        kept = tf.pad(tf.cumsum(tf.cast(keep, "int64")), [[1, 0]])
        return tf.RaggedTensor.from_row_splits(
            tf.gather(pieces, tf.squeeze(tf.where(keep), axis=1)),
            tf.gather(kept, ids.row_splits),
            validate=False,
        )

    def _replace_rows(self, ids, texts, redo):
        """`ids` with the rows where `redo` is True tokenized exactly."""
        rows = tf.where(redo)[:, 0]
        exact = self._tokenize_exactly(tf.gather(texts, rows))
        nrows = ids.nrows()
        position = tf.where(
            redo,
            nrows + tf.cumsum(tf.cast(redo, "int64")) - 1,
            tf.range(nrows),
        )
        return tf.gather(tf.concat([ids, exact], axis=0), position)

    def _tokenize_exactly(self, texts):
        """Steps 2, 5 and 6 with HF's own character classes, word by word."""
        texts = tf.strings.regex_replace(texts, self._split_pattern, r" \1 ")
        words = tf.strings.split(texts)
        flat = words.flat_values
        long = tf.strings.length(flat, unit="UTF8_CHAR") > self.max_word_length
        flat = tf.where(long, _MARKER, flat)  # matches no token: [UNK]
        pieces = self._word_model.tokenize(flat)
        return words.with_flat_values(pieces).merge_dims(1, 2)

    # --- Detokenize ---------------------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def _detokenize_batch(self, ids):
        tokens = tf.gather(self._vocabulary_tensor, ids.flat_values)
        index = tf.range(tf.size(ids.flat_values, out_type=tf.int64))
        first = tf.equal(index, tf.gather(ids.row_starts(), ids.value_rowids()))
        continued = tf.strings.regex_full_match(tokens, "(?s)##.*")
        # HF's WordPiece decoder: a `##` piece loses its prefix, any other
        # piece after the first gets a leading space.
        pieces = tf.where(
            first,
            tokens,
            tf.where(
                continued,
                tf.strings.regex_replace(tokens, "^##", ""),
                tf.strings.join([" ", tokens]),
            ),
        )
        for old, new in _DECODER_CLEANUP:
            pieces = tf.strings.regex_replace(
                pieces, _literal(old), new.replace("\\", "\\\\")
            )
        return tf.strings.reduce_join(ids.with_flat_values(pieces), axis=-1)

    # --- Inspection ---------------------------------------------------------
    def get_vocabulary(self):
        return list(self.vocabulary)

    @property
    def uses_core_ops_only(self):
        """False: NFD and WordPiece run on TF Text ops."""
        return False

    @property
    def special_tokens(self):
        out = {
            name: self._token_index[token]
            for name, token in _SPECIAL_TOKENS.items()
            if token in self._token_index
        }
        out["unk"] = self._unknown_id
        return dict(sorted(out.items(), key=lambda item: item[1]))

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary": list(self.vocabulary),
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
            "unknown_token": self.unknown_token,
            "max_word_length": self.max_word_length,
            "templates": self.templates_config,
        }


def _literal(text):
    """An RE2 pattern matching `text` literally."""
    return "".join(
        c if c.isascii() and c.isalnum() else _escape(ord(c)) for c in text
    )
