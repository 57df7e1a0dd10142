"""Raw-wire flows of ``three_answers`` (legacy_flow_app.py) for the burst tests, over async httpx.

A 2025-era flow opens a session, calls the tool and answers each question on the call's SSE
stream with a separate POST (which, through round robin, lands on any replica); when the server
closes the stream before the result, it resumes with ``Last-Event-ID`` (also on any replica). A
modern flow (2026-07-28) retries ``tools/call`` with ``inputResponses`` and the ``requestState``.
Every answer is the flow's token and the question's number, so a cross-wired answer shows.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.scaleout.flows import McpWire, accept

QUESTION = re.compile(r"^Question (\d+) for (.+)\?$")
SESSION_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MAX_RESUMES = 20
AnswerUrl = Callable[[str], str]  # the URL an answer to request id goes to


@dataclass
class FlowOutcome:
    token: str
    result: dict[str, Any] | None
    error: str | None
    seconds: float

    @property
    def own_answers(self) -> bool:
        expected = [f"{self.token}:{n}" for n in (1, 2, 3)]
        return self.result is not None and self.result.get("token") == self.token and self.result["answers"] == expected


class FlowError(Exception):
    """A flow failed with an error the server stated (its status and message)."""


def client(timeout: float = 60.0) -> httpx.AsyncClient:
    """One client for hundreds of concurrent flows: no pool bound (each flow holds a stream)."""
    return httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=None, max_keepalive_connections=200))


class LegacySession:
    """One 2025-era session spoken on the wire."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = dict(SESSION_HEADERS)
        self._ids = iter(range(2, 1_000_000))

    async def open(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "burst", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        response = await self.http.post(self.url, json=body, headers=self.headers)
        _expect(response, 200)
        self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        _expect(await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}), 202)

    async def post(self, message: dict[str, Any], url: str | None = None) -> httpx.Response:
        return await self.http.post(url or self.url, content=json.dumps(message), headers=self.headers)

    async def close(self) -> None:
        await self.http.delete(self.url, headers=self.headers)

    async def start_call(self, token: str) -> tuple[int, httpx.Response]:
        call_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call"}
        body["params"] = {"name": "three_answers", "arguments": {"token": token}}
        request = self.http.build_request("POST", self.url, content=json.dumps(body), headers=self.headers)
        response = await self.http.send(request, stream=True)
        if response.status_code != 200:
            await response.aread()
            _expect(response, 200)
        return call_id, response

    async def resume(self, last_id: str, url: str | None = None) -> httpx.Response:
        headers = {**self.headers, "accept": "text/event-stream", "last-event-id": last_id}
        request = self.http.build_request("GET", url or self.url, headers=headers)
        response = await self.http.send(request, stream=True)
        if response.status_code != 200:
            await response.aread()
            _expect(response, 200)
        return response

    async def answer(self, request: dict[str, Any], think: float, answer_url: AnswerUrl | None) -> None:
        found = QUESTION.match(request["params"]["message"])
        assert found is not None, request
        url = answer_url(request["id"]) if answer_url is not None else None  # before thinking: it may note the ask
        if think:
            await asyncio.sleep(think)
        content = {"value": f"{found.group(2)}:{found.group(1)}"}
        message = {"jsonrpc": "2.0", "id": request["id"], "result": accept(content)}
        _expect(await self.post(message, url), 202)

    async def follow(
        self,
        call_id: int,
        response: httpx.Response,
        *,
        think: float = 0.0,
        answer_url: AnswerUrl | None = None,
        last_id: str | None = None,
    ) -> dict[str, Any]:
        """Answer the call's questions and resume its stream until its result."""
        for _ in range(MAX_RESUMES):
            try:
                async for event_id, data in sse(response):
                    last_id = event_id or last_id
                    if not isinstance(data, dict):
                        continue
                    if data.get("method") == "elicitation/create":
                        await self.answer(data, think, answer_url)
                    elif data.get("id") == call_id:
                        if "error" in data:
                            raise FlowError(f"call error: {data['error']}")
                        result: dict[str, Any] = data["result"]
                        return result
            finally:
                await response.aclose()
            if last_id is None:
                raise FlowError("the call's stream ended before any event")
            response = await self.resume(last_id)
        raise FlowError(f"no result after {MAX_RESUMES} resumptions")

    async def park(self, response: httpx.Response) -> tuple[str, dict[str, Any]]:
        """Read a call's stream until the server closes it (``legacy_sse_close_after``) without
        answering: the last event id and the question left waiting."""
        last_id: str | None = None
        question: dict[str, Any] | None = None
        try:
            async for event_id, data in sse(response):
                last_id = event_id or last_id
                if isinstance(data, dict) and data.get("method") == "elicitation/create":
                    question = data
        finally:
            await response.aclose()
        if last_id is None or question is None:
            raise FlowError("the call's stream ended without a question")
        return last_id, question


async def legacy_flow(
    http: httpx.AsyncClient, url: str, token: str, *, think: float = 0.0, answer_url: AnswerUrl | None = None
) -> FlowOutcome:
    started = time.monotonic()
    try:
        session = LegacySession(http, url)
        await session.open()
        call_id, response = await session.start_call(token)
        result = await session.follow(call_id, response, think=think, answer_url=answer_url)
        await session.close()
        return FlowOutcome(token, result.get("structuredContent"), None, time.monotonic() - started)
    except Exception as exc:  # counted, not raised: the other flows must finish too
        return FlowOutcome(token, None, f"{type(exc).__name__}: {exc}", time.monotonic() - started)


async def modern_round(wire: McpWire, token: str, responses: dict[str, Any] | None, state: str | None) -> Any:
    """One round of ``three_answers``, sent again once if the hop from this client to nginx fails.

    A modern round is stateless: the same request may go again, to any replica. A CI run of 610
    concurrent flows on two cores once saw the client's connection to nginx fail mid-request
    (nginx logged a 400 with no upstream: no replica saw it); that hop is not what these tests are
    about, and a client may resend a round as it pleases.
    """
    for attempt in range(2):
        try:
            return await wire.call("three_answers", {"token": token}, responses=responses, state=state)
        except httpx.TransportError:
            if attempt:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


async def modern_flow(http: httpx.AsyncClient, url: str, token: str) -> FlowOutcome:
    started = time.monotonic()
    wire = McpWire(http, url)
    responses: dict[str, Any] | None = None
    state: str | None = None
    try:
        for _ in range(5):
            reply = await modern_round(wire, token, responses, state)
            result = reply.result
            if result.get("resultType") != "input_required":
                return FlowOutcome(token, result.get("structuredContent"), None, time.monotonic() - started)
            responses = {}
            for key, request in result["inputRequests"].items():
                found = QUESTION.match(request["params"]["message"])
                assert found is not None
                responses[key] = accept({"value": f"{found.group(2)}:{found.group(1)}"})
            state = result.get("requestState")
        raise FlowError("more rounds than questions")
    except Exception as exc:
        return FlowOutcome(token, None, f"{type(exc).__name__}: {exc}", time.monotonic() - started)


async def sse(response: httpx.Response) -> AsyncIterator[tuple[str | None, Any]]:
    """``(event id, JSON data or None)`` of an SSE response; a JSON response is one event."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        yield None, json.loads(await response.aread())
        return
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if event_id is not None or data:
                text = "\n".join(data)
                yield event_id, json.loads(text) if text.strip() else None
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def _expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise FlowError(f"HTTP {response.status_code}: {response.text[:300]}")
