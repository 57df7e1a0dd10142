"""Load driver for the legacy elicitation flow: 2025-era MCP sessions over raw HTTP/1.1.

wrk cannot drive this flow: while a call's SSE stream is open on one connection, the answer to
the server's ``elicitation/create`` has to be POSTed on another. So each worker here owns two
keep-alive connections and one MCP session: it sends ``initialize`` and
``notifications/initialized`` once, then repeats the flow until the time is up:

1. POST ``tools/call`` of ``TOOL`` on the call connection;
2. read the answer: an SSE stream (or a JSON body, for a call that asks nothing);
3. answer every ``elicitation/create`` on the stream by POSTing an accepting result with its id
   on the answer connection (each must be answered 202);
4. the flow completes when the stream brings the call's result, which must not be an error and
   must contain ``EXPECT``.

Flows under way when the time is up are finished and counted. It prints
``RESULT ok=<completed> bad=<failed> secs=<wall time>``, like the rig's wrk scripts. The HTTP
client is written out here (no HTTP library) so that the driver spends little CPU per flow.

    python -m bench.legacy_flows http://127.0.0.1:8000/mcp --secs 8 --conns 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

LEGACY_VERSION = "2025-11-25"
EVENT_END = re.compile(rb"\r?\n\r?\n")


class FlowError(Exception):
    """The server's answer was not what the flow expects."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    reader: asyncio.StreamReader
    chunked: bool
    length: int
    done: bool = False

    async def body(self) -> bytes:
        """The whole body (for a JSON or 202 answer)."""
        parts = [part async for part in self.parts()]
        return b"".join(parts)

    async def parts(self) -> Any:
        """The body as it arrives: chunk by chunk for a chunked (streamed) answer."""
        if not self.chunked:
            self.done = True
            yield await self.reader.readexactly(self.length) if self.length else b""
            return
        while True:
            size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0], 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")  # the empty trailer
                self.done = True
                return
            chunk = await self.reader.readexactly(size + 2)
            yield chunk[:-2]


class Connection:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self._prefix = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes, headers: bytes) -> Answer:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        length = b"Content-Length: %d\r\n\r\n" % len(body)
        self.writer.write(self._prefix + headers + length + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        chunked = "chunked" in fields.get("transfer-encoding", "")
        return Answer(status, fields, self.reader, chunked, int(fields.get("content-length", "0")))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Counts:
    ok: int = 0
    bad: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def fail(self, why: str) -> None:
        self.bad += 1
        self.errors[why[:120]] = self.errors.get(why[:120], 0) + 1


class Worker:
    """One MCP session: two connections, one flow at a time."""

    def __init__(self, url: str, tool: str, arguments: dict[str, Any], answer: dict[str, Any], expect: str) -> None:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        self.calls = Connection(host, port, parts.path or "/mcp")
        self.answers = Connection(host, port, parts.path or "/mcp")
        self.tool, self.arguments, self.expect = tool, arguments, expect
        self.answer = answer
        self.headers = b""
        self.next_id = 0

    def _headers(self, session: str | None) -> bytes:
        text = (
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {LEGACY_VERSION}\r\n"
        )
        if session is not None:
            text += f"Mcp-Session-Id: {session}\r\n"
        return text.encode()

    async def open_session(self) -> None:
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "bench-legacy-flows", "version": "1.0.0"},
            },
        }
        answer = await self.answers.post(_encode(initialize), self._headers(None))
        body = await answer.body()
        session = answer.headers.get("mcp-session-id")
        if answer.status != 200 or session is None:
            raise FlowError(f"initialize: HTTP {answer.status} {body[:200]!r}")
        if answer.chunked or "text/event-stream" in answer.headers.get("content-type", ""):
            body = b"".join(_sse_data(body))
        if json.loads(body).get("result", {}).get("protocolVersion") != LEGACY_VERSION:
            raise FlowError(f"initialize: unexpected result {body[:200]!r}")
        self.headers = self._headers(session)
        initialized = _encode({"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = await self.answers.post(initialized, self.headers)
        await answer.body()
        if answer.status != 202:
            raise FlowError(f"notifications/initialized: HTTP {answer.status}")

    async def flow(self) -> None:
        """One tools/call, its elicitations answered, to its result."""
        self.next_id += 1
        call_id = self.next_id
        call = {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {"name": self.tool, "arguments": self.arguments},
        }
        answer = await self.calls.post(_encode(call), self.headers)
        if answer.status != 200:
            raise FlowError(f"tools/call: HTTP {answer.status} {(await answer.body())[:200]!r}")
        if "text/event-stream" not in answer.headers.get("content-type", ""):
            self._check_result(json.loads(await answer.body()), call_id)
            return
        result: dict[str, Any] | None = None
        buffer = b""
        async for part in answer.parts():
            buffer += part
            events = EVENT_END.split(buffer)
            buffer = events.pop()
            for event in events:
                for data in _sse_data(event):
                    message = json.loads(data)
                    if message.get("method") == "elicitation/create" and "id" in message:
                        await self._answer(message["id"])
                    elif message.get("id") == call_id:
                        result = message
        if result is None:
            raise FlowError("tools/call: the stream ended without the call's result")
        self._check_result(result, call_id)

    async def _answer(self, request_id: Any) -> None:
        reply = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": self.answer}}
        answer = await self.answers.post(_encode(reply), self.headers)
        body = await answer.body()
        if answer.status != 202:
            raise FlowError(f"elicitation answer: HTTP {answer.status} {body[:200]!r}")

    def _check_result(self, message: dict[str, Any], call_id: int) -> None:
        result = message.get("result")
        if message.get("id") != call_id or not isinstance(result, dict) or result.get("isError"):
            raise FlowError(f"tools/call: not a successful result: {json.dumps(message)[:200]}")
        if self.expect not in json.dumps(result.get("content")):
            raise FlowError(f"tools/call: {self.expect!r} not in the result: {json.dumps(result)[:200]}")

    def close(self) -> None:
        self.calls.close()
        self.answers.close()


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _sse_data(event: bytes) -> list[bytes]:
    """The data of each event in ``event``; an event with empty data (a priming event) gives nothing,
    as an EventSource would dispatch nothing for it."""
    out: list[bytes] = []
    for block in EVENT_END.split(event):
        lines = [line[5:].removeprefix(b" ") for line in block.splitlines() if line.startswith(b"data:")]
        data = b"\n".join(lines)
        if data:
            out.append(data)
    return out


async def run(
    url: str, secs: float, conns: int, tool: str, arguments: dict[str, Any], answer: dict[str, Any], expect: str
) -> tuple[Counts, float]:
    counts = Counts()
    workers = [Worker(url, tool, arguments, answer, expect) for _ in range(conns)]
    start = time.monotonic()
    deadline = start + secs

    async def drive(worker: Worker) -> None:
        opened = False
        while time.monotonic() < deadline:
            try:
                if not opened:
                    await worker.open_session()
                    opened = True
                await worker.flow()
                counts.ok += 1
            except (FlowError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                counts.fail(f"{type(exc).__name__}: {exc}")
                worker.close()  # a fresh connection for the next flow; the session stays
                await asyncio.sleep(0.01)
        worker.close()

    await asyncio.gather(*(drive(worker) for worker in workers))
    return counts, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.legacy_flows", description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--secs", type=float, default=8)
    parser.add_argument("--conns", type=int, default=8, help="workers, each with one session and two connections")
    parser.add_argument("--tool", default="confirm_twice")
    parser.add_argument("--arguments", default='{"item":"book"}', help="the tool's arguments (JSON)")
    parser.add_argument("--answer", default='{"ok":true}', help="the accepted content of every answer (JSON)")
    parser.add_argument("--expect", default="done book", help="text the result's content must contain")
    args = parser.parse_args()
    try:
        import uvloop  # the servers' loop too; much less driver CPU per flow

        uvloop.install()
    except ImportError:
        pass
    counts, wall = asyncio.run(
        run(
            args.url, args.secs, args.conns, args.tool, json.loads(args.arguments), json.loads(args.answer), args.expect
        )
    )
    for why, n in sorted(counts.errors.items(), key=lambda item: -item[1])[:5]:
        print(f"error x{n}: {why}")
    print(f"RESULT ok={counts.ok} bad={counts.bad} secs={wall:.3f}", flush=True)


if __name__ == "__main__":
    main()
