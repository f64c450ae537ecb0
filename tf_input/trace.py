"""`trace`: print the journey of one text through the input side."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import tensorflow as tf

from tf_input._validation import check_type
from tf_input.block import InputBlock
from tf_input.tokenizers.base import Tokenizer


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One step of the journey.

    Attributes:
        step: str, what happened, e.g. `"token embedding [B, S, D]"`.
        shape: tuple of int, the shape of the value.
        dtype: str, its dtype name.
        value: `np.ndarray`, the whole value (strings as Python `str`).
        note: str, a remark on the step (may be empty).
    """

    step: str
    shape: tuple
    dtype: str
    value: np.ndarray
    note: str = ""

    def sample(self, num_values: int = 6, num_tokens: int = 16) -> str:
        """The values shown for this step, as a short string.

        A string or a sequence (`[S]`, or `[1, S]`: a batch of one) shows
        its items, all of them up to `num_tokens`, then `…` and how many
        more there are. A `[B, S, D]` tensor shows the first `num_values`
        features of the first token, and says so: `pos 0, features 0-5 of
        8: [...] …`.
        """
        value = np.asarray(self.value)
        if value.ndim == 3:
            row = value[0, 0, :num_values]
            last = row.size - 1
            shown = _format_numbers(row)
            more = " …" if value.shape[-1] > num_values else ""
            return (
                f"pos 0, features 0-{last} of {value.shape[-1]}: {shown}{more}"
            )
        if value.ndim == 2 and value.shape[0] == 1:
            value = value[0]
        flat = value.reshape(-1)
        items = ", ".join(_format_item(x) for x in flat[:num_tokens].tolist())
        if flat.size > num_tokens:
            items += f", … ({flat.size - num_tokens} more)"
        return f"[{items}]"


def _format_numbers(values):
    return np.array2string(
        np.asarray(values, "float32"), precision=4, suppress_small=True
    )


def _format_item(item):
    if isinstance(item, float):
        return f"{item:.4g}"
    return repr(item) if isinstance(item, str) else str(item)


def _row(step, value, note=""):
    value = tf.convert_to_tensor(value)
    array = value.numpy()
    if value.dtype == tf.string:
        array = np.vectorize(
            lambda b: b.decode("utf-8", "replace"), otypes=[object]
        )(array)
    return TraceRow(
        step=step,
        shape=tuple(value.shape),
        dtype=value.dtype.name,
        value=array,
        note=note,
    )


def trace(
    text: str,
    tokenizer: Tokenizer,
    block: InputBlock,
    *,
    print_fn: Callable[[str], object] | None = print,
    num_values: int = 6,
    num_tokens: int = 16,
) -> list[TraceRow]:
    """Prints the journey of one text through `tokenizer` and `block`.

    The way the tutorials draw it: raw string -> tokens -> ids `[S]` ->
    batch `[1, S]` -> token embedding `[1, S, D]` (x sqrt(D)) -> (+ segment
    embedding) -> + position -> (normalization) -> output. Each step shows
    its shape, dtype and values: every token and id (up to `num_tokens`,
    then `…`), and for `[B, S, D]` tensors the first `num_values` features
    of position 0, labelled as such. The block runs in inference mode
    (no dropout); a `segment_ids` input gets zeros and a `positions` input
    `0..S-1`.

    Args:
        text: str. One text.
        tokenizer: a `tf_input` tokenizer (its `add_special_tokens` setting
            decides whether start/end tokens appear).
        block: a `tf_input.block.InputBlock`.
        print_fn: callable or None. Where the table goes; None prints
            nothing. Defaults to `print`.
        num_values: int. Features shown for each `[B, S, D]` step (those
            of position 0). Defaults to `6`.
        num_tokens: int. Tokens and ids shown before `…`. Defaults to
            `16`.

    Returns:
        list of `TraceRow`, the printed rows, each with the whole value.

    Example:

    >>> from tf_input.trace import trace
    >>> tokenizer = tf_input.VocabularyTokenizer(add_special_tokens=True)
    >>> tokenizer.adapt(["I love deep learning"])
    >>> block = tf_input.block.InputBlock(tokenizer.vocabulary_size(), 4)
    >>> rows = trace("I love deep learning", tokenizer, block, print_fn=None)
    >>> [(row.step, row.shape) for row in rows][2:4]
    [('ids [S]', (6,)), ('batch [B, S]', (1, 6))]
    >>> rows[1].value.tolist()
    ['<sos>', 'I', 'love', 'deep', 'learning', '<eos>']
    >>> rows[-1].shape
    (1, 6, 4)
    """
    check_type("text", text, str, "one Python string")
    check_type("tokenizer", tokenizer, Tokenizer, "a tf_input tokenizer")
    check_type("block", block, InputBlock, "a tf_input InputBlock")
    rows = [_row("raw string", tf.constant(text))]
    ids = tokenizer.tokenize(text)
    tokens = [tokenizer.id_to_token(i) for i in ids.numpy().tolist()]
    rows.append(_row("tokens [S]", tf.constant(tokens, tf.string)))
    rows.append(_row("ids [S]", ids))
    batch = ids[None]
    rows.append(_row("batch [B, S]", batch, "a batch of one"))
    dim = block.embedding_dim
    x = block.token_embedding(batch)
    scale = (
        f"rows of E {tuple(block.token_embedding.embeddings.shape)}, x "
        f"sqrt({dim}) = {math.sqrt(dim):.4f}"
        if block.scale
        else f"rows of E {tuple(block.token_embedding.embeddings.shape)}"
    )
    rows.append(_row("token embedding [B, S, D]", x, scale))
    length = int(batch.shape[1])
    inputs = {"token_ids": batch}
    if block.segment_embedding is not None:
        segments = tf.zeros_like(batch)
        inputs["segment_ids"] = segments
        x = x + block.segment_embedding(segments)
        rows.append(
            _row("+ segment embedding", x, "segment_ids = 0 (sentence A)")
        )
    positions = tf.range(length, dtype="int32")[None]
    if block.positions_input:
        inputs["positions"] = positions
    if block.position_embedding is not None:
        x = block.position_embedding(x, positions=positions)
        rows.append(
            _row(f"+ position ({block.position})", x, "positions 0..S-1")
        )
    elif block.position == "rope":
        rows.append(
            _row(
                "+ position (rope)",
                x,
                "nothing added: block.rotary rotates q and k in attention",
            )
        )
    else:
        rows.append(_row("+ position (none)", x, "no position information"))
    if block.norm is not None:
        x = block.norm(x)
        rows.append(_row(f"normalization ({block.normalization})", x))
    call_inputs = inputs if len(inputs) > 1 else batch
    output = block(call_inputs, training=False)
    mask = getattr(output, "_keras_mask", None)
    note = "what the first Transformer block reads"
    if mask is not None:
        note += f"; padding mask {mask.numpy().astype(int).tolist()}"
    rows.append(_row("output [B, S, D]", output, note))
    if print_fn is not None:
        print_fn(format_rows(rows, num_values, num_tokens))
    return rows


def format_rows(
    rows: list[TraceRow], num_values: int = 6, num_tokens: int = 16
) -> str:
    """The rows as the printed table (a str); see `TraceRow.sample`."""
    lines = [f"{'step':<28} {'shape':<14} {'dtype':<8} values"]
    lines.append("-" * 80)
    for row in rows:
        shape = "[" + ", ".join(str(n) for n in row.shape) + "]"
        lines.append(
            f"{row.step:<28} {shape:<14} {row.dtype:<8} "
            f"{row.sample(num_values, num_tokens)}"
        )
        if row.note:
            lines.append(f"{'':<28} {row.note}")
    return "\n".join(lines)
