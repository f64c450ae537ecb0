"""The names of the features a batch holds: one place for every module.

The pipeline (`tf_input.data`) emits them, `InputBlock` takes them as its
inputs and `export_text_model` feeds them to a served model, each by name.

* `token_ids`: int32 `[B, S]`, the ids, 0 on padding.
* `padding_mask`: int32 `[B, S]`, 1 on real tokens (special tokens
  included), 0 on padding.
* `segment_ids`: int32 `[B, S]`, token types: BERT's sentence A = 0,
  sentence B = 1. Only this meaning.
* `example_ids`: int32 `[B, S]`, in packed rows, which example of the row
  each token belongs to: 1, 2, ... in the row, 0 on padding.
* `positions`: int32 `[B, S]`, in packed rows, the position of each token
  inside its own example (restarting at 0 with every example).
* `example_index`: int32 `[B]`, question answering: the example (its
  number in the source) a window of a context comes from; -1 on fill rows.
* `offsets`: int32 `[B, S, 2]`, question answering: the character span
  of each context token in its context, -1 on the question, special
  tokens and padding.
* `encoder_*` / `decoder_*`: the two sides of a sequence-to-sequence batch.
"""

TOKEN_IDS = "token_ids"
PADDING_MASK = "padding_mask"
SEGMENT_IDS = "segment_ids"
EXAMPLE_IDS = "example_ids"
POSITIONS = "positions"
EXAMPLE_INDEX = "example_index"
OFFSETS = "offsets"
ENCODER_TOKEN_IDS = "encoder_token_ids"
ENCODER_PADDING_MASK = "encoder_padding_mask"
DECODER_TOKEN_IDS = "decoder_token_ids"
DECODER_PADDING_MASK = "decoder_padding_mask"

# The features of each kind of batch, in the order they are emitted.
LM_FEATURES = (TOKEN_IDS, PADDING_MASK)
ENCODE_FEATURES = (TOKEN_IDS, PADDING_MASK, SEGMENT_IDS)
PACK_EXTRA = (EXAMPLE_IDS, POSITIONS)
QA_EXTRA = (EXAMPLE_INDEX, OFFSETS)
# What the all-padding rows that fill a last partial batch hold: 0, but
# -1 where 0 would name a real example or character.
FILL_VALUES = {EXAMPLE_INDEX: -1, OFFSETS: -1}
SEQ2SEQ_FEATURES = (
    ENCODER_TOKEN_IDS,
    ENCODER_PADDING_MASK,
    DECODER_TOKEN_IDS,
    DECODER_PADDING_MASK,
)
# What a served model may take (`export_text_model`): one text per row.
SERVED_FEATURES = (
    TOKEN_IDS,
    PADDING_MASK,
    SEGMENT_IDS,
    EXAMPLE_IDS,
    POSITIONS,
)
# keras-hub's mask dtype; a bool input fails under tf.distribute.
MASK_DTYPE = "int32"
# The dtype of the sample weights of every batch with targets.
WEIGHT_DTYPE = "float32"
