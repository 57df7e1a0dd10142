"""A test's end of the pipe: ``python -m fastapi_mrtr.stdio APP`` as a subprocess, driven line by line.

Every line the server writes is kept as it came (``lines``), so a test can check that the whole
stream was JSON-RPC, whatever the app printed; stderr is collected on the side. Each wait has a
timeout: a server that stops answering fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds for any one answer: generous on a shared two-core machine, finite
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "transcript", "version": "1.0"},
}
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "transcript", "version": "1.0"},
}


def server_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This worktree first on the path, so the subprocess runs the code under test."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **(extra or {})}


class StdioServer:
    """The server process and what it wrote."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[bytes] = []  # every stdout line, as written
        self.messages: list[Any] = []  # the same, parsed (None where a line was no JSON)
        self._stderr = bytearray()
        self._stderr_reader = asyncio.ensure_future(self._collect_stderr())

    @classmethod
    @contextlib.asynccontextmanager
    async def run(cls, app: str, *args: str, env: Mapping[str, str] | None = None) -> AsyncIterator[StdioServer]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "fastapi_mrtr.stdio",
            app,
            *args,
            cwd=ROOT,
            env=server_environment(env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        server = cls(process)
        try:
            yield server
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await server._stderr_reader

    async def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self._stderr += chunk

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def send(self, message: Mapping[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(data + b"\n")
        await self.process.stdin.drain()

    async def receive(self, timeout: float = WAIT) -> Any:
        """The next message the server writes (None for a line that is no JSON)."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        if not line:
            raise EOFError(f"the server closed its stdout; stderr:\n{self.stderr[-3000:]}")
        self.lines.append(line)
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        self.messages.append(message)
        return message

    async def response_to(
        self,
        request_id: Any,
        answer: Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]] | None = None,
        timeout: float = WAIT,
    ) -> dict[str, Any]:
        """Read until the response to ``request_id``, answering each server request with ``answer``."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            message = await self.receive(max(deadline - asyncio.get_running_loop().time(), 0.01))
            if not isinstance(message, dict):
                continue
            if "method" in message and "id" in message:
                assert answer is not None, f"the server asked, and the test has no answer: {message}"
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": dict(await answer(message))})
            elif "method" not in message and message.get("id") == request_id:
                return message

    async def request(self, request_id: Any, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params or {})})
        return await self.response_to(request_id)

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.process.stdin.wait_closed()

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    async def exit_code(self, timeout: float = 15.0) -> int:
        """Wait for the process to end, reading what it still writes."""
        assert self.process.stdout is not None
        rest = await asyncio.wait_for(self.process.stdout.read(), timeout)
        for line in rest.splitlines(keepends=True):
            self.lines.append(line)
            with contextlib.suppress(ValueError):
                self.messages.append(json.loads(line))
        return await asyncio.wait_for(self.process.wait(), timeout)


def modern(params: Mapping[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """``params`` with a modern ``_meta`` (eliciting client), plus any extra ``_meta`` keys."""
    return {**dict(params or {}), "_meta": {**MODERN_META, **meta}}
