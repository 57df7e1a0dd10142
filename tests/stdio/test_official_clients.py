"""Real clients launch the bookshop over stdio: the official Python SDK (mcp 2.3.0) and the TypeScript SDK.

The Python client's stdio transport in each of its modes (``auto``: it probes, sees a modern
server and stays modern; ``2026-07-28``: no probe; ``legacy``: ``initialize`` and server requests
on the pipe), and the TypeScript SDK 1.32.2 stdio client (2025 era only). Each places one order
through both questions: exactly one order in the database, with the principal the process was
given in its environment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

from tests.stdio.pipe_client import ROOT, server_environment
from tests.support import db_rows

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a server process (and Node) per test

JS_CLIENT = Path(__file__).with_name("js_stdio_client.cjs")
JS_MODULES = ROOT / "tests" / "legacy_clients" / "js"
SDK_VERSION = "1.32.2"
SHIPPING = {"speed": "express", "gift_note": "From a stdio client"}


class ScriptedUser:
    """Answers the bookshop's two questions by their text, and remembers them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        if params.message == "Shipping speed?":
            return ElicitResult(action="accept", content=SHIPPING)
        return ElicitResult(action="accept", content={"confirmed": True})


@pytest.mark.parametrize("mode", ["auto", "2026-07-28", "legacy"])
async def test_python_client_places_one_order(stdio_shop: tuple[str, dict[str, str], Path], mode: str) -> None:
    app, env, database = stdio_shop
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fastapi_mrtr.stdio", app],
        env={**server_environment(env), "MRTR_STDIO_AUTHORIZATION": "Bearer bob-token"},
        cwd=ROOT,
    )
    user = ScriptedUser()
    async with Client(server, elicitation_callback=user, mode=mode) as client:  # type: ignore[arg-type]
        era = "legacy" if client.session.initialize_result is not None else "modern"
        result = await client.call_tool("place_order", {"book_id": 4, "quantity": 1})
    assert era == ("legacy" if mode == "legacy" else "modern")
    assert result.is_error is False
    assert result.structured_content == {"status": "placed", "order_id": 1, "total_cents": 1050, "shipping": "express"}
    assert user.asked == ["Place this order for 1 x 'Kindred', 10.50 EUR?", "Shipping speed?"]
    # The identity given in the environment reached the app's security dependency (optional_user).
    assert db_rows(database, "SELECT book_id, quantity, shipping, customer, gift_note FROM orders") == [
        (4, 1, "express", "bob", "From a stdio client")
    ]


def test_typescript_client_places_one_order(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    app, env, database = stdio_shop
    node = shutil.which("node")
    installed = JS_MODULES / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if node is None or not installed.is_file():
        pytest.fail(f"the JS client is not installed (node: {node}): run bash scripts/install-js-client.sh")
    assert json.loads(installed.read_text())["version"] == SDK_VERSION
    environment = {
        **server_environment(env),
        "JS_MODULES": str(JS_MODULES),
        "SERVER_PYTHON": sys.executable,
        "SERVER_APP": app,
        "MRTR_STDIO_AUTHORIZATION": "Bearer alice-token",
    }
    done = subprocess.run(
        [node, str(JS_CLIENT)], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"the JS client exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    summary = json.loads(done.stdout)
    assert summary["serverVersion"] == {"name": "bookshop", "version": "1.0.0"}
    assert summary["protocolVersion"] == "2025-11-25"
    assert summary["asked"] == ["Place this order for 2 x 'Neuromancer', 19.80 EUR?", "Shipping speed?"]
    assert summary["result"]["isError"] is False
    assert summary["result"]["structuredContent"] == {
        "status": "placed",
        "order_id": 1,
        "total_cents": 1980,
        "shipping": "express",
    }
    assert db_rows(database, "SELECT book_id, quantity, customer FROM orders") == [(3, 2, "alice")]
