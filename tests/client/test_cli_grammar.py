"""The terminal client's command grammar, ``--json`` spellings, log lines and renderings (no I/O).

The same behaviour runs end to end in ``test_cli_commands.py``; here each rule is pinned on its
own, fast, with the cases a subprocess run would not reach.
"""

from __future__ import annotations

import pytest

from fastapi_mrtr.client._cli_commands import (
    Command,
    PreparedCommand,
    commands_help,
    parse_command,
    split_json_flag,
)
from fastapi_mrtr.client._cli_output import (
    as_sent,
    log_line,
    render_contents,
    render_prompt,
    render_prompts,
    render_resources,
    render_templates,
)
from fastapi_mrtr.wire.protocol import (
    BlobResourceContents,
    EmbeddedResource,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
)


@pytest.mark.parametrize(
    ("words", "command"),
    [
        ([], Command("tools list")),
        (["tools"], Command("tools list")),
        (["tools", "list"], Command("tools list")),
        (["get_book", "book_id=1"], Command("call", "get_book", ("book_id=1",))),
        (["call", "prompts", "a=1"], Command("call", "prompts", ("a=1",))),
        (["call", "call"], Command("call", "call")),
        (["prompts"], Command("prompts list")),
        (["prompts", "get", "greet", "name=Ada"], Command("prompts get", "greet", ("name=Ada",))),
        (["resources"], Command("resources list")),
        (["resources", "templates"], Command("resources templates")),
        (["resources", "read", "test://a/b"], Command("resources read", "test://a/b")),
    ],
)
def test_the_words_after_the_url(words: list[str], command: Command) -> None:
    assert parse_command(words) == command


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        (["prompts", "name=x"], "prompts takes list or get, not 'name=x' (to call a tool named 'prompts': URL call"),
        (["tools", "call"], "tools takes list, not 'call'"),
        (["resources", "list", "extra"], "resources list takes no more words, got 'extra'"),
        (["resources", "read"], "resources read takes one URI"),
        (["prompts", "get"], "prompts get needs a prompt name"),
        (["call"], "call needs a tool name"),
    ],
)
def test_a_command_word_never_falls_back_to_a_tool_call(words: list[str], reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_command(words)
    assert str(caught.value).startswith(reason)


@pytest.mark.parametrize(
    ("argv", "rewritten"),
    [
        (["URL", "t", "--json"], ["URL", "t", "--json"]),
        (["URL", "t", "--json", '{"a": 1}'], ["URL", "t", "--arguments", '{"a": 1}']),
        (["URL", "t", "--json", ' {"a": 1}', "--json"], ["URL", "t", "--arguments", ' {"a": 1}', "--json"]),
        (["URL", "t", '--json={"a": 1}'], ["URL", "t", '--arguments={"a": 1}']),
        (["URL", "--json", "prompts", "list"], ["URL", "--json", "prompts", "list"]),
        (["URL", "t", "--json", "a={}"], ["URL", "t", "--json", "a={}"]),
        (["URL", "--", "--json", "{}"], ["URL", "--", "--json", "{}"]),
    ],
)
def test_json_is_the_output_switch_unless_an_object_follows(argv: list[str], rewritten: list[str]) -> None:
    assert split_json_flag(argv) == rewritten


def test_arguments_are_parsed_per_command() -> None:
    call = PreparedCommand.parse(["t", "n=3", "s=x"], '{"n": 1, "m": [1]}')
    assert call.arguments == {"n": 3, "m": [1], "s": "x"}
    prompt = PreparedCommand.parse(["prompts", "get", "p", "n=3", "flag=true"], '{"k": "v"}')
    assert prompt.arguments == {"k": "v", "n": "3", "flag": "true"}  # strings, as typed
    with pytest.raises(ValueError, match="prompt arguments are strings; not so: k"):
        PreparedCommand.parse(["prompts", "get", "p"], '{"k": 1}')
    with pytest.raises(ValueError, match="resources read takes no arguments object"):
        PreparedCommand.parse(["resources", "read", "u"], '{"k": 1}')
    with pytest.raises(ValueError, match="expected key=value, got 'oops'"):
        PreparedCommand.parse(["prompts", "get", "p", "oops"], None)


def test_help_names_each_command_once() -> None:
    text = commands_help()
    for words in ("call TOOL", "tools list", "prompts list", "prompts get NAME", "resources templates"):
        assert text.count(f"URL {words}") == 1, text


@pytest.mark.parametrize(
    ("params", "threshold", "line"),
    [
        ({"level": "warning", "data": "disk low", "logger": "db"}, "warning", "[warning db] disk low"),
        ({"level": "info", "data": "hello"}, "warning", None),
        ({"level": "emergency", "data": {"a": [1]}}, "debug", '[emergency] {"a": [1]}'),
        ({"level": "loud", "data": "x"}, "emergency", '[level "loud"?] x'),
        ({"data": "x"}, "error", "[level null?] x"),
    ],
)
def test_log_lines(params: dict[str, object], threshold: str, line: str | None) -> None:
    assert log_line(params, threshold) == line


def test_renderings() -> None:
    prompts = [
        Prompt(name="greet", description="Say hi", arguments=[PromptArgument(name="who", required=True)]),
        Prompt(name="plain", arguments=[PromptArgument(name="tone")]),
    ]
    assert render_prompts(prompts) == "greet who=<string>\n    Say hi\nplain tone=<string>?"
    assert render_prompts([]) == "(no prompts)"
    embedded = EmbeddedResource(resource=BlobResourceContents(uri="f://x", mime_type="image/png", blob="QUJD"))
    result = GetPromptResult(
        messages=[
            PromptMessage(role="user", content=TextContent(text="one\ntwo")),
            PromptMessage(role="assistant", content=embedded),
        ]
    )
    assert render_prompt(result) == "user: one\ntwo\nassistant: [f://x: image/png, 4 base64 chars]"
    resources = [
        Resource(uri="f://a", name="a", mime_type="text/plain", description="The a"),
        Resource(uri="f://b", name="b"),
    ]
    assert render_resources(resources) == "f://a a (text/plain)\n    The a\nf://b b"
    assert render_templates([ResourceTemplate(uri_template="f://{id}", name="t")]) == "f://{id} t"
    contents = ReadResourceResult(
        contents=[TextResourceContents(uri="f://a", text="alpha"), BlobResourceContents(uri="f://b", blob="QQ==")]
    )
    assert render_contents(contents) == "alpha\n[f://b: binary, 4 base64 chars]"
    assert render_contents(ReadResourceResult(contents=[])) == "(no contents)"


def test_json_output_is_what_the_server_sent() -> None:
    # A 2025-era result has no resultType or ttlMs: the document does not invent them.
    parsed = ReadResourceResult.model_validate({"contents": [{"uri": "f://a", "text": "x"}]})
    assert as_sent(parsed) == {"contents": [{"uri": "f://a", "text": "x"}]}
