"""Chat templates: a conversation rendered to text as `transformers` does.

A model's chat template is a Jinja template (the `chat_template` of its
`tokenizer_config.json`, or a `chat_template.jinja` file beside it). It is
rendered here the way `transformers`' `apply_chat_template` renders it:
in a sandboxed Jinja environment (`ImmutableSandboxedEnvironment`) with
`trim_blocks` and `lstrip_blocks`, the `loopcontrols` extension
(`{% break %}`, `{% continue %}`), the globals `raise_exception(message)`
and `strftime_now(format)`, and a `tojson` filter that keeps non-ASCII
characters and takes `indent`, `separators` and `sort_keys`. The template
sees `messages`, `tools`, `documents`, `add_generation_prompt`, the
special tokens of the tokenizer (`bos_token`, `eos_token`, ...) and any
other keyword given.

`jinja2` is an optional dependency (`pip install "tf_input[chat]"`),
imported on first use.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Mapping

# The role names of the tokenizers' special tokens, and the variable each
# one is passed to a template as (as `transformers`' `special_tokens_map`).
TOKEN_VARIABLES = {
    "bos": "bos_token",
    "eos": "eos_token",
    "unk": "unk_token",
    "sep": "sep_token",
    "pad": "pad_token",
    "cls": "cls_token",
    "mask": "mask_token",
}
# Names a message's reasoning is given under; templates read the first.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class ChatTemplateError(ValueError):
    """A chat template that does not compile, or that refuses a
    conversation (its `raise_exception(...)` message is in the error)."""


def _jinja():
    try:
        import jinja2
        import jinja2.ext
        import jinja2.sandbox
    except ImportError as error:
        raise ImportError(
            "Chat templates are rendered with `jinja2`, which is not "
            'installed. Install the chat extra: pip install "tf_input[chat]" '
            "(or pip install 'jinja2>=3.1')."
        ) from error
    return jinja2


def check_template(chat_template, name="chat_template"):
    """A template argument as a str, a dict of named str templates, or
    None; anything else is a `TypeError`. A list of `{"name", "template"}`
    (the form of `tokenizer_config.json`) becomes a dict."""
    if chat_template is None or isinstance(chat_template, str):
        return chat_template
    if isinstance(chat_template, (list, tuple)):
        named = {}
        for item in chat_template:
            if not (
                isinstance(item, Mapping)
                and isinstance(item.get("name"), str)
                and isinstance(item.get("template"), str)
            ):
                raise TypeError(
                    f"A list of chat templates must hold {{'name': str, "
                    f"'template': str}} objects. Received: {name} item "
                    f"{item!r:.80}."
                )
            named[item["name"]] = item["template"]
        chat_template = named
    if isinstance(chat_template, Mapping) and all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in chat_template.items()
    ):
        return dict(chat_template)
    raise TypeError(
        f"`{name}` must be a Jinja template (str), a dict from name to "
        "template (e.g. {'default': ..., 'tool_use': ...}), or None. "
        f"Received: {name} of type {type(chat_template).__name__}."
    )


def pick_template(templates, chat_template=None, tools=None):
    """The template string to render: `chat_template` (a template, or the
    name of one of `templates`), else the tokenizer's own (`tool_use` when
    tools are given and it has one, else `default`)."""
    if isinstance(templates, dict):
        if chat_template is not None and chat_template in templates:
            return templates[chat_template]
        if chat_template is None:
            if tools is not None and "tool_use" in templates:
                return templates["tool_use"]
            if "default" in templates:
                return templates["default"]
            raise ChatTemplateError(
                "This tokenizer has several chat templates and none named "
                "'default': pass `chat_template=` one of "
                f"{sorted(templates)} (or a template string)."
            )
    if chat_template is not None:
        if not isinstance(chat_template, str):
            raise TypeError(
                "`chat_template` must be a template string or the name of "
                "one of the tokenizer's templates. Received: chat_template "
                f"of type {type(chat_template).__name__}."
            )
        return chat_template
    if templates is None:
        raise ChatTemplateError(
            "This tokenizer has no chat template: its files hold none (no "
            "`chat_template` in tokenizer_config.json, no "
            "chat_template.jinja). Pass one: "
            "`load_tokenizer(path, chat_template=...)`, "
            "`tokenizer.chat_template = ...`, or "
            "`apply_chat_template(..., chat_template=...)`."
        )
    return templates


@functools.lru_cache(maxsize=16)
def compile_template(template):
    """The compiled Jinja template of a template string (cached)."""
    jinja2 = _jinja()
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        x, ensure_ascii=False, indent=None, separators=None, sort_keys=False
    ):
        # Not Jinja's own `tojson`, which escapes HTML characters.
        return json.dumps(
            x,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols],
    )
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = strftime_now
    try:
        return environment.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as error:
        raise ChatTemplateError(
            f"The chat template does not compile: {error.message} (line "
            f"{error.lineno} of the template)."
        ) from error


def normalize_conversation(conversation, where="conversation"):
    """A conversation as a list of plain message dicts, as `transformers`
    gives it to the template: keys whose value is None are left out, and
    a reasoning given as `thinking` or `reasoning` is also passed as
    `reasoning_content` (and the other way round)."""
    if isinstance(conversation, Mapping) and "messages" in conversation:
        conversation = conversation["messages"]
    if not isinstance(conversation, (list, tuple)):
        raise TypeError(
            f"A {where} must be a list of messages (dicts with 'role' and "
            "'content'), or a {'messages': [...]} record. Received: "
            f"{type(conversation).__name__}."
        )
    messages = []
    for message in conversation:
        if not isinstance(message, Mapping):
            raise TypeError(
                f"Each message of a {where} must be a dict with 'role' and "
                f"'content'. Received: {message!r:.80}."
            )
        message = {k: v for k, v in message.items() if v is not None}
        reasoning = next(
            (message[k] for k in _REASONING_FIELDS if k in message), None
        )
        if reasoning is not None:
            message = {
                "thinking": reasoning,
                **message,
                "reasoning_content": reasoning,
            }
        messages.append(message)
    return messages


def render(
    template,
    messages,
    *,
    add_generation_prompt=False,
    tools=None,
    documents=None,
    variables=None,
):
    """The text of one conversation (normalized messages) by `template`;
    `variables` are the special tokens and the template's other
    keywords."""
    jinja2 = _jinja()
    compiled = compile_template(template)
    try:
        return compiled.render(
            messages=messages,
            tools=tools,
            documents=documents,
            add_generation_prompt=add_generation_prompt,
            **(variables or {}),
        )
    except jinja2.exceptions.TemplateError as error:
        raise ChatTemplateError(
            f"The chat template refused the conversation: {error}"
        ) from error
