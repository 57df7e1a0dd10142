"""Every tool, prompt and resource of the fixture server, the example app and the question app,
driven to its end through all its MRTR rounds by the official MCP Python client (mcp 2.3.0).

The client answers forms with values made from their requestedSchema, sampling with a canned
reply and roots with one root; each flow must end in a result the client accepts (its output
schema check included), and every message on the wire must pass the SDK's wire models (the
``served`` fixture checks them). Tools, prompts and resources come from the servers' own lists.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    AudioContent,
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ListRootsResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)
from pydantic import FileUrl

from tests.interop.answers import form_answer
from tests.interop.servers import ARGUMENTS, Served, cases, listing, tool_arguments

pytestmark = pytest.mark.anyio

CANNED_REPLY = "Paris"
CANNED_MODEL = "canned-model"
ROOT = "file:///workspace"


@dataclass
class User:
    """The client's callbacks: what it was asked, by input key, and what it answered."""

    asked: list[str] = field(default_factory=list)
    forms: list[dict[str, Any]] = field(default_factory=list)
    logs: list[LoggingMessageNotificationParams] = field(default_factory=list)
    progress: list[float] = field(default_factory=list)

    async def elicit(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(str(context.request_id))
        if not isinstance(params, ElicitRequestFormParams):  # URL mode: the user went there
            return ElicitResult(action="accept")
        answer = form_answer(params.requested_schema)
        self.forms.append(answer)
        return ElicitResult(action="accept", content=answer)

    async def sample(self, context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.asked.append(str(context.request_id))
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=CANNED_REPLY), model=CANNED_MODEL
        )

    async def roots(self, context: Any) -> ListRootsResult:
        self.asked.append(str(context.request_id))
        return ListRootsResult(roots=[Root(uri=FileUrl(ROOT), name="workspace")])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(progress)


@contextlib.asynccontextmanager
async def official_client(served: Served, user: User, **options: Any) -> AsyncIterator[Client]:
    """The SDK's ``Client`` on the 2026-07-28 wire, with every callback a user could give."""
    options.setdefault("mode", "2026-07-28")
    async with (
        httpx2.AsyncClient(headers=served.headers) as http,
        Client(
            streamable_http_client(served.url, http_client=http),
            elicitation_callback=user.elicit,
            sampling_callback=user.sample,
            list_roots_callback=user.roots,
            logging_callback=user.log,
            **options,
        ) as client,
    ):
        yield client


def text_of(result: CallToolResult | GetPromptResult) -> str:
    blocks = [m.content for m in result.messages] if isinstance(result, GetPromptResult) else result.content
    return " ".join(block.text for block in blocks if isinstance(block, TextContent))


# --- tools ------------------------------------------------------------------------------------------

# Tools whose result is meant to be an error (isError: true), and why.
MEANT_TO_FAIL = {
    ("everything", "test_error_handling"): "it always raises HTTPException(500) to show a tool error",
    ("everything", "failing_job"): "a tasks fixture: a tool error after a second (a plain call in a 2025-era session)",
}

# Tools that answer this client a JSON-RPC error by design, and its code: the tasks fixtures that
# need the tasks extension (the official client declares none) and the one raising JsonRpcError.
# A 2025-era session has no tasks: there only the JsonRpcError remains (REFUSED_IN_A_SESSION).
REFUSED = {
    ("everything", "failing_job"): -32021,
    ("everything", "test_tool_with_task"): -32021,
    ("everything", "protocol_error_job"): -32603,
}
REFUSED_IN_A_SESSION = {("everything", "protocol_error_job"): -32603}

Check = Callable[[CallToolResult, User], None]


def _text(expected: str, asked: list[str] | None = None) -> Check:
    def check(result: CallToolResult, user: User) -> None:
        assert text_of(result) == expected
        assert result.structured_content in (None, {"result": expected})
        if asked is not None:
            assert user.asked == asked

    return check


def _media(kind: type[ImageContent | AudioContent], mime: str, magic: bytes) -> Check:
    def check(result: CallToolResult, user: User) -> None:
        [block] = result.content
        assert isinstance(block, kind) and block.mime_type == mime
        assert base64.b64decode(block.data).startswith(magic)

    return check


def _embedded(result: CallToolResult, user: User) -> None:
    [block] = result.content
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents)
    assert block.resource.uri == "test://embedded-resource"
    assert block.resource.text == "This is an embedded resource content."


def _mixed(result: CallToolResult, user: User) -> None:
    assert [block.type for block in result.content] == ["text", "image", "resource"]


def _failed(result: CallToolResult, user: User) -> None:
    assert "intentionally returns an error" in text_of(result)


def _progress(result: CallToolResult, user: User) -> None:
    _text("Progress test completed")(result, user)
    assert user.progress == [0, 50, 100]


def _logged(result: CallToolResult, user: User) -> None:
    _text("Logging test completed")(result, user)
    assert [log.data for log in user.logs] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]


def _structured(expected: Callable[[Any], bool], asked: list[str] | None = None) -> Check:
    def check(result: CallToolResult, user: User) -> None:
        assert result.structured_content is not None and expected(result.structured_content)
        said = json.loads(text_of(result))  # the text block says the same (a list or scalar: wrapped)
        assert said in (result.structured_content, result.structured_content.get("result"))
        if asked is not None:
            assert user.asked == asked

    return check


def _profile(result: CallToolResult, user: User) -> None:
    [form] = user.forms
    assert result.structured_content is not None
    answers = result.structured_content["answers"]
    assert answers["action"] == "accept"
    assert {key: answers[key] for key in form} == form  # every answer reached the handler as sent


EXPECTED: dict[tuple[str, str], Check] = {
    ("everything", "test_simple_text"): _text("This is a simple text response for testing."),
    ("everything", "test_image_content"): _media(ImageContent, "image/png", b"\x89PNG"),
    ("everything", "test_audio_content"): _media(AudioContent, "audio/wav", b"RIFF"),
    ("everything", "test_embedded_resource"): _embedded,
    ("everything", "test_multiple_content_types"): _mixed,
    ("everything", "test_error_handling"): _failed,
    ("everything", "test_tool_with_progress"): _progress,
    ("everything", "test_logging_tool"): _logged,
    ("everything", "test_missing_capability"): _text(f"The model said: {CANNED_REPLY}", ["hello"]),
    ("everything", "test_streaming_elicitation"): _text("Hello, Ada!", ["user_name"]),
    ("everything", "test_trigger_tool_change"): _text("Tool list change notified"),
    ("everything", "test_trigger_prompt_change"): _text("Prompt list change notified"),
    ("everything", "json_schema_2020_12_tool"): _text("Contact Ada recorded"),
    ("everything", "test_x_mcp_header"): _text("Region: Ada"),
    ("everything", "test_input_required_result_elicitation"): _text("Hello, Ada!", ["user_name"]),
    ("everything", "test_input_required_result_sampling"): _text(
        f"The model answered: {CANNED_REPLY}", ["capital_question"]
    ),
    ("everything", "test_input_required_result_list_roots"): _text(f"Roots: {ROOT}", ["client_roots"]),
    ("everything", "test_input_required_result_request_state"): _text("state-ok: confirmed", ["confirm"]),
    ("everything", "test_input_required_result_multiple_inputs"): _text(f"{CANNED_REPLY} Ada (1 roots)"),
    ("everything", "test_input_required_result_multi_round"): _text("Ada likes Ada.", ["step1", "step2"]),
    ("everything", "test_input_required_result_tampered_state"): _text("Confirmed.", ["confirm"]),
    ("everything", "test_input_required_result_capabilities"): _text("Hello, Ada!", ["user_name"]),
    ("bookshop", "list_books"): _structured(lambda s: [b["id"] for b in s["result"]][:3] == [1, 2, 3]),
    ("bookshop", "get_book"): _structured(lambda s: s["title"] == "Dune"),
    ("bookshop", "place_order"): _structured(
        lambda s: s["status"] == "placed" and s["total_cents"] == 1250, ["confirm", "shipping"]
    ),
    ("bookshop", "delete_book"): _structured(lambda s: s["title"] == "Kindred", ["delete"]),
    ("bookshop", "review_book"): _structured(
        lambda s: s["status"] == "saved" and s["rating"] == 1, ["rating", "comment", "publish"]
    ),
    ("bookshop", "my_orders"): _structured(lambda s: all(o["customer"] == "alice" for o in s["result"])),
    ("questions", "ask_profile"): _profile,
    ("questions", "ask_shorthands"): _structured(
        lambda s: (
            s["answers"] == {"agree": True, "count": 1, "ratio": 1.0, "word": "Ada", "size": "small", "side": "left"}
        ),
        ["agree", "count", "ratio", "word", "size", "side"],
    ),
    ("questions", "ask_url"): _structured(lambda s: s["answers"] == {"action": "accept"}, ["bank"]),
    ("questions", "ask_model"): _structured(lambda s: s["answers"] == {"model": CANNED_MODEL, "text": CANNED_REPLY}),
    ("questions", "ask_roots"): _structured(lambda s: s["answers"] == {"roots": [ROOT]}, ["roots"]),
}


def _ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"{server}:{name}" for server, name in pairs]


TOOLS = cases("tools")


@pytest.mark.parametrize(("served", "tool"), TOOLS, ids=_ids(TOOLS), indirect=["served"])
async def test_every_tool_completes_in_the_official_client(served: Served, tool: str) -> None:
    user = User()
    async with official_client(served, user, log_level="info") as client:
        refused = REFUSED.get((served.name, tool))
        if refused is not None:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(tool, tool_arguments(served.name, tool))
            assert caught.value.code == refused
            served.assert_wire_conforms()
            return
        result = await client.call_tool(tool, tool_arguments(served.name, tool), progress_callback=user.on_progress)
    meant_to_fail = (served.name, tool) in MEANT_TO_FAIL
    assert result.is_error is meant_to_fail, text_of(result)
    assert result.content, "a tool result needs at least one content block"
    check = EXPECTED.get((served.name, tool))
    if check is not None:  # a tool added later gets the generic checks above and the wire's
        check(result, user)
    served.assert_wire_conforms()


def test_every_expectation_names_a_listed_tool() -> None:
    """An expectation for a tool that was renamed or dropped would silently stop checking."""
    listed = set(TOOLS)
    assert set(EXPECTED) <= listed
    assert set(ARGUMENTS) <= listed
    assert set(MEANT_TO_FAIL) <= listed
    assert set(REFUSED) <= listed


# --- prompts ----------------------------------------------------------------------------------------

PROMPT_ARGUMENTS = {("everything", "test_prompt_with_embedded_resource"): {"resourceUri": "test://embedded"}}
PROMPTS_EXPECTED: dict[tuple[str, str], Callable[[GetPromptResult], bool]] = {
    ("everything", "test_simple_prompt"): lambda r: text_of(r) == "This is a simple prompt for testing.",
    ("everything", "test_prompt_with_arguments"): lambda r: (
        text_of(r) == "Prompt with arguments: arg1='Ada', arg2='Ada'"
    ),
    ("everything", "test_prompt_with_embedded_resource"): lambda r: (
        isinstance(r.messages[0].content, EmbeddedResource) and r.messages[0].content.resource.uri == "test://embedded"
    ),
    ("everything", "test_prompt_with_image"): lambda r: isinstance(r.messages[0].content, ImageContent),
    ("everything", "test_input_required_result_prompt"): lambda r: text_of(r) == "Use this context: Ada",
    ("questions", "plan_trip"): lambda r: text_of(r) == "Plan 1 days in Ada.",
}
PROMPTS = cases("prompts")


@pytest.mark.parametrize(("served", "prompt"), PROMPTS, ids=_ids(PROMPTS), indirect=["served"])
async def test_every_prompt_completes_in_the_official_client(served: Served, prompt: str) -> None:
    listed = served.listing.prompts[prompt]
    arguments = PROMPT_ARGUMENTS.get((served.name, prompt)) or {
        argument["name"]: "Ada" for argument in listed.get("arguments") or []
    }
    async with official_client(served, User()) as client:
        result = await client.get_prompt(prompt, arguments)
    assert result.messages
    check = PROMPTS_EXPECTED.get((served.name, prompt))
    assert check is None or check(result), result
    served.assert_wire_conforms()


# --- resources and templates ------------------------------------------------------------------------

RESOURCES = cases("resources")
TEMPLATES = cases("templates")


def expand(template: str, value: str = "ada") -> str:
    """A URI of ``template`` with every variable set to ``value``."""
    uri, rest = "", template
    while "{" in rest:
        head, _, tail = rest.partition("{")
        uri, rest = uri + head + value, tail.partition("}")[2]
    return uri + rest


async def _read(served: Served, uri: str) -> ReadResourceResult:
    async with official_client(served, User()) as client:
        result = await client.read_resource(uri)
    assert result.contents and all(contents.uri == uri for contents in result.contents)
    return result


@pytest.mark.parametrize(("served", "uri"), RESOURCES, ids=_ids(RESOURCES), indirect=["served"])
async def test_every_resource_reads_in_the_official_client(served: Served, uri: str) -> None:
    result = await _read(served, uri)
    mime = served.listing.resources[uri].get("mimeType")
    assert mime is None or all(contents.mime_type == mime for contents in result.contents)
    served.assert_wire_conforms()


@pytest.mark.parametrize(("served", "template"), TEMPLATES, ids=_ids(TEMPLATES), indirect=["served"])
async def test_every_resource_template_reads_in_the_official_client(served: Served, template: str) -> None:
    result = await _read(served, expand(template))
    text = " ".join(getattr(contents, "text", "") for contents in result.contents)
    assert "ada" in text  # the variable reached the function
    served.assert_wire_conforms()


# --- completions ------------------------------------------------------------------------------------


def _completion_cases() -> list[tuple[str, str, str]]:
    found = []
    for server, prompt in PROMPTS:
        for argument in listing(server).prompts[prompt].get("arguments") or []:
            found.append((server, f"prompt:{prompt}", argument["name"]))
    for server, template in TEMPLATES:
        rest = template
        while "{" in rest:
            name, _, rest = rest.partition("{")[2].partition("}")
            found.append((server, f"template:{template}", name.lstrip("+")))
    return found


COMPLETIONS = _completion_cases()


@pytest.mark.parametrize(
    ("served", "ref", "argument"),
    COMPLETIONS,
    ids=[f"{s}:{r}:{a}" for s, r, a in COMPLETIONS],
    indirect=["served"],
)
async def test_every_argument_completes_in_the_official_client(served: Served, ref: str, argument: str) -> None:
    kind, _, name = ref.partition(":")
    reference = PromptReference(name=name) if kind == "prompt" else ResourceTemplateReference(uri=name)
    async with official_client(served, User()) as client:
        result = await client.complete(reference, {"name": argument, "value": "m"})
    assert all(value.startswith("m") for value in result.completion.values), result
    served.assert_wire_conforms()


# --- the lists, as the official client reads them ---------------------------------------------------


@pytest.mark.parametrize("served", ["everything", "bookshop", "questions"], indirect=True)
async def test_the_official_client_lists_what_was_collected(served: Served) -> None:
    async with official_client(served, User(), mode="auto") as client:
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == list(served.listing.tools)
        if served.listing.prompts:
            prompts = await client.list_prompts()
            assert [prompt.name for prompt in prompts.prompts] == list(served.listing.prompts)
        if served.listing.resources or served.listing.templates:
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            assert [str(r.uri) for r in resources.resources] == list(served.listing.resources)
            assert [t.uri_template for t in templates.resource_templates] == list(served.listing.templates)
    assert served.assert_wire_conforms() >= 2  # server/discover (mode="auto") and the lists


@pytest.mark.parametrize("served", ["everything"], indirect=True)
async def test_listen_notifications_reach_the_official_client(served: Served) -> None:
    async with (
        official_client(served, User()) as client,
        client.listen(tools_list_changed=True, prompts_list_changed=True) as subscription,
    ):
        await client.call_tool("test_trigger_tool_change")
        event = await subscription.__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        await client.call_tool("test_trigger_prompt_change")
        event = await subscription.__anext__()
        assert type(event).__name__ == "PromptsListChanged"
    served.assert_wire_conforms()
