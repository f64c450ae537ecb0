"""Oniguruma regexes (Hugging Face `tokenizers`, tiktoken) as exact RE2.

The split regexes of byte-level BPE tokenizers are written for Oniguruma
(HF) or fancy-regex (tiktoken): backtracking engines with lookarounds and
their own Unicode tables. TensorFlow's string ops use RE2, which has
neither. `parse` (`parser`) reads a pattern into a small syntax tree
(`syntax`) whose character classes are explicit sets of code points built
from Oniguruma's own tables (`_unicode`), so `to_re2` (`re2`) spells
exactly the same classes. RE2's leftmost-first matching gives the same
match as a backtracking engine for every pattern without lookarounds or
backreferences.

The one lookaround that real tokenizers use is the `\\s+(?!\\S)|\\s+` pair
at the end of the pattern; `plan_split` (`splits`) removes it by a cut
that is proven exact for the rest of the pattern. Anything else that RE2
cannot do (other lookarounds, backreferences, possessive or atomic groups,
anchors) is a `RegexError` naming the construct: never a silently
different split.
"""

from tf_input.tokenizers._unicode import SURROGATES
from tf_input.tokenizers.hf.regex.parser import NOT_WHITE_SPACE
from tf_input.tokenizers.hf.regex.parser import parse
from tf_input.tokenizers.hf.regex.re2 import strains_the_dfa
from tf_input.tokenizers.hf.regex.re2 import to_re2
from tf_input.tokenizers.hf.regex.splits import SplitPlan
from tf_input.tokenizers.hf.regex.splits import plan_split
from tf_input.tokenizers.hf.regex.splits import single_characters
from tf_input.tokenizers.hf.regex.syntax import EMPTY
from tf_input.tokenizers.hf.regex.syntax import Alt
from tf_input.tokenizers.hf.regex.syntax import Cat
from tf_input.tokenizers.hf.regex.syntax import Chars
from tf_input.tokenizers.hf.regex.syntax import Look
from tf_input.tokenizers.hf.regex.syntax import RegexError
from tf_input.tokenizers.hf.regex.syntax import Repeat
from tf_input.tokenizers.hf.regex.syntax import char_sets
from tf_input.tokenizers.hf.regex.syntax import concat
from tf_input.tokenizers.hf.regex.syntax import nullable

__all__ = [
    "EMPTY",
    "NOT_WHITE_SPACE",
    "SURROGATES",
    "Alt",
    "Cat",
    "Chars",
    "Look",
    "RegexError",
    "Repeat",
    "SplitPlan",
    "char_sets",
    "concat",
    "nullable",
    "parse",
    "plan_split",
    "single_characters",
    "strains_the_dfa",
    "to_re2",
]
