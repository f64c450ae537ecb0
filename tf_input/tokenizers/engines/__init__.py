"""The inner loops of the tokenizers, apart from the layers that use them.

Each module is one engine, driven by tables that the layers build from
their files; none knows about Keras, configs or file formats:

* `merge`: the BPE merge loop over token sequences (`merge_sequences`:
  the lowest-ranked adjacent pair first, leftmost on ties), the table of
  merges it reads (`MergeTable`), `MergeWindows` (how far a merge can
  reach: a long chunk merges in about as few steps as a word), and
  `lookup_or_merge` (pieces that are one token come from a table, the
  distinct others are merged once);
* `byte_level_bpe`: byte-level BPE of words (GPT-2, Llama 3, tiktoken
  ranks): words cut into chunks that no merge joins, looked up or merged;
* `whole_characters`: the proof and graph that let byte-level BPE start
  from whole multi-byte characters instead of their bytes;
* `char_bpe`: character-level BPE (SentencePiece BPE models and
  `tokenizer.json` BPE with a metaspace), with byte fallback;
* `viterbi`: the unigram model's best segmentation (`UnigramTokenizer`);
  `viterbi_blocks`, the same search for words of thousands of
  characters, in blocks (`O(sqrt(length))` loop steps instead of one a
  character), where the file's scores make every sum exact;
* `word_cache`: each word's result kept across batches, for the BPE
  engines, `viterbi` and the SentencePiece unigram search on core ops (a
  batch of known words runs no merge loop or search);
* `_ops`: small graph helpers written for few graph nodes.

Why few graph nodes matter: every `tf.data` iterator instantiates and
optimizes the map function again, at a cost per node (see
benchmarks/README.md).
"""
