"""Extractive question answering (SQuAD): windows over long contexts, and
answers back from a model's start and end logits.

* `qa_rows` (in the graph, under `make_dataset(task="question_answering")`):
  each `(question, context)` becomes one row per window of the context:
  `[CLS] question [SEP] window [SEP]` in BERT's template, the question
  whole, the windows `max_length` long overlapping by `stride` tokens, as
  Hugging Face's fast tokenizers cut a pair with
  `truncation="only_second", return_overflowing_tokens=True`. Each row
  keeps its example's number and the character span of each context
  token, and, with an answer, the positions of its first and last token
  (`prepare_train_features` of Hugging Face's `run_qa.py`).
* `postprocess_qa_predictions` (NumPy): start and end logits of every
  row -> the best answer text of each example, as Hugging Face's
  `postprocess_qa_predictions` (`utils_qa.py`) picks it.
* `predict_answers`: a model and a dataset of rows -> the answers.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_input._ragged import row_ids
from tf_input.data.cutting import pair_rows
from tf_input.data.cutting import split_template

# Python's `str.isspace()` characters, which `str.lstrip()` removes:
# run_qa.py strips them from the start of each question.
_LEADING_SPACE = (
    "^[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}"
    "\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]+"
)


def strip_questions(questions):
    """`[q.lstrip() for q in questions]`, in the graph: a question's
    leading spaces would only take room from the context (run_qa.py)."""
    return tf.strings.regex_replace(questions, _LEADING_SPACE, "")


def _char_length(texts):
    return tf.cast(tf.strings.length(texts, unit="UTF8_CHAR"), tf.int64)


def _constant_rows(lengths, value):
    """Ragged rows of `lengths` values, each `value` (int64)."""
    return tf.ragged.range(lengths) * 0 + value


def _windows(lengths, room, stride):
    """Where each window of each context starts, and how long it is.

    `lengths`: int64 `[C]`, the tokens of each context; `room`: int64
    `[C]`, the tokens a row leaves for the context after the question and
    the special tokens. A context that fits is one window; a longer one is
    cut into windows of `room` tokens starting `room - stride` apart, the
    last ending at the context's end (`tokenizers`' `Encoding.truncate`).
    Returns int64 `(example, begin, size)`, one entry per window.
    """
    cut = lengths > room
    step = tf.maximum(room - stride, 1)
    count = tf.where(cut, 1 + (lengths - room + step - 1) // step, 1)
    splits = tf.concat([[0], tf.cumsum(count)], 0)
    example = row_ids(splits)
    number = tf.range(splits[-1]) - tf.gather(splits, example)
    begin = number * tf.gather(step, example)
    size = tf.minimum(
        tf.gather(room, example), tf.gather(lengths, example) - begin
    )
    return example, begin, size


def qa_rows(questions, context, template, max_length, stride, answers=None):
    """One row per window of each context (see the module docstring).

    Args:
        questions: ragged int32 `[C, None]`, the questions' ids.
        context: `(ids, starts, ends)` of the contexts: ragged `[C, None]`
            int32 ids and int64 character offsets.
        template: the tokenizer's pair template (`templates()["pair"]`).
        max_length: int, the tokens of a row with its special tokens.
        stride: int, the tokens two windows of a context share.
        answers: None, or int64 `(start_char, end_char)`, each `[C]`: the
            answer's character span in its context.

    Returns:
        `(rows, ok)`: `rows` holds ragged `ids` and `types` `[W, None]`;
        `offset_starts` and `offset_ends`, ragged int64 `[W, None]`: each
        context token's character span plus 1, and 0 on the question and
        special tokens (so that padding with 0 reads as "not context");
        `example`, int64 `[W]`, the example of each window; with
        `answers`, `start_positions` and `end_positions` `[W]`: the
        answer's first and last token in the row, or 0 (the `[CLS]`
        position) both when the window does not hold the whole answer.
        `ok`: bool `[C]`, False where the question leaves no more than
        `stride` tokens for a context that must be cut (Hugging Face
        raises there too).
    """
    ids, starts, ends = context
    prefix, _, middle, _, suffix = split_template(template)
    specials = len(prefix) + len(middle) + len(suffix)
    question_length = questions.row_lengths()
    context_length = ids.row_lengths()
    room = max_length - specials - question_length
    ok = (context_length <= room) | (room > stride)
    # Where that fails (an error for the caller to raise), one window of
    # the whole context keeps the arithmetic below in range meanwhile.
    room = tf.where(ok, room, context_length)
    example, begin, size = _windows(context_length, room, stride)
    first = tf.gather(ids.row_splits, example) + begin
    index = tf.ragged.range(first, first + size)

    def window(values):
        return index.with_flat_values(
            tf.gather(values.flat_values, index.flat_values)
        )

    window_starts, window_ends = window(starts), window(ends)
    question = tf.gather(questions, example)
    count = tf.shape(example, out_type=tf.int64)[0]
    row_ids_, types, _, _ = pair_rows(
        question, window(ids), tf.range(count), None, template, "only_second"
    )
    # Where the window starts in its row.
    before = len(prefix) + tf.gather(question_length, example) + len(middle)
    offset_starts, offset_ends = (
        tf.concat(
            [
                _constant_rows(before, 0),
                values + 1,
                _constant_rows(tf.fill([count], np.int64(len(suffix))), 0),
            ],
            axis=1,
        )
        for values in (window_starts, window_ends)
    )
    rows = {
        "ids": row_ids_,
        "types": types,
        "offset_starts": offset_starts,
        "offset_ends": offset_ends,
        "example": example,
    }
    if answers is not None:
        start_char, end_char = (tf.gather(x, example) for x in answers)
        splits = index.row_splits
        first_start = tf.gather(window_starts.flat_values, splits[:-1])
        last_end = tf.gather(window_ends.flat_values, splits[1:] - 1)
        inside = (first_start <= start_char) & (last_end >= end_char)
        # Offsets grow along a context: the answer's first token is the
        # last one starting at or before it, its last token the first one
        # ending at or after it.
        start = tf.reduce_sum(
            tf.cast(window_starts <= start_char[:, None], tf.int64), 1
        )
        end = tf.reduce_sum(
            tf.cast(window_ends < end_char[:, None], tf.int64), 1
        )
        rows["start_positions"] = tf.where(inside, before + start - 1, 0)
        rows["end_positions"] = tf.where(inside, before + end, 0)
    return rows, ok


def answer_spans(contexts, starts, texts):
    """int64 `(start_char, end_char)` of answers given as their first
    character and their text, and a bool `[C]` telling where the text is
    indeed at that place of its context."""
    start = tf.cast(starts, tf.int64)
    end = start + _char_length(texts)
    length = _char_length(contexts)
    inside = (start >= 0) & (end <= length)
    found = tf.strings.substr(
        contexts,
        tf.cast(tf.where(inside, start, 0), tf.int32),
        tf.cast(tf.where(inside, end - start, 0), tf.int32),
        unit="UTF8_CHAR",
    )
    return (start, end), inside & tf.equal(found, texts)


def postprocess_qa_predictions(
    contexts,
    example_index,
    offsets,
    start_logits,
    end_logits,
    *,
    n_best_size=20,
    max_answer_length=30,
    allow_no_answer=False,
    null_score_diff_threshold=0.0,
):
    """The answer of each example from the logits of its rows.

    Hugging Face's `postprocess_qa_predictions` (`utils_qa.py`), on
    arrays: in each row, the `n_best_size` highest start and end logits
    are paired; pairs outside the context, ending before they start or
    longer than `max_answer_length` tokens are dropped; the answer is the
    context's text under the pair of highest `start + end` logit over all
    rows of the example. With `allow_no_answer` (SQuAD 2.0), the answer
    is `""` when the no-answer score (the logits of position 0) beats the
    best answer's by more than `null_score_diff_threshold`.

    Args:
        contexts: list of str, the context of each example.
        example_index: int `[N]`, the example of each row (-1: a fill row,
            skipped).
        offsets: int `[N, S, 2]`, each token's character span in its
            context, -1 on the question, special tokens and padding.
        start_logits, end_logits: float `[N, S]`, the model's logits.
        n_best_size: int. Start and end positions tried per row. Defaults
            to `20`.
        max_answer_length: int. Longest answer, in tokens. Defaults to
            `30`.
        allow_no_answer: bool. Defaults to `False`.
        null_score_diff_threshold: float. Defaults to `0.0`.

    Returns:
        A list of str, one answer per context (`""` for an example with no
        row; `"empty"` where no pair is valid, as Hugging Face writes it).
    """
    example_index = np.asarray(example_index)
    offsets = np.asarray(offsets)
    start_logits = np.asarray(start_logits)
    end_logits = np.asarray(end_logits)
    answers = []
    for example, context in enumerate(contexts):
        rows = np.flatnonzero(example_index == example)
        if not len(rows):
            answers.append("")
            continue
        spans, scores, null = [], [], None
        for row in rows:
            starts, ends = start_logits[row], end_logits[row]
            row_null = starts[0] + ends[0]
            if null is None or null > row_null:
                null = row_null
            top_start = np.argsort(starts)[-1 : -n_best_size - 1 : -1]
            top_end = np.argsort(ends)[-1 : -n_best_size - 1 : -1]
            first = offsets[row, top_start, 0]
            last = offsets[row, top_end, 1]
            valid = (
                (first >= 0)[:, None]
                & (last >= 0)[None, :]
                & (top_end[None, :] >= top_start[:, None])
                & (
                    top_end[None, :] - top_start[:, None] + 1
                    <= max_answer_length
                )
            )
            i, j = np.nonzero(valid)  # row-major: HF's loop order
            spans.extend(zip(first[i].tolist(), last[j].tolist()))
            scores.extend((starts[top_start[i]] + ends[top_end[j]]).tolist())
        texts = [context[a:b] for a, b in spans]
        if allow_no_answer:
            texts.append("")
            scores.append(null)
        # Highest score first; ties keep their order (a stable sort).
        order = sorted(range(len(scores)), key=lambda k: -scores[k])
        best = order[:n_best_size]
        null_index = len(scores) - 1
        if allow_no_answer and null_index not in best:
            best.append(null_index)
        best = [(texts[k], scores[k]) for k in best]
        if not best or (len(best) == 1 and best[0][0] == ""):
            best.insert(0, ("empty", 0.0))
        if not allow_no_answer:
            answers.append(best[0][0])
            continue
        text, score = next((b for b in best if b[0] != ""), ("", null))
        answers.append("" if null - score > null_score_diff_threshold else text)
    return answers


def predict_answers(model, dataset, contexts, **options):
    """Runs `model` on every batch of a `task="question_answering"`
    dataset and returns the answer of each example
    (`postprocess_qa_predictions`, whose keyword arguments `options`
    takes).

    The model takes the features by name (extra features are left out)
    and returns the start and end logits, `[B, S]` each: a dict with keys
    `"start"` and `"end"`, or a pair. `contexts` are the examples'
    contexts, in the order of the source.
    """
    from tf_input._model_inputs import input_names

    names = input_names(model, "`model`")
    rows = {"example": [], "offsets": [], "start": [], "end": []}
    width = 0
    for element in dataset:
        features = element[0] if isinstance(element, tuple) else element
        outputs = model.predict_on_batch({n: features[n] for n in names})
        if isinstance(outputs, dict):
            start, end = outputs["start"], outputs["end"]
        else:
            start, end = outputs
        rows["example"].append(features["example_index"].numpy())
        rows["offsets"].append(features["offsets"].numpy())
        rows["start"].append(np.asarray(start))
        rows["end"].append(np.asarray(end))
        width = max(width, rows["start"][-1].shape[1])

    def joined(parts, fill):
        pad = [
            [(0, 0), (0, width - p.shape[1])] + [(0, 0)] * (p.ndim - 2)
            for p in parts
        ]
        return np.concatenate(
            [np.pad(p, w, constant_values=fill) for p, w in zip(parts, pad)]
        )

    return postprocess_qa_predictions(
        contexts,
        np.concatenate(rows["example"]),
        joined(rows["offsets"], -1),
        joined(rows["start"], -np.inf),
        joined(rows["end"], -np.inf),
        **options,
    )
