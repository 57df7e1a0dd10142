"""``MrtrClient``: an async MCP client over Streamable HTTP, for servers of either era.

Which era a server speaks is found once per client (``ClientOptions.mode``) and kept as an
:class:`~fastapi_mrtr.client._era.EraTransport`: the stateless 2026-07-28 wire
(:mod:`~fastapi_mrtr.client._modern`) or a 2025-era session (:mod:`~fastapi_mrtr.client._legacy`).
Everything above it, the MRTR loop (``_loop``), result parsing (``_results``), what ``tools/list``
said of each tool (``_tool_catalogue``), knows no era. The client's lifecycle is httpx's:
usable at once, ``async with`` at most once, and closed for good by :meth:`MrtrClient.aclose`.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio
import httpx

from fastapi_mrtr.client._era import EraTransport, open_transport
from fastapi_mrtr.client._handler_setters import HandlerSetters
from fastapi_mrtr.client._handlers import InputAnswer, InputHandlers
from fastapi_mrtr.client._legacy.transport import LegacyTransport
from fastapi_mrtr.client._lifecycle import Lifecycle
from fastapi_mrtr.client._loop import InputRequiredLoop
from fastapi_mrtr.client._modern import ModernTransport
from fastapi_mrtr.client._results import cursor_params, parse_result, result_parser, seed_answers
from fastapi_mrtr.client._stdio import StdioServer
from fastapi_mrtr.client._task_calls import TaskCalls
from fastapi_mrtr.client._tasks import TaskStatusCallback, ToolTask
from fastapi_mrtr.client._tool_catalogue import ToolCatalogue
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback
from fastapi_mrtr.client._wires import client_wire
from fastapi_mrtr.client.options import ClientOptions, Era
from fastapi_mrtr.telemetry.client import client_request, note_request_id
from fastapi_mrtr.wire.mrtr import (
    InputRequiredResult,
    InputResponses,
)
from fastapi_mrtr.wire.protocol import (
    LOG_LEVELS,
    CallToolResult,
    DiscoverResult,
    GetPromptResult,
    Implementation,
    JSONObject,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
    Result,
    Tool,
)

R = TypeVar("R", bound=Result)
T = TypeVar("T")
C = TypeVar("C", bound="MrtrClient")

_MAX_TOOL_PAGES = 100  # a server that keeps handing out cursors must not loop us forever


class MrtrClient(HandlerSetters, TaskCalls):
    """An async client for one MCP endpoint (``url``), e.g. ``http://127.0.0.1:8000/mcp``.

    ``http_client`` is an ``httpx.AsyncClient`` you own (auth, headers, proxies, a transport such
    as ``httpx.ASGITransport``); it is left open on :meth:`aclose`. Without one, the client makes
    and closes its own, with ``auth`` (an ``httpx.Auth`` such as
    :class:`~fastapi_mrtr.client.auth.OAuthClientAuth`; give your own client its ``auth``
    instead). ``headers`` are added to every request. ``on_progress`` receives the
    progress notifications of every request (a progress token is then sent on each);
    ``on_notification`` receives any other notification streamed over SSE.

    Like an ``httpx.AsyncClient``, it is usable at once; ``async with`` (at most once) also
    reads a 2025-era session's GET stream in the background. After :meth:`aclose` (or the
    block) every request raises ``RuntimeError``.

    ``validate_structured_content`` (on by default) checks every complete, non-error
    ``tools/call`` result against the tool's ``outputSchema``, as the official clients do, and
    raises :class:`~fastapi_mrtr.client.InvalidStructuredContentError` when ``structuredContent`` is
    missing or does not conform. The schema comes from ``tools/list``; a tool not listed yet is
    listed (every page) once, lazily, and a tool the server does not list is not checked.

    ``stdio`` instead of ``url``: a command (or a :class:`~fastapi_mrtr.client.StdioServer`) to
    launch as a local stdio server; used as ``async with``, which stops the process at its end.
    """

    def __init__(
        self,
        url: str | httpx.URL | None = None,
        *,
        stdio: str | Sequence[str] | StdioServer | None = None,
        http_client: httpx.AsyncClient | None = None,
        options: ClientOptions | None = None,
        headers: Mapping[str, str] | None = None,
        on_progress: ProgressCallback | None = None,
        on_notification: NotificationCallback | None = None,
        auth: httpx.Auth | None = None,
        validate_structured_content: bool = True,
    ) -> None:
        self.options = options or ClientOptions()
        self._lifecycle = Lifecycle()  # also runs a 2025-era session's GET stream, or a stdio server's reader
        self._headers = dict(headers or {})
        self._on_progress = on_progress
        self._on_notification = on_notification
        self._handlers = InputHandlers()
        self._ids = itertools.count(1)
        self.validate_structured_content = validate_structured_content
        self._tools = ToolCatalogue(self.list_all_tools)
        self._wire = client_wire(
            url, stdio, http_client, auth, headers, self.options, self._handlers, on_notification, self._lifecycle.spawn
        )
        # The modern wire is also what the probe speaks; the era's transport replaces it once chosen.
        self._modern = ModernTransport(
            self._wire.rpc,
            self.options,
            self._handlers,
            self._tools,
            self._request_headers,
            self._new_id,
            on_progress,
            on_notification,
        )
        self._transport: EraTransport | None = None
        self._transport_lock = anyio.Lock()

    # --- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self: C) -> C:
        await self._lifecycle.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End a 2025-era session (DELETE) if one is open; close the HTTP client if this client
        created it, or stop the stdio server. The client is closed for good; closing it again
        does nothing."""
        if not self._lifecycle.close():
            return
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.aclose()
        await self._wire.aclose_pipes()
        await self._lifecycle.stop_background()
        await self._wire.aclose_http()

    # --- handlers --------------------------------------------------------------------------

    @property
    def capabilities(self) -> JSONObject:
        """The ``clientCapabilities`` sent on every request."""
        return self._handlers.capabilities()

    @property
    def protocol_version(self) -> str:
        """The version in use: the modern one (it changes only if the server rejects ours and
        offers another), or in a 2025-era session the one ``initialize`` negotiated."""
        return (self._transport or self._modern).protocol_version

    @property
    def era(self) -> Era | None:
        """``"2026-07-28"`` or ``"legacy"`` once known (see :meth:`connect`); ``None`` before."""
        if self._transport is not None:
            return self._transport.era
        return None if self.options.mode == "auto" else self.options.mode

    @property
    def server_info(self) -> Implementation | None:
        """The ``serverInfo`` of a 2025-era session's ``initialize``; ``None`` on the modern wire
        (ask :meth:`discover` there)."""
        return self._transport.server_info if self._transport is not None else None

    async def connect(self) -> Era:
        """Find the server's era now (any first request does it otherwise) and return it.

        ``mode="auto"`` sends one ``server/discover``: a result, or a modern error, means the
        2026-07-28 wire; any other reply (a 2025-era server answers it with an HTTP 400, or a
        ``Method not found``) means a 2025-era server, which then gets ``initialize``. Network
        errors and an HTTP 401 or 403 are raised, not taken for an era.
        """
        return (await self._era_transport()).era

    async def set_log_level(self, level: str | None) -> bool:
        """Ask for the server's log messages (``notifications/message``, given to
        ``on_notification``) at ``level`` (one of ``LOG_LEVELS``) and above; ``None`` asks for none.

        On the 2026-07-28 wire the level rides in the ``_meta`` of every later request
        (``io.modelcontextprotocol/logLevel``; a ``meta=`` of your own wins). A 2025-era session
        has one level, set now with ``logging/setLevel`` if the server declared ``logging``;
        ``None`` cannot be sent there. Returns whether the server was told.
        """
        if level is not None and level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        return await (await self._era_transport()).set_log_level(level)

    # --- methods without MRTR --------------------------------------------------------------

    async def discover(self) -> DiscoverResult:
        """``server/discover``: supported versions, capabilities, ``serverInfo`` in ``_meta``."""
        return await self._simple("server/discover", {}, DiscoverResult)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of ``tools/list``, minus tools with invalid ``x-mcp-header`` annotations."""
        page = await self._simple("tools/list", cursor_params(cursor), ListToolsResult)
        page.tools = [tool for tool in page.tools if self._tools.learn(tool, page.ttl_ms)]
        return page

    async def list_all_tools(self) -> list[Tool]:
        """Every page of ``tools/list`` (bounded), concatenated."""
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await self.list_tools(cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._simple("prompts/list", cursor_params(cursor), ListPromptsResult)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._simple("resources/list", cursor_params(cursor), ListResourcesResult)

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        return await self._simple("resources/templates/list", cursor_params(cursor), ListResourceTemplatesResult)

    # --- methods with MRTR -----------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: Mapping[str, InputAnswer] | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        task_status_callback: TaskStatusCallback | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """``tools/call``. With ``auto_fulfill`` (the default) the MRTR loop runs to a complete
        :class:`CallToolResult`; without it an :class:`InputRequiredResult` comes back as is and
        you retry with ``input_responses`` and ``request_state`` yourself.

        A task the server makes of the call (``ClientOptions.tasks``) is driven to its end as by
        :meth:`ToolTask.wait`: its result, or ``TaskFailedError`` / ``TaskCancelledError``;
        ``task_status_callback`` sees each poll; cancelling the call cancels the task.

        Raises :class:`~fastapi_mrtr.client.InvalidStructuredContentError` for a complete result that
        breaks the tool's ``outputSchema`` (unless ``validate_structured_content=False``)."""
        started = await self.start_tool_call(
            name,
            arguments,
            input_responses=input_responses,
            request_state=request_state,
            progress_callback=progress_callback,
            meta=meta,
        )
        if isinstance(started, ToolTask):
            return await started.wait(on_status=task_status_callback)
        return started

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: Mapping[str, InputAnswer] | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """``prompts/get``, with the same MRTR behaviour as :meth:`call_tool`."""
        params: JSONObject = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self._flow(
            "prompts/get",
            params,
            result_parser(GetPromptResult, "prompts/get"),
            input_responses,
            request_state,
            progress_callback,
            meta,
        )

    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, InputAnswer] | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ReadResourceResult | InputRequiredResult:
        """``resources/read``, with the same MRTR behaviour as :meth:`call_tool`."""
        return await self._flow(
            "resources/read",
            {"uri": uri},
            result_parser(ReadResourceResult, "resources/read"),
            input_responses,
            request_state,
            progress_callback,
            meta,
        )

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> JSONObject:
        """Any method, raw: the decoded ``result`` object, no MRTR loop, no result parsing."""
        return await self._request(method, dict(params or {}), progress_callback, meta)

    # --- internals -------------------------------------------------------------------------

    async def _simple(self, method: str, params: JSONObject, model: type[R]) -> R:
        raw = await self._request(method, params, None, None)
        parsed = parse_result(raw, model, method)
        assert not isinstance(parsed, InputRequiredResult)
        return parsed

    async def _flow(
        self,
        method: str,
        params: JSONObject,
        parse: Callable[[JSONObject], T | InputRequiredResult],
        input_responses: Mapping[str, InputAnswer] | None,
        request_state: str | None,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> T | InputRequiredResult:
        (await self._era_transport()).check_seed(bool(input_responses) or request_state is not None)

        async def send(answers: InputResponses | None, state: str | None) -> T | InputRequiredResult:
            # The original params every time; only the MRTR fields change between rounds.
            round_params = dict(params)
            if answers:
                round_params["inputResponses"] = answers
            if state is not None:
                round_params["requestState"] = state
            raw = await self._request(method, round_params, progress_callback, meta)
            return parse(raw)

        loop: InputRequiredLoop[T] = InputRequiredLoop(
            send, self._handlers, self.options.input_required_config, self.options.state_only_backoff
        )
        return await loop.run(seed_answers(input_responses), request_state)

    async def _request(
        self,
        method: str,
        params: JSONObject,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        transport = await self._era_transport()
        return await client_request(
            self.options.telemetry, method, params, meta, self._wire.url, transport.protocol_version,
            lambda sent_meta: transport.request(method, params, progress=progress_callback, meta=sent_meta),
        )  # fmt: skip

    async def _era_transport(self) -> EraTransport:
        """The era's transport, chosen on first use (probe, or ``initialize``) and kept."""
        self._lifecycle.check_usable()
        transport = self._transport
        if transport is None:
            async with self._transport_lock:
                transport = self._transport
                if transport is None:
                    transport = await open_transport(
                        self.options.mode, self._modern, self._open_legacy, self._probe_discover
                    )
                    if self._lifecycle.is_closed:  # closed while the era was being found
                        await transport.aclose()
                        self._lifecycle.check_usable()
                    self._transport = transport
        return transport

    def _probe_discover(self) -> Awaitable[JSONObject]:
        """``mode="auto"``'s ``server/discover``: a client span like any other request's, when traced."""
        modern = self._modern
        return client_request(
            self.options.telemetry, "server/discover", {}, None, self._wire.url, modern.protocol_version,
            lambda meta: modern.request("server/discover", {}, progress=None, meta=meta),
        )  # fmt: skip

    async def _open_legacy(self) -> EraTransport:
        session = self._wire.legacy_session(
            self._handlers,
            self.options,
            self._request_headers,
            self._new_id,
            self._on_notification,
            self._lifecycle.spawn,
        )
        legacy = LegacyTransport(session, self.options, self._new_id, self._on_progress, self._on_notification)
        return await legacy.open()

    def _request_headers(self) -> Mapping[str, str]:
        return self._headers

    def _new_id(self) -> int:
        request_id = next(self._ids)
        note_request_id(request_id)  # on the request's client span, when traced
        return request_id
