"""`InputBlock`: token ids in, the first Transformer block's input out."""

from tf_input.block.arguments import NORMALIZATIONS
from tf_input.block.arguments import POSITIONS
from tf_input.block.input_block import InputBlock
from tf_input.layers.input_mask import InputMask

__all__ = ["NORMALIZATIONS", "POSITIONS", "InputBlock", "InputMask"]
