"""The Hugging Face `tokenizer.json` pipeline, one module per section.

A `tokenizer.json` describes a tokenizer as stages, each a dict with a
`"type"`. Each module here reads one section (its one `type` dispatch)
and compiles it into TensorFlow ops that give HF's output:

* `added_tokens` (`added_tokens`): the tokens cut out of the text first;
* `normalizer` (`normalizers`): NFC, NFD, NFKC, NFKD, Lowercase,
  StripAccents, Precompiled, Replace, Prepend, Strip;
* `pre_tokenizer` (`pre_tokenizers`): Split, ByteLevel, Digits,
  WhitespaceSplit, Metaspace;
* `post_processor` (`processors`): TemplateProcessing, BertProcessing,
  RobertaProcessing, ByteLevel;
* `decoder` (`decoders`): ByteLevel, Metaspace, ByteFallback, Fuse,
  Replace, Strip, WordPiece, CTC, BPEDecoder, in any chain.

`Sequence` is flattened in one place (`spec.flatten`), and a malformed or
unsupported section is a `spec.SpecError` naming it. `regex` translates
the Oniguruma split regexes to RE2 exactly. `tokenizer_json` reads a whole
file and builds the tokenizer of its `model` (byte-level BPE,
SentencePiece-style BPE, Unigram, WordPiece); the models' inner loops are
in `tf_input.tokenizers.engines`.
"""
