"""The inner loops of the tokenizer models, apart from the layers."""
