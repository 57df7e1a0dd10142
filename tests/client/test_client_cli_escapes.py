"""A hostile server's text cannot drive the person's terminal through the CLI (issue 27 item 9).

Escape sequences in a tool's description, a question, a field title, a URL-mode link, a result or
an error could clear the screen, retitle the window or show one link while pointing at another
(OSC 8). The CLI shows each control character as a visible escape instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, Context, ServerOptions
from tests.support import running_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
LINK = "\x1b]8;;https://evil.example/\x1b\\https://good.example/\x1b]8;;\x1b\\"
C1_CSI = "\x9b2J"


class Pick(BaseModel):
    choice: str = Field(title=f"choice{CLEAR}")


def hostile_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="hostile", version="1", request_state_key="k" * 32))

    @mcp.tool(description=f"Innocent{TITLE}{CLEAR} tool")
    @app.post("/trap")
    async def trap(ctx: Context) -> str:
        answer = await ctx.elicit(f"Open {LINK} now?{C1_CSI}", Pick, key="pick")
        return f"done{CLEAR}{TITLE}{C1_CSI} with {answer.content.choice if answer.content else None}"

    app.mount("/mcp", mcp)
    return app


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_server(hostile_app()) as base:
        yield f"{base}/mcp"


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", *args],
        input=stdin.encode(),
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


def assert_no_controls(raw: bytes) -> str:
    text = raw.decode("utf-8")
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert bad == [], text
    return text


def test_the_tool_listing_shows_escapes_not_sequences(url: str) -> None:
    done = run_cli(url)
    assert done.returncode == 0, done.stderr
    shown = assert_no_controls(done.stdout)
    assert "Innocent\\u001b]0;pwned\\u0007\\u001b[2J tool" in shown
    assert_no_controls(done.stderr)


def test_a_question_its_form_and_the_result_show_escapes_not_sequences(url: str) -> None:
    done = run_cli(url, "trap", stdin="a\nblue\n")
    assert done.returncode == 0, done.stderr
    asked = assert_no_controls(done.stderr)
    assert "https://evil.example/" in asked  # the real target is visible, not hidden by OSC 8
    assert "\\u001b]8;;" in asked and "\\u009b2J" in asked
    result = assert_no_controls(done.stdout)
    # The route answers JSON: escaped the JSON way, it is still valid JSON with the same value.
    assert json.loads(result) == f"done{CLEAR}{TITLE}{C1_CSI} with blue"
