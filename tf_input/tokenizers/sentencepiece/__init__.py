"""SentencePiece tokenization inside the TensorFlow graph.

`SentencePieceTokenizer` reads a `.model` file (a serialized
`sentencepiece.ModelProto`) and gives the ids that the `sentencepiece`
library (0.2.3) gives, with TensorFlow and TF Text ops only (core
TensorFlow ops only for BPE models without normalization rules). The proto is
parsed here (wire format), so `sentencepiece` itself is not needed.

How each model type is encoded, and why:

* BPE models without normalization rules (Mistral, Llama 2: the BPE
  models of today's LLMs) run on core TensorFlow ops only (`_bpe`): the
  byte-level BPE engine's merge loop over characters, with the merges
  taken from the pieces' scores (highest first, leftmost on equal scores,
  as sentencepiece's bpe_model.cc), byte fallback, user-defined pieces
  kept whole and the whitespace rules of the normalizer spec. A
  SavedModel holding one loads with a plain `import tensorflow`. BPE
  models with a precompiled charsmap (nmt_nfkc, the trainer's default),
  `treat_whitespace_as_suffix`, unused pieces, or a user-defined piece
  with a space still run TF Text's `SentencepieceTokenizer` op, which
  embeds the `sentencepiece` C++ library (its merges equal 0.2.3's).
* Unigram models cannot use that op: it compares a double-precision
  candidate with a float32 best score in its Viterbi search, where
  `sentencepiece` 0.2.3 compares two float32 scores, so exact float ties go
  the other way (ALBERT on the Chinese novel in shared/data: 50 lines of
  5,591 differ, e.g. `*` `**` where the library gives `*` `**` and the op
  `**` `*`). TF Text's `FastSentencepieceTokenizer` op does the float32
  search the library's way but differs around unknown characters,
  user-defined pieces and some whitespace, so the model it gets is rewritten:

  - user-defined pieces get the library's score `0.1 * (bytes - 1)`;
  - every BMP character and emoji that is not a piece of its own gets a
    "pseudo piece" scored like the library's unknown node (`min score -
    10`); afterwards pseudo ids become the unknown id (or the byte-fallback
    ids of the character), and runs of unknowns merge, as in the library.

  Lines the fast op would still treat differently take a second route:
  invalid UTF-8, tabs or newlines that survive normalization, a literal
  "▁", NUL, characters above the BMP that no piece uses, user-defined
  pieces a normalization rule could touch, and every line of models with
  `treat_whitespace_as_suffix` or without the dummy prefix. There the
  library's own normalizer runs (the library op with a character model),
  rare characters are replaced by a placeholder that has a pseudo piece,
  and the fast op runs with normalization switched off.

  Lines whose lattice has a single path skip the op (a third route): when
  no two neighbouring characters of the normalized line both occur in
  pieces of two or more characters, and the first does not follow "▁" in
  a piece, no piece spans any boundary, so each character is its own
  piece (or unknown) and its id is a table lookup, with no search and no
  float comparison (`_UnigramPlan._plan_trivial_route`). For ALBERT these
  are 91% of the lines of the Chinese novel and 44% of Tatoeba-36's.

With `tf_text_unigram=False`, unigram models run on core TensorFlow ops
only (`_core_normalizer`: the library's normalizer; `_lattice`: its
float32 search; `_core_unigram`: words searched in float64 where their
margins make the float32 path certain, else again in float32 from the
line's exact score before them), with the same ids but slower. TF Text
is an optional dependency (`tf_input[text]`): its ops, imported only
when they run, stay the default where it is installed
(`tf_text_unigram=None`), and without it unigram models take the core
route.

Known limit: on a line whose best-path score passes 1e5 in magnitude
(about 25,000 tokens) `sentencepiece` 0.2.3 re-centres its float32 scores,
which no TF op does, so exact ties after that point may be broken
differently (measured on 1 MB single lines: the first differing token was
number 24,658 to 79,336, depending on model and text).

The package, by seam: `sentence_piece_tokenizer` (the Keras layer),
`_proto` (the wire format, piece kinds and field numbers), `_model_file`
(reading and checking a `.model` argument), `_charsmap` (the
normalization rules), `_normalizer` (the library's normalization for the
graphs), `_unigram_plan` (the rewritten unigram models and routing
patterns), `_unigram_graph` (the unigram routes), `_bpe` (BPE models:
their merges for `engines/char_bpe.py`, in core ops, or on TF Text's op),
`_tf_text_ops` (TF Text's ops), `_decoding` (ids to text) and `_recent`
(the models a config named, by digest).

The tokenizers of a SentencePiece model's `tokenizer.json` (HF's pipeline,
core ops) are `MetaspaceBytePairTokenizer` and `UnigramTokenizer`, in
`tf_input.tokenizers`; they are re-exported here too.
"""

from tf_input.tokenizers.sentencepiece.sentence_piece_tokenizer import (
    SentencePieceTokenizer,
)

_MOVED = {
    "MetaspaceBytePairTokenizer": "metaspace_byte_pair_tokenizer",
    "UnigramTokenizer": "unigram_tokenizer",
}


def __getattr__(name):
    # Imported on first use: those modules import this package's parts.
    if name in _MOVED:
        import importlib

        module = importlib.import_module(f"tf_input.tokenizers.{_MOVED[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MetaspaceBytePairTokenizer",
    "SentencePieceTokenizer",
    "UnigramTokenizer",
]
