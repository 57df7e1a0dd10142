"""``python -m fastapi_mrtr.client --stdio "CMD" ...``: the terminal client launches a stdio server.

The CLI runs as a subprocess, and launches its server as one: the bookshop over
``python -m fastapi_mrtr.stdio`` (both eras), the TypeScript SDK's 2025-era-only stdio server, and
broken children. Answers are typed as a person types them, on a pipe or on a pseudo-terminal.
Every failure is one clear line and exit status 2, within a bound, never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.client.pty_cli import PtyCli
from tests.stdio.pipe_client import ROOT
from tests.stdio.stdio_peers import EXITS_AT_ONCE, NEVER_ANSWERS, PRINTS_GARBAGE, node_command, node_environment
from tests.support import db_rows

pytestmark = pytest.mark.slow  # a CLI process and a server process per test

MODERN_LINE = "(connected: protocol 2026-07-28, stateless)"
SHOP_LINE = "(connected to bookshop: a 2025-era session, protocol 2025-11-25)"
NODE_LINE = "(connected to legacy-stdio-server: a 2025-era session, protocol 2025-11-25)"
QUESTIONS = ["Place this order for 1 x 'Kindred', 10.50 EUR?", "Shipping speed?"]


def shop_command(env: dict[str, str]) -> str:
    """The bookshop over stdio, its environment given on the command line as a user would."""
    settings = [f"{name}={value}" for name, value in env.items()]
    return shlex.join(["env", *settings, sys.executable, "-m", "fastapi_mrtr.stdio", "example_app.main:app"])


def run_cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m fastapi_mrtr.client ARGS`` with ``stdin`` piped in; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def asked(stderr: str) -> list[str]:
    prefix = "The server asks: "
    return [line.removeprefix(prefix) for line in stderr.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize(("era", "line"), [((), MODERN_LINE), (("--era", "legacy"), SHOP_LINE)], ids=["auto", "legacy"])
def test_places_one_order_through_both_questions(
    stdio_shop: tuple[str, dict[str, str], Path], era: tuple[str, ...], line: str
) -> None:
    _, env, database = stdio_shop
    # accept, confirmed=y; accept, speed=2 (express), gift note left out
    done = run_cli("--stdio", shop_command(env), "place_order", "book_id=4", "quantity=1", *era, stdin="a\ny\na\n2\n\n")
    assert done.returncode == 0, done.stderr
    assert line in done.stderr.splitlines()
    assert asked(done.stderr) == QUESTIONS
    assert json.loads(done.stdout) == {"status": "placed", "order_id": 1, "total_cents": 1050, "shipping": "express"}
    assert db_rows(database, "SELECT book_id, quantity, shipping FROM orders") == [(4, 1, "express")]


def test_places_one_order_typed_at_a_terminal(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    _, env, database = stdio_shop
    with PtyCli("--stdio", shop_command(env), "place_order", "book_id=4", "quantity=1") as cli:
        for prompt, typed in [
            ("[c]ancel: ", "a"),
            ("(y/n) *: ", "y"),
            ("[c]ancel: ", "a"),  # the second question's action prompt
            ("a number [standard]: ", "2"),
            ("Gift note: ", ""),
        ]:
            shown = cli.screen.count(prompt)
            deadline = time.monotonic() + 30
            while cli.screen.count(prompt) == shown and time.monotonic() < deadline:
                cli.settle(quiet=0.2, limit=1)
            assert cli.screen.count(prompt) > shown, cli.screen
            cli.type(typed)
        assert cli.finish(30) == 0, cli.screen
    assert asked(cli.screen) == QUESTIONS
    assert '"status":"placed"' in cli.screen, cli.screen
    assert db_rows(database, "SELECT book_id, quantity, shipping FROM orders") == [(4, 1, "express")]


def test_tools_list_json(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    _, env, _ = stdio_shop
    done = run_cli("--stdio", shop_command(env), "tools", "list", "--json")
    assert done.returncode == 0, done.stderr
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert "place_order" in names and "list_books" in names


def test_a_2025_era_only_server_with_logs_and_progress() -> None:
    command = shlex.join(node_command())
    done = run_cli("--stdio", command, "slow", "steps=2", "--log-level", "info", env=node_environment(), stdin="")
    assert done.returncode == 0, done.stderr
    assert NODE_LINE in done.stderr.splitlines()
    assert "step 1" in done.stderr and "step 2" in done.stderr
    assert "progress 2/2" in done.stderr
    ordered = run_cli("--stdio", command, "place_order", "item=lamp", env=node_environment(), stdin="a\ny\na\n2\n")
    assert ordered.returncode == 0, ordered.stderr
    assert asked(ordered.stderr) == ["Place an order for lamp?", "Shipping speed?"]
    assert "placed lamp, express" in ordered.stdout


# --- failures: exit status 2 and one clear line, within a bound ------------------------------


def test_a_child_that_exits_at_once() -> None:
    done = run_cli("--stdio", shlex.join(EXITS_AT_ONCE), "tools", "list")
    assert done.returncode == 2
    assert "closed its stdout (exit status 3)" in done.stderr
    assert "cannot start: no database" in done.stderr


def test_a_child_that_prints_garbage() -> None:
    done = run_cli("--stdio", shlex.join(PRINTS_GARBAGE), "tools", "list")
    assert done.returncode == 2
    assert "error: the stdio server wrote a line that is no JSON-RPC message" in done.stderr
    assert "'Server starting...'" in done.stderr


def test_a_child_that_never_answers() -> None:
    started = time.monotonic()
    done = run_cli("--stdio", shlex.join(NEVER_ANSWERS), "--stdio-timeout", "1", "tools", "list")
    assert done.returncode == 2
    assert "gave no answer in 1 s" in done.stderr
    assert time.monotonic() - started < 30


def test_a_command_that_does_not_exist() -> None:
    done = run_cli("--stdio", "no-such-mcp-server", "tools", "list")
    assert done.returncode == 2
    assert "error: could not start the stdio server `no-such-mcp-server`" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("http://127.0.0.1:1/mcp", "--stdio", "python -m x"), "either a URL or --stdio 'CMD', not both"),
        (("tools", "list", "--stdio", "python -m x", "-H", "X: 1"), "a stdio server has no headers"),
        ((), "give the server: a URL (http://.../mcp) or --stdio 'CMD'"),
    ],
)
def test_usage_errors(args: tuple[str, ...], said: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    assert said in done.stderr
