"""The HTTP of one 2025-era session: its headers, POSTs of requests and messages, GET streams.

Every request after ``initialize`` names the session (``Mcp-Session-Id``) and the negotiated
version; a 404 to a request naming the session means the server no longer knows it
(:class:`SessionGoneError`), which the session answers by initialising again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import anyio
import httpx

from fastapi_mrtr.client._errors import StatusCodeError, StreamClosedError
from fastapi_mrtr.client._headers import ACCEPT
from fastapi_mrtr.client._transport import SSE_MEDIA, HttpRpc, encode_message, media_type
from fastapi_mrtr.telemetry.client import client_notification
from fastapi_mrtr.telemetry.setup import Telemetry
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr.client")

SESSION_HEADER = "Mcp-Session-Id"
CANCEL_GRACE = 2.0  # seconds the best-effort notifications/cancelled and DELETE may take


class SessionGoneError(Exception):
    """The server answered 404 to a request naming our session: it has ended or was never known."""


class SessionHttp:
    """Sends the session's messages to one endpoint; ``session_id`` and ``protocol_version`` are
    what ``initialize`` gave (``None`` before, and after the session ends)."""

    def __init__(self, rpc: HttpRpc, extra_headers: Callable[[], Mapping[str, str]], telemetry: Telemetry) -> None:
        self.rpc = rpc
        self._extra_headers = extra_headers
        self._telemetry = telemetry
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {**self._extra_headers(), "Content-Type": "application/json", "Accept": ACCEPT}
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        return headers

    async def post_request(self, message: JSONObject) -> httpx.Response:
        """POST a request; its response comes back open (the caller closes it)."""
        request = self.rpc.http.build_request(
            "POST", self.rpc.url, content=encode_message(message), headers=self.headers()
        )
        response = await self.rpc.http.send(request, stream=True)
        if response.status_code == 404 and self.session_id is not None:
            await response.aclose()
            raise SessionGoneError
        return response

    async def post_message(self, message: JSONObject) -> None:
        """POST a notification or a response; the server acknowledges it with 202."""
        response = await self.rpc.http.post(self.rpc.url, content=encode_message(message), headers=self.headers())
        if response.status_code == 404 and self.session_id is not None:
            raise SessionGoneError
        if not response.is_success:
            raise StatusCodeError(response.status_code, response.text)

    async def cancel(self, request_id: RequestId, reason: str) -> None:
        """Tell the server we gave up on a request (``notifications/cancelled``), best effort."""
        note: JSONObject = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
            try:
                await client_notification(
                    self._telemetry, note, str(self.rpc.url), self.protocol_version, self.post_message
                )
            except (httpx.HTTPError, StatusCodeError, SessionGoneError) as exc:
                logger.info("could not cancel request %r on the server: %s", request_id, exc)

    async def open_stream(self, extra_headers: Mapping[str, str]) -> httpx.Response:
        """GET an SSE stream of the session (the standalone one, or a resumed one with
        ``Last-Event-ID``); raises :class:`StreamClosedError` when the server offers none."""
        headers = {**self.headers(), "Accept": SSE_MEDIA, **extra_headers}
        headers.pop("Content-Type")
        request = self.rpc.http.build_request("GET", self.rpc.url, headers=headers)
        response = await self.rpc.http.send(request, stream=True)
        if response.is_success and media_type(response) == SSE_MEDIA:
            return response
        await response.aclose()
        raise StreamClosedError(f"GET answered HTTP {response.status_code}, not an SSE stream")

    async def delete(self, session: str) -> None:
        """End ``session`` on the server (DELETE), best effort: a server that does not allow it is fine."""
        headers = {**self._extra_headers(), SESSION_HEADER: session}
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
            try:
                response = await self.rpc.http.request("DELETE", self.rpc.url, headers=headers)
                if response.status_code not in (200, 202, 204, 404, 405):
                    logger.warning("DELETE of the MCP session answered HTTP %s", response.status_code)
            except httpx.HTTPError as exc:
                logger.warning("could not end the MCP session: %s", exc)
