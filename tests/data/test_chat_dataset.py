"""`make_dataset(task="chat")`: weights exactly on the assistant turns.

The assistant tokens are checked by hand in the token domain: the ids that
`apply_chat_template(conversation[:k + 1])` adds after
`apply_chat_template(conversation[:k], add_generation_prompt=True)`. The
SFT runs train tiny causal LMs on a few hundred conversations, with the
loss of one batch checked against the NLL over its weighted targets.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_input
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input.data import make_dataset
from tf_input.data import pipeline_info
from tf_input.data import segment_attention_mask
from tf_input.data import stats
from tf_input.tokenizers._byte_level import byte_level

# ChatML without Qwen 3's reasoning rules: prefix-stable.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A byte-level tokenizer (258 ids: the 256 bytes, <|im_start|>,
    <|im_end|>) with the ChatML template, from files."""
    folder = tmp_path_factory.mktemp("tiny")
    vocabulary = {byte_level(bytes([b])): b for b in range(256)}
    (folder / "tokenizer.json").write_text(
        json.dumps(
            {
                "model": {"type": "BPE", "vocab": vocabulary, "merges": []},
                "pre_tokenizer": {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                },
                "decoder": {"type": "ByteLevel"},
                "added_tokens": [
                    {"id": 256, "content": "<|im_start|>", "special": True},
                    {"id": 257, "content": "<|im_end|>", "special": True},
                ],
            }
        )
    )
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": "<|im_end|>", "chat_template": CHATML})
    )
    return tf_input.load_tokenizer(folder)


@pytest.fixture(scope="module")
def qwen():
    return tf_input.load_tokenizer(data_path("llm", "qwen3"))


def chats():
    return [
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
        ],
        [
            # Characters of 2-4 bytes before the answers: the spans are in
            # bytes, the offsets too.
            {"role": "system", "content": "Be brief 🙂."},
            {"role": "user", "content": "2+2? ü"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "and 3+3?"},
            {"role": "assistant", "content": "6, é"},
        ],
        [
            {"role": "user", "content": "only a question"},
        ],
    ]


def assistant_positions(tokenizer, conversation):
    """The positions of the assistant tokens of the rendered conversation,
    from the ids of its prefixes (the token-domain definition)."""
    positions = set()
    for k, message in enumerate(conversation):
        if message["role"] != "assistant":
            continue
        prompt = tokenizer.apply_chat_template(
            conversation[:k], add_generation_prompt=True
        ).numpy()
        with_turn = tokenizer.apply_chat_template(conversation[: k + 1])
        positions.update(range(len(prompt), len(with_turn)))
    return positions


def expected_rows(tokenizer, conversations):
    """`[(ids, weights)]` by hand: next-token targets, weight 1 where the
    target is an assistant token."""
    rows = []
    for conversation in conversations:
        ids = tokenizer.apply_chat_template(conversation).numpy().tolist()
        assistant = assistant_positions(tokenizer, conversation)
        weights = [float(p + 1 in assistant) for p in range(len(ids))]
        rows.append((ids, weights))
    return rows


def real_rows(features, labels, weights):
    """The rows of a batch (packed: each example) as `(ids, labels,
    weights)` lists without padding."""
    out = []
    ids = features["token_ids"].numpy()
    mask = features["padding_mask"].numpy().astype(bool)
    labels, weights = labels.numpy(), weights.numpy()
    example_ids = features.get("example_ids")
    for r in range(ids.shape[0]):
        groups = (
            [mask[r]]
            if example_ids is None
            else [
                example_ids.numpy()[r] == e
                for e in np.unique(example_ids.numpy()[r])
                if e > 0
            ]
        )
        for keep in groups:
            if keep.any():
                out.append(
                    (
                        ids[r][keep].tolist(),
                        labels[r][keep].tolist(),
                        weights[r][keep].tolist(),
                    )
                )
    return out


# --- Masks by hand ----------------------------------------------------------
@pytest.mark.parametrize(
    "batching", ["longest", "max_length", "bucket", "pack"]
)
def test_weights_are_exactly_the_assistant_targets(tiny, batching):
    conversations = chats()
    ds = make_dataset(
        conversations,
        tiny,
        task="chat",
        batch_size=4,
        max_length=96,
        batching=batching,
    )
    batches = list(ds)
    assert len(batches) == 1
    got = real_rows(*batches[0])
    want = expected_rows(tiny, conversations)
    assert sorted(r[0] for r in got) == sorted(ids for ids, _ in want)
    for ids, labels, weights in got:
        (expected_weights,) = [w for i, w in want if i == ids]
        assert weights == expected_weights
        # Labels are the next tokens where weighted.
        for p, w in enumerate(weights):
            if w:
                assert labels[p] == ids[p + 1]
    # By hand on the second conversation: its two answers, each with its
    # end-of-turn tokens.
    ids, labels, weights = next(r for r in got if len(r[0]) > 40)
    text = tiny.detokenize([y for y, w in zip(labels, weights) if w])
    assert text.numpy().decode() == "4<|im_end|>\n6, é<|im_end|>\n"
    result = stats(ds)
    assert result["targets"] == sum(sum(w) for _, w in want)
    assert result["truncated"] == 0 and result["dropped"] == 0


def test_stream_weights_follow_the_stream(tiny):
    conversations = chats()
    ds = make_dataset(
        conversations,
        tiny,
        task="chat",
        batch_size=2,
        max_length=16,
        batching="stream",
    )
    ids, labels, weights = [], [], []
    for features, y, w in ds:
        mask = features["padding_mask"].numpy().astype(bool).ravel()
        ids += features["token_ids"].numpy().ravel()[mask].tolist()
        labels += y.numpy().ravel()[mask].tolist()
        weights += w.numpy().ravel()[mask].tolist()
    want = expected_rows(tiny, conversations)
    stream = [i for row, _ in want for i in row]
    assert ids == stream  # nothing lost, nothing repeated, in order
    assert labels[:-1] == stream[1:]
    # A weight is 1 where the next token of the stream is an assistant
    # token: within a conversation as by hand, never across a boundary
    # (each conversation starts with <|im_start|>, not an answer).
    expected = [w for _, row in want for w in row]
    assert weights == expected[:-1] + [0.0]
    assert stats(ds)["dropped"] == 0


def test_long_conversations_cut_or_dropped_and_counted(tiny):
    conversations = chats()
    lengths = [len(ids) for ids, _ in expected_rows(tiny, conversations)]
    assert lengths[1] > 30 and lengths[0] <= 30 and lengths[2] <= 30
    cut = make_dataset(
        conversations, tiny, task="chat", batch_size=4, max_length=30
    )
    (batch,) = list(cut)
    assert batch[0]["token_ids"].shape == (3, 30)
    result = stats(cut)
    assert (result["truncated"], result["dropped"]) == (1, 0)
    dropped = make_dataset(
        conversations,
        tiny,
        task="chat",
        batch_size=4,
        max_length=30,
        chat_truncation="drop",
        batching="pack",
    )
    rows = real_rows(*next(iter(dropped)))
    assert sorted(len(r[0]) for r in rows) == sorted([lengths[0], lengths[2]])
    result = stats(dropped)
    assert (result["truncated"], result["dropped"]) == (0, 1)


def test_cardinality_is_the_number_of_batches(tiny, tmp_path):
    """A list of conversations is counted when the dataset is made: its
    `cardinality()` is the number of batches an epoch gives, in each
    batching (drops, unrolled turns and the stream included); JSONL files
    only with `count_batches=True`."""
    conversations = chats() * 5
    for kwargs in (
        {"batching": "longest"},
        {"batching": "pack", "drop_remainder": True},
        {"batching": "stream", "max_length": 16},
        {"unroll_turns": True, "batch_size": 3},
        {"chat_truncation": "drop", "max_length": 30},
        {"batching": "bucket", "bucket_boundaries": [24, 48]},
    ):
        kwargs = {"batch_size": 4, "max_length": 64, **kwargs}
        ds = make_dataset(conversations, tiny, task="chat", **kwargs)
        batches = sum(1 for _ in ds)
        assert int(ds.cardinality()) == batches, kwargs
        assert pipeline_info(ds).num_batches == batches
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "\n".join(json.dumps({"messages": c}) for c in conversations) + "\n"
    )
    common = dict(task="chat", batch_size=4, max_length=64)
    unknown = tf.data.UNKNOWN_CARDINALITY
    assert make_dataset(str(path), tiny, **common).cardinality() == unknown
    counted = make_dataset(str(path), tiny, count_batches=True, **common)
    assert int(counted.cardinality()) == -(-len(conversations) // 4)
    listed = make_dataset(conversations, tiny, count_batches=False, **common)
    assert listed.cardinality() == unknown


def test_rendered_rows_are_kept_and_bounded(monkeypatch):
    """`RenderCache`: a conversation seen before is not rendered again,
    unless it changed in place; entries stop at the bound; a template
    that reads the clock and a conversation that is not JSON are always
    rendered."""
    from tf_input.data import chat as chat_data

    renders = []

    def rows_of(cache, conversation):
        def render():
            renders.append(1)
            return [(repr(conversation), [0], [1])]

        return cache.rows(conversation, render)

    cache = chat_data.RenderCache(CHATML)
    conversation = chats()[1]
    first = rows_of(cache, conversation)
    assert rows_of(cache, conversation) is first and len(renders) == 1
    conversation[-1]["content"] = "7"  # changed in place: rendered again
    assert rows_of(cache, conversation) != first and len(renders) == 2
    assert rows_of(cache, chats()[1]) == first and len(renders) == 2
    monkeypatch.setattr(chat_data, "RENDER_CACHE_CHARACTERS", 400)
    small = chat_data.RenderCache(CHATML)
    for _ in range(2):
        for c in chats():
            rows_of(small, c)
    assert small._characters <= 400 and 0 < len(small._rows) < len(chats())
    for template, conversation in (
        ("{{ strftime_now('%Y') }}" + CHATML, chats()[0]),
        (CHATML, [{"role": "user", "content": "hi", "at": object()}]),
    ):
        before = len(renders)
        for _ in range(2):
            rows_of(chat_data.RenderCache(template), conversation)
        assert len(renders) == before + 2


def test_kept_renders_stay_bounded_under_threads(monkeypatch):
    """Eight threads storing rows at once: the characters kept never pass
    the bound, and the count matches what is stored."""
    import threading

    from tf_input.data import chat as chat_data

    monkeypatch.setattr(chat_data, "RENDER_CACHE_CHARACTERS", 5_000)
    cache = chat_data.RenderCache(CHATML)
    conversations = [
        [{"role": "user", "content": f"question {i}"}] for i in range(400)
    ]

    def work():
        for conversation in conversations:
            cache.rows(conversation, lambda: [("x" * 40, [0], [1])])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = sum(
        len(key) + sum(len(t) + 2 * len(a) for t, a, _ in rows)
        for key, rows in cache._rows.items()
    )
    assert cache._characters == stored <= 5_000
    assert 0 < len(cache._rows) < len(conversations)


def test_same_batches_with_and_without_kept_renders(tiny, monkeypatch):
    """Two epochs of a shuffled dataset, with the rendered rows kept and
    with none kept: the same batches; a conversation changed between
    epochs is batched as changed."""
    from tf_input.data import chat as chat_data

    conversations = [[dict(m) for m in c] for c in chats() * 6]
    common = dict(task="chat", batch_size=4, max_length=64, shuffle=8, seed=3)

    def epochs(ds, count=2):
        return [
            [
                np.concatenate(
                    [np.ravel(np.asarray(x)) for x in tf.nest.flatten(b)]
                )
                for b in ds
            ]
            for _ in range(count)
        ]

    kept = epochs(make_dataset(conversations, tiny, **common))
    monkeypatch.setattr(chat_data, "RENDER_CACHE_CHARACTERS", 0)
    none_kept = epochs(make_dataset(conversations, tiny, **common))
    for a, b in zip(kept, none_kept):
        assert len(a) == len(b) == 5
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    monkeypatch.undo()
    ds = make_dataset(
        conversations, tiny, task="chat", batch_size=4, max_length=64
    )
    before = epochs(ds, 1)[0]
    conversations[0][1]["content"] = "hey"
    after = epochs(ds, 1)[0]
    fresh = epochs(
        make_dataset(
            conversations, tiny, task="chat", batch_size=4, max_length=64
        ),
        1,
    )[0]
    assert not np.array_equal(before[0], after[0])
    np.testing.assert_array_equal(after[0], fresh[0])


@requires_shared_data
def test_qwen3_is_not_prefix_stable_and_unrolls(qwen):
    conversation = chats()[1]
    with pytest.raises(ValueError, match="not prefix-stable.*unroll_turns"):
        make_dataset(
            [conversation], qwen, task="chat", batch_size=2, max_length=128
        )
    ds = make_dataset(
        [conversation],
        qwen,
        task="chat",
        batch_size=2,
        max_length=128,
        unroll_turns=True,
    )
    rows = real_rows(*next(iter(ds)))
    assert len(rows) == 2
    for k, (ids, labels, weights) in zip((2, 4), rows):
        part = conversation[: k + 1]
        assert ids == qwen.apply_chat_template(part).numpy().tolist()
        prompt = qwen.apply_chat_template(part[:k], add_generation_prompt=True)
        # Only this turn: the context, earlier answers included, is 0.
        first = len(prompt) - 1
        assert weights == [float(p >= first) for p in range(len(ids) - 1)] + [
            0.0
        ]
    targets = [y for y, w in zip(rows[0][1], rows[0][2]) if w]
    assert qwen.detokenize(targets).numpy().decode() == (
        "<think>\n\n</think>\n\n4<|im_end|>\n"
    )
    # Without thinking, the prompt holds the empty <think> block: only
    # the answer and its end are the turn's tokens.
    ds = make_dataset(
        [conversation[:3]],
        qwen,
        task="chat",
        batch_size=1,
        max_length=128,
        chat_template_kwargs={"enable_thinking": False},
    )
    _, labels, weights = next(iter(ds))
    targets = labels[0][weights[0] > 0]
    assert qwen.detokenize(targets).numpy().decode() == "4<|im_end|>\n"


def test_jsonl_sources_and_errors(tiny, tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "\n".join(json.dumps({"messages": c}) for c in chats()) + "\n"
    )
    from_file = make_dataset(
        str(path), tiny, task="chat", batch_size=4, max_length=96
    )
    from_list = make_dataset(
        chats(), tiny, task="chat", batch_size=4, max_length=96
    )
    a, b = next(iter(from_file)), next(iter(from_list))
    np.testing.assert_array_equal(a[0]["token_ids"], b[0]["token_ids"])
    np.testing.assert_array_equal(a[2], b[2])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": chats()[0]}) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl', line 2, is not JSON"):
        make_dataset(str(bad), tiny, task="chat", batch_size=4, max_length=9)
    bad.write_text(json.dumps({"text": "hi"}) + "\n")
    with pytest.raises(ValueError, match=r"line 1: each line must be"):
        make_dataset(str(bad), tiny, task="chat", batch_size=4, max_length=9)


@pytest.mark.parametrize("kind", ["tokenizer.json", ".model", "bytes .model"])
def test_unigram_tokenizers_weight_the_assistant_targets(kind):
    # Unigram files give offsets too: a Unigram tokenizer.json, and a
    # SentencePiece unigram .model (its offsets from the core graph), with
    # byte fallback or without. A
    # template of plain words: these vocabularies have no ChatML tokens,
    # and a token across a turn's edge would make the two definitions of
    # "the assistant's tokens" (ids of prefixes, offsets) differ.
    template = (
        "{% for m in messages %} {{ m.role }}: {{ m.content }}.{% endfor %}"
        "{% if add_generation_prompt %} assistant:{% endif %}"
    )
    if kind == ".model":
        tokenizer = tf_input.tokenizers.SentencePieceTokenizer(
            data_path("sentencepiece", "sp-test-botchan-unigram-1000.model"),
            chat_template=template,
        )
    elif kind == "bytes .model":
        from tests.tokenizers.offsets_testing import byte_fallback_unigram_model

        tokenizer = tf_input.tokenizers.SentencePieceTokenizer(
            byte_fallback_unigram_model(), chat_template=template
        )
    else:
        from tests.tokenizers.test_assets import UNIGRAM_JSON

        tokenizer = tf_input.tokenizers.UnigramTokenizer(
            json.dumps(UNIGRAM_JSON), chat_template=template
        )
    conversations = chats()
    ds = make_dataset(
        conversations,
        tokenizer,
        task="chat",
        batch_size=4,
        max_length=256,
    )
    got = real_rows(*next(iter(ds)))
    want = expected_rows(tokenizer, conversations)
    assert sorted((ids, w) for ids, _, w in got) == sorted(want)
    assert sum(sum(w) for _, w in want) >= 6  # three answers, each "."


def test_shards_split_the_conversations(tiny):
    # Each worker's share: every third conversation, from its index; the
    # shares hold every row once between them.
    conversations = sft_conversations(12)

    def rows(shard):
        ds = make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=4,
            max_length=128,
            shard=shard,
        )
        policy = ds.options().experimental_distribute.auto_shard_policy
        sharded = tf.data.experimental.AutoShardPolicy.OFF
        assert (policy == sharded) == (shard is not None)
        return sorted(tuple(map(tuple, r)) for b in ds for r in real_rows(*b))

    shares = [rows((3, i)) for i in range(3)]
    assert [len(share) for share in shares] == [4, 4, 4]
    assert sorted(sum(shares, [])) == rows(None)
    want = expected_rows(tiny, conversations[1::3])
    assert sorted(ids for ids, _ in want) == sorted(
        list(ids) for ids, _, _ in shares[1]
    )
    with pytest.raises(ValueError, match="num_shards"):
        make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            shard=(2, 2),
        )


def test_the_tf_data_service_gives_the_local_batches(tiny, tmp_path):
    # The conversations are rendered here and go to the worker with the
    # graph; the worker tokenizes, this process cuts the batches.
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    conversations = chats() * 4
    for batching, mode in [
        ("longest", "parallel_epochs"),
        ("bucket", "parallel_epochs"),
        ("pack", "parallel_epochs"),
        ("stream", "parallel_epochs"),
        # One worker takes every row, in order.
        ("longest", "distributed_epoch"),
    ]:
        kwargs = dict(
            task="chat", batch_size=2, max_length=24, batching=batching
        )
        local = make_dataset(conversations, tiny, **kwargs)
        remote = make_dataset(
            conversations,
            tiny,
            data_service=dispatcher.target,
            data_service_mode=mode,
            **kwargs,
        )
        assert remote.element_spec == local.element_spec
        # One worker: the same epoch, weights included.
        pairs = list(zip(local, remote, strict=True))
        assert len(pairs) > 2, batching
        for want, got in pairs:
            for name in want[0]:
                np.testing.assert_array_equal(want[0][name], got[0][name])
            np.testing.assert_array_equal(want[1], got[1])
            np.testing.assert_array_equal(want[2], got[2])
    # Files (unbounded, rendered before the first batch) and counting the
    # workers' batches are refused, saying why.
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "".join(json.dumps({"messages": c}) + "\n" for c in chats())
    )
    kwargs = dict(task="chat", batch_size=2, max_length=24)
    with pytest.raises(ValueError, match="not files"):
        make_dataset(str(path), tiny, data_service=dispatcher.target, **kwargs)
    with pytest.raises(ValueError, match="count_batches=False"):
        make_dataset(
            chats(),
            tiny,
            data_service=dispatcher.target,
            count_batches=True,
            **kwargs,
        )
    with pytest.raises(ValueError, match="data_service_mode"):
        make_dataset(
            chats(),
            tiny,
            data_service=dispatcher.target,
            data_service_mode="sometimes",
            **kwargs,
        )
    del worker, dispatcher


def test_chat_argument_errors(tiny):
    conversations = chats()
    with pytest.raises(ValueError, match="batching='sorted'"):
        make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            batching="sorted",
        )
    with pytest.raises(ValueError, match="chat_truncation"):
        make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            chat_truncation="start",
        )
    with pytest.raises(ValueError, match="does not take separator"):
        make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            separator="x",
        )
    with pytest.raises(ValueError, match="does not take mask_selection_rate"):
        make_dataset(
            conversations,
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            mask_selection_rate=0.2,
        )
    with pytest.raises(ValueError, match='argument of task="chat"'):
        make_dataset(
            ["a b"], tiny, batch_size=2, max_length=8, unroll_turns=True
        )
    with pytest.raises(TypeError, match="conversations"):
        make_dataset([], tiny, task="chat", batch_size=2, max_length=8)

    class NoOffsets(type(tiny)):
        def _tokenize_with_offsets_batch(self, texts):
            raise NotImplementedError("NoOffsets gives no offsets.")

    no_offsets = NoOffsets.from_config(tiny.get_config())
    no_offsets.chat_template = CHATML
    with pytest.raises(ValueError, match="byte offsets.*NoOffsets"):
        make_dataset(
            conversations, no_offsets, task="chat", batch_size=2, max_length=8
        )
    refusing = "{{ raise_exception('no ' + messages[0].role) }}"
    tiny_copy = type(tiny).from_config(tiny.get_config())
    tiny_copy.chat_template = refusing
    with pytest.raises(ValueError, match="conversation 0: .*no user"):
        make_dataset(
            conversations, tiny_copy, task="chat", batch_size=2, max_length=8
        )


# --- Bucketing ---------------------------------------------------------------
def all_rows(ds):
    """`(rows, widths)`: every real row of every batch (see `real_rows`),
    and each batch's `(rows, width)` with the lengths of its real rows."""
    rows, shapes = [], []
    for features, labels, weights in ds:
        mine = real_rows(features, labels, weights)
        rows += mine
        shapes.append(
            (tuple(features["token_ids"].shape), [len(r[0]) for r in mine])
        )
    return rows, shapes


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"bucket_boundaries": [24, 40], "tokens_per_batch": 120},
        {"shuffle": 64, "seed": 3, "chat_truncation": "drop"},
    ],
    ids=["chosen", "explicit", "shuffled"],
)
def test_bucket_rows_are_the_longest_rows(tiny, kwargs):
    conversations = sft_conversations(150) + chats()
    common = dict(task="chat", batch_size=4, max_length=48)
    truncation = {k: v for k, v in kwargs.items() if k == "chat_truncation"}
    longest = make_dataset(conversations, tiny, **common, **truncation)
    bucket = make_dataset(
        conversations, tiny, batching="bucket", **common, **kwargs
    )
    want, _ = all_rows(longest)
    got, shapes = all_rows(bucket)
    # The same rows (ids, labels, weights), none lost or repeated.
    assert sorted(got) == sorted(want)
    info = pipeline_info(bucket)
    boundaries = info.boundaries
    if "bucket_boundaries" in kwargs:
        assert boundaries == [24, 40, 48]
        assert info.batch_sizes == [5, 3, 2]
    else:
        assert boundaries[-1] == 48 and len(boundaries) <= 8
    sizes = dict(zip(boundaries, info.batch_sizes))
    for (rows, width), lengths in shapes:
        # Each batch padded to a boundary, its rows no longer; only the
        # last batch can hold fill rows.
        assert width in boundaries and rows == sizes[width]
        assert max(lengths) <= width
    assert sum(rows - len(lengths) for (rows, _), lengths in shapes[:-1]) == 0
    a, b = stats(longest), stats(bucket)
    for key in ("real_tokens", "targets", "truncated", "dropped"):
        assert a[key] == b[key], key
    assert b["shapes"] <= len(boundaries)
    assert b["padding_efficiency"] > a["padding_efficiency"]
    if "chat_truncation" in kwargs:
        assert b["dropped"] > 0
    else:
        assert b["truncated"] > 0


def test_bucket_drop_remainder_and_leftovers(tiny):
    conversations = sft_conversations(40)
    kwargs = dict(
        task="chat",
        batch_size=4,
        max_length=64,
        batching="bucket",
        bucket_boundaries=[30],
    )
    _, shapes = all_rows(make_dataset(conversations, tiny, **kwargs))
    # Rows left over in the short bucket move up: no all-padding row
    # except in the very last batch.
    assert all(rows == len(lengths) for (rows, _), lengths in shapes[:-1])
    dropped = make_dataset(conversations, tiny, drop_remainder=True, **kwargs)
    _, shapes = all_rows(dropped)
    assert all(rows == len(lengths) == 4 for (rows, _), lengths in shapes)
    assert stats(dropped)["fill_rows"] == 0


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"bucket_boundaries": [4, 2]},
            ValueError,
            r"bucket_boundaries=\[4, 2\]",
        ),
        ({"bucket_boundaries": [40]}, ValueError, r"max_length=8"),
        ({"bucket_boundaries": [2.5]}, TypeError, r"bucket_boundaries="),
        ({"num_buckets": 0}, ValueError, r"num_buckets=0"),
        ({"tokens_per_batch": 0}, ValueError, r"tokens_per_batch=0"),
        ({"sample_size": 0}, ValueError, r"sample_size=0"),
    ],
)
def test_bucket_argument_errors(tiny, kwargs, error, message):
    with pytest.raises(error, match=message):
        make_dataset(
            chats(),
            tiny,
            task="chat",
            batch_size=2,
            max_length=8,
            batching="bucket",
            **kwargs,
        )


# --- SFT runs ----------------------------------------------------------------
def sft_conversations(count=300):
    rng = np.random.default_rng(0)
    out = []
    for i in range(count):
        a, b = (int(x) for x in rng.integers(0, 50, 2))
        chat = [
            {"role": "user", "content": f"{a}+{b}?"},
            {"role": "assistant", "content": str(a + b)},
        ]
        if i % 3 == 0:
            chat.insert(0, {"role": "system", "content": "Add."})
        if i % 4 == 0:
            chat += [
                {"role": "user", "content": f"{a}-{b}?"},
                {"role": "assistant", "content": str(a - b)},
            ]
        out.append(chat)
    return out


def nll_by_hand(model, features, labels):
    logits = np.asarray(model.predict_on_batch(features), np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    return log_z - picked


def check_loss_by_hand_then_train(model, ds, features_of):
    """`fit`'s loss on one batch (learning rate 0) is the mean NLL over
    exactly its weighted targets; then training lowers the loss."""
    loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss)
    batch = next(iter(ds))  # one batch, fixed (the rows are shuffled)
    features, labels, weights = batch
    weights = weights.numpy()
    nll = nll_by_hand(model, features_of(features), labels.numpy())
    want = (nll * weights).sum() / weights.sum()
    one = tf.data.Dataset.from_tensors(
        (features_of(features), labels, batch[2])
    )
    history = model.fit(one, epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], want, rtol=1e-4)
    # Not the mean over every real position: the weights matter.
    real = features["padding_mask"].numpy().astype(bool)
    assert 0 < weights.sum() < real.sum()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=loss)
    history = model.fit(
        ds.map(lambda f, y, w: (features_of(f), y, w)), epochs=3, verbose=0
    )
    losses = history.history["loss"]
    assert losses[-1] < losses[0], losses


def test_sft_packed_rows_with_an_input_block(tiny):
    keras.utils.set_random_seed(1)
    length = 64
    ds = make_dataset(
        sft_conversations(),
        tiny,
        task="chat",
        batch_size=16,
        max_length=length,
        batching="pack",
        shuffle=True,
        seed=0,
    )
    size = tiny.vocabulary_size()
    token_ids = keras.Input((length,), dtype="int32", name="token_ids")
    example_ids = keras.Input((length,), dtype="int32", name="example_ids")
    positions = keras.Input((length,), dtype="int32", name="positions")
    block = tf_input.InputBlock(
        size, 32, position="learned", max_length=length, positions_input=True
    )
    hidden = block({"token_ids": token_ids, "positions": positions})
    mask = segment_attention_mask(example_ids, causal=True)
    attended = keras.layers.MultiHeadAttention(2, 16)(
        hidden, hidden, attention_mask=mask
    )
    hidden = keras.layers.LayerNormalization()(hidden + attended)
    logits = keras.layers.Dense(size)(hidden)
    inputs = {
        "token_ids": token_ids,
        "example_ids": example_ids,
        "positions": positions,
    }
    model = keras.Model(inputs, logits)

    def features_of(features):
        return {name: features[name] for name in inputs}

    check_loss_by_hand_then_train(model, ds, features_of)


def test_sft_stream_with_a_keras_hub_backbone(tiny):
    import keras_hub

    keras.utils.set_random_seed(2)
    backbone = keras_hub.models.Qwen3Backbone(
        vocabulary_size=tiny.vocabulary_size(),
        num_layers=1,
        num_query_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        hidden_dim=16,
        intermediate_dim=32,
    )
    model = keras_hub.models.Qwen3CausalLM(backbone, preprocessor=None)
    ds = make_dataset(
        sft_conversations(),
        tiny,
        task="chat",
        batch_size=8,
        max_length=64,
        batching="stream",
        features=model,  # exactly its inputs
    )
    names = list(model.input)
    assert sorted(ds.element_spec[0]) == sorted(names)

    def features_of(features):
        return {name: features[name] for name in names}

    check_loss_by_hand_then_train(model, ds, features_of)
    assert tf.reduce_sum(next(iter(ds))[2]) > 0


def test_shuffled_packed_rows_are_each_epochs_rows(tiny):
    """`"pack"` with `shuffle`: the rows are packed in each chunk before
    the shuffle (as `make_dataset` packs), which moves packed rows, so
    every epoch holds the same examples and as many batches as counted,
    in a new order."""
    conversations = sft_conversations(150) + chats()
    common = dict(task="chat", batch_size=4, max_length=48, batching="pack")
    want, _ = all_rows(make_dataset(conversations, tiny, **common))
    shuffled = make_dataset(conversations, tiny, shuffle=64, seed=3, **common)
    epochs = []
    for _ in range(2):
        batches = list(shuffled)
        assert len(batches) == pipeline_info(shuffled).num_batches
        got = []
        for batch in batches:
            got += real_rows(*batch)
        assert sorted(got) == sorted(want)
        epochs.append(got)
    assert epochs[0] != epochs[1] != want
