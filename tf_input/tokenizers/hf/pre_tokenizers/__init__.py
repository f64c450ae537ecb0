"""Hugging Face pre-tokenizers: one `type` dispatch, then the engines.

A `tokenizer.json` pre-tokenizer cuts each text segment into words before
the model runs. `parse` (`components`) is the one dispatch over the types
(`Split`, `ByteLevel`, `Digits`, `WhitespaceSplit`, `Metaspace`, and
`Sequence` of these); each tokenizer then runs the combinations it
supports:

* `PreTokenizer` (`passes`): the regex splits of byte-level BPE (`Split`,
  `ByteLevel`, `Digits`, `WhitespaceSplit`), as RE2 passes, on a class
  alphabet (`class_alphabet`) where a regex strains RE2's DFA;
* `Metaspace` (`metaspace`): SentencePiece's "▁", a pre-tokenizer that is
  also a decoder (`decoders` re-exports it).
"""

from tf_input.tokenizers.hf.pre_tokenizers.components import BEHAVIORS
from tf_input.tokenizers.hf.pre_tokenizers.components import ByteLevel
from tf_input.tokenizers.hf.pre_tokenizers.components import Digits
from tf_input.tokenizers.hf.pre_tokenizers.components import Split
from tf_input.tokenizers.hf.pre_tokenizers.components import WhitespaceSplit
from tf_input.tokenizers.hf.pre_tokenizers.components import parse
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import SPACE
from tf_input.tokenizers.hf.pre_tokenizers.metaspace import Metaspace
from tf_input.tokenizers.hf.pre_tokenizers.passes import GPT2_PATTERN
from tf_input.tokenizers.hf.pre_tokenizers.passes import SEP
from tf_input.tokenizers.hf.pre_tokenizers.passes import PreTokenizer

__all__ = [
    "BEHAVIORS",
    "GPT2_PATTERN",
    "SEP",
    "SPACE",
    "ByteLevel",
    "Digits",
    "Metaspace",
    "PreTokenizer",
    "Split",
    "WhitespaceSplit",
    "parse",
]
