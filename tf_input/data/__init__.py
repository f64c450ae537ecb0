"""The `tf.data` pipeline: raw text to padded, bucketed or packed batches.

* `make_dataset(source, tokenizer, ...)`: one call from text to
  `(features, labels)` batches for `model.fit`.
* `stats(dataset)`: padding efficiency, truncation and shape counts.
* `segment_attention_mask(segment_ids)`: the block-diagonal attention mask
  of packed rows.
"""

from tf_input.data.packing import segment_attention_mask
from tf_input.data.pipeline import make_dataset
from tf_input.data.stats import stats

__all__ = [
    "make_dataset",
    "segment_attention_mask",
    "stats",
]
