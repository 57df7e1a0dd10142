"""The MRTR loop against scripted servers: rounds, state echo, bounds, concurrency, manual mode."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, field_validator

from fastapi_mrtr import MCP, Context
from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    FlowTimeoutError,
    InputRequestInfo,
    InputRequiredConfig,
    InputRequiredResult,
    InputRequiredTimeoutError,
    InvalidServerResponseError,
    MaxRoundsExceededError,
    McpError,
    McpServerError,
    MrtrClient,
    RoundTimeoutError,
    current_input_request,
)
from fastapi_mrtr.wire import make_input_request_for_elicitation
from fastapi_mrtr.wire.protocol import CallToolResult, GetPromptResult, ReadResourceResult, TextContent
from tests.client.client_helpers import ScriptedServer, elicit, input_required, text_result
from tests.support import running_server

pytestmark = pytest.mark.anyio

WEIRD_STATE = 'v1."quoted" \\back\\slash \u2028 \U0001f600 ünï  trailing '


def options(**config: Any) -> ClientOptions:
    return ClientOptions(input_required_config=InputRequiredConfig(**config))


def accept(params: ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


def text_of(result: Any) -> str:
    assert isinstance(result, CallToolResult)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def rounds_server(*replies: Any) -> ScriptedServer:
    """Replies in order, one per request; ``tools/list`` (the client's lazy listing) lists none."""
    queue = list(replies)
    return ScriptedServer(lambda body: queue.pop(0), tools=[])


async def test_each_retry_is_a_new_request_with_original_params_answers_and_exact_state() -> None:
    server = rounds_server(
        input_required({"q1": elicit("first?")}, WEIRD_STATE),
        input_required({"q2": elicit("second?")}, "state-2"),
        text_result("done"),
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        result = await client.call_tool("book", {"city": "Paris", "nights": 2})
    assert text_of(result) == "done"
    first, second, third = server.bodies
    assert len({first["id"], second["id"], third["id"]}) == 3
    for body in server.bodies:
        assert body["method"] == "tools/call"
        assert body["params"]["name"] == "book" and body["params"]["arguments"] == {"city": "Paris", "nights": 2}
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert second["params"]["inputResponses"] == {"q1": {"action": "accept", "content": {"ok": True}}}
    assert second["params"]["requestState"] == WEIRD_STATE
    # The decoded string is identical; on the wire it is plain JSON string escaping, no more.
    assert json.dumps(WEIRD_STATE, ensure_ascii=False).encode() in server.requests[1].content
    assert third["params"]["inputResponses"] == {"q2": {"action": "accept", "content": {"ok": True}}}
    assert third["params"]["requestState"] == "state-2"


async def test_state_is_omitted_when_the_round_sent_none() -> None:
    server = rounds_server(
        input_required({"q1": elicit()}, "earlier-state"),
        input_required({"q2": elicit()}),  # this round carries no state
        text_result("done"),
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        await client.call_tool("t")
    assert server.bodies[1]["params"]["requestState"] == "earlier-state"
    assert "requestState" not in server.bodies[2]["params"]  # never reused from an earlier round
    assert server.bodies[2]["params"]["inputResponses"] == {"q2": {"action": "accept", "content": {"ok": True}}}


async def test_state_only_rounds_back_off_and_send_no_answers() -> None:
    stamps: list[float] = []
    replies = [input_required(state="s1"), input_required(state="s2"), input_required(state="s3"), text_result("ok")]

    def respond(body: dict[str, Any]) -> Any:
        stamps.append(time.monotonic())
        return replies.pop(0)

    server = ScriptedServer(respond, tools=[])
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=ClientOptions(state_only_backoff=(0.05, 0.08)))
        assert text_of(await client.call_tool("t")) == "ok"
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert gaps[0] >= 0.045 and gaps[1] >= 0.075 and gaps[2] >= 0.075  # 50 ms, doubled, capped
    assert [b["params"].get("requestState") for b in server.bodies] == [None, "s1", "s2", "s3"]
    assert all("inputResponses" not in b["params"] for b in server.bodies)


async def test_max_rounds_exceeded_carries_the_last_result() -> None:
    counter = iter(range(1, 100))
    server = ScriptedServer(lambda body: input_required({"q": elicit()}, f"s{next(counter)}"))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(max_rounds=3))
        client.set_elicitation_handler(accept)
        with pytest.raises(MaxRoundsExceededError) as caught:
            await client.call_tool("t")
    assert len(server.requests) == 4  # the call plus three retries
    assert caught.value.max_rounds == 3
    assert isinstance(caught.value.last_result, InputRequiredResult)
    assert caught.value.last_result.request_state == "s4"


async def test_round_timeout_bounds_async_handlers() -> None:
    server = ScriptedServer(lambda body: input_required({"q": elicit()}, "s"))

    async def slow(params: ElicitRequestParams) -> dict[str, Any]:
        await anyio.sleep(30)
        return {"action": "accept"}

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(round_timeout=0.1))
        client.set_elicitation_handler(slow)
        started = time.monotonic()
        with pytest.raises(RoundTimeoutError) as caught:
            await client.call_tool("t")
    assert time.monotonic() - started < 5
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, InputRequiredTimeoutError)
    assert caught.value.timeout == 0.1
    assert len(server.requests) == 1  # nothing was sent after the timeout


async def test_round_timeout_abandons_a_blocking_sync_handler() -> None:
    release = threading.Event()
    server = ScriptedServer(lambda body: input_required({"q": elicit()}, "s"))

    def blocking(params: ElicitRequestParams) -> dict[str, Any]:
        release.wait(10)
        return {"action": "accept"}

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(round_timeout=0.1))
        client.set_elicitation_handler(blocking)
        try:
            with pytest.raises(RoundTimeoutError):
                await client.call_tool("t")
        finally:
            release.set()


async def test_max_total_timeout_bounds_the_whole_flow() -> None:
    server = ScriptedServer(lambda body: input_required({"q": elicit()}, "s"))

    async def quick_but_not_free(params: ElicitRequestParams) -> dict[str, Any]:
        await anyio.sleep(0.05)
        return {"action": "accept"}

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(max_rounds=1000, max_total_timeout=0.3))
        client.set_elicitation_handler(quick_but_not_free)
        started = time.monotonic()
        with pytest.raises(FlowTimeoutError) as caught:
            await client.call_tool("t")
    assert 0.25 < time.monotonic() - started < 3
    assert caught.value.timeout == 0.3 and isinstance(caught.value, TimeoutError)
    assert 2 < len(server.requests) < 20


async def test_max_total_timeout_covers_a_slow_server() -> None:
    async def slow_server(body: dict[str, Any]) -> Any:
        await anyio.sleep(30)
        return text_result("late")

    server = ScriptedServer(slow_server)
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(max_total_timeout=0.1))
        with pytest.raises(FlowTimeoutError):
            await client.call_tool("t")


async def test_handlers_of_one_round_run_concurrently() -> None:
    """Each handler waits for an event only the other sets: only concurrent runs finish."""
    events = {"a": anyio.Event(), "b": anyio.Event()}
    server = rounds_server(input_required({"a": elicit("a"), "b": elicit("b")}), text_result("both"))

    async def handler(params: ElicitRequestParams) -> dict[str, Any]:
        mine, other = params.message, "b" if params.message == "a" else "a"
        events[mine].set()
        await events[other].wait()
        return {"action": "accept", "content": {"who": mine}}

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(round_timeout=5))
        client.set_elicitation_handler(handler)
        assert text_of(await client.call_tool("t")) == "both"
    assert server.bodies[1]["params"]["inputResponses"] == {
        "a": {"action": "accept", "content": {"who": "a"}},
        "b": {"action": "accept", "content": {"who": "b"}},
    }


async def test_sync_handlers_of_one_round_also_run_concurrently() -> None:
    events = {"a": threading.Event(), "b": threading.Event()}
    server = rounds_server(input_required({"a": elicit("a"), "b": elicit("b")}), text_result("both"))

    def handler(params: ElicitRequestParams) -> dict[str, Any]:
        mine, other = params.message, "b" if params.message == "a" else "a"
        events[mine].set()
        assert events[other].wait(5)
        return {"action": "decline"}

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(handler)
        assert text_of(await client.call_tool("t")) == "both"


async def test_missing_handler_fails_the_round_before_any_handler_runs() -> None:
    called: list[str] = []
    server = rounds_server(
        input_required({"q": elicit(), "s": {"method": "sampling/createMessage", "params": {}}}, "st")
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(lambda params: called.append("elicit") or {"action": "accept"})
        with pytest.raises(McpError) as caught:
            await client.call_tool("t")
    assert caught.value.code == -32601 and "sampling/createMessage" in caught.value.message
    assert called == [] and len(server.requests) == 1


async def test_unknown_input_method_is_method_not_found() -> None:
    server = rounds_server(input_required({"x": {"method": "tasks/frobnicate", "params": {}}}))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        with pytest.raises(McpError) as caught:
            await client.call_tool("t")
    assert caught.value.code == -32601


async def test_malformed_input_request_params_are_invalid_params() -> None:
    server = rounds_server(input_required({"q": {"method": "elicitation/create", "params": {"mode": "form"}}}))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        with pytest.raises(McpError) as caught:
            await client.call_tool("t")
    assert caught.value.code == -32602


async def test_a_failing_handler_stops_the_flow_and_sends_nothing() -> None:
    server = rounds_server(input_required({"q": elicit()}, "s"))

    def broken(params: ElicitRequestParams) -> dict[str, Any]:
        raise ValueError("user went away")

    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(broken)
        with pytest.raises(ValueError, match="user went away"):
            await client.call_tool("t")
    assert len(server.requests) == 1


async def test_handler_returning_a_bad_answer_is_a_type_error() -> None:
    server = rounds_server(input_required({"q": elicit()}, "s"))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(lambda params: {"action": "maybe"})
        with pytest.raises(TypeError, match="invalid answer"):
            await client.call_tool("t")


async def test_result_without_result_type_is_complete() -> None:
    server = rounds_server({"content": [{"type": "text", "text": "legacy"}]})
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        assert text_of(await client.call_tool("t")) == "legacy"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        {"resultType": "task", "content": []},  # unknown value
        {"resultType": "input_required"},  # neither inputRequests nor requestState
        {"resultType": "complete", "content": "not a list"},
    ],
)
async def test_invalid_results_are_rejected(reply: dict[str, Any]) -> None:
    server = rounds_server(reply)
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        with pytest.raises(InvalidServerResponseError):
            await client.call_tool("t")


async def test_input_required_is_invalid_on_list_methods() -> None:
    server = ScriptedServer(lambda body: input_required({"q": elicit()}, "s"))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        with pytest.raises(InvalidServerResponseError, match="tools/list"):
            await client.list_tools()


async def test_manual_mode_hands_back_input_required_then_retries_as_told() -> None:
    server = rounds_server(input_required({"q": elicit()}, "s1"), text_result("done"))
    called: list[ElicitRequestParams] = []
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=options(auto_fulfill=False))
        client.set_elicitation_handler(lambda params: called.append(params) or {"action": "accept"})
        first = await client.call_tool("t", {"x": 1})
        assert isinstance(first, InputRequiredResult)
        assert first.request_state == "s1" and first.input_requests and "q" in first.input_requests
        assert called == []  # the handlers are not run in manual mode
        done = await client.call_tool(
            "t", {"x": 1}, input_responses={"q": {"action": "decline"}}, request_state=first.request_state
        )
    assert text_of(done) == "done"
    retry = server.bodies[1]
    assert retry["id"] != server.bodies[0]["id"]
    assert retry["params"] == {
        "name": "t",
        "arguments": {"x": 1},
        "inputResponses": {"q": {"action": "decline"}},
        "requestState": "s1",
        "_meta": retry["params"]["_meta"],
    }


async def test_seeded_first_round_then_auto_fulfil() -> None:
    server = rounds_server(input_required({"q2": elicit()}, "s2"), text_result("done"))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        await client.call_tool("t", input_responses={"q1": {"action": "accept", "content": {}}}, request_state="s1")
    assert server.bodies[0]["params"]["requestState"] == "s1"
    assert server.bodies[0]["params"]["inputResponses"] == {"q1": {"action": "accept", "content": {}}}
    assert server.bodies[1]["params"]["requestState"] == "s2"


async def test_get_prompt_and_read_resource_loop_too() -> None:
    prompt = {"resultType": "complete", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
    resource = {
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "contents": [{"uri": "res://x", "text": "body"}],
    }
    server = rounds_server(
        input_required({"ctx": elicit()}, "p"), prompt, input_required({"ctx": elicit()}, "r"), resource
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        got_prompt = await client.get_prompt("p", {"a": "b"})
        got_resource = await client.read_resource("res://x")
    assert isinstance(got_prompt, GetPromptResult) and isinstance(got_resource, ReadResourceResult)
    methods = [(b["method"], b["params"].get("requestState")) for b in server.bodies]
    assert methods == [("prompts/get", None), ("prompts/get", "p"), ("resources/read", None), ("resources/read", "r")]
    assert server.bodies[1]["params"]["arguments"] == {"a": "b"}
    assert server.bodies[3]["params"]["uri"] == "res://x"
    assert [r.headers["mcp-name"] for r in server.requests] == ["p", "p", "res://x", "res://x"]


async def test_server_error_mid_flow_is_not_retried() -> None:
    def respond(body: dict[str, Any]) -> Any:
        if "requestState" not in body["params"]:
            return input_required({"q": elicit()}, "s")
        error = {"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "x"}}
        return httpx.Response(400, json={"jsonrpc": "2.0", "id": body["id"], "error": error})

    server = ScriptedServer(respond)
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept)
        with pytest.raises(McpServerError) as caught:
            await client.call_tool("t")
    error = caught.value
    assert (error.code, error.message, error.data) == (-32602, "Invalid or expired requestState", {"reason": "x"})
    assert error.http_status == 400 and error.request_id == server.bodies[1]["id"]
    assert len(server.requests) == 2


# --- a question asked again: the server did not accept the answer ----------------------------


class Even(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("odd")
        return value


def asking_app() -> FastAPI:
    """Real re-asks: an answer that fails validation, and manual mode asking one key twice."""
    app = FastAPI()
    mcp = MCP(app)

    @mcp.tool()
    @app.post("/even")
    async def even(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("An even number?", Even, key="pick")
        return {"n": answer.content.n if answer.content else None}

    @mcp.tool()
    @app.post("/pin")
    async def pin(ctx: Context, reword: bool = False) -> Any:
        given = (ctx.input_responses.get("pin") or {}).get("content") or {}
        if given.get("pin") == "1234":
            return {"ok": True}
        # A wrong PIN: the same question again, or (reword) a changed one under the same key.
        message = "PIN?" if not reword or ctx.request_state is None else "Wrong PIN. PIN?"
        schema = {"type": "object", "properties": {"pin": {"type": "string"}}, "required": ["pin"]}
        request = make_input_request_for_elicitation(message, requested_schema=schema)
        return ctx.input_required({"pin": request}, request_state="asked")

    app.mount("/mcp", mcp)
    return app


class Recorder:
    """Answers from a list, and records what current_input_request() said each time."""

    def __init__(self, *contents: dict[str, Any]) -> None:
        self.contents = list(contents)
        self.seen: list[InputRequestInfo | None] = []

    def __call__(self, params: ElicitRequestParams) -> dict[str, Any]:
        self.seen.append(current_input_request())
        return {"action": "accept", "content": self.contents.pop(0)}


@pytest.fixture(scope="module")
def asking_url() -> Iterator[str]:
    with running_server(asking_app()) as base:
        yield f"{base}/mcp"


async def test_a_refused_answer_is_flagged_to_the_handler_and_logged(
    asking_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    user = Recorder({"n": 3}, {"n": 4})
    with caplog.at_level("WARNING", logger="fastapi_mrtr.client"):
        async with MrtrClient(asking_url) as client:
            client.set_elicitation_handler(user)  # sync: runs in a worker thread, and still sees it
            result = await client.call_tool("even")
    assert isinstance(result, CallToolResult) and result.structured_content == {"n": 4}
    assert user.seen == [
        InputRequestInfo(key="pick", round=1),
        InputRequestInfo(
            key="pick",
            round=2,
            rejected_answer={"action": "accept", "content": {"n": 3}},
            refusal_reason="n: Value error, odd",  # the server's params._meta["fastapi-mrtr/refused-answer"]
        ),
    ]
    assert user.seen[1] is not None and user.seen[1].asked_again
    warnings = [r.getMessage() for r in caplog.records if r.name == "fastapi_mrtr.client"]
    assert warnings == [
        "the server asked 'pick' again, unchanged, after we answered it: it did not accept the answer "
        '{"action": "accept", "content": {"n": 3}}'
    ]


async def test_an_answer_that_never_passes_warns_on_every_round_until_max_rounds(
    asking_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def always_odd(params: ElicitRequestParams) -> dict[str, Any]:
        return {"action": "accept", "content": {"n": 3}}

    with caplog.at_level("WARNING", logger="fastapi_mrtr.client"):
        async with MrtrClient(asking_url, options=options(max_rounds=3)) as client:
            client.set_elicitation_handler(always_odd)
            with pytest.raises(MaxRoundsExceededError):
                await client.call_tool("even")
    refused = [r for r in caplog.records if "did not accept" in r.getMessage()]
    assert len(refused) == 2  # rounds 2 and 3 re-asked what rounds 1 and 2 answered


@pytest.mark.parametrize(("reword", "flagged"), [(False, True), (True, False)])
async def test_only_the_very_same_question_counts_as_asked_again(asking_url: str, reword: bool, flagged: bool) -> None:
    user = Recorder({"pin": "0000"}, {"pin": "1234"})
    async with MrtrClient(asking_url) as client:
        client.set_elicitation_handler(user)
        result = await client.call_tool("pin", {"reword": reword})
    assert isinstance(result, CallToolResult) and result.structured_content == {"ok": True}
    first, second = user.seen
    assert first == InputRequestInfo(key="pin", round=1)
    assert second is not None and second.round == 2 and second.asked_again is flagged


def test_no_input_request_outside_a_handler() -> None:
    assert current_input_request() is None
