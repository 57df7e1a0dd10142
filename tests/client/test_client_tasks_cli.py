"""The terminal client drives a task on a pseudo-terminal, against the conformance fixture on uvicorn.

It shows the task's status while it runs, asks the task's question with the same prompt as an MRTR
round, prints the result; Ctrl-C sends ``tasks/cancel`` before it exits with 130; ``--json`` prints
the result document alone on stdout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest

from fastapi_mrtr.client import ClientOptions, MrtrClient, ToolTask
from fastapi_mrtr.client._cli_tasks import TaskWatcher
from fastapi_mrtr.client.auth import InMemoryTokenStore, OAuthClientAuth, OAuthToken
from fastapi_mrtr.client.auth._discovery import server_key
from tests.client.pty_cli import ROOT, PtyCli
from tests.support import running_server

pytestmark = pytest.mark.slow

ACTION_PROMPT = "Answer? [A]ccept / [d]ecline / [c]ancel: "


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


async def settled_status(url: str, task_id: str, auth: OAuthClientAuth | None = None) -> str:
    """The task's status once it has settled (a cancel is cooperative: it ends shortly after)."""
    async with MrtrClient(url, auth=auth) as client:
        handle = await client.task(task_id)
        for _ in range(50):
            if handle.last.terminal:
                break
            await anyio.sleep(0.1)
            await handle.get()
        return handle.status


def test_a_task_shows_its_status_asks_its_question_and_prints_the_result(fixture_url: str) -> None:
    with PtyCli(fixture_url, "call", "confirm_delete", "filename=notes.txt") as cli:
        cli.wait_for(ACTION_PROMPT)
        cli.type("a")
        cli.wait_for("Confirm")
        cli.settle()
        cli.type("y")
        assert cli.finish() == 0, cli.screen
    screen = cli.screen
    assert "(the server runs this call as task " in screen
    assert "task input_required" in screen
    assert "Delete notes.txt?" in screen
    assert screen.index("task input_required") < screen.index("Delete notes.txt?") < screen.index("task completed")
    assert screen.rstrip().endswith("Deleted notes.txt."), screen


def test_the_status_message_shows_as_it_changes(fixture_url: str) -> None:
    with PtyCli(fixture_url, "slow_compute", "seconds=2", "label=sum") as cli:
        assert cli.finish() == 0, cli.screen
    assert re.search(r"task working: sum: \d\.\d/2 s", cli.screen), cli.screen
    assert cli.screen.count("task working") <= 4, cli.screen  # one line a second at most, not one a poll
    assert "sum computed in 2 s" in cli.screen


def test_ctrl_c_cancels_the_task_then_exits_130(fixture_url: str) -> None:
    with PtyCli(fixture_url, "slow_compute", "seconds=60") as cli:
        cli.wait_for("task working")
        pressed = time.monotonic()
        cli.interrupt()
        assert cli.finish(limit=10) == 130, cli.screen
        assert time.monotonic() - pressed < 8
    task_id = re.search(r"as task (\S+);", cli.screen)
    assert task_id is not None, cli.screen
    assert "task cancelled" in cli.screen, cli.screen
    assert anyio.run(settled_status, fixture_url, task_id.group(1)) == "cancelled"


def test_the_ctrl_c_cancel_carries_the_signed_in_users_token(fixture_url: str) -> None:
    """A task belongs to the credentials that made it: a cancel sent without the token the run
    signed in with would be another caller's, answered like an unknown task (and the task left running)."""
    store = InMemoryTokenStore()
    auth = OAuthClientAuth(store=store)

    async def start() -> str:
        await store.set_tokens(server_key(fixture_url), OAuthToken(access_token="alice"))
        async with MrtrClient(fixture_url, auth=auth) as client:
            task = await client.start_tool_call("slow_compute", {"seconds": 60})
            assert isinstance(task, ToolTask)
            return task.task_id

    task_id = anyio.run(start)
    said: list[str] = []
    watcher = TaskWatcher(said.append, fixture_url, {}, ClientOptions(), auth=auth)
    watcher.running = task_id
    watcher.cancel_running_task()  # what the CLI's Ctrl-C handler calls
    assert said == [f"cancelling task {task_id} ...", "task cancelled"]
    assert anyio.run(settled_status, fixture_url, task_id, auth) == "cancelled"


def test_json_prints_only_the_final_result_document(fixture_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", fixture_url, "failing_job", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr  # the tool reported an error
    document = json.loads(done.stdout)
    assert document["isError"] is True and "The job failed" in document["content"][0]["text"]
    assert "task completed" in done.stderr
