"""The arguments of `make_dataset`, checked once, before anything is built.

`check_arguments` turns the keyword arguments into a frozen `Settings`
record of plain Python values, or raises an error that says what was
wrong, what was expected and how to fix it; `check_columns` checks what
one element of the source holds against the task. `make_dataset` then
only wires the steps together.
"""

from __future__ import annotations

import dataclasses
import numbers

import tensorflow as tf

from tf_input._validation import check_bool
from tf_input._validation import check_one_of
from tf_input._validation import check_optional_int
from tf_input._validation import check_positive_int
from tf_input._validation import check_type
from tf_input.data.cutting import check_tokenizer
from tf_input.data.masking import MAX_WIDTH as MASK_MAX_WIDTH

TASKS = (
    "lm",
    "seq2seq",
    "encode",
    "token_classification",
    "question_answering",
    "mlm",
    "chat",
)
# The masking arguments (`task="mlm"`) and their defaults.
MASKING_DEFAULTS = {
    "mask_selection_rate": 0.15,
    "mask_token_rate": 0.8,
    "random_token_rate": 0.1,
    "max_selections": None,
    "whole_word_masking": False,
}
# The tasks whose string labels `label_vocabulary` names.
LABELLED = ("encode", "token_classification")
# The batching modes of `make_dataset`, in the order pictures show them.
BATCHINGS = ("longest", "max_length", "bucket", "pack", "stream")
TRUNCATIONS = ("longest_first", "only_first", "only_second")
DATA_SERVICE_MODES = ("parallel_epochs", "distributed_epoch")
DEFAULT_SHUFFLE_BUFFER = 10_000
# The modes that keep one row per example, in the order of the source.
IN_ORDER = ("longest", "max_length")


@dataclasses.dataclass(frozen=True)
class Settings:
    """The checked arguments of one `make_dataset` call (see there)."""

    task: str
    batching: str
    batch_size: int
    max_length: int
    add_special_tokens: bool
    truncation: str
    shuffle: int
    seed: int | None
    drop_remainder: bool
    cache: bool | str
    deterministic: bool | None
    num_buckets: int
    bucket_boundaries: list | None
    tokens_per_batch: int | None
    sample_size: int
    chunk_size: int
    data_service: str | None
    data_service_mode: str
    shard: tuple | None
    count_batches: bool | None
    separator: object
    skip_empty: bool
    label_vocabulary: dict | None
    label_all_tokens: bool
    stride: int | None
    mask_selection_rate: float = 0.15
    mask_token_rate: float = 0.8
    random_token_rate: float = 0.1
    max_selections: int | None = None
    whole_word_masking: bool = False


def check_bucket_boundaries(boundaries, max_length):
    """`boundaries` as a list ending at `max_length`; None stays None."""
    if boundaries is None:
        return None
    expected = f"increasing integers in [1, max_length={max_length}]"
    values = list(boundaries)
    if any(
        isinstance(b, bool) or not isinstance(b, numbers.Integral)
        for b in values
    ):
        raise TypeError(
            f"`bucket_boundaries` must be {expected}. "
            f"Received: bucket_boundaries={boundaries!r}."
        )
    if (
        not values
        or any(b < 1 or b > max_length for b in values)
        or values != sorted(set(values))
    ):
        raise ValueError(
            f"`bucket_boundaries` must be {expected}. "
            f"Received: bucket_boundaries={boundaries!r}."
        )
    values = [int(b) for b in values]
    if values[-1] != max_length:
        values.append(max_length)
    return values


def _check_shuffle(shuffle):
    if shuffle is None or shuffle is False:
        return 0
    if shuffle is True:
        return DEFAULT_SHUFFLE_BUFFER
    if isinstance(shuffle, numbers.Integral) and shuffle >= 0:
        return int(shuffle)
    raise ValueError(
        "`shuffle` must be None, a bool, or a buffer size (int >= 0, in "
        f"examples). Received: shuffle={shuffle!r}."
    )


def check_data_service(data_service, mode):
    """`(data_service, data_service_mode)`, checked."""
    if data_service is not None:
        check_type(
            "data_service",
            data_service,
            str,
            "None or a dispatcher address such as 'grpc://localhost:5050'",
        )
    return data_service, check_one_of(
        "data_service_mode", mode, DATA_SERVICE_MODES
    )


def check_shard(shard):
    if shard is None:
        return None
    if (
        isinstance(shard, (tuple, list))
        and len(shard) == 2
        and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool)
            for x in shard
        )
        and 0 <= shard[1] < shard[0]
    ):
        return int(shard[0]), int(shard[1])
    raise ValueError(
        "`shard` must be None or `(num_shards, index)` with "
        f"0 <= index < num_shards. Received: shard={shard!r}."
    )


def check_label_vocabulary(label_vocabulary):
    """None, or a dict label name -> int id from a list or a dict."""
    if label_vocabulary is None:
        return None
    if isinstance(label_vocabulary, dict):
        names, ids = list(label_vocabulary), list(label_vocabulary.values())
    elif isinstance(label_vocabulary, (list, tuple)):
        names, ids = list(label_vocabulary), list(range(len(label_vocabulary)))
    else:
        raise TypeError(
            "`label_vocabulary` must be a list of label names (label i gets "
            "id i) or a dict name -> id. "
            f"Received: label_vocabulary of type "
            f"{type(label_vocabulary).__name__}."
        )
    if not names or not all(isinstance(name, str) for name in names):
        raise TypeError(
            "`label_vocabulary` must name its labels with strings (at least "
            f"one). Received: label_vocabulary={label_vocabulary!r}."
        )
    if len(set(names)) != len(names):
        raise ValueError(
            "`label_vocabulary` must name each label once. "
            f"Received: label_vocabulary={label_vocabulary!r}."
        )
    if any(
        isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0
        for i in ids
    ):
        raise ValueError(
            "The ids of `label_vocabulary` must be integers >= 0. "
            f"Received: label_vocabulary={label_vocabulary!r}."
        )
    return {name: int(i) for name, i in zip(names, ids)}


def check_arguments(**given) -> Settings:
    """`Settings` from `make_dataset`'s keyword arguments (all of them but
    `source`, `tokenizer`, `target_tokenizer`, `features`, `encoding` and
    `errors`, which are checked where they are read)."""
    task = check_one_of("task", given["task"], TASKS)
    batching = check_one_of("batching", given["batching"], BATCHINGS)
    batch_size = check_positive_int("batch_size", given["batch_size"])
    max_length = check_positive_int("max_length", given["max_length"])
    chunk_size = check_optional_int("chunk_size", given["chunk_size"], 1)
    # Chunks are padded whole to max_length: at most ~1M positions each.
    chunk_size = chunk_size or max(
        4 * batch_size, min(2048, 2**20 // max_length)
    )
    cache = check_type(
        "cache", given["cache"], (bool, str), "a bool or a file prefix (str)"
    )
    data_service, data_service_mode = check_data_service(
        given["data_service"], given["data_service_mode"]
    )
    settings = Settings(
        task=task,
        batching=batching,
        batch_size=batch_size,
        max_length=max_length,
        add_special_tokens=check_bool(
            "add_special_tokens", given["add_special_tokens"]
        ),
        truncation=check_one_of("truncation", given["truncation"], TRUNCATIONS),
        shuffle=_check_shuffle(given["shuffle"]),
        seed=check_optional_int("seed", given["seed"]),
        drop_remainder=bool(
            check_bool(
                "drop_remainder", given["drop_remainder"], allow_none=True
            )
        ),
        cache=cache,
        deterministic=check_bool(
            "deterministic", given["deterministic"], allow_none=True
        ),
        num_buckets=check_positive_int("num_buckets", given["num_buckets"]),
        bucket_boundaries=check_bucket_boundaries(
            given["bucket_boundaries"], max_length
        ),
        tokens_per_batch=check_optional_int(
            "tokens_per_batch", given["tokens_per_batch"], 1
        ),
        sample_size=check_positive_int("sample_size", given["sample_size"]),
        chunk_size=chunk_size,
        data_service=data_service,
        data_service_mode=data_service_mode,
        shard=check_shard(given["shard"]),
        count_batches=check_bool(
            "count_batches", given["count_batches"], allow_none=True
        ),
        separator=given["separator"],
        skip_empty=check_bool("skip_empty", given["skip_empty"]),
        label_vocabulary=check_label_vocabulary(given["label_vocabulary"]),
        label_all_tokens=check_bool(
            "label_all_tokens", given["label_all_tokens"]
        ),
        stride=check_optional_int("stride", given["stride"], 0),
        **_check_masking(task, given),
    )
    _check_combinations(settings)
    return settings


def _check_rate(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 <= value <= 1.0
    ):
        raise ValueError(
            f"`{name}` must be a number in [0, 1]. Received: {name}={value!r}."
        )
    return float(value)


def _check_masking(task, given):
    """The masking arguments: checked with `task="mlm"`, absent (None)
    otherwise."""
    named = {name: given[name] for name in MASKING_DEFAULTS}
    passed = [name for name, value in named.items() if value is not None]
    if task != "mlm":
        if passed:
            raise ValueError(
                f"`{passed[0]}` is an argument of masked language "
                f'modelling, task="mlm". Received: {passed[0]}='
                f"{named[passed[0]]!r} with task={task!r}."
            )
        return {}
    values = {
        name: MASKING_DEFAULTS[name] if value is None else value
        for name, value in named.items()
    }
    for name in ("mask_selection_rate", "mask_token_rate", "random_token_rate"):
        values[name] = _check_rate(name, values[name])
    if values["mask_selection_rate"] == 0.0:
        raise ValueError(
            "`mask_selection_rate` must be in (0, 1]: at 0 no token is "
            "ever a target. Received: mask_selection_rate=0.0."
        )
    if values["mask_token_rate"] + values["random_token_rate"] > 1.0:
        raise ValueError(
            "`mask_token_rate + random_token_rate` must be at most 1 (the "
            "rest of the chosen tokens stay unchanged). Received: "
            f"mask_token_rate={values['mask_token_rate']}, "
            f"random_token_rate={values['random_token_rate']}."
        )
    values["max_selections"] = check_optional_int(
        "max_selections", values["max_selections"], 1
    )
    values["whole_word_masking"] = check_bool(
        "whole_word_masking", values["whole_word_masking"]
    )
    return values


def _check_mlm(s):
    if s.batching == "stream":
        raise ValueError(
            'task="mlm" masks each example apart (its own tokens, special '
            'tokens never); batching="stream" cuts texts across rows. Use '
            'batching="pack" to fill rows with whole examples (RoBERTa), '
            'or "longest", "max_length", "bucket".'
        )
    if s.max_length > MASK_MAX_WIDTH:
        raise ValueError(
            f'task="mlm" takes rows of at most {MASK_MAX_WIDTH} positions. '
            f"Received: max_length={s.max_length}."
        )


def _check_combinations(s):
    """The arguments that are fine alone but not together."""
    if s.task == "seq2seq" and s.batching in ("pack", "stream"):
        raise ValueError(
            f'`batching={s.batching!r}` is for `task="lm"`'
            + (' and `"encode"`' if s.batching == "pack" else "")
            + ": joined sources and targets would have to be cut at the "
            'same places. Use batching="bucket" for seq2seq. Received: '
            f"batching={s.batching!r} with task={s.task!r}."
        )
    if s.task == "mlm":
        _check_mlm(s)
    if s.batching == "stream" and s.task != "lm":
        raise ValueError(
            '`batching="stream"` joins texts into one stream for a language '
            "model; per-example labels or sentence pairs cannot follow it. "
            f'Use task="lm", or another batching. Received: task={s.task!r}.'
        )
    if s.separator is not None and s.batching != "stream":
        raise ValueError(
            '`separator` is the token between texts with batching="stream". '
            f"Received: separator={s.separator!r} with "
            f"batching={s.batching!r}."
        )
    if s.label_vocabulary is not None and s.task not in LABELLED:
        raise ValueError(
            "`label_vocabulary` maps the string labels of task="
            f'"encode" and "token_classification" sources to ids. '
            f"Received: task={s.task!r}."
        )
    if s.label_all_tokens and s.task != "token_classification":
        raise ValueError(
            "`label_all_tokens=True` labels every token of a word, with "
            'task="token_classification". Received: '
            f"label_all_tokens=True with task={s.task!r}."
        )
    if s.task == "question_answering":
        _check_question_answering(s)
    elif s.stride is not None:
        raise ValueError(
            "`stride` is the overlap of a long context's windows, with "
            f'task="question_answering". Received: stride={s.stride} '
            f"with task={s.task!r}."
        )
    if s.task == "token_classification" and s.batching == "pack":
        raise ValueError(
            'task="token_classification" feeds one sentence per row to '
            'an encoder; batching="pack" would put several in a row that '
            "the encoder's attention does not keep apart. Use "
            'batching="longest", "max_length" or "bucket".'
        )
    if s.count_batches and s.data_service is not None:
        raise ValueError(
            "`count_batches=True` counts the batches of this process's "
            "pipeline, but with `data_service` the workers produce them "
            "(each a whole epoch). Received: count_batches=True with "
            f"data_service={s.data_service!r}. Pass count_batches=False."
        )
    if not s.skip_empty:
        _check_in_order(s)


def _check_question_answering(s):
    if s.batching in ("pack", "stream"):
        raise ValueError(
            'task="question_answering" gives each window of a context its '
            f"own row, with its answer's positions in that row; "
            f"batching={s.batching!r} would join rows. Use "
            'batching="longest", "max_length" or "bucket".'
        )
    if not s.skip_empty:
        raise ValueError(
            'task="question_answering" gives one row per window of each '
            "context, not one per input: `skip_empty=False` cannot keep "
            "rows in line with the inputs. Leave it out; each row's "
            "`example_index` says which example it comes from."
        )
    if s.stride is not None and s.stride >= s.max_length:
        raise ValueError(
            "`stride` (the tokens two windows of a context share) must be "
            f"less than max_length={s.max_length}. Received: "
            f"stride={s.stride}."
        )


def _check_in_order(s):
    """`skip_empty=False` promises one row per input, in input order."""
    problems = []
    if s.batching not in IN_ORDER:
        problems.append(f"batching={s.batching!r} (use one of {IN_ORDER})")
    if s.shuffle:
        problems.append(f"shuffle={s.shuffle!r} (leave it out)")
    if s.drop_remainder:
        problems.append("drop_remainder=True (leave it out)")
    if s.data_service is not None:
        problems.append("data_service (run it in this process)")
    if s.deterministic is False:
        problems.append("deterministic=False (leave it out)")
    if problems:
        raise ValueError(
            "`skip_empty=False` keeps one row per input, in the order of "
            "the source, so that `predict` aligns with the inputs; that "
            f"cannot hold with {', '.join(problems)}."
        )


def check_columns(spec, task, batching, label_vocabulary):
    """What one element holds (`rows.COLUMNS`), checked against the task."""
    if task == "question_answering":
        return _qa_columns(spec)
    words = isinstance(spec, tuple) and spec[0].shape.rank == 1
    if task == "token_classification" or words:
        return _word_columns(spec, task, label_vocabulary)
    if not isinstance(spec, tuple):
        if task == "seq2seq":
            raise ValueError(
                '`task="seq2seq"` needs (source, target) pairs. Received: '
                "a source of single texts."
            )
        if label_vocabulary is not None:
            raise ValueError(
                "`label_vocabulary` names the labels of (text, label) or "
                "(text_a, text_b, label) examples. Received: a source of "
                "single texts, which has no labels."
            )
        return "text"
    dtypes = [s.dtype for s in spec]
    strings = [d == tf.string for d in dtypes]
    if task == "mlm" and (strings != [True, True] or label_vocabulary):
        raise ValueError(
            '`task="mlm"` takes texts or (text_a, text_b) sentence pairs '
            "(its labels are the masked tokens, so a source has none). "
            f"Received: a source of {len(spec)}-tuples of dtypes "
            f"{[d.name for d in dtypes]}"
            + (" with a `label_vocabulary`." if label_vocabulary else ".")
        )
    if task == "lm":
        raise ValueError(
            '`task="lm"` takes texts, not pairs. Use task="seq2seq" for '
            '(source, target) pairs or task="encode" for (text, label), '
            "(text_a, text_b) or (text_a, text_b, label). Received: a "
            f"source of {len(spec)}-tuples with task={task!r}."
        )
    if task == "seq2seq":
        if strings != [True, True]:
            raise ValueError(
                '`task="seq2seq"` needs (source, target) pairs of strings. '
                f"Received: elements of dtypes {[d.name for d in dtypes]}."
            )
        return "seq2seq"
    columns = _encode_columns(strings, dtypes, label_vocabulary)
    if batching == "pack" and columns != "text":
        raise ValueError(
            "Packed rows mix several examples, so per-example labels and "
            'sentence pairs cannot follow them. Received: batching="pack" '
            f"with a source of {'pairs' if 'pair' in columns else 'labels'}."
        )
    return columns


def _qa_columns(spec):
    """`task="question_answering"`: `(question, context)` or `(question,
    context, answer_start, answer_text)` elements."""
    dtypes = [s.dtype for s in spec] if isinstance(spec, tuple) else []
    scalars = isinstance(spec, tuple) and all(s.shape.rank == 0 for s in spec)
    if scalars and dtypes == [tf.string, tf.string]:
        return "question+context"
    if (
        scalars
        and len(dtypes) == 4
        and dtypes[:2] == [tf.string, tf.string]
        and dtypes[2].is_integer
        and dtypes[3] == tf.string
    ):
        return "question+context+answer"
    raise ValueError(
        'task="question_answering" takes (question, context) examples (to '
        "predict), or (question, context, answer_start, answer_text) (to "
        "train: the answer's first character in the context, and its "
        "text). Received: "
        + (
            f"elements of dtypes {[d.name for d in dtypes]}."
            if dtypes
            else "a source of single texts."
        )
    )


def _word_columns(spec, task, label_vocabulary):
    """`task="token_classification"`: `(words, labels)` elements."""
    if task != "token_classification":
        raise ValueError(
            "A source of `(words, labels)` pairs is for "
            f'task="token_classification". Received: task={task!r}.'
        )
    if (
        isinstance(spec, tuple)
        and [s.shape.rank for s in spec] == [0, 1, 1, 1]
        and [s.dtype for s in spec]
        == [tf.string, tf.int64, tf.int64, tf.string]
    ):
        if label_vocabulary is None or "O" not in label_vocabulary:
            raise ValueError(
                "Texts with labelled character spans are tagged B-, I- and "
                "O by their tokens' offsets: `label_vocabulary` must name "
                "the tags, `O` and `B-X`, `I-X` for each span label `X`. "
                f"Received: label_vocabulary={label_vocabulary!r}."
            )
        return "text+spans"
    if not (
        isinstance(spec, tuple)
        and len(spec) == 2
        and all(s.shape.rank == 1 for s in spec)
        and spec[0].dtype == tf.string
    ):
        raise ValueError(
            'task="token_classification" needs (words, labels) pairs: '
            "the pre-split words of a sentence and one label per word "
            "(as `read_conll` gives them), or (text, [(start, end, "
            "label), ...]) texts with labelled character spans. "
            "Received: a source of "
            + (
                "single texts."
                if not isinstance(spec, tuple)
                else f"elements {spec}."
            )
        )
    labels = spec[1].dtype
    if labels == tf.string and label_vocabulary is None:
        raise ValueError(
            "String labels need `label_vocabulary=` (the label names, "
            "label i gets id i) to become ids. Received: string labels "
            "and no label_vocabulary."
        )
    if labels != tf.string and label_vocabulary is not None:
        raise ValueError(
            "`label_vocabulary` maps string labels, but the labels are "
            f"{labels.name} already; leave `label_vocabulary` out."
        )
    if labels != tf.string and not labels.is_integer:
        raise ValueError(
            "The labels of (words, labels) pairs must be strings or "
            f"integers. Received: labels of dtype {labels.name}."
        )
    return "words+labels"


def _encode_columns(strings, dtypes, label_vocabulary):
    """`task="encode"`: the columns of a tuple element. String labels are
    read as labels only with a `label_vocabulary`; without one, two
    strings are a sentence pair."""
    if label_vocabulary is not None:
        if strings == [True, True]:
            return "text+label"
        if strings == [True, True, True]:
            return "pair+label"
        raise ValueError(
            'With `label_vocabulary`, `task="encode"` takes (text, label) '
            "or (text_a, text_b, label) with string labels. Received: "
            f"elements of dtypes {[d.name for d in dtypes]}"
            + (
                ": the labels are numbers already; leave "
                "`label_vocabulary` out."
                if strings[-1:] == [False]
                else "."
            )
        )
    if strings == [True, False]:
        return "text+label"
    if strings == [True, True]:
        return "pair"
    if strings == [True, True, False]:
        return "pair+label"
    raise ValueError(
        '`task="encode"` takes texts, (text, label), (text_a, text_b) or '
        "(text_a, text_b, label), with numeric labels (string labels need "
        "`label_vocabulary=`). Received: elements of dtypes "
        f"{[d.name for d in dtypes]}."
    )


def check_tokenizers(tokenizer, target_tokenizer, task):
    if target_tokenizer is not None and task != "seq2seq":
        raise ValueError(
            '`target_tokenizer` is only used with task="seq2seq". '
            f"Received: target_tokenizer with task={task!r}."
        )
    check_tokenizer("tokenizer", tokenizer)
    if tokenizer.add_special_tokens:
        raise ValueError(
            "`tokenizer` must be built with `add_special_tokens=False`: the "
            "pipeline adds the start and end tokens itself, after "
            "truncation, so that they are never cut off. Use "
            "`make_dataset(..., add_special_tokens=True)` instead. "
            "Received: tokenizer with add_special_tokens=True."
        )
