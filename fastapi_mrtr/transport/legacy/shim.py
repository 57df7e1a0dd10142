"""The legacy shim: a handler that suspends for input is served to a 2025-era session in process.

The method handler runs exactly as for a modern client: a round that needs input answers
``input_required`` with its questions and a sealed ``requestState``. Instead of returning that to
a client that would not understand it, the shim sends each question to the client as a real
server-to-client request on the call's stream, collects the answers, and runs the next round with
them, as a modern client's retry would. So the replay rules (keys, digests, strict validation,
decline and cancel as answers, ``ctx.once``, ``ctx.idempotency_key``, ``max_rounds``) are the
modern ones, checked by the same code. ``round_timeout`` bounds each wait for the client.

URL-mode questions are bridged to the 2025-11-25 wire: each gets an ``elicitationId``, and once
the handler stops asking it (the flow went on), the client is told with
``notifications/elicitation/complete``. A call that must ask but has no stream to ask on (the
client did not accept SSE) is refused, with -32042 when every question is a URL.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol

from fastapi_mrtr.telemetry.flows import shim_round
from fastapi_mrtr.telemetry.setup import Telemetry
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import (
    INVALID_REQUEST,
    LEGACY_SESSION_NOT_FOUND,
    LEGACY_URL_ELICITATION_REQUIRED,
    McpError,
)
from fastapi_mrtr.wire.protocol import JSONObject

Handler = Callable[[RpcRequest], Awaitable[JSONObject]]
ELICIT = "elicitation/create"
ELICITATION_COMPLETE = "notifications/elicitation/complete"
MRTR_PARAMS = ("inputResponses", "requestState")


class ClientAnswerError(Exception):
    """The client answered one of the server's requests with a JSON-RPC error."""

    def __init__(self, method: str, error: JSONObject) -> None:
        super().__init__(f"the client could not answer {method}: {error.get('message', 'error')}")
        self.method = method
        self.error = error


class ShimStoppedError(McpError):
    """The shim ended a call: the client did not answer in time, refused a question, or the flow
    ran out of rounds. A ``tools/call`` reports it as a tool error; other methods as this error."""


class ClientChannel(Protocol):
    """How the shim reaches the client of one call: its stream, and the answers POSTed back."""

    @property
    def can_ask(self) -> bool: ...
    async def ask(self, method: str, params: JSONObject) -> JSONObject: ...
    async def notify(self, method: str, params: JSONObject) -> None: ...


class LegacyShim:
    def __init__(
        self, round_timeout: float, max_rounds: int, protocol_version: str, telemetry: Telemetry | None = None
    ) -> None:
        self.round_timeout = round_timeout
        self.max_rounds = max_rounds
        self.protocol_version = protocol_version
        self.telemetry = telemetry or Telemetry()

    async def run(self, handler: Handler, rpc: RpcRequest, channel: ClientChannel) -> JSONObject:
        """Run ``handler`` round after round until it completes; raises ``McpError`` when it cannot."""
        original = {key: value for key, value in rpc.params.items() if key not in MRTR_PARAMS}
        current = replace(rpc, params=original)
        url_ids: dict[str, str] = {}  # question key -> the elicitationId the client was given
        # The sealed round counter enforces max_rounds; this bound only guards manual handlers.
        for round_number in range(1, self.max_rounds + 2):
            with shim_round(self.telemetry, rpc.method, original, round_number):  # a child span, when traced
                result = await handler(current)
            if result.get("resultType") != "input_required":
                await self._complete_urls(channel, url_ids, still_asked=set())
                return result
            questions = result.get("inputRequests") or {}
            if not isinstance(questions, dict):
                questions = {}
            await self._complete_urls(channel, url_ids, still_asked=set(questions))
            answers = await self._ask_all(channel, questions, url_ids)
            params = {**original, "inputResponses": answers}
            state = result.get("requestState")
            if isinstance(state, str):
                params["requestState"] = state
            current = replace(rpc, params=params)
        raise ShimStoppedError(
            INVALID_REQUEST, f"Too many input rounds: this flow reached the limit of {self.max_rounds}"
        )

    async def _ask_all(self, channel: ClientChannel, questions: JSONObject, url_ids: dict[str, str]) -> JSONObject:
        asks = {key: self._legacy_params(key, question, url_ids) for key, question in questions.items()}
        if not channel.can_ask:
            raise self._no_stream(asks)
        keys = list(asks)
        tasks = [asyncio.ensure_future(channel.ask(*asks[key])) for key in keys]
        gathered = asyncio.gather(*tasks)
        # When the call is cancelled mid-wait, nobody awaits ``gathered`` any more: read its outcome
        # here so asyncio does not log "exception was never retrieved".
        gathered.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            answers = await (asyncio.wait_for(gathered, self.round_timeout) if self.round_timeout > 0 else gathered)
        except ClientAnswerError as refused:
            raise ShimStoppedError(
                INVALID_REQUEST, f"The call was ended: {refused}", {"error": refused.error}
            ) from None
        except asyncio.TimeoutError:
            methods = ", ".join(sorted({asks[key][0] for key in keys}))
            raise ShimStoppedError(
                LEGACY_SESSION_NOT_FOUND,
                f"Request timed out: the client did not answer {methods} within {self.round_timeout:g} s "
                "(round_timeout); the call was ended",
                {"reason": "round_timeout", "roundTimeout": self.round_timeout},
            ) from None
        finally:
            for task in tasks:  # one failed or the wait ended: stop waiting for the others
                task.cancel()
        return dict(zip(keys, answers, strict=True))

    def _legacy_params(self, key: str, question: object, url_ids: dict[str, str]) -> tuple[str, JSONObject]:
        method = question.get("method") if isinstance(question, dict) else None
        params = question.get("params") if isinstance(question, dict) else None
        if not isinstance(method, str):
            raise McpError(INVALID_REQUEST, f"Invalid input request {key!r}: it names no method")
        params = dict(params) if isinstance(params, dict) else {}
        if method == ELICIT:
            if params.get("mode") == "url":
                params["elicitationId"] = url_ids.setdefault(key, secrets.token_urlsafe(12))
            elif self.protocol_version < "2025-11-25":
                params.pop("mode", None)  # form mode was the only mode, and had no name
        return method, params

    def _no_stream(self, asks: dict[str, tuple[str, JSONObject]]) -> McpError:
        urls = [params for method, params in asks.values() if method == ELICIT and params.get("mode") == "url"]
        if urls and len(urls) == len(asks):
            elicitations = [
                {"mode": "url", "elicitationId": p["elicitationId"], "url": p.get("url"), "message": p.get("message")}
                for p in urls
            ]
            return McpError(
                LEGACY_URL_ELICITATION_REQUIRED,
                "URL elicitation required: open the URL, then call again",
                {"elicitations": elicitations},
            )
        methods = ", ".join(sorted({method for method, _ in asks.values()}))
        return McpError(
            INVALID_REQUEST,
            f"This call needs to ask the client ({methods}), which it can only do on a stream: "
            "send Accept: application/json, text/event-stream",
        )

    async def _complete_urls(self, channel: ClientChannel, url_ids: dict[str, str], still_asked: set[str]) -> None:
        """Tell the client which URL flows the handler no longer waits for."""
        for key in [key for key in url_ids if key not in still_asked]:
            await channel.notify(ELICITATION_COMPLETE, {"elicitationId": url_ids.pop(key)})
