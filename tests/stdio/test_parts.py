"""The bridge's parts on their own (fast): the skeleton of an over-long line, SSE reading, bounded
line reading, finding the endpoint, and the stream checker's negative controls."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from fastapi import FastAPI

from fastapi_mrtr import MCP
from fastapi_mrtr.stdio.oversized import TopLevelSkeleton
from fastapi_mrtr.stdio.pipe import LineReader, Oversized
from fastapi_mrtr.stdio.sse import SseParser
from fastapi_mrtr.stdio.target import find_target
from tests.stdio.wire_check import stream_issues


def _skeleton(text: str, piece: int) -> dict[str, object] | None:
    skeleton = TopLevelSkeleton()
    data = text.encode()
    for start in range(0, len(data), piece):
        skeleton.feed(data[start : start + piece])
    return skeleton.fields()


@pytest.mark.parametrize("piece", [1, 3, 7, 4096])
def test_the_skeleton_keeps_the_top_level_whatever_the_pieces(piece: int) -> None:
    nested = {
        "name": "x",
        "arguments": {"id": 99, "text": 'quote " and backslash \\ ' * 50, "list": [1, [2, {"a": 3}]]},
    }
    line = json.dumps({"method": "tools/call", "params": nested, "jsonrpc": "2.0", "long": "z" * 1000, "id": 7})
    assert _skeleton(line, piece) == {"method": "tools/call", "params": 0, "jsonrpc": "2.0", "long": "", "id": 7}


def test_the_skeleton_of_what_is_no_object_is_none() -> None:
    assert _skeleton("[1, 2, 3]", 2) is None
    assert _skeleton('{"id": 1, "params": {', 5) is None  # cut short
    assert _skeleton("x" * 10_000, 100) is None


def test_the_skeleton_is_bounded() -> None:
    keys = ", ".join(f'"k{i}": {i}' for i in range(2000))  # a top level past its bound
    assert _skeleton("{" + keys + "}", 512) is None


def test_sse_events_across_pieces_and_line_ends() -> None:
    parser = SseParser()
    stream = b'id: s-1\r\nretry: 1000\r\ndata: \r\n\r\n: keepalive\n\nevent: message\ndata: {"a":\ndata: 1}\r\r\n'
    events = [event for index in range(len(stream)) for event in parser.feed(stream[index : index + 1])]
    assert [(e.id, e.retry_ms, e.data) for e in events] == [("s-1", 1000, ""), (None, None, '{"a":\n1}')]


def test_lines_are_bounded_and_an_oversized_line_keeps_its_id() -> None:
    async def read(data: bytes, limit: int) -> list[bytes | Oversized]:
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        try:
            return [line async for line in LineReader(read_end, limit).lines()]
        finally:
            os.close(read_end)

    big = b'{"params": {"t": "' + b"x" * 5000 + b'"}, "id": 3}'
    lines = asyncio.run(read(b'{"id": 1}\r\n\n' + big + b'\n{"id": 2}', 1000))
    assert lines[0] == b'{"id": 1}' and lines[2] == b'{"id": 2}'  # blank lines skipped, the last one unterminated
    oversized = lines[1]
    assert isinstance(oversized, Oversized)
    assert oversized.length == len(big)
    assert oversized.skeleton.fields() == {"params": 0, "id": 3}


def test_the_endpoint_is_found_or_named() -> None:
    app = FastAPI()
    mcp = MCP(app)
    with pytest.raises(LookupError, match="no MCP endpoint is mounted"):
        find_target(app)
    app.mount("/mcp", mcp)
    assert find_target(app).path == "/mcp" and find_target(app).mcp is mcp
    assert find_target(mcp).path == "/mcp"
    other = MCP(app)
    app.mount("/other", other)
    with pytest.raises(LookupError, match="several MCP endpoints"):
        find_target(app)
    assert find_target(app, "/other/").mcp is other
    with pytest.raises(TypeError):
        find_target(object())  # type: ignore[arg-type]


def test_the_stream_checker_refuses_what_a_client_would() -> None:
    """Negative controls: the checks of the stdio tests can fail."""
    modern_call = {
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        },
    }
    legacy_call = {"id": 2, "method": "tools/call", "params": {"name": "t"}}
    initialize = {"id": 3, "method": "initialize", "params": {}}
    lines = [
        b"not json\n",
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n',  # modern: no resultType
        b'{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[]}}\n',  # modern field in 2025
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n',  # a second response to 2
        b'{"jsonrpc":"2.0","id":"q","method":"elicitation/create","params":{}}\n',  # no session
    ]
    issues = stream_issues(lines, {1: modern_call, 2: legacy_call}, {})
    assert any("not JSON" in issue for issue in issues)
    assert any(issue.startswith("line 2:") for issue in issues)
    assert any("a 2025 result has resultType" in issue for issue in issues)
    assert "2 responses to request 2" in issues
    assert any("no 2025-era session was opened" in issue for issue in issues)
    good = b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n'
    assert stream_issues([good], {2: legacy_call, 3: initialize}, {}) == []
