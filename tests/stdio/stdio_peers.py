"""Stdio servers for the client's tests: the bookshop, the quirky app, a 2025-era-only Node server,
and children that fail (exit at once, print garbage, never answer, exit mid-call)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from fastapi_mrtr.client import StdioServer
from tests.stdio.pipe_client import ROOT, server_environment

JS_MODULES = ROOT / "tests" / "legacy_clients" / "js"
NODE_SERVER = Path(__file__).with_name("legacy_stdio_server.cjs")


def python_server(app: str, env: Mapping[str, str], **options: float) -> StdioServer:
    """``python -m fastapi_mrtr.stdio APP`` with this worktree's code."""
    return StdioServer(
        [sys.executable, "-m", "fastapi_mrtr.stdio", app], env=server_environment(env), cwd=ROOT, **options
    )


def node_command() -> list[str]:
    """The TypeScript SDK's 2025-era-only stdio server (legacy_stdio_server.cjs)."""
    node = shutil.which("node")
    installed = JS_MODULES / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if node is None or not installed.is_file():
        pytest.fail(f"the JS SDK is not installed (node: {node}): run bash scripts/install-js-client.sh")
    return [node, str(NODE_SERVER)]


def node_environment() -> dict[str, str]:
    return {"JS_MODULES": str(JS_MODULES)}


def child(code: str) -> list[str]:
    """A Python child running ``code``: a stand-in for a broken server."""
    return [sys.executable, "-c", code]


EXITS_AT_ONCE = child("import sys; sys.stderr.write('cannot start: no database\\n'); sys.exit(3)")
PRINTS_GARBAGE = child("import sys, time; print('Server starting...', flush=True); time.sleep(60)")
NEVER_ANSWERS = child("import sys, time; sys.stdin.readline(); time.sleep(60)")
EXITS_MID_CALL = child("import sys; sys.stdin.readline(); sys.stderr.write('crashed on the first request\\n')")
