"""The same tools, prompts and resources, driven by the official client in the 2025 era.

``mode="legacy"`` makes the SDK's client open an MCP session with ``initialize`` and answer the
server's own requests (elicitation, sampling, roots) on the call's stream: the legacy shim serves
every handler unchanged. The expectations are the modern harness's (test_official_client.py), so
one handler is shown to give the same result in both eras. In the 2025 era a question travels as
a request with a server-chosen id, not under its key, so only how many were asked is compared.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageRequestParams

from tests.interop.recorder import Exchange, sse_data
from tests.interop.servers import Served, tool_arguments
from tests.interop.test_official_client import (
    EXPECTED,
    MEANT_TO_FAIL,
    PROMPT_ARGUMENTS,
    PROMPTS,
    PROMPTS_EXPECTED,
    REFUSED_IN_A_SESSION,
    RESOURCES,
    TOOLS,
    User,
    _ids,
    official_client,
    text_of,
)

pytestmark = pytest.mark.anyio

ASKS = ("elicitation/create", "sampling/createMessage", "roots/list")


class _Asked(list[str]):
    """Equal to any list of the same length: the 2025 era has request ids where MRTR has keys."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, list) and len(other) == len(self)

    __hash__ = None


def _messages(exchange: Exchange) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response; SSE priming events (an id, no data) carry none."""
    body = bytes(exchange.response_body)
    if not body:
        return []
    if not exchange.content_type.startswith("text/event-stream"):
        return [json.loads(body)]
    return [json.loads(data) for data in sse_data(body) if data.strip()]


def legacy_wire_issues(served: Served) -> list[str]:
    """What a 2025-era client must never see: modern-only fields, unknown server requests."""
    issues: list[str] = []
    exchanges = served.recorder.take()
    if not any(exchange.method == "initialize" for exchange in exchanges):
        issues.append("the client never sent initialize: it did not speak the 2025 era")
    for exchange in exchanges:
        for message in _messages(exchange):
            result = message.get("result")
            if isinstance(result, dict):
                issues += [
                    f"{exchange.method}: result has {key}"
                    for key in ("resultType", "ttlMs", "cacheScope")
                    if key in result
                ]
                if "inputRequests" in result or "requestState" in result:
                    issues.append(f"{exchange.method}: an MRTR result reached a 2025-era client")
            if "method" in message and "id" in message:
                if message["method"] not in ASKS:
                    issues.append(f"unexpected server request {message['method']}")
                elif message["method"] == "sampling/createMessage":
                    CreateMessageRequestParams.model_validate(message["params"])
    return issues


@pytest.mark.parametrize(("served", "tool"), TOOLS, ids=_ids(TOOLS), indirect=["served"])
async def test_every_tool_completes_in_a_legacy_session(served: Served, tool: str) -> None:
    user = User()
    user.asked = _Asked()
    async with official_client(served, user, mode="legacy") as client:
        refused = REFUSED_IN_A_SESSION.get((served.name, tool))
        if refused is not None:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(tool, tool_arguments(served.name, tool))
            assert caught.value.code == refused
            assert legacy_wire_issues(served) == []
            return
        result = await client.call_tool(tool, tool_arguments(served.name, tool), progress_callback=user.on_progress)
    meant_to_fail = (served.name, tool) in MEANT_TO_FAIL
    assert result.is_error is meant_to_fail, text_of(result)
    assert result.content
    check = EXPECTED.get((served.name, tool))
    if check is not None:
        check(result, user)
    assert legacy_wire_issues(served) == []


@pytest.mark.parametrize(("served", "prompt"), PROMPTS, ids=_ids(PROMPTS), indirect=["served"])
async def test_every_prompt_completes_in_a_legacy_session(served: Served, prompt: str) -> None:
    listed = served.listing.prompts[prompt]
    arguments = PROMPT_ARGUMENTS.get((served.name, prompt)) or {
        argument["name"]: "Ada" for argument in listed.get("arguments") or []
    }
    async with official_client(served, User(), mode="legacy") as client:
        result = await client.get_prompt(prompt, arguments)
    check = PROMPTS_EXPECTED.get((served.name, prompt))
    assert check is None or check(result), result
    assert legacy_wire_issues(served) == []


@pytest.mark.parametrize(("served", "uri"), RESOURCES, ids=_ids(RESOURCES), indirect=["served"])
async def test_every_resource_reads_in_a_legacy_session(served: Served, uri: str) -> None:
    async with official_client(served, User(), mode="legacy") as client:
        result = await client.read_resource(uri)
    assert result.contents and all(contents.uri == uri for contents in result.contents)
    assert legacy_wire_issues(served) == []


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Any:
    """As the harness's, but the wire is checked by each test for the 2025 era (legacy_wire_issues)."""
    server: Served = request.getfixturevalue(f"{request.param}_server")
    server.recorder.take()
    yield server
    server.recorder.take()
