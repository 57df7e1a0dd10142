"""Streamable HTTP plumbing: bounded body reads, DNS-rebinding checks, JSON and SSE answers."""

from __future__ import annotations

import functools
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.wire.errors import BodyTooLargeError, ClientDisconnectedError, RequestRejectedError
from fastapi_mrtr.wire.json_codec import encode

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx must not buffer a stream of progress events
]


def header_map(scope: Scope) -> dict[str, str]:
    """Lower-case header names to values; repeated headers are joined as HTTP allows."""
    raw = scope["headers"]
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}
    if len(headers) == len(raw):  # no name repeated: the usual request
        return headers
    joined: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


async def read_body(receive: Receive, limit: int, declared: str | None) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError()
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnectedError()
        body = message.get("body", b"")
        if not chunks and not message.get("more_body", False):  # the usual single message: no copy
            if len(body) > limit:
                raise BodyTooLargeError()
            return bytes(body)
        chunks += body
        if len(chunks) > limit:
            raise BodyTooLargeError()
        if not message.get("more_body", False):
            return bytes(chunks)


async def wait_disconnect(receive: Receive) -> None:
    """Return once the client has gone (``http.disconnect``); any other message is dropped."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _hostname(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@functools.lru_cache(maxsize=256)  # a server sees a handful of Host values; the answer is pure
def host_allowed(host: str | None, allowed: tuple[str, ...]) -> bool:
    if host is None:
        return True
    name = _hostname(host)
    return name in LOCAL_HOSTS or "*" in allowed or name in allowed or host.lower() in allowed


def in_process_test_client(scope: Scope, host: str | None) -> bool:
    """A request from Starlette's ``TestClient`` with its defaults: it never crossed a network.

    ``TestClient`` sends ``Host: testserver`` from the peer ``("testclient", 50000)``. No socket
    has that peer (servers put an IP address there, and a proxy's ``X-Forwarded-For`` is not
    the browser's to write), so a DNS-rebinding page cannot pass for it; accepting it lets
    users test their apps with FastAPI's own test client unchanged.
    """
    client = scope.get("client")
    return host == "testserver" and isinstance(client, (tuple, list)) and tuple(client) == ("testclient", 50000)


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    if origin is None:
        return True
    if "*" in allowed or origin in allowed:
        return True
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and _hostname(rest.split("/", 1)[0]) in LOCAL_HOSTS


async def send_json(send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


async def send_empty(send: Send, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0"), *(extra or [])]}
    )
    await send({"type": "http.response.body", "body": b""})


async def send_refusal(send: Send, refusal: RequestRejectedError) -> None:
    """Answer a refused request: its HTTP status and headers, and a JSON-RPC error body."""
    body = encode({"jsonrpc": "2.0", "id": refusal.request_id, "error": refusal.to_error()})
    extra = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in refusal.headers.items()]
    await send_json(send, refusal.http_status, body, extra)


def sse_event(message: Any) -> bytes:
    return b"event: message\ndata: " + encode(message) + b"\n\n"
