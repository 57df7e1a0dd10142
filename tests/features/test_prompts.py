"""Prompts: ``@mcp.prompt()`` functions served as ``prompts/list`` and ``prompts/get`` (with MRTR)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from fastapi_mrtr import (
    MCP,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    TextContent,
    TextResourceContents,
    ToolContext,
)
from fastapi_mrtr.wire import GetPromptResult, McpError
from tests.mcp_helpers import connect, make_meta, make_server, rpc_error

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
MISSING_CAPABILITY = -32021
ELICIT = make_meta({"elicitation": {}})


class Topic(BaseModel):
    topic: str


def _with_prompts(**options: Any) -> tuple[Any, MCP]:
    app, mcp = make_server(**options)

    @mcp.prompt()
    def greeting() -> str:
        """Say hello."""
        return "Hello there."

    @mcp.prompt(title="Review code")
    def review(
        code: Annotated[str, Field(description="The code to review")],
        language: str = "python",
    ) -> str:
        return f"Review this {language}: {code}"

    @mcp.prompt()
    def repeat(word: str, times: int) -> list[str]:
        """Repeat a word."""
        return [word] * times

    @mcp.prompt()
    async def ask_topic(ctx: ToolContext) -> str:
        """Ask what to talk about first."""
        answer = await ctx.elicit("Which topic?", Topic, key="topic")
        return f"Talk about {answer.content.topic}." if answer.content else "Talk about anything."

    return app, mcp


async def test_prompts_list_describes_arguments_and_caching() -> None:
    app, _ = _with_prompts(cache_ttl_ms=5000, cache_scope="private")
    async with connect(app) as client:
        result = await client.result("prompts/list")
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 5000 and result["cacheScope"] == "private"
    prompts = {p["name"]: p for p in result["prompts"]}
    assert list(prompts) == ["greeting", "review", "repeat", "ask_topic"]  # registration order
    assert prompts["greeting"] == {"name": "greeting", "description": "Say hello."}
    assert prompts["review"]["title"] == "Review code"
    assert prompts["review"]["arguments"] == [
        {"name": "code", "description": "The code to review", "required": True},
        {"name": "language", "required": False},
    ]
    assert "arguments" not in prompts["ask_topic"]  # the context parameter is not an argument


async def test_prompts_list_pages() -> None:
    app, _ = _with_prompts(page_size=3)
    async with connect(app) as client:
        first = await client.result("prompts/list")
        second = await client.result("prompts/list", {"cursor": first["nextCursor"]})
        bad = await client.post("prompts/list", {"cursor": "nonsense"}, request_id=9)
    assert [p["name"] for p in first["prompts"]] == ["greeting", "review", "repeat"]
    assert [p["name"] for p in second["prompts"]] == ["ask_topic"]
    assert "nextCursor" not in second
    rpc_error(bad, 400, INVALID_PARAMS, 9)


async def test_get_prompt_substitutes_and_converts_arguments() -> None:
    app, _ = _with_prompts()
    async with connect(app) as client:
        simple = await client.result("prompts/get", {"name": "greeting"})
        review = await client.result("prompts/get", {"name": "review", "arguments": {"code": "x = 1"}})
        repeated = await client.result("prompts/get", {"name": "repeat", "arguments": {"word": "hi", "times": "2"}})
    assert simple == {
        "resultType": "complete",
        "description": "Say hello.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hello there."}}],
        "_meta": simple["_meta"],
    }
    assert review["messages"][0]["content"]["text"] == "Review this python: x = 1"
    assert [m["content"]["text"] for m in repeated["messages"]] == ["hi", "hi"]


async def test_get_prompt_errors() -> None:
    app, _ = _with_prompts()
    async with connect(app) as client:
        unknown = await client.post("prompts/get", {"name": "nope"}, request_id=1)
        missing_arg = await client.post("prompts/get", {"name": "review", "arguments": {}}, request_id=2)
        bad_type = await client.post(
            "prompts/get", {"name": "repeat", "arguments": {"word": "a", "times": "lots"}}, request_id=3
        )
        not_object = await client.post("prompts/get", {"name": "review", "arguments": ["x"]}, request_id=4)
        no_name = await client.post("prompts/get", {}, request_id=5)
    assert rpc_error(unknown, 400, INVALID_PARAMS, 1)["message"] == "Unknown prompt: nope"
    error = rpc_error(missing_arg, 400, INVALID_PARAMS, 2)
    assert error["data"]["errors"][0]["field"] == "code"
    assert rpc_error(bad_type, 400, INVALID_PARAMS, 3)["data"]["errors"][0]["field"] == "times"
    rpc_error(not_object, 400, INVALID_PARAMS, 4)
    rpc_error(no_name, 400, INVALID_PARAMS, 5)


async def test_prompt_return_forms() -> None:
    app, mcp = make_server()
    resource = TextResourceContents(uri="test://doc", mime_type="text/plain", text="doc")

    @mcp.prompt()
    def mixed() -> list[Any]:
        return [
            "plain",
            ImageContent(data="aGk=", mime_type="image/png"),
            PromptMessage(role="assistant", content=EmbeddedResource(resource=resource)),
            {"role": "assistant", "content": {"type": "text", "text": "from a dict"}},
        ]

    @mcp.prompt(description="explicit")
    def whole() -> GetPromptResult:
        return GetPromptResult(description="own", messages=[PromptMessage(role="user", content=TextContent(text="x"))])

    @mcp.prompt()
    def as_dict() -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": {"type": "text", "text": "d"}}]}

    @mcp.prompt()
    def broken() -> int:
        return 42

    async with connect(app) as client:
        mixed_result = await client.result("prompts/get", {"name": "mixed"})
        whole_result = await client.result("prompts/get", {"name": "whole"})
        dict_result = await client.result("prompts/get", {"name": "as_dict"})
        broken_response = await client.post("prompts/get", {"name": "broken"}, request_id=7)
    messages = mixed_result["messages"]
    assert [m["role"] for m in messages] == ["user", "user", "assistant", "assistant"]
    assert [m["content"]["type"] for m in messages] == ["text", "image", "resource", "text"]
    assert messages[2]["content"]["resource"] == {"uri": "test://doc", "mimeType": "text/plain", "text": "doc"}
    assert whole_result["description"] == "own" and whole_result["resultType"] == "complete"
    assert dict_result["messages"][0]["content"]["text"] == "d"
    rpc_error(broken_response, 500, INTERNAL_ERROR, 7)


async def test_prompt_raising_mcp_error_is_a_json_rpc_error() -> None:
    app, mcp = make_server()

    @mcp.prompt()
    async def picky(level: str) -> str:
        raise McpError(INVALID_PARAMS, f"no level {level}")

    async with connect(app) as client:
        response = await client.post("prompts/get", {"name": "picky", "arguments": {"level": "9"}}, request_id=3)
    assert rpc_error(response, 400, INVALID_PARAMS, 3)["message"] == "no level 9"


async def test_prompt_asks_for_input_then_completes() -> None:
    app, _ = _with_prompts()
    async with connect(app) as client:
        first = await client.result("prompts/get", {"name": "ask_topic"}, meta=ELICIT)
        assert first["resultType"] == "input_required"
        request = first["inputRequests"]["topic"]
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"]["required"] == ["topic"]
        state = first["requestState"]
        done = await client.result(
            "prompts/get",
            {
                "name": "ask_topic",
                "requestState": state,
                "inputResponses": {"topic": {"action": "accept", "content": {"topic": "owls"}}},
            },
            meta=ELICIT,
        )
        tampered = await client.post(
            "prompts/get",
            {"name": "ask_topic", "requestState": state + "x", "inputResponses": {}},
            meta=ELICIT,
            request_id=5,
        )
        other_prompt = await client.post(
            "prompts/get", {"name": "greeting", "requestState": state}, meta=ELICIT, request_id=6
        )
    assert done["resultType"] == "complete"
    assert done["messages"][0]["content"]["text"] == "Talk about owls."
    assert rpc_error(tampered, 400, INVALID_PARAMS, 5)["data"] == {"reason": "invalid_request_state"}
    rpc_error(other_prompt, 400, INVALID_PARAMS, 6)  # the state is bound to the prompt it came from


async def test_prompt_input_needs_the_client_capability() -> None:
    app, _ = _with_prompts()
    async with connect(app) as client:
        response = await client.post("prompts/get", {"name": "ask_topic"}, meta=make_meta({}), request_id=4)
    error = rpc_error(response, 400, MISSING_CAPABILITY, 4)
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_prompts_capability_only_when_prompts_exist() -> None:
    app, mcp = make_server()
    async with connect(app) as client:
        before = await client.result("server/discover")
        missing = await client.post("prompts/list", request_id=2)
        rpc_error(missing, 404, METHOD_NOT_FOUND, 2)

        @mcp.prompt()
        def late() -> str:
            return "late"

        after = await client.result("server/discover")
        listed = await client.result("prompts/list")
    assert "prompts" not in before["capabilities"]
    assert after["capabilities"]["prompts"] == {"listChanged": True}
    assert [p["name"] for p in listed["prompts"]] == ["late"]


async def test_list_changed_is_not_advertised_without_subscriptions() -> None:
    app, _ = _with_prompts(subscriptions=False)
    async with connect(app) as client:
        discovered = await client.result("server/discover")
    assert discovered["capabilities"]["prompts"] == {}
    assert discovered["capabilities"]["tools"] == {}


def test_registration_errors() -> None:
    _, mcp = make_server()

    @mcp.prompt()
    def one() -> str:
        return "1"

    with pytest.raises(ValueError, match="already registered"):
        mcp.prompt(name="one")(lambda: "again")
    with pytest.raises(TypeError, match="parentheses"):
        mcp.prompt(one)  # type: ignore[arg-type]

    def star(*words: str) -> str:
        return " ".join(words)

    with pytest.raises(TypeError, match=r"\*args"):
        mcp.prompt()(star)

    def two_contexts(a: ToolContext, b: ToolContext) -> str:
        return ""

    with pytest.raises(TypeError, match="only one ToolContext"):
        mcp.prompt()(two_contexts)
