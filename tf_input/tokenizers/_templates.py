"""Former path of `tf_input.tokenizers.hf.processors.parse_templates`."""

from tf_input.tokenizers.hf.processors import parse_templates

__all__ = ["parse_templates"]
