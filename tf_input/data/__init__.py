"""The `tf.data` pipeline: raw text to padded, bucketed or packed batches.

* `make_dataset(source, tokenizer, ...)`: one call from text to
  `(features, labels, sample_weight)` batches for `model.fit`.
* `stats(dataset)`: padding efficiency, truncation and shape counts.
* `pipeline_info(dataset)`: what `make_dataset` built (boundaries, batch
  sizes, batch count, features, the counting twin `stats` reads).
* `segment_attention_mask(example_ids)`: the block-diagonal attention mask
  of packed rows.
* `read_conll(path)`: the `(words, labels)` sentences of a CoNLL-U or
  CoNLL-2003 file (`task="token_classification"`).
* `read_records(path)`: the records (dicts) of a JSONL, CSV/TSV, Parquet
  or TFRecord file, streamed; `make_dataset(path, ..., columns=...)`
  reads the same records.
* `predict_answers(model, dataset, contexts)` and
  `postprocess_qa_predictions(...)`: the answers of a question answering
  model, from the start and end logits of its rows
  (`task="question_answering"`).
"""

from tf_input.data.conll import read_conll
from tf_input.data.counting import SkippedExamplesWarning
from tf_input.data.info import PipelineInfo
from tf_input.data.info import pipeline_info
from tf_input.data.packing import segment_attention_mask
from tf_input.data.pipeline import make_dataset
from tf_input.data.question_answering import postprocess_qa_predictions
from tf_input.data.question_answering import predict_answers
from tf_input.data.records import read_records
from tf_input.data.stats import stats

__all__ = [
    "PipelineInfo",
    "SkippedExamplesWarning",
    "make_dataset",
    "pipeline_info",
    "postprocess_qa_predictions",
    "predict_answers",
    "read_conll",
    "read_records",
    "segment_attention_mask",
    "stats",
]
