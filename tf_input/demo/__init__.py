"""The demo: why a Transformer needs position information.

`tf-input demo` (and `make demo`) runs the whole input path on a task where
word order decides the answer: two-digit signed arithmetic,

    BOS NEGATIVE 30 subtract NEGATIVE 34 EOS   ->   BOS POSITIVE 04 EOS

0. Prints the tutorials' own numbers, computed by this package
   (`tf_input.tutorials`).
1. Shows why position is needed: without it, self-attention gives "cat eats
   fish" and "fish eats cat" the same vectors in another order
   (`permutation_check`).
2. Generates every question of the task (80,000), seeded, and splits them
   into train and test sets. Nothing is downloaded.
3. Builds a `VocabularyTokenizer(split="whitespace_digits")` (numbers become
   digits, so `30` and `03` are the same two tokens in another order) and
   the `tf.data` pipeline, and prints the shape trace of one question.
4. Trains the same tiny Transformer encoder once per position scheme:
   `none`, `sinusoidal`, `learned` and `rope`, printing the test accuracy
   after each epoch. In the `rope` variant the attention below rotates q
   and k with `block.rotary`.
5. Prints the exact-match test accuracy per scheme. Without position
   information self-attention sees a bag of tokens: it cannot tell `30`
   from `03`, so `none` comes out clearly worst.
6. Exports the best model as a SavedModel that takes raw strings, reloads
   it, and answers a few questions typed as text.
7. Writes the pictures to `demo_output/`.

The model reads the question and predicts the answer's sign and its three
digits (|result| <= 198) from the output at `BOS`, which attends to the
whole question. Exact match means all four are right.

Training budget (measured, see the README): every scheme learns the task in
a sudden transition after a plateau whose length varies from run to run
(from about 3 to 7 epochs), and RoPE's plateau tends to be the longest (it
adds nothing to the embeddings; attention has to find positions through the
rotations alone). Four epochs with a constant learning rate stopped RoPE
mid-transition (71% exact match for seed 0, 99.5% after eight). So each
scheme trains for up to `EPOCHS` epochs and stops as soon as it answers
`STOP_AT` of a held-out validation set exactly, or when its validation
accuracy has stalled (less than `STALL_DELTA` gained in `STALL_EPOCHS`
epochs, checked from epoch `STALL_FROM` on); the test set is never used
to decide. The learning rate is held, then decays to zero over the last
`DECAY_SHARE` of the `EPOCHS` (which also stops the late loss spikes a
constant rate gave), and gradients are clipped to norm 1.

The modules: `task` (the questions and answers), `model` (the model, its
learning rate, `permutation_check`), `training` (when to stop, the
verdict) and `steps` (`run`, one function per step).
"""

from tf_input.demo.model import DECAY_SHARE
from tf_input.demo.model import LEARNING_RATE
from tf_input.demo.model import WARMUP_SHARE
from tf_input.demo.model import build_model
from tf_input.demo.model import learning_rate_schedule
from tf_input.demo.model import permutation_check
from tf_input.demo.steps import BATCH_SIZE
from tf_input.demo.steps import CLIP_NORM
from tf_input.demo.steps import EPOCHS
from tf_input.demo.steps import MAX_LENGTH
from tf_input.demo.steps import SCHEMES
from tf_input.demo.steps import TRAIN_SIZE
from tf_input.demo.steps import VALIDATION_SIZE
from tf_input.demo.steps import add_arguments
from tf_input.demo.steps import main
from tf_input.demo.steps import run
from tf_input.demo.task import ANSWER_PARTS
from tf_input.demo.task import QUESTION_PARTS
from tf_input.demo.task import answer_parts
from tf_input.demo.task import answer_text
from tf_input.demo.task import answers_from
from tf_input.demo.task import generate
from tf_input.demo.task import order_blind_ceiling
from tf_input.demo.task import question_text
from tf_input.demo.training import STALL_DELTA
from tf_input.demo.training import STALL_EPOCHS
from tf_input.demo.training import STALL_FROM
from tf_input.demo.training import STOP_AT
from tf_input.demo.training import TARGET
from tf_input.demo.training import stalled
from tf_input.demo.training import verdict

__all__ = [
    "ANSWER_PARTS",
    "BATCH_SIZE",
    "CLIP_NORM",
    "DECAY_SHARE",
    "EPOCHS",
    "LEARNING_RATE",
    "MAX_LENGTH",
    "QUESTION_PARTS",
    "SCHEMES",
    "STALL_DELTA",
    "STALL_EPOCHS",
    "STALL_FROM",
    "STOP_AT",
    "TARGET",
    "TRAIN_SIZE",
    "VALIDATION_SIZE",
    "WARMUP_SHARE",
    "add_arguments",
    "answer_parts",
    "answer_text",
    "answers_from",
    "build_model",
    "generate",
    "learning_rate_schedule",
    "main",
    "order_blind_ceiling",
    "permutation_check",
    "question_text",
    "run",
    "stalled",
    "verdict",
]
