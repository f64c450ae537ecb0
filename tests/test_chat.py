"""Chat templates: `apply_chat_template` equal to `transformers`' id for id.

The reference is `transformers`' own `apply_chat_template(...,
tokenize=True)` (tokenizer use only, no PyTorch), on the shared Qwen 3
folder (its own template) and on real templates of other models
(`tests/fixtures/chat_templates/`, see its README) put on the shared
tokenizer files.
"""

import json
import pathlib

import keras
import pytest
import tensorflow as tf
import transformers

import tf_input
from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input.tokenizers.chat import ChatTemplateError

TEMPLATES = pathlib.Path(__file__).parent / "fixtures" / "chat_templates"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city, «today».",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Città"},
                    "unit": {"type": "string", "enum": ["C", "F"]},
                },
                "required": ["city"],
            },
        },
    }
]


def _plain():
    """Conversations every template here accepts: user/assistant turns
    in alternation, no system message."""
    texts = [
        ("Hello!", "Hi, how can I help?"),
        ("  What is 2 + 2?\n", "4, of course.  "),
        ("Ünïcödé: 日本語、中文，한국어 — ok?", "Oui : «ça marche» 🚀👍🏽"),
        ("tabs\tand\nnew\n\nlines", "```python\nprint('x')\n```"),
        ("<think>not a tag here</think>", "Answer after </think> text"),
    ]
    out = []
    for user, assistant in texts:
        out.append([{"role": "user", "content": user}])
        out.append(
            [
                {"role": "user", "content": user},
                {"role": "assistant", "content": assistant},
            ]
        )
    out.append(
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "one"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "third ³"},
        ]
    )
    return out


def _with_system():
    return [
        [{"role": "system", "content": "You are terse."}, *conversation]
        for conversation in _plain()
    ]


def _qwen_tools():
    call = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "arguments": {"city": "Zürich", "unit": "C"},
        },
    }
    return [
        [
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": '{"temp": 21}'},
            {"role": "assistant", "content": "21 °C."},
        ],
        [
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "The user wants weather.",
                "tool_calls": [call, call],
            },
            {"role": "tool", "content": "sunny"},
            {"role": "tool", "content": "windy"},
        ],
    ]


# --- Fixtures -----------------------------------------------------------------
@pytest.fixture(scope="module")
def qwen():
    path = data_path("llm", "qwen3")
    ours = tf_input.load_tokenizer(path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(path))
    return ours, theirs


def _pair(folder_or_file, template, **special):
    """`(ours, theirs)` for a template put on a shared tokenizer file."""
    path = pathlib.Path(folder_or_file)
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    file = path / "tokenizer.json" if path.is_dir() else path
    ours = tf_input.load_tokenizer(file, chat_template=text)
    if path.is_dir():
        theirs = transformers.AutoTokenizer.from_pretrained(str(path))
        theirs.chat_template = text
    else:
        theirs = transformers.PreTrainedTokenizerFast(
            tokenizer_file=str(path), chat_template=text, **special
        )
    return ours, theirs


def _check(ours, theirs, conversations, **kwargs):
    """Every conversation, with and without the generation prompt:
    the same text and the same ids. Returns the number compared."""
    count = 0
    for conversation in conversations:
        for prompt in (False, True):
            expected = theirs.apply_chat_template(
                conversation,
                add_generation_prompt=prompt,
                tokenize=True,
                return_dict=False,
                **kwargs,
            )
            got = ours.apply_chat_template(
                conversation, add_generation_prompt=prompt, **kwargs
            )
            assert got.numpy().tolist() == list(expected), conversation
            text = ours.apply_chat_template(
                conversation,
                add_generation_prompt=prompt,
                tokenize=False,
                **kwargs,
            )
            assert text == theirs.apply_chat_template(
                conversation,
                add_generation_prompt=prompt,
                tokenize=False,
                **kwargs,
            )
            count += 1
    return count


# --- Parity ------------------------------------------------------------------
@requires_shared_data
def test_qwen3_own_template_equals_transformers(qwen):
    ours, theirs = qwen
    assert ours.chat_template == theirs.chat_template
    conversations = _plain() + _with_system() + _qwen_tools()
    count = _check(ours, theirs, conversations)
    count += _check(ours, theirs, _plain()[:4], enable_thinking=False)
    count += _check(ours, theirs, _qwen_tools(), tools=TOOLS)
    assert count == 2 * (len(conversations) + 4 + 2)


@requires_shared_data
def test_batched_conversations_give_ragged_ids(qwen):
    ours, theirs = qwen
    conversations = _plain()[:3]
    ids = ours.apply_chat_template(conversations)
    assert isinstance(ids, tf.RaggedTensor)
    expected = theirs.apply_chat_template(
        conversations, tokenize=True, return_dict=False
    )
    assert ids.to_list() == [list(x) for x in expected]
    texts = ours.apply_chat_template(conversations, tokenize=False)
    assert texts == theirs.apply_chat_template(conversations, tokenize=False)
    records = [{"messages": c} for c in conversations]
    assert ours.apply_chat_template(records).to_list() == ids.to_list()


@requires_shared_data
def test_llama3_template_on_cl100k_equals_transformers():
    ours, theirs = _pair(data_path("llm", "cl100k"), "llama3_2.jinja")
    fixed = {"date_string": "03 Dec 2026"}
    conversations = _plain() + _with_system()
    count = _check(ours, theirs, conversations, **fixed)
    tool_chat = [
        {"role": "user", "content": "Weather in Zürich?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "function": {
                        "name": "get_weather",
                        "arguments": {"city": "Zürich"},
                    }
                }
            ],
        },
        {"role": "tool", "content": {"temp": 21, "sky": "☀"}},
    ]
    count += _check(ours, theirs, [tool_chat], tools=TOOLS, **fixed)
    count += _check(
        ours,
        theirs,
        [tool_chat],
        tools=TOOLS,
        tools_in_user_message=False,
        **fixed,
    )
    assert count == 2 * (len(conversations) + 2)


@requires_shared_data
def test_deepseek_template_equals_transformers():
    ours, theirs = _pair(data_path("llm", "deepseek_v4"), "deepseek_r1.jinja")
    conversations = _plain() + _with_system()
    conversations.append(
        [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Let me look."},
            {"role": "tool", "content": "rain"},
            {"role": "tool", "content": "wind"},
            {"role": "assistant", "content": "<think>x</think>Rainy."},
        ]
    )
    # A tool call with `content: None`: None values are dropped (as in
    # transformers), so the template reads an undefined content: both
    # fail, with the same message.
    call = {
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    broken = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    with pytest.raises(Exception, match="has no attribute 'content'"):
        theirs.apply_chat_template(broken)
    with pytest.raises(ChatTemplateError, match="has no attribute 'content'"):
        ours.apply_chat_template(broken)
    count = _check(ours, theirs, conversations)
    assert count == 2 * len(conversations)


@requires_shared_data
def test_gemma_template_equals_transformers_and_raises_alike():
    ours, theirs = _pair(data_path("llm", "mistral_v1"), "gemma2.jinja")
    count = _check(ours, theirs, _plain())
    assert count == 2 * len(_plain())
    system = _with_system()[0]
    with pytest.raises(Exception, match="System role not supported"):
        theirs.apply_chat_template(system)
    with pytest.raises(ChatTemplateError, match="System role not supported"):
        ours.apply_chat_template(system)
    twice = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(ChatTemplateError, match="must alternate"):
        ours.apply_chat_template(twice)


@requires_shared_data
def test_mistral_template_equals_transformers():
    path = data_path("sentencepiece", "mistral-7b-v0.3-tokenizer.json")
    special = {"bos_token": "<s>", "eos_token": "</s>"}
    ours, theirs = _pair(path, "mistral_v0_3.jinja", **special)
    conversations = _plain() + _with_system()
    # No tokenizer_config.json beside this file: the tokens are given.
    count = _check(ours, theirs, conversations, **special)
    call = {
        "id": "abc123XYZ",
        "function": {"name": "get_weather", "arguments": {"city": "Nice"}},
    }
    tool_chat = [
        {"role": "user", "content": "Weather in Nice?"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "abc123XYZ", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
    count += _check(ours, theirs, [tool_chat], tools=TOOLS, **special)
    assert count == 2 * (len(conversations) + 1)
    bad = [dict(tool_chat[1], tool_calls=[dict(call, id="short")])]
    with pytest.raises(ChatTemplateError, match="length 9"):
        ours.apply_chat_template([tool_chat[0], *bad], **special)


# --- The template: where it comes from, where it goes ----------------------
TINY = {
    "model": {
        "type": "BPE",
        "vocab": {"h": 0, "e": 1, "!": 2, "A": 3, "J": 4, ":": 5, "1": 6},
        "merges": [],
    },
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
    "decoder": {"type": "ByteLevel"},
    "added_tokens": [{"id": 7, "content": "<s>", "special": True}],
}


def test_template_sources_and_round_trips(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(TINY))
    config = {"bos_token": "<s>"}
    config["chat_template"] = [
        {"name": "default", "template": "{{ messages[0].content }}!"},
        {"name": "tool_use", "template": "{{ bos_token }}{{ tools|length }}"},
    ]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    named = tf_input.load_tokenizer(folder)
    assert set(named.chat_template) == {"default", "tool_use"}
    chat = [{"role": "user", "content": "h1"}]
    assert named.apply_chat_template(chat, tokenize=False) == "h1!"
    assert named.apply_chat_template(chat, tokenize=False, tools=[{}]) == (
        "<s>1"
    )
    assert named.apply_chat_template(chat, tools=[{}]).numpy().tolist() == [
        7,
        6,
    ]
    assert (
        named.apply_chat_template(
            chat, tokenize=False, chat_template="tool_use", tools=[{}, {}]
        )
        == "<s>2"
    )
    # chat_template.jinja beside the file wins over the config's.
    (folder / "chat_template.jinja").write_text("J:{{ messages|length }}")
    beside = tf_input.load_tokenizer(folder)
    assert beside.apply_chat_template(chat).numpy().tolist() == [4, 5, 6]
    # The argument wins over both.
    given = tf_input.load_tokenizer(folder, chat_template="A")
    assert given.apply_chat_template(chat, tokenize=False) == "A"
    # Config and .keras round trips keep the templates.
    clone = type(named).from_config(named.get_config())
    assert clone.chat_template == named.chat_template
    model = keras.Sequential([keras.Input((), dtype="string"), named])
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras").layers[-1]
    assert loaded.chat_template == named.chat_template
    assert loaded.apply_chat_template(chat).numpy().tolist() == [0, 6, 2]


def test_tokenizer_without_template_says_how_to_pass_one():
    tokenizer = tf_input.VocabularyTokenizer()
    tokenizer.adapt(["hello world"])
    chat = [{"role": "user", "content": "hello"}]
    with pytest.raises(ChatTemplateError, match="chat_template="):
        tokenizer.apply_chat_template(chat)
    assert "chat_template" not in tokenizer.get_config()
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m.content }}{% endfor %}"
    )
    assert tokenizer.apply_chat_template(chat).numpy().tolist() == [
        tokenizer.token_to_id("hello")
    ]
    assert tokenizer.get_config()["chat_template"] == tokenizer.chat_template


def test_bad_templates_and_conversations_are_clear_errors():
    tokenizer = tf_input.VocabularyTokenizer(chat_template="{% if %}")
    tokenizer.adapt(["a"])
    with pytest.raises(ChatTemplateError, match="does not compile"):
        tokenizer.apply_chat_template([{"role": "user", "content": "a"}])
    with pytest.raises(TypeError, match="chat_template"):
        tf_input.VocabularyTokenizer(chat_template=3)
    tokenizer.chat_template = "{{ raise_exception('no ' + messages[0].role) }}"
    with pytest.raises(ChatTemplateError, match="refused.*no user"):
        tokenizer.apply_chat_template([{"role": "user", "content": "a"}])
    with pytest.raises(TypeError, match="list of messages"):
        tokenizer.apply_chat_template("hello")
    with pytest.raises(ValueError, match="empty conversation"):
        tokenizer.apply_chat_template([])


def test_sandbox_and_globals():
    tokenizer = tf_input.VocabularyTokenizer()
    tokenizer.adapt(["a"])
    chat = [{"role": "user", "content": "é<b>"}]
    render = tokenizer.apply_chat_template
    assert (
        render(
            chat,
            tokenize=False,
            chat_template="{{ messages[0] | tojson(sort_keys=True) }}",
        )
        == '{"content": "é<b>", "role": "user"}'
    )
    assert (
        render(
            chat,
            tokenize=False,
            chat_template=(
                "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}"
                "{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}"
            ),
        )
        == "02"
    )
    now = "{{ strftime_now('%Y') }}"
    year = render(chat, tokenize=False, chat_template=now)
    assert year.isdigit() and len(year) == 4
    with pytest.raises(Exception, match="unsafe|not safely|access"):
        render(
            chat,
            tokenize=False,
            chat_template="{{ messages.__class__.__mro__ }}",
        )
