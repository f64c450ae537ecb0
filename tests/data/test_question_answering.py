"""`make_dataset(task="question_answering")` against Hugging Face.

The references are `prepare_train_features`, `prepare_validation_features`
and `postprocess_qa_predictions` of Hugging Face's `run_qa.py` /
`utils_qa.py`, written out below as they are there, run on `tokenizers`'
own encodings (a fast tokenizer called with `truncation="only_second",
return_overflowing_tokens=True, stride=...` gives the first encoding and
its `overflowing` ones, in this order).

The examples are SQuAD-shaped, built from the shared corpora: long
WikiText paragraphs as contexts (many windows each), Tatoeba sentences as
questions, and answers chosen from the reference's own windows: at a
window's first and last token, across the end of a window, longer than
any window, starting or ending inside a token.
"""

import random

import numpy as np
import pytest
import tensorflow as tf

from tests.shared_data import data_path
from tests.shared_data import read_lines
from tests.shared_data import requires_shared_data
from tf_input.data import make_dataset
from tf_input.data import postprocess_qa_predictions
from tf_input.data import predict_answers
from tf_input.tokenizers import load_tokenizer

pytestmark = requires_shared_data

TOKENIZERS = {
    "bert": "bert_uncased",
    "qwen3": "qwen3",
    "mistral": "mistral_v1",
}
# BERT's and Mistral's checks run in `make test`, Qwen 3's (byte-level
# BPE, whose offsets test_offsets.py checks) under `slow`.
NAMES = ["bert", "mistral", pytest.param("qwen3", marks=pytest.mark.slow)]
MAX_LENGTH, STRIDE = 64, 16


def hf_tokenizer(name, max_length=MAX_LENGTH, stride=STRIDE):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(
        str(data_path("llm", TOKENIZERS[name], "tokenizer.json"))
    )
    hf.enable_truncation(max_length, stride=stride, strategy="only_second")
    return hf


def hf_windows(hf, question, context):
    encoding = hf.encode(question.lstrip(), context)
    return [encoding] + encoding.overflowing


def hf_train_features(hf, examples):
    """run_qa.py's `prepare_train_features` (no padding; cls_index is the
    `[CLS]` position, 0, also for a template without one)."""
    out = []
    for index, (question, context, answer_start, text) in enumerate(examples):
        for encoding in hf_windows(hf, question, context):
            offsets, sequence_ids = encoding.offsets, encoding.sequence_ids
            cls_index = 0
            start_char = answer_start
            end_char = start_char + len(text)
            token_start_index = 0
            while sequence_ids[token_start_index] != 1:
                token_start_index += 1
            token_end_index = len(encoding.ids) - 1
            while sequence_ids[token_end_index] != 1:
                token_end_index -= 1
            if not (
                offsets[token_start_index][0] <= start_char
                and offsets[token_end_index][1] >= end_char
            ):
                start = end = cls_index
            else:
                while (
                    token_start_index < len(offsets)
                    and offsets[token_start_index][0] <= start_char
                ):
                    token_start_index += 1
                start = token_start_index - 1
                while offsets[token_end_index][1] >= end_char:
                    token_end_index -= 1
                end = token_end_index + 1
            out.append(
                (
                    index,
                    encoding.ids,
                    encoding.type_ids,
                    start,
                    end,
                    sequence_ids,
                )
            )
    return out


def hf_validation_offsets(hf, examples):
    """`prepare_validation_features`: the offsets of the context tokens,
    None elsewhere; and each window's example."""
    out = []
    for index, (question, context, *_) in enumerate(examples):
        for encoding in hf_windows(hf, question, context):
            offsets = [
                o if s == 1 else None
                for o, s in zip(encoding.offsets, encoding.sequence_ids)
            ]
            out.append((index, encoding.ids, offsets))
    return out


def squad_like(name, count=60, seed=0):
    """SQuAD-shaped examples whose answers sit where windows are cut."""
    rng = random.Random(seed)
    contexts = [
        line.strip()
        for line in read_lines(data_path("corpora", "wikitext-2-raw-test.txt"))
        if len(line) > 600
    ]
    questions = read_lines(
        data_path("corpora", "tatoeba", "tatoeba.fra-eng.eng")
    )
    hf = hf_tokenizer(name)
    examples = []
    for k in range(count):
        context = contexts[k % len(contexts)]
        question = " " * (k % 3) + rng.choice(questions[:2000])
        windows = hf_windows(hf, question, context)
        assert len(windows) > 2
        spans = [
            o
            for o, s in zip(windows[1].offsets, windows[1].sequence_ids)
            if s == 1
        ]
        first, last = spans[0], spans[-1]
        after = [
            o
            for o, s in zip(windows[2].offsets, windows[2].sequence_ids)
            if s == 1
        ]
        kind = k % 6
        if kind == 0:  # the first token of a window
            start, end = first
        elif kind == 1:  # the last token of a window
            start, end = last
        elif kind == 2:  # across a window's end
            start, end = spans[-3][0], after[-1][1]
        elif kind == 3:  # longer than any window
            start, end = spans[0][0], after[-1][1]
        elif kind == 4:  # starts and ends inside tokens
            start = rng.randrange(0, len(context) - 40)
            end = start + rng.randrange(1, 40)
        else:  # a word
            start, end = rng.choice(spans)
        examples.append((question, context, start, context[start:end]))
    return examples


def load(name):
    path = data_path("llm", TOKENIZERS[name], "tokenizer.json")
    return load_tokenizer(path, add_special_tokens=False)


def our_rows(dataset):
    rows = []
    for features, labels, weights in dataset:
        mask = features["padding_mask"].numpy()
        for r in range(mask.shape[0]):
            size = int(mask[r].sum())
            if not size:
                assert weights["start"][r] == 0 == weights["end"][r]
                assert features["example_index"][r] == -1
                continue
            assert weights["start"][r] == 1 == weights["end"][r]
            rows.append(
                (
                    int(features["example_index"][r]),
                    features["token_ids"][r, :size].numpy().tolist(),
                    features["segment_ids"][r, :size].numpy().tolist(),
                    int(labels["start"][r]),
                    int(labels["end"][r]),
                )
            )
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_train_features_equal_prepare_train_features(name):
    examples = squad_like(name)
    want = hf_train_features(hf_tokenizer(name), examples)
    ds = make_dataset(
        examples,
        load(name),
        task="question_answering",
        batch_size=16,
        max_length=MAX_LENGTH,
        stride=STRIDE,
    )
    got = our_rows(ds)
    assert len(got) == len(want) > 3 * len(examples)
    outside = 0
    for ours, (index, ids, types, start, end, sequence_ids) in zip(got, want):
        assert ours[:3] == (index, ids, types)
        context = [i for i, s in enumerate(sequence_ids) if s == 1]
        if (start, end) == (0, 0) or (start in context and end in context):
            assert ours[3:] == (start, end)
        else:
            # run_qa.py's loops run past the context when the answer
            # starts in its last token (into [SEP], padding) or ends in
            # its first (into the question): the answer's own token here.
            outside += 1
            assert ours[3] in context and ours[4] in context
            assert ours[3] == (start if start in context else context[-1])
            assert ours[4] == (end if end in context else context[0])
    # Every kind of answer was met, each window holding it whole or not.
    assert sum(s == 0 for *_, s, _ in got) > 20
    assert sum(s > 0 for *_, s, _ in got) > 20
    assert outside < len(got) // 10


@pytest.mark.parametrize(
    "batching", ["max_length", pytest.param("bucket", marks=pytest.mark.slow)]
)
def test_every_batching_gives_the_same_rows(batching):
    examples = squad_like("bert", count=24)
    tokenizer = load("bert")

    def rows(**kwargs):
        return sorted(
            our_rows(
                make_dataset(
                    examples,
                    tokenizer,
                    task="question_answering",
                    batch_size=8,
                    max_length=MAX_LENGTH,
                    stride=STRIDE,
                    **kwargs,
                )
            )
        )

    assert rows(batching=batching) == rows()


@pytest.mark.parametrize("name", NAMES)
def test_validation_features_and_answers(name):
    examples = squad_like(name, count=30, seed=1)
    contexts = [context for _, context, *_ in examples]
    want = hf_validation_offsets(hf_tokenizer(name), examples)
    ds = make_dataset(
        [(q, c) for q, c, *_ in examples],
        load(name),
        task="question_answering",
        batch_size=8,
        max_length=MAX_LENGTH,
        stride=STRIDE,
        batching="max_length",
    )
    rows = []
    for features in ds:
        assert features["offsets"].shape[1:] == (MAX_LENGTH, 2)
        for r in range(features["token_ids"].shape[0]):
            index = int(features["example_index"][r])
            if index < 0:
                assert not features["padding_mask"][r].numpy().any()
                continue
            size = int(features["padding_mask"][r].numpy().sum())
            offsets = [
                None if a < 0 else (a, b)
                for a, b in features["offsets"][r, :size].numpy().tolist()
            ]
            assert (features["offsets"][r, size:].numpy() == -1).all()
            rows.append(
                (
                    index,
                    features["token_ids"][r, :size].numpy().tolist(),
                    offsets,
                )
            )
    assert rows == want

    # Logits that point at the answer: the answers come back.
    class Oracle:
        pass

    width = MAX_LENGTH
    starts = np.full([len(want), width], -5.0)
    ends = np.full([len(want), width], -5.0)
    truth = hf_train_features(hf_tokenizer(name), examples)
    for row, (_, _, _, start, end, _) in enumerate(truth):
        starts[row, start] += 10.0
        ends[row, end] += 10.0
    example_index = np.array([index for index, *_ in want])
    offsets = np.full([len(want), width, 2], -1)
    for row, (_, _, spans) in enumerate(want):
        for t, span in enumerate(spans):
            if span is not None:
                offsets[row, t] = span
    got = postprocess_qa_predictions(
        contexts, example_index, offsets, starts, ends, max_answer_length=64
    )
    ref = hf_postprocess(
        contexts, example_index, offsets, starts, ends, max_answer_length=64
    )
    assert got == ref


def hf_postprocess(
    contexts,
    example_index,
    offsets,
    all_start_logits,
    all_end_logits,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """utils_qa.py's `postprocess_qa_predictions`, on arrays."""
    answers = []
    for example, context in enumerate(contexts):
        feature_indices = np.flatnonzero(example_index == example)
        min_null_prediction = None
        prelim_predictions = []
        for feature_index in feature_indices:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = [
                None if o[0] < 0 else tuple(o) for o in offsets[feature_index]
            ]
            feature_null_score = start_logits[0] + end_logits[0]
            if (
                min_null_prediction is None
                or min_null_prediction["score"] > feature_null_score
            ):
                min_null_prediction = {
                    "offsets": (0, 0),
                    "score": feature_null_score,
                }
            start_indexes = np.argsort(start_logits)[
                -1 : -n_best_size - 1 : -1
            ].tolist()
            end_indexes = np.argsort(end_logits)[
                -1 : -n_best_size - 1 : -1
            ].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if (
                        start_index >= len(offset_mapping)
                        or end_index >= len(offset_mapping)
                        or offset_mapping[start_index] is None
                        or offset_mapping[end_index] is None
                    ):
                        continue
                    if (
                        end_index < start_index
                        or end_index - start_index + 1 > max_answer_length
                    ):
                        continue
                    prelim_predictions.append(
                        {
                            "offsets": (
                                offset_mapping[start_index][0],
                                offset_mapping[end_index][1],
                            ),
                            "score": start_logits[start_index]
                            + end_logits[end_index],
                        }
                    )
        if version_2_with_negative and min_null_prediction is not None:
            prelim_predictions.append(min_null_prediction)
            null_score = min_null_prediction["score"]
        predictions = sorted(
            prelim_predictions, key=lambda x: x["score"], reverse=True
        )[:n_best_size]
        if (
            version_2_with_negative
            and min_null_prediction is not None
            and not any(p["offsets"] == (0, 0) for p in predictions)
        ):
            predictions.append(min_null_prediction)
        for pred in predictions:
            offsets_ = pred.pop("offsets")
            pred["text"] = context[offsets_[0] : offsets_[1]]
        if len(predictions) == 0 or (
            len(predictions) == 1 and predictions[0]["text"] == ""
        ):
            predictions.insert(0, {"text": "empty", "score": 0.0})
        if not version_2_with_negative:
            answers.append(predictions[0]["text"])
        else:
            i = 0
            while predictions[i]["text"] == "":
                i += 1
            best_non_null_pred = predictions[i]
            score_diff = null_score - best_non_null_pred["score"]
            answers.append(
                ""
                if score_diff > null_score_diff_threshold
                else best_non_null_pred["text"]
            )
    return answers


@pytest.mark.parametrize("version_2", [False, True])
def test_postprocess_equals_utils_qa_on_random_logits(version_2):
    examples = squad_like("qwen3", count=20, seed=2)
    contexts = [context for _, context, *_ in examples]
    want = hf_validation_offsets(hf_tokenizer("qwen3"), examples)
    rng = np.random.default_rng(0)
    rows = len(want)
    offsets = np.full([rows, MAX_LENGTH, 2], -1)
    for row, (_, _, spans) in enumerate(want):
        for t, span in enumerate(spans):
            if span is not None:
                offsets[row, t] = span
    example_index = np.array([index for index, *_ in want])
    for trial in range(20):
        # Coarse logits make ties; small n_best makes "empty" answers.
        starts = rng.integers(-3, 4, [rows, MAX_LENGTH]).astype("float32")
        ends = rng.integers(-3, 4, [rows, MAX_LENGTH]).astype("float32")
        options = dict(
            n_best_size=[1, 3, 20][trial % 3],
            max_answer_length=[2, 30][trial % 2],
        )
        got = postprocess_qa_predictions(
            contexts,
            example_index,
            offsets,
            starts,
            ends,
            allow_no_answer=version_2,
            **options,
        )
        ref = hf_postprocess(
            contexts,
            example_index,
            offsets,
            starts,
            ends,
            version_2_with_negative=version_2,
            **options,
        )
        assert got == ref


def test_errors_say_what_is_wrong():
    tokenizer = load("qwen3")
    kwargs = dict(task="question_answering", batch_size=2, max_length=32)
    with pytest.raises(ValueError, match='batching="longest"'):
        make_dataset([("q", "c")], tokenizer, batching="pack", **kwargs)
    with pytest.raises(ValueError, match="stride"):
        make_dataset([("q", "c")], tokenizer, stride=32, **kwargs)
    with pytest.raises(ValueError, match="stride"):
        make_dataset(["a b"], tokenizer, batch_size=2, max_length=8, stride=2)
    with pytest.raises(ValueError, match="answer_start, answer_text"):
        make_dataset(["a question"], tokenizer, **kwargs)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="not in its context"
    ):
        make_dataset(
            [("Who?", "Alice met Bob.", 6, "Bob")], tokenizer, **kwargs
        )
    long_question = "why " * 40
    with pytest.raises(tf.errors.InvalidArgumentError, match="stride=8"):
        make_dataset(
            [(long_question, "word " * 100, 0, "word")],
            tokenizer,
            stride=8,
            **kwargs,
        )


def test_a_small_qa_model_learns_and_answers():
    """Start and end logits from a small model fed the batches as they
    are: the loss falls and `predict_answers` finds the answers of
    examples it has not seen, across windows."""
    import keras

    import tf_input

    words = " ".join(
        read_lines(data_path("corpora", "wikitext-2-raw-test.txt"))[:400]
    ).split()
    rng = random.Random(3)

    def example():
        context = words[rng.randrange(0, len(words) - 120) :][:100]
        at = rng.randrange(0, len(context))
        context = " ".join(context[:at] + ["zebra"] + context[at:])
        start = context.index("zebra")
        return ("Where is the zebra?", context, start, "zebra")

    train = [example() for _ in range(300)]
    test = [example() for _ in range(40)]
    tokenizer = load("bert")
    inputs = {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("token_ids", "padding_mask")
    }
    hidden = tf_input.InputBlock(
        tokenizer.vocabulary_size(), 16, padding_mask_input=True
    )(inputs)
    logits = keras.layers.Dense(2)(hidden)
    outputs = {
        "start": keras.layers.Lambda(lambda x: x[..., 0], name="start")(logits),
        "end": keras.layers.Lambda(lambda x: x[..., 1], name="end")(logits),
    }
    model = keras.Model(inputs, outputs)
    model.compile(
        keras.optimizers.Adam(1e-2),
        {
            name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            for name in ("start", "end")
        },
    )
    kwargs = dict(
        task="question_answering", max_length=48, stride=12, batch_size=16
    )
    ds = make_dataset(
        train, tokenizer, shuffle=True, seed=0, features=model, **kwargs
    )
    history = model.fit(ds, epochs=4, verbose=0).history
    assert history["loss"][-1] < 0.3 * history["loss"][0]
    questions = make_dataset([(q, c) for q, c, *_ in test], tokenizer, **kwargs)
    answers = predict_answers(model, questions, [c for _, c, *_ in test])
    assert len(answers) == len(test)
    assert sum(a.strip() == "zebra" for a in answers) >= 0.9 * len(test)
