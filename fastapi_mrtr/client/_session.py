"""``MrtrClient``: an async MCP client over Streamable HTTP, for servers of either era.

On the 2026-07-28 wire it is stateless like the wire: nothing is negotiated up front. Every
request carries its own ``_meta`` (protocol version, client info, the capabilities the
registered handlers imply) and the matching headers, and ``input_required`` results run the
MRTR loop. The only memory across requests is what ``tools/list`` said of each tool: its
``x-mcp-header`` declarations, used to mirror arguments into ``Mcp-Param-*`` headers, and its
``outputSchema``, used to check the ``structuredContent`` of its results.

A 2025-era server gets a :class:`~fastapi_mrtr.client._legacy.LegacySession` instead, and the
server's questions arrive as requests on the call's stream, answered by the same handlers.
Which era a server speaks is found once per client (``ClientOptions.mode``) and kept.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import httpx
from pydantic import BaseModel, ValidationError

from fastapi_mrtr.client._errors import (
    InvalidServerResponseError,
    InvalidToolHeadersError,
    McpServerError,
    MrtrClientError,
    StatusCodeError,
    StreamClosedError,
)
from fastapi_mrtr.client._handlers import ElicitationHandler, InputAnswer, InputHandlers, RootsHandler, SamplingHandler
from fastapi_mrtr.client._headers import ParamHeader, param_headers, scan_param_headers, standard_headers
from fastapi_mrtr.client._legacy import LegacySession
from fastapi_mrtr.client._loop import InputRequiredLoop
from fastapi_mrtr.client._output_schema import OutputSchemas
from fastapi_mrtr.client._transport import HttpRpc, NotificationSink
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback, ProgressNotification, call_back
from fastapi_mrtr.client.options import ClientOptions, Era
from fastapi_mrtr.wire.errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from fastapi_mrtr.wire.mrtr import (
    ELICITATION_CREATE,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    CreateMessageResult,
    ElicitResult,
    InputRequiredResult,
    InputResponses,
    ListRootsResult,
    make_input_response_from_create_message_result,
    make_input_response_from_elicit_result,
    make_input_response_from_list_roots_result,
)
from fastapi_mrtr.wire.protocol import (
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallToolResult,
    DiscoverResult,
    GetPromptResult,
    Implementation,
    JSONObject,
    JSONRPCNotification,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
    Result,
    Tool,
    dump,
)

logger = logging.getLogger("fastapi_mrtr.client")

R = TypeVar("R", bound=Result)
C = TypeVar("C", bound="MrtrClient")

# The three methods that may answer input_required (mrtr.mdx, Supported Requests).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_MAX_TOOL_PAGES = 100  # a server that keeps handing out cursors must not loop us forever
# Errors only a modern server sends (spec-notes 2.6): the probe raises them rather than fall back.
_MODERN_ERRORS = frozenset({UNSUPPORTED_PROTOCOL_VERSION, MISSING_REQUIRED_CLIENT_CAPABILITY, HEADER_MISMATCH})


class MrtrClient:
    """An async client for one MCP endpoint (``url``), e.g. ``http://127.0.0.1:8000/mcp``.

    ``http_client`` is an ``httpx.AsyncClient`` you own (auth, headers, proxies, a transport such
    as ``httpx.ASGITransport``); it is left open on :meth:`aclose`. Without one, the client makes
    and closes its own, with ``auth`` (an ``httpx.Auth`` such as
    :class:`~fastapi_mrtr.client.auth.OAuthClientAuth`; give your own client its ``auth``
    instead). ``headers`` are added to every request. ``on_progress`` receives the
    progress notifications of every request (a progress token is then sent on each);
    ``on_notification`` receives any other notification streamed over SSE.

    ``validate_structured_content`` (on by default) checks every complete, non-error
    ``tools/call`` result against the tool's ``outputSchema``, as the official clients do, and
    raises :class:`~fastapi_mrtr.client.InvalidStructuredContentError` when ``structuredContent`` is
    missing or does not conform. The schema comes from ``tools/list``; a tool not listed yet is
    listed (every page) once, lazily, and a tool the server does not list is not checked.
    """

    def __init__(
        self,
        url: str | httpx.URL,
        *,
        http_client: httpx.AsyncClient | None = None,
        options: ClientOptions | None = None,
        headers: Mapping[str, str] | None = None,
        on_progress: ProgressCallback | None = None,
        on_notification: NotificationCallback | None = None,
        auth: httpx.Auth | None = None,
        validate_structured_content: bool = True,
    ) -> None:
        if http_client is not None and auth is not None:
            raise ValueError("pass auth to your own httpx.AsyncClient (AsyncClient(auth=...)), not to MrtrClient")
        self.options = options or ClientOptions()
        self._owns_http = http_client is None
        http = http_client or httpx.AsyncClient(timeout=self.options.http_timeout, auth=auth)
        self._rpc = HttpRpc(http, url)
        self._headers = dict(headers or {})
        self._on_progress = on_progress
        self._on_notification = on_notification
        self._handlers = InputHandlers()
        self._ids = itertools.count(1)
        self._protocol_version = self.options.protocol_version
        self._log_level: str | None = None  # the 2026-07-28 logLevel of every request (set_log_level)
        self._tool_headers: dict[str, tuple[ParamHeader, ...]] = {}
        self._invalid_tools: dict[str, str] = {}
        self.validate_structured_content = validate_structured_content
        self._output_schemas = OutputSchemas()
        self._unlisted: set[str] = set()  # called tools that a full listing did not include
        mode = self.options.mode
        self._era: Era | None = None if mode == "auto" else mode
        self._era_lock = anyio.Lock()
        self._legacy = LegacySession(
            self._rpc,
            self._handlers,
            self.options,
            lambda: self._headers,
            self._new_id,
            lambda: self._sink(None, None),
            self._spawn,
        )
        self._background: anyio.abc.TaskGroup | None = None  # reads a 2025-era session's GET stream

    # --- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self: C) -> C:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._background = group
        return self

    def _spawn(self, run: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Run ``run`` in the background while the client is an ``async with`` block."""
        if self._background is None:
            return False
        self._background.start_soon(run)
        return True

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End a 2025-era session (DELETE) if one is open; close the HTTP client if this client
        created it."""
        await self._legacy.close()
        group, self._background = self._background, None
        if group is not None:
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
        if self._owns_http:
            await self._rpc.http.aclose()

    # --- handlers --------------------------------------------------------------------------

    def set_elicitation_handler(self, handler: ElicitationHandler | None, *, interactive: bool = False) -> None:
        """Answer ``elicitation/create`` (form and URL mode); ``None`` unregisters.

        The handler gets :class:`~fastapi_mrtr.wire.mrtr.ElicitRequestParams` and returns an
        :class:`~fastapi_mrtr.wire.mrtr.ElicitResult` or its dict. Declares
        ``{"elicitation": {"form": {}, "url": {}}}``. ``interactive=True``: the handler talks to
        a person, so it takes turns with the other interactive handlers (one at a time, in the
        order the server listed the requests) instead of running beside them.
        """
        self._handlers.elicitation = handler
        self._mark_interactive(ELICITATION_CREATE, interactive)

    def set_sampling_handler(self, handler: SamplingHandler | None, *, interactive: bool = False) -> None:
        """Answer ``sampling/createMessage``; declares ``{"sampling": {}}``. Deprecated in the spec.

        ``interactive``: as for :meth:`set_elicitation_handler` (a person types the model's reply).
        """
        warnings.warn(
            "sampling is deprecated in MCP 2026-07-28; the handler still works",
            DeprecationWarning,
            stacklevel=2,
        )
        self._handlers.sampling = handler
        self._mark_interactive(SAMPLING_CREATE_MESSAGE, interactive)

    def set_roots_handler(self, handler: RootsHandler | None, *, interactive: bool = False) -> None:
        """Answer ``roots/list`` (a no-argument callable); declares ``{"roots": {}}``. Deprecated.

        ``interactive``: as for :meth:`set_elicitation_handler` (only if it asks a person).
        """
        warnings.warn(
            "roots are deprecated in MCP 2026-07-28; the handler still works",
            DeprecationWarning,
            stacklevel=2,
        )
        self._handlers.roots = handler
        self._mark_interactive(ROOTS_LIST, interactive)

    def _mark_interactive(self, method: str, interactive: bool) -> None:
        if interactive:
            self._handlers.interactive.add(method)
        else:
            self._handlers.interactive.discard(method)

    @property
    def capabilities(self) -> JSONObject:
        """The ``clientCapabilities`` sent on every request."""
        return self._handlers.capabilities()

    @property
    def protocol_version(self) -> str:
        """The version in use: the modern one (it changes only if the server rejects ours and
        offers another), or in a 2025-era session the one ``initialize`` negotiated."""
        if self._era == "legacy" and self._legacy.protocol_version is not None:
            return self._legacy.protocol_version
        return self._protocol_version

    @property
    def era(self) -> Era | None:
        """``"2026-07-28"`` or ``"legacy"`` once known (see :meth:`connect`); ``None`` before."""
        return self._era

    @property
    def server_info(self) -> Implementation | None:
        """The ``serverInfo`` of a 2025-era session's ``initialize``; ``None`` on the modern wire
        (ask :meth:`discover` there)."""
        return self._legacy.server_info if self._era == "legacy" else None

    async def connect(self) -> Era:
        """Find the server's era now (any first request does it otherwise) and return it.

        ``mode="auto"`` sends one ``server/discover``: a result, or a modern error, means the
        2026-07-28 wire; any other reply (a 2025-era server answers it with an HTTP 400, or a
        ``Method not found``) means a 2025-era server, which then gets ``initialize``. Network
        errors and an HTTP 401 or 403 are raised, not taken for an era.
        """
        await self._ensure_era()
        assert self._era is not None
        return self._era

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
        await self._ensure_era()
        self._log_level = level
        if self._era != "legacy":
            return True
        if level is None or "logging" not in self._legacy.server_capabilities:
            return False
        await self._request("logging/setLevel", {"level": level}, None, None)
        return True

    # --- methods without MRTR --------------------------------------------------------------

    async def discover(self) -> DiscoverResult:
        """``server/discover``: supported versions, capabilities, ``serverInfo`` in ``_meta``."""
        return await self._simple("server/discover", {}, DiscoverResult)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of ``tools/list``, minus tools with invalid ``x-mcp-header`` annotations."""
        page = await self._simple("tools/list", _cursor(cursor), ListToolsResult)
        page.tools = [tool for tool in page.tools if self._learn_tool(tool, page.ttl_ms)]
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
        return await self._simple("prompts/list", _cursor(cursor), ListPromptsResult)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._simple("resources/list", _cursor(cursor), ListResourcesResult)

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        return await self._simple("resources/templates/list", _cursor(cursor), ListResourceTemplatesResult)

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
    ) -> CallToolResult | InputRequiredResult:
        """``tools/call``. With ``auto_fulfill`` (the default) the MRTR loop runs to a complete
        :class:`CallToolResult`; without it an :class:`InputRequiredResult` comes back as is and
        you retry with ``input_responses`` and ``request_state`` yourself.

        Raises :class:`~fastapi_mrtr.client.InvalidStructuredContentError` for a complete result that
        breaks the tool's ``outputSchema`` (unless ``validate_structured_content=False``)."""
        if name in self._invalid_tools:
            raise InvalidToolHeadersError(f"tool {name!r} must not be called: {self._invalid_tools[name]}")
        params: JSONObject = {"name": name, "arguments": dict(arguments or {})}
        result = await self._flow(
            "tools/call", params, CallToolResult, input_responses, request_state, progress_callback, meta
        )
        if isinstance(result, CallToolResult) and self.validate_structured_content:
            await self._check_structured_content(name, result)
        return result

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
            "prompts/get", params, GetPromptResult, input_responses, request_state, progress_callback, meta
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
            "resources/read", {"uri": uri}, ReadResourceResult, input_responses, request_state, progress_callback, meta
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
        model: type[R],
        input_responses: Mapping[str, InputAnswer] | None,
        request_state: str | None,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> R | InputRequiredResult:
        await self._ensure_era()
        if self._era == "legacy" and (input_responses or request_state is not None):
            raise ValueError(
                "input_responses and request_state belong to the 2026-07-28 wire; this server speaks a "
                "2025-era session, where the registered handlers answer its questions during the call"
            )

        async def send(answers: InputResponses | None, state: str | None) -> R | InputRequiredResult:
            # The original params every time; only the MRTR fields change between rounds.
            round_params = dict(params)
            if answers:
                round_params["inputResponses"] = answers
            if state is not None:
                round_params["requestState"] = state
            raw = await self._send_round(method, round_params, progress_callback, meta)
            return parse_result(raw, model, method)

        loop: InputRequiredLoop[R] = InputRequiredLoop(
            send, self._handlers, self.options.input_required_config, self.options.state_only_backoff
        )
        return await loop.run(_seed(input_responses), request_state)

    async def _send_round(
        self,
        method: str,
        params: JSONObject,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        if method != "tools/call" or not self.options.mirror_param_headers or self._era == "legacy":
            return await self._request(method, params, progress_callback, meta)
        for attempt in range(2):
            extra = param_headers(self._tool_headers.get(params["name"], ()), params.get("arguments"))
            try:
                return await self._request(method, params, progress_callback, meta, extra)
            except McpServerError as exc:
                # Our header cache may be stale (or empty): re-learn the tools once and resend.
                # Safe: a header mismatch is rejected before the tool runs.
                if attempt or exc.code != HEADER_MISMATCH:
                    raise
                await self.list_all_tools()
        raise AssertionError("unreachable")  # pragma: no cover

    def _new_id(self) -> int:
        return next(self._ids)

    async def _ensure_era(self) -> None:
        if self._era == "2026-07-28":
            return
        if self._era == "legacy":
            await self._legacy.initialize()
            return
        async with self._era_lock:
            if self._era is None:
                era = await self._probe()
                if era == "legacy":
                    await self._legacy.initialize()
                self._era = era

    async def _probe(self) -> Era:
        """``server/discover`` on the modern wire; which era its reply shows (versioning.mdx)."""
        try:
            raw = await self._modern_request("server/discover", {}, None, None)
        except McpServerError as exc:
            if exc.code in _MODERN_ERRORS:
                raise  # a modern server refusing us: falling back would hide the real problem
            logger.info("server/discover answered %s %s: a 2025-era server", exc.code, exc.message)
            return "legacy"
        except StatusCodeError as exc:
            if exc.status_code in (401, 403):
                raise
            logger.info("server/discover answered HTTP %s: a 2025-era server", exc.status_code)
            return "legacy"
        except (InvalidServerResponseError, StreamClosedError) as exc:
            logger.info("server/discover got no modern reply (%s): a 2025-era server", exc)
            return "legacy"
        versions = raw.get("supportedVersions")
        if not isinstance(versions, list):
            # A 2025-era server may answer an unknown method with an empty result: no discovery.
            logger.info("server/discover answered without supportedVersions: a 2025-era server")
            return "legacy"
        if self._protocol_version not in versions:
            shared = [version for version in SUPPORTED_PROTOCOL_VERSIONS if version in versions]
            if not shared:
                logger.info("server/discover lists %s, none of them ours: a 2025-era session", versions)
                return "legacy"
            self._protocol_version = shared[0]
        return "2026-07-28"

    async def _request(
        self,
        method: str,
        params: JSONObject,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> JSONObject:
        await self._ensure_era()
        if self._era == "legacy":
            return await self._legacy_request(method, params, progress_callback, meta)
        return await self._modern_request(method, params, progress_callback, meta, extra_headers)

    async def _legacy_request(
        self,
        method: str,
        params: JSONObject,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        progress = progress_callback or self._on_progress
        # No protocol keys in a 2025-era _meta: the session carries them. A progress token may
        # repeat across calls there, so it is unique per request all the same.
        token = f"mrtr-progress-{self._new_id()}" if progress is not None else None
        request_meta: JSONObject = dict(meta or {})
        if token is not None:
            request_meta["progressToken"] = token
        sent = {**params, "_meta": request_meta} if request_meta else dict(params)
        return await self._legacy.request(method, sent, self._sink(token, progress))

    async def _modern_request(
        self,
        method: str,
        params: JSONObject,
        progress_callback: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> JSONObject:
        progress = progress_callback or self._on_progress
        for attempt in range(2):
            request_id = next(self._ids)
            token = f"mrtr-progress-{request_id}" if progress is not None else None
            message: JSONObject = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                "params": {**params, "_meta": self._meta(meta, token)},
            }
            headers = {**self._headers, **standard_headers(self._protocol_version, method, params)}
            headers.update(extra_headers or {})
            try:
                return await self._rpc.request(message, headers, self._sink(token, progress))
            except McpServerError as exc:
                if attempt or exc.code != UNSUPPORTED_PROTOCOL_VERSION or not self._adopt_version(exc.data):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _meta(self, extra: Mapping[str, Any] | None, progress_token: str | None) -> JSONObject:
        meta: JSONObject = dict(extra or {})
        # The protocol keys always win: they must agree with the headers we send.
        meta[META_PROTOCOL_VERSION] = self._protocol_version
        meta[META_CLIENT_INFO] = dump(self.options.client_info)
        meta[META_CLIENT_CAPABILITIES] = self._handlers.capabilities()
        if self._log_level is not None:
            meta.setdefault(META_LOG_LEVEL, self._log_level)
        if progress_token is not None:
            meta["progressToken"] = progress_token
        return meta

    def _sink(self, token: str | None, progress: ProgressCallback | None) -> NotificationSink | None:
        if progress is None and self._on_notification is None:
            return None

        async def sink(message: JSONObject) -> None:
            # A server's malformed notification must not fail the request it rides on.
            notification = _notification(message)
            if notification is None:
                logger.warning("dropping malformed notification %.200r", message)
                return
            params = notification.params
            is_ours = params is not None and token is not None and params.get("progressToken") == token
            if notification.method == "notifications/progress" and is_ours and progress is not None:
                try:
                    note = ProgressNotification.model_validate(params)
                except ValidationError:
                    logger.warning("dropping malformed progress notification %r", params)
                    return
                await call_back(progress, note)
            elif self._on_notification is not None:
                await call_back(self._on_notification, notification)

        return sink

    def _adopt_version(self, data: Any) -> bool:
        """After -32022, switch to a version both sides support; False if there is none."""
        supported = data.get("supported") if isinstance(data, dict) else None
        if not isinstance(supported, list):
            return False
        for candidate in (self.options.protocol_version, *SUPPORTED_PROTOCOL_VERSIONS):
            if candidate in supported:
                self._protocol_version = candidate
                return True
        return False

    def _learn_tool(self, tool: Tool, ttl_ms: int) -> bool:
        self._unlisted.discard(tool.name)
        try:
            self._tool_headers[tool.name] = scan_param_headers(tool.input_schema)
        except InvalidToolHeadersError as exc:
            logger.warning("excluding tool %r from tools/list: %s", tool.name, exc)
            self._tool_headers.pop(tool.name, None)
            self._output_schemas.forget(tool.name)
            self._invalid_tools[tool.name] = str(exc)
            return False
        self._invalid_tools.pop(tool.name, None)
        self._output_schemas.learn(tool, ttl_ms)
        return True

    async def _check_structured_content(self, name: str, result: CallToolResult) -> None:
        """Raise if ``result`` breaks the tool's ``outputSchema``.

        A tool never listed is listed lazily (once per name); one whose listing outlived its
        ``ttlMs`` is listed again before a result that breaks the cached schema is refused,
        since the server may have changed the schema since.
        """
        if result.is_error:
            return  # a tool error need not fit the schema (and skipping spares the lazy listing)
        if not self._output_schemas.knows(name) and name not in self._unlisted and not await self._list_for(name):
            return
        error = self._output_schemas.check(name, result)
        if error is not None and self._output_schemas.is_stale(name) and await self._list_for(name):
            error = self._output_schemas.check(name, result)
        if error is not None:
            raise error

    async def _list_for(self, name: str) -> bool:
        """List every tool to learn ``name``'s schema; False (and a logged warning) if that fails
        or the server does not list it: its results then go unchecked rather than unreturned."""
        try:
            await self.list_all_tools()
        except (McpError, MrtrClientError, httpx.HTTPError) as exc:
            logger.warning("cannot check the structuredContent of tool %r: tools/list failed: %s", name, exc)
            return False
        if not self._output_schemas.knows(name):
            self._unlisted.add(name)
            logger.warning("tool %r is not in tools/list, so its structuredContent is not checked", name)
            return False
        return True


def _notification(message: JSONObject) -> JSONRPCNotification | None:
    """A streamed notification, or ``None`` for a malformed one (no ``"jsonrpc": "2.0"``, a
    method that is no string, params that are no object). The model defaults ``jsonrpc``, so
    its absence is checked here."""
    if message.get("jsonrpc") != "2.0":
        return None
    try:
        return JSONRPCNotification.model_validate(message)
    except ValidationError:
        return None


def _cursor(cursor: str | None) -> JSONObject:
    return {"cursor": cursor} if cursor is not None else {}


def _seed(answers: Mapping[str, InputAnswer] | None) -> InputResponses | None:
    """Caller-supplied answers as bare results (models are dumped; dicts go as given)."""
    if not answers:
        return None
    seeded: InputResponses = {}
    for key, answer in answers.items():
        if isinstance(answer, ElicitResult):
            seeded[key] = make_input_response_from_elicit_result(answer)
        elif isinstance(answer, CreateMessageResult):
            seeded[key] = make_input_response_from_create_message_result(answer)
        elif isinstance(answer, ListRootsResult):
            seeded[key] = make_input_response_from_list_roots_result(answer)
        else:
            seeded[key] = dict(answer)
    return seeded


def parse_result(raw: JSONObject, model: type[R], method: str) -> R | InputRequiredResult:
    """Type a result by its ``resultType``: missing means complete, unknown is invalid."""
    kind = raw.get("resultType", "complete")
    target: type[BaseModel]
    if kind == "complete":
        target = model
    elif kind == "input_required" and method in INPUT_REQUIRED_METHODS:
        target = InputRequiredResult
    else:
        raise InvalidServerResponseError(f"resultType {kind!r} is not valid for {method}", raw)
    # The model defaults `content` for building results; on the wire a complete tools/call
    # result must carry it (spec-notes 4.2), so its absence is a broken reply, not "no content".
    if method == "tools/call" and target is model and "content" not in raw:
        raise InvalidServerResponseError("tools/call result without content", raw)
    try:
        parsed = target.model_validate(raw)
    except ValidationError as exc:
        raise InvalidServerResponseError(f"malformed {method} result: {exc}", raw) from exc
    if isinstance(parsed, InputRequiredResult):
        if not parsed.input_requests and parsed.request_state is None:
            raise InvalidServerResponseError("input_required without inputRequests or requestState", raw)
        return parsed
    assert isinstance(parsed, model)
    return parsed
