"""The 2026-07-28 era as an :class:`~fastapi_mrtr.client._era.EraTransport`: stateless requests.

Nothing is negotiated up front. Every request carries its own ``_meta`` (protocol version, client
info, the capabilities the registered handlers imply, the log level asked for) and the matching
headers; a server that refuses our version (-32022) and offers another gets that one instead.
A ``tools/call`` mirrors its arguments into the ``Mcp-Param-*`` headers the tool declared; a
header mismatch (-32020, refused before the tool runs) re-learns the tools once and resends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from fastapi_mrtr.client._errors import McpServerError
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._headers import standard_headers
from fastapi_mrtr.client._request_meta import listening, with_meta
from fastapi_mrtr.client._task_wire import with_tasks_extension
from fastapi_mrtr.client._tool_catalogue import ToolCatalogue
from fastapi_mrtr.client._transport import RpcWire
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.wire.errors import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION
from fastapi_mrtr.wire.protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Implementation,
    JSONObject,
    dump,
)


class ModernTransport:
    """Requests on the 2026-07-28 wire; also the one that asks ``server/discover`` in the probe."""

    era: Literal["2026-07-28"] = "2026-07-28"
    server_info: Implementation | None = None  # the modern wire has no handshake (ask server/discover)

    def __init__(
        self,
        rpc: RpcWire,
        options: ClientOptions,
        handlers: InputHandlers,
        tools: ToolCatalogue,
        headers: Callable[[], Mapping[str, str]],
        next_id: Callable[[], int],
        on_progress: ProgressCallback | None,
        on_notification: NotificationCallback | None,
    ) -> None:
        self._rpc = rpc
        self._options = options
        self._handlers = handlers
        self._tools = tools
        self._headers = headers
        self._next_id = next_id
        self._on_progress = on_progress  # for requests that bring no progress callback of their own
        self._on_notification = on_notification
        self._protocol_version = options.protocol_version
        self._log_level: str | None = None  # the logLevel of every request (set_log_level)

    @property
    def protocol_version(self) -> str:
        """Ours, unless the server rejected it and offered another."""
        return self._protocol_version

    def check_seed(self, seeded: bool) -> None:
        """Caller-supplied ``inputResponses`` and ``requestState`` are this wire's own: always fine."""

    async def set_log_level(self, level: str | None) -> bool:
        """Every later request carries ``level`` in its ``_meta``; the server is always told."""
        self._log_level = level
        return True

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        progress: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        if method != "tools/call" or not self._options.mirror_param_headers:
            return await self._send(method, params, progress, meta, {})
        for attempt in range(2):
            mirrored = self._tools.param_headers(params["name"], params.get("arguments"))
            try:
                return await self._send(method, params, progress, meta, mirrored)
            except McpServerError as exc:
                # Our header cache may be stale (or empty): re-learn the tools once and resend.
                # Safe on this wire only: a header mismatch is refused before the tool runs.
                if attempt or exc.code != HEADER_MISMATCH:
                    raise
                await self._tools.relearn()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self,
        method: str,
        params: JSONObject,
        progress: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
        param_headers: Mapping[str, str],
    ) -> JSONObject:
        """One request, sent again once in a version the server offered if it refused ours."""
        progress = progress or self._on_progress
        for attempt in range(2):
            request_id = self._next_id()
            listens = listening(progress, self._on_notification, request_id)
            message: JSONObject = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                "params": with_meta(params, self._with_log_level(meta), listens.token, self._protocol_meta(method)),
            }
            headers = {**self._headers(), **standard_headers(self._protocol_version, method, params)}
            headers.update(param_headers)
            try:
                return await self._rpc.request(message, headers, listens.sink)
            except McpServerError as exc:
                if attempt or exc.code != UNSUPPORTED_PROTOCOL_VERSION or not self._adopt_error_data(exc.data):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Nothing to end: the wire keeps no state (the HTTP client is the :class:`MrtrClient`'s)."""

    def adopt_version(self, supported: list[Any]) -> bool:
        """Use the first version both sides support (ours first); False if there is none."""
        for candidate in (self._options.protocol_version, *SUPPORTED_PROTOCOL_VERSIONS):
            if candidate in supported:
                self._protocol_version = candidate
                return True
        return False

    def _adopt_error_data(self, data: Any) -> bool:
        """After -32022, switch to a version its ``data.supported`` lists."""
        supported = data.get("supported") if isinstance(data, dict) else None
        return isinstance(supported, list) and self.adopt_version(supported)

    def _with_log_level(self, meta: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The caller's ``_meta``, with the level :meth:`set_log_level` asked for unless it names one."""
        if self._log_level is None:
            return meta
        return {META_LOG_LEVEL: self._log_level, **(meta or {})}

    def _protocol_meta(self, method: str) -> JSONObject:
        """The ``_meta`` keys this wire sets on every request; they win over the caller's."""
        return {
            META_PROTOCOL_VERSION: self._protocol_version,
            META_CLIENT_INFO: dump(self._options.client_info),
            META_CLIENT_CAPABILITIES: with_tasks_extension(
                self._handlers.capabilities(), method, self._options.tasks.enabled
            ),
        }
