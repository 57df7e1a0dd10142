"""``completion/complete``: completers registered with ``@mcp.completion(...)``."""

from __future__ import annotations

from typing import Any

import pytest

from fastapi_mrtr import MCP, Completion
from tests.mcp_helpers import connect, make_server, rpc_error

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
CITIES = ["paris", "park", "party", "prague", "porto"]


def _with_completions() -> tuple[Any, MCP]:
    app, mcp = make_server()

    @mcp.prompt()
    def travel(city: str, country: str = "") -> str:
        return f"Go to {city} {country}"

    @mcp.resource("weather://{country}/{city}")
    def weather(country: str, city: str) -> str:
        return f"sunny in {city}, {country}"

    @mcp.completion(prompt="travel", argument="city")
    def cities(value: str) -> list[str]:
        return [city for city in CITIES if city.startswith(value)]

    @mcp.completion(resource="weather://{country}/{city}", argument="city")
    async def cities_of(value: str, context: dict[str, str]) -> Completion:
        known = {"fr": ["paris", "lyon"], "pt": ["porto", "lisbon"]}.get(context.get("country", ""), [])
        matches = [city for city in known if city.startswith(value)]
        return Completion(values=matches, total=len(matches), has_more=False)

    @mcp.completion(prompt="travel", argument="country")
    def many(value: str) -> range:
        return range(250)

    return app, mcp


def _request(ref: dict[str, Any], name: str, value: str, context: dict[str, str] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = {"arguments": context}
    return params


async def test_prompt_argument_completion() -> None:
    app, _ = _with_completions()
    async with connect(app) as client:
        result = await client.result(
            "completion/complete", _request({"type": "ref/prompt", "name": "travel"}, "city", "par")
        )
        nothing = await client.result(
            "completion/complete", _request({"type": "ref/prompt", "name": "travel"}, "city", "x")
        )
    assert result["resultType"] == "complete"
    assert result["completion"] == {"values": ["paris", "park", "party"]}
    assert nothing["completion"] == {"values": []}


async def test_template_completion_sees_the_context() -> None:
    app, _ = _with_completions()
    ref = {"type": "ref/resource", "uri": "weather://{country}/{city}"}
    async with connect(app) as client:
        french = await client.result("completion/complete", _request(ref, "city", "", {"country": "fr"}))
        portuguese = await client.result("completion/complete", _request(ref, "city", "po", {"country": "pt"}))
        no_context = await client.result("completion/complete", _request(ref, "city", ""))
    assert french["completion"] == {"values": ["paris", "lyon"], "total": 2, "hasMore": False}
    assert portuguese["completion"]["values"] == ["porto"]
    assert no_context["completion"]["values"] == []


async def test_at_most_100_values_are_sent() -> None:
    app, _ = _with_completions()
    async with connect(app) as client:
        result = await client.result(
            "completion/complete", _request({"type": "ref/prompt", "name": "travel"}, "country", "")
        )
    completion = result["completion"]
    assert completion["values"] == [str(n) for n in range(100)]
    assert completion["total"] == 250 and completion["hasMore"] is True


async def test_argument_without_completer_gets_no_values() -> None:
    app, _ = _with_completions()
    ref = {"type": "ref/resource", "uri": "weather://{country}/{city}"}
    async with connect(app) as client:
        result = await client.result("completion/complete", _request(ref, "country", "f"))
    assert result["completion"] == {"values": []}


async def test_invalid_references_and_arguments() -> None:
    app, _ = _with_completions()
    async with connect(app) as client:
        unknown_prompt = await client.post(
            "completion/complete", _request({"type": "ref/prompt", "name": "nope"}, "city", ""), request_id=1
        )
        unknown_template = await client.post(
            "completion/complete", _request({"type": "ref/resource", "uri": "weather://x/y"}, "city", ""), request_id=2
        )
        bad_type = await client.post(
            "completion/complete", _request({"type": "ref/tool", "name": "travel"}, "city", ""), request_id=3
        )
        no_argument = await client.post(
            "completion/complete", {"ref": {"type": "ref/prompt", "name": "travel"}}, request_id=4
        )
        bad_value = await client.post(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "travel"}, "argument": {"name": "city", "value": 3}},
            request_id=5,
        )
        bad_context = await client.post(
            "completion/complete",
            {**_request({"type": "ref/prompt", "name": "travel"}, "city", ""), "context": {"arguments": {"a": 1}}},
            request_id=6,
        )
    assert rpc_error(unknown_prompt, 400, INVALID_PARAMS, 1)["message"] == "Unknown prompt: nope"
    rpc_error(unknown_template, 400, INVALID_PARAMS, 2)
    rpc_error(bad_type, 400, INVALID_PARAMS, 3)
    rpc_error(no_argument, 400, INVALID_PARAMS, 4)
    rpc_error(bad_value, 400, INVALID_PARAMS, 5)
    rpc_error(bad_context, 400, INVALID_PARAMS, 6)


async def test_completions_capability_only_with_a_completer() -> None:
    app, mcp = make_server()

    @mcp.prompt()
    def travel(city: str) -> str:
        return city

    async with connect(app) as client:
        before = await client.result("server/discover")
        missing = await client.post(
            "completion/complete", _request({"type": "ref/prompt", "name": "travel"}, "city", ""), request_id=2
        )
        rpc_error(missing, 404, METHOD_NOT_FOUND, 2)
        mcp.completion(prompt="travel", argument="city")(lambda value: ["rome"])
        after = await client.result("server/discover")
        result = await client.result(
            "completion/complete", _request({"type": "ref/prompt", "name": "travel"}, "city", "")
        )
    assert "completions" not in before["capabilities"]
    assert after["capabilities"]["completions"] == {}
    assert result["completion"]["values"] == ["rome"]


def test_registration_errors() -> None:
    _, mcp = make_server()
    with pytest.raises(ValueError, match="exactly one"):
        mcp.completion(argument="a")(lambda value: [])
    with pytest.raises(ValueError, match="exactly one"):
        mcp.completion(argument="a", prompt="p", resource="r://{a}")(lambda value: [])
    with pytest.raises(TypeError, match="value, context"):
        mcp.completion(argument="a", prompt="p")(lambda value, other: [])
    mcp.completion(argument="a", prompt="p")(lambda value: [])
    with pytest.raises(ValueError, match="already registered"):
        mcp.completion(argument="a", prompt="p")(lambda value: [])
