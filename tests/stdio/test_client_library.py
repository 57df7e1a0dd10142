"""``MrtrClient(stdio=...)``: the library client launches a stdio server and talks to it, in both eras.

Real subprocesses throughout: the bookshop over ``python -m fastapi_mrtr.stdio`` (both eras: the
probe finds it modern; ``mode="legacy"`` makes it a 2025-era session with questions on the pipe),
the TypeScript SDK's 2025-era-only stdio server (the probe fails, ``initialize`` follows), and
broken children: each gives a clear error within its bound, and nothing hangs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    CreateMessageResult,
    ListRootsResult,
    MrtrClient,
    ProgressNotification,
    Root,
    StdioServer,
    StdioServerError,
)
from fastapi_mrtr.wire.protocol import JSONRPCNotification, TextContent
from tests.stdio.stdio_peers import (
    EXITS_AT_ONCE,
    EXITS_MID_CALL,
    NEVER_ANSWERS,
    PRINTS_GARBAGE,
    child,
    node_command,
    node_environment,
    python_server,
)
from tests.support import db_rows

pytestmark = pytest.mark.anyio

SHIPPING = {"speed": "express", "gift_note": "From the library client"}


def bookshop_answers(asked: list[str]) -> Any:
    def answer(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        content = SHIPPING if params.message == "Shipping speed?" else {"confirmed": True}
        return {"action": "accept", "content": content}

    return answer


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "legacy")])
async def test_places_one_order_in_each_era(stdio_shop: tuple[str, dict[str, str], Path], mode: Any, era: str) -> None:
    app, env, database = stdio_shop
    server = python_server(app, {**env, "MRTR_STDIO_AUTHORIZATION": "Bearer bob-token"})
    asked: list[str] = []
    async with MrtrClient(stdio=server, options=ClientOptions(mode=mode)) as client:
        client.set_elicitation_handler(bookshop_answers(asked))
        assert await client.connect() == era
        result = await client.call_tool("place_order", {"book_id": 4, "quantity": 1})
    assert result.structured_content == {"status": "placed", "order_id": 1, "total_cents": 1050, "shipping": "express"}
    assert asked == ["Place this order for 1 x 'Kindred', 10.50 EUR?", "Shipping speed?"]
    assert db_rows(database, "SELECT book_id, quantity, shipping, customer, gift_note FROM orders") == [
        (4, 1, "express", "bob", "From the library client")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_progress_and_notifications_arrive_in_both_eras(tmp_path: Path, mode: Any) -> None:
    env = {"STDIO_MARKERS": str(tmp_path / "markers")}
    progress: list[ProgressNotification] = []
    notes: list[JSONRPCNotification] = []
    async with MrtrClient(
        stdio=python_server("tests.stdio.quirky_app:app", env),
        options=ClientOptions(mode=mode),
        on_progress=progress.append,  # a progress token on the call, in both eras
        on_notification=notes.append,
    ) as client:
        result = await client.call_tool("poke")
        if mode == "legacy":  # a 2025-era session also hears of the list change (its GET stream, on the pipe)
            with anyio.fail_after(10):
                while not notes:
                    await anyio.sleep(0.05)
            assert [note.method for note in notes] == ["notifications/tools/list_changed"]
    assert result.structured_content == {"poked": True}
    assert [(note.progress, note.total, note.message) for note in progress] == [(1, 2, "halfway")]
    # The block's end ran the app's shutdown: stdin closed, the process ended by itself.
    assert (tmp_path / "markers").read_text().splitlines()[-1] == "shutdown"


@pytest.mark.slow
async def test_a_2025_era_only_server_gets_initialize_after_the_probe_and_every_question_answered() -> None:
    asked: list[str] = []
    progress: list[ProgressNotification] = []
    logs: list[Any] = []
    server = StdioServer(node_command(), env=node_environment())
    async with MrtrClient(
        stdio=server, on_progress=progress.append, on_notification=lambda note: logs.append(note.params)
    ) as client:
        client.set_elicitation_handler(
            lambda params: (
                asked.append(params.message)
                or {"action": "accept", "content": {"confirmed": True} if len(asked) == 1 else {"speed": "express"}}
            )
        )
        with pytest.warns(DeprecationWarning):
            client.set_sampling_handler(
                lambda params: CreateMessageResult(
                    role="assistant", content=TextContent(type="text", text="42"), model="m"
                )
            )
        with pytest.warns(DeprecationWarning):
            client.set_roots_handler(lambda: ListRootsResult(roots=[Root(uri="file:///work")]))
        assert await client.connect() == "legacy"
        assert client.server_info is not None and client.server_info.name == "legacy-stdio-server"
        placed = await client.call_tool("place_order", {"item": "a lamp"})
        sampled = await client.call_tool("ask_model", {"prompt": "the answer?"})
        roots = await client.call_tool("list_my_roots")
        assert await client.set_log_level("info") is True
        slow = await client.call_tool("slow", {"steps": 2})
    texts = [result.content[0].text for result in (placed, sampled, roots, slow)]  # type: ignore[union-attr]
    assert texts == ["placed a lamp, express", "model said: 42", "file:///work", "done"]
    assert asked == ["Place an order for a lamp?", "Shipping speed?"]
    assert [(note.progress, note.total) for note in progress] == [(1, 2), (2, 2)]
    assert logs == [{"level": "info", "data": "step 1"}, {"level": "info", "data": "step 2"}]


# --- broken servers: a clear error within the bound, never a hang ------------------------------


async def first_request_fails(server: StdioServer) -> BaseException:
    with anyio.fail_after(20):  # the test's own bound: the client must end well before it
        async with MrtrClient(stdio=server) as client:
            with pytest.raises(Exception) as failure:
                await client.list_tools()
            with pytest.raises(Exception) as again:  # and stays failed, at once
                await client.list_tools()
            assert "can no longer be used" in str(again.value) or "could not start" in str(again.value)
    return failure.value


async def test_a_child_that_exits_at_once_says_why() -> None:
    error = await first_request_fails(StdioServer(EXITS_AT_ONCE, echo_stderr=False))
    assert isinstance(error, StdioServerError)
    assert error.returncode == 3
    assert "closed its stdout (exit status 3)" in str(error)
    assert "cannot start: no database" in error.stderr and "cannot start: no database" in str(error)


async def test_a_child_that_exits_mid_call_fails_the_call() -> None:
    error = await first_request_fails(StdioServer(EXITS_MID_CALL, echo_stderr=False))
    assert isinstance(error, StdioServerError)
    assert error.returncode == 0 and "crashed on the first request" in str(error)


async def test_a_child_that_prints_garbage_is_no_json_rpc_server() -> None:
    error = await first_request_fails(StdioServer(PRINTS_GARBAGE))
    assert isinstance(error, StdioServerError)  # not taken for a 2025-era answer to the probe
    assert str(error) == (
        "the stdio server wrote a line that is no JSON-RPC message (its stdout must carry JSON-RPC only): "
        "'Server starting...'"
    )


async def test_a_child_that_never_answers_times_out() -> None:
    started = time.monotonic()
    error = await first_request_fails(StdioServer(NEVER_ANSWERS, startup_timeout=1.0))
    assert isinstance(error, StdioServerError)
    assert "gave no answer in 1 s (request 1 waited)" in str(error)
    assert time.monotonic() - started < 15  # the bound, then a stop (stdin closed, SIGTERM) that is quick


async def test_a_command_that_does_not_exist() -> None:
    error = await first_request_fails(StdioServer("no-such-mcp-server --flag"))
    assert isinstance(error, StdioServerError)
    assert "could not start the stdio server `no-such-mcp-server --flag`" in str(error)


async def test_a_child_that_ignores_eof_and_sigterm_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    stubborn = child(
        "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); sys.stdin.read(); time.sleep(60)"
    )
    started = time.monotonic()
    with pytest.raises(StdioServerError):
        async with MrtrClient(stdio=StdioServer(stubborn, startup_timeout=1.0)) as client:
            await client.list_tools()
    assert time.monotonic() - started < 15  # 1 s + stdin grace + SIGTERM grace, then SIGKILL
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


async def test_usage_errors() -> None:
    with pytest.raises(ValueError, match="either a url or stdio"):
        MrtrClient("http://127.0.0.1:1/mcp", stdio="python -m x")
    with pytest.raises(ValueError, match="either a url or stdio"):
        MrtrClient()
    with pytest.raises(ValueError, match="a stdio server has none"):
        MrtrClient(stdio="python -m x", headers={"X": "1"})
    with pytest.raises(ValueError, match="needs a command"):
        StdioServer("  ")
    client = MrtrClient(stdio=[sys.executable, "-c", "pass"])
    with pytest.raises(RuntimeError, match="async with"):
        await client.list_tools()
    await client.aclose()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_abandoned_call_is_cancelled_on_the_server(tmp_path: Path, mode: Any) -> None:
    markers = tmp_path / "markers"
    server = python_server("tests.stdio.quirky_app:app", {"STDIO_MARKERS": str(markers)})
    async with MrtrClient(stdio=server, options=ClientOptions(mode=mode)) as client:
        await client.connect()
        with anyio.move_on_after(20) as waited:  # the caller gives up once the tool has started
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "slow", {"seconds": 60})
                while "slow started" not in (markers.read_text() if markers.exists() else ""):
                    await anyio.sleep(0.05)
                group.cancel_scope.cancel()
        assert not waited.cancelled_caught
        with anyio.fail_after(10):  # notifications/cancelled reached the app: the tool was stopped
            while "slow cancelled" not in markers.read_text():
                await anyio.sleep(0.05)
        assert (await client.call_tool("shout", {"text": "still here"})).structured_content == {"shouted": "STILL HERE"}


@pytest.mark.slow
async def test_time_spent_answering_the_server_is_not_its_silence() -> None:
    async def slow_person(params: Any) -> dict[str, Any]:
        await anyio.sleep(6)  # longer than read_timeout: the server waits for us meanwhile
        return {
            "action": "accept",
            "content": {"confirmed": True} if "order" in params.message else {"speed": "standard"},
        }

    server = StdioServer(node_command(), env=node_environment(), read_timeout=3.0)
    async with MrtrClient(stdio=server) as client:
        client.set_elicitation_handler(slow_person)
        placed = await client.call_tool("place_order", {"item": "a chair"})
    assert placed.content[0].text == "placed a chair, standard"  # type: ignore[union-attr]
