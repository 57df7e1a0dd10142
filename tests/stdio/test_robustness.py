"""What must not break the pipe: prints, a handler that raises, bad lines, huge lines, EOF and signals.

The app (quirky_app.py) prints in every way, raises, sleeps, and needs a principal. After each
test the whole stream the server wrote must still be JSON-RPC, one message per line, and the
process must end by itself with its shutdown run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.stdio.pipe_client import INITIALIZE, StdioServer, modern
from tests.stdio.wire_check import stream_issues

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a Python process per test

APP = "tests.stdio.quirky_app:app"


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    return tmp_path / "markers.txt"


def marked(markers: Path) -> list[str]:
    return markers.read_text().splitlines() if markers.exists() else []


def environment(markers: Path, **extra: str) -> dict[str, str]:
    return {"STDIO_MARKERS": str(markers), **extra}


def call(name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return modern({"name": name, "arguments": arguments or {}}, **meta)


async def test_prints_go_to_stderr_and_the_stream_stays_json_rpc(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        answer = await server.request(1, "tools/call", call("shout", {"text": "hello"}))
        assert answer["result"]["structuredContent"] == {"shouted": "HELLO"}
        await server.close_stdin()
        assert await server.exit_code() == 0
    sent = {1: {"id": 1, "method": "tools/call", "params": call("shout", {"text": "hello"})}}
    assert stream_issues(server.lines, sent, {}) == []
    for printed in ("printed while the app was imported", "HELLO", "written to sys.stdout", "file descriptor 1"):
        assert printed in server.stderr
    assert marked(markers) == ["startup", "shutdown"]


async def test_a_handler_that_raises_gets_a_clear_error_and_the_pipe_goes_on(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        answer = await server.request(1, "tools/call", call("explode"))
        result = answer["result"]
        assert result["isError"] is True
        assert "failed with an internal error" in result["content"][0]["text"]
        after = await server.request(2, "tools/call", call("greeting"))
        assert after["result"]["structuredContent"] == {"greeting": "hello from the lifespan"}
    assert "the handler blew up" in server.stderr  # the traceback is in the log, not on the pipe
    assert all(b"blew up" not in line for line in server.lines)


async def test_middleware_that_raises_outside_any_tool_gets_a_json_rpc_error(markers: Path) -> None:
    """An app that fails before the endpoint answers (an HTML-less 500 from Starlette): still JSON-RPC."""
    async with StdioServer.run(APP, env=environment(markers, STDIO_BROKEN_MIDDLEWARE="1")) as server:
        answer = await server.request(1, "tools/list", modern())
        assert answer["error"]["code"] == -32603
        assert "the app raised RuntimeError" in answer["error"]["message"]
        again = await server.request(2, "server/discover", modern())  # the process goes on
        assert again["error"]["code"] == -32603
    assert "the middleware blew up" in server.stderr
    assert stream_issues(server.lines, {}, {}) == []


async def test_malformed_lines_get_json_rpc_errors_and_the_loop_goes_on(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        await server.send(b"this is not json")
        assert await server.receive() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the line is not valid JSON"},
        }
        await server.send(b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]')
        batch = await server.receive()
        assert batch["id"] is None and batch["error"]["code"] == -32600 and "batch" in batch["error"]["message"]
        await server.send(b'{"jsonrpc": "2.0", "id": 7}')
        no_method = await server.receive()
        assert no_method["id"] == 7 and no_method["error"]["code"] == -32600
        await server.send(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "shout"')
        cut = await server.receive()
        assert cut["id"] is None and cut["error"]["code"] == -32700
        answer = await server.request(9, "tools/list", modern())
        assert "shout" in [tool["name"] for tool in answer["result"]["tools"]]
    assert stream_issues(server.lines, {9: {"id": 9, "method": "tools/list", "params": modern()}}, {}) == []


async def test_a_huge_line_is_refused_with_its_id_and_never_read_whole(markers: Path) -> None:
    limit = 64 * 1024
    async with StdioServer.run(APP, "--max-line-bytes", str(limit), env=environment(markers)) as server:
        # The id last, after four megabytes, as the TypeScript SDK orders its fields.
        huge = {"method": "tools/call", "params": call("shout", {"text": "x" * (4 * 1024 * 1024)}), "jsonrpc": "2.0"}
        line = json.dumps(huge)[:-1] + ', "id": "big"}'
        await server.send(line.encode())
        refused = await server.receive()
        assert refused["id"] == "big"
        assert refused["error"]["code"] == -32600
        assert f"limit of {limit} bytes" in refused["error"]["message"]
        answer = await server.request(2, "tools/call", call("shout", {"text": "small"}))
        assert answer["result"]["structuredContent"] == {"shouted": "SMALL"}


async def test_eof_mid_call_ends_the_process_and_runs_shutdown(markers: Path) -> None:
    async with StdioServer.run(APP, "--grace", "0.2", env=environment(markers)) as server:
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("slow", {"seconds": 60})})
        await _wait_for(lambda: "slow started" in marked(markers))
        await server.close_stdin()
        assert await server.exit_code(timeout=10) == 0
    assert marked(markers) == ["startup", "slow started", "slow cancelled", "shutdown"]
    assert server.lines == []  # a cut call gets nothing half-written


async def test_eof_mid_call_in_a_2025_session_ends_the_waiting_call(markers: Path) -> None:
    """The call waits for an answer to its question that can never come: EOF must not hang on it."""
    async with StdioServer.run(APP, "--grace", "0.2", env=environment(markers)) as server:
        await server.request(1, "initialize", INITIALIZE)
        await server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}})
        question = await server.receive()
        assert question["method"] == "elicitation/create"
        await server.close_stdin()
        assert await server.exit_code(timeout=10) == 0
    assert marked(markers)[-1] == "shutdown"


async def test_sigterm_ends_the_process_and_runs_shutdown(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("slow", {"seconds": 60})})
        await _wait_for(lambda: "slow started" in marked(markers))
        server.terminate()
        assert await server.exit_code(timeout=10) == 0
    assert marked(markers) == ["startup", "slow started", "slow cancelled", "shutdown"]


async def test_notifications_cancelled_stops_the_call_and_nothing_is_written_for_it(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("slow", {"seconds": 60})})
        await _wait_for(lambda: "slow started" in marked(markers))
        cancel = {"requestId": 1, "reason": "the user changed their mind", "_meta": modern()["_meta"]}
        await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await _wait_for(lambda: "slow cancelled" in marked(markers))
        after = await server.request(2, "tools/list", modern())
        assert "result" in after
    assert [message.get("id") for message in server.messages] == [2]


async def test_a_2025_call_waiting_for_its_answer_does_not_block_the_pipe(markers: Path) -> None:
    """While ``ask`` waits for the client's answer, other requests are read and answered."""
    async with StdioServer.run(APP, env=environment(markers)) as server:
        await server.request(1, "initialize", {**INITIALIZE, "capabilities": {"elicitation": {}}})
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}})
        question = await server.receive()
        assert question["method"] == "elicitation/create" and question["params"]["message"] == "What is your name?"
        listed = await server.request(3, "tools/list")  # answered while the call waits
        assert "ask" in [tool["name"] for tool in listed["result"]["tools"]]
        reply = {"action": "accept", "content": {"name": "Ada"}}
        await server.send({"jsonrpc": "2.0", "id": question["id"], "result": reply})
        done = await server.response_to(2)
        assert done["result"]["structuredContent"] == {"hello": "Ada"}


async def test_notifications_reach_the_client_in_both_eras(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        modern_call = call("poke", progressToken="p-1")
        answer = await server.request(1, "tools/call", modern_call)
        assert answer["result"]["structuredContent"] == {"poked": True}
        progress = [m for m in server.messages if m.get("method") == "notifications/progress"]
        assert [m["params"]["progressToken"] for m in progress] == ["p-1"]
        await server.request(2, "initialize", INITIALIZE)
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await asyncio.sleep(0.5)  # the session's GET stream is open by now
        await server.request(3, "tools/call", {"name": "poke", "arguments": {}})
        while not any(m.get("method") == "notifications/tools/list_changed" for m in server.messages):
            await server.receive()  # on the session's stream, for the 2025-era client
    sent = {
        1: {"id": 1, "method": "tools/call", "params": modern_call},
        2: {"id": 2, "method": "initialize", "params": INITIALIZE},
        3: {"id": 3, "method": "tools/call", "params": {"name": "poke", "arguments": {}}},
    }
    assert stream_issues(server.lines, sent, {}) == []


async def test_identity_comes_from_the_environment(markers: Path) -> None:
    env = environment(markers, MRTR_STDIO_AUTHORIZATION="Bearer stdio-secret")
    async with StdioServer.run(APP, env=env) as server:
        answer = await server.request(1, "tools/call", call("whoami"))
        assert answer["result"]["structuredContent"] == {"user": "the stdio user"}
    async with StdioServer.run(APP, env=environment(markers)) as server:
        refused = await server.request(1, "tools/call", call("whoami"))
        assert refused["result"]["isError"] is True and "401" in refused["result"]["content"][0]["text"]


async def test_arguments_mirrored_into_headers_are_sent_as_an_http_client_would(markers: Path) -> None:
    async with StdioServer.run(APP, env=environment(markers)) as server:
        for area in ("eu-west", "Zürich "):  # plain, then one that travels Base64-wrapped
            answer = await server.request(area, "tools/call", call("region", {"area": area}))
            assert answer["result"]["structuredContent"] == {"area": area}, answer


async def _wait_for(condition: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the condition did not come true")
        await asyncio.sleep(0.05)
