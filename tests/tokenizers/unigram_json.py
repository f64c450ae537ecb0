"""Unigram `tokenizer.json` files made from real SentencePiece `.model`s.

shared/data holds no Unigram `tokenizer.json`, so the tests (and
`benchmarks/bench_tokenizers.py`) make them with HF `tokenizers`' own API
the way transformers' `convert_slow_tokenizer` does: the pieces and scores
of the proto as a `Unigram` model, its charsmap as a `Precompiled`
normalizer, a `Metaspace` pre-tokenizer and decoder, the control and
user-defined pieces as added tokens, and a `TemplateProcessing`.

Variants (`KINDS`):

* `albert`: `AlbertConverter` (Replace ``/'', NFKD, StripAccents,
  Lowercase, Precompiled, Replace(" {2,}", " "); `[CLS] $A [SEP]`);
* `spm`: `SpmConverter` for T5 / XLM-R style files (Precompiled,
  Strip(right), Replace(" {2,}", "▁"); `$A </s>`);
* `first`: the same with `prepend_scheme="first"`, `split=False`;
* `bytes`: `spm` plus the 256 `<0xXX>` pieces and `byte_fallback=True`,
  the Metaspace scheme "never";
* `t5`: the older T5 files: Precompiled, Replace(" {2,}", " "), and a
  `WhitespaceSplit` before the Metaspace.
"""

from __future__ import annotations

import json

import sentencepiece.sentencepiece_model_pb2 as model_pb2
from tokenizers import AddedToken
from tokenizers import Regex
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors

from tests.shared_data import data_path

SPACE = "\u2581"
MODELS = {
    "albert": "albert-base-v2-spiece.model",
    "ja": "sp-test-ja.model",
    "botchan": "sp-test-botchan-unigram-1000.model",
}
KINDS = ("albert", "spm", "first", "bytes", "t5")
_CONTROL, _USER_DEFINED = 3, 4


def read_proto(name):
    proto = model_pb2.ModelProto()
    proto.ParseFromString(data_path("sentencepiece", MODELS[name]).read_bytes())
    return proto


def build(name, kind):
    """A `tokenizers.Tokenizer` for the `.model` `name`, converted as
    `kind` (see the module doc)."""
    proto = read_proto(name)
    vocab = [(p.piece, p.score) for p in proto.pieces]
    byte_fallback = kind == "bytes"
    if byte_fallback:
        known = {piece for piece, _ in vocab}
        vocab += [
            (f"<0x{b:02X}>", 0.0)
            for b in range(256)
            if f"<0x{b:02X}>" not in known
        ]
    tokenizer = Tokenizer(
        models.Unigram(
            vocab, unk_id=proto.trainer_spec.unk_id, byte_fallback=byte_fallback
        )
    )
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if kind == "albert":
        steps = [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
        ]
        if charsmap:
            steps.append(normalizers.Precompiled(charsmap))
        steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    elif kind == "t5":
        steps = [normalizers.Precompiled(charsmap)] if charsmap else []
        steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    else:
        steps = [normalizers.Precompiled(charsmap)] if charsmap else []
        steps += [
            normalizers.Strip(left=False, right=True),
            normalizers.Replace(Regex(" {2,}"), SPACE),
        ]
    tokenizer.normalizer = normalizers.Sequence(steps)
    scheme, split = "always", True
    if kind == "first":
        scheme, split = "first", False
    elif kind == "bytes":
        scheme = "never"
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=SPACE, prepend_scheme=scheme, split=split
    )
    if kind == "t5":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), tokenizer.pre_tokenizer]
        )
    tokenizer.decoder = decoders.Metaspace(
        replacement=SPACE, prepend_scheme=scheme, split=split
    )
    added = [
        AddedToken(p.piece, normalized=False, special=p.type == _CONTROL)
        for p in proto.pieces
        if p.type in (_CONTROL, _USER_DEFINED)
    ]
    tokenizer.add_tokens(added)
    pieces = [p.piece for p in proto.pieces]
    if kind == "albert" and "[CLS]" in pieces:
        cls, sep = pieces.index("[CLS]"), pieces.index("[SEP]")
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
        )
    elif proto.trainer_spec.eos_id >= 0:
        eos = pieces[proto.trainer_spec.eos_id]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"$A:0 {eos}:0",
            pair=f"$A:0 {eos}:0 $B:1 {eos}:1",
            special_tokens=[(eos, proto.trainer_spec.eos_id)],
        )
    return tokenizer


def write(folder, name, kind):
    """Writes the `tokenizer.json` of `build(name, kind)` in `folder`;
    returns `(path, tokenizers.Tokenizer read back from it)`."""
    path = folder / f"{name}-{kind}" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    build(name, kind).save(str(path))
    json.loads(path.read_text(encoding="utf-8"))  # well-formed
    return path, Tokenizer.from_file(str(path))
