"""``MCP``: the single entry point that turns a FastAPI app's path functions into MCP tools.

    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="bookshop", version="1.0.0"))

    @mcp.tool()
    @app.get("/books/{book_id}")
    async def get_book(book_id: int) -> Book: ...

    app.mount("/mcp", mcp)

``MCP`` is itself the ASGI app of the endpoint; it needs no lifespan of its own (Starlette does not
run a mounted app's lifespan, so nothing here depends on one).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fastapi import FastAPI
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from ..protocol import PROTOCOL_VERSION, JSONObject, ToolAnnotations
from .endpoint import Handler, RpcEndpoint, RpcRequest, StreamHandler
from .flow import FlowSealer, key_ring
from .middleware import MrtrMiddleware
from .options import ServerOptions
from .tool_methods import ToolMethods, ToolRegistry
from .tools import ToolSpec, validate_tool_name

logger = logging.getLogger("fastapi_mrtr")

F = TypeVar("F", bound=Callable[..., Any])
STATE_KEY_ENV = "MRTR_STATE_KEY"


def _options_with_env_key(options: ServerOptions) -> ServerOptions:
    """``MRTR_STATE_KEY`` (comma-separated for rotation, sealing key first) when no key is set."""
    if options.request_state_key is not None:
        return options
    raw = os.environ.get(STATE_KEY_ENV, "").strip()
    if not raw:
        return options
    keys = [k.strip() for k in raw.split(",") if k.strip()]
    from dataclasses import replace

    return replace(options, request_state_key=keys if len(keys) > 1 else keys[0])


class MCP:
    """An MCP endpoint (2026-07-28, stateless Streamable HTTP) serving a FastAPI app's routes."""

    def __init__(self, app: FastAPI, *, options: ServerOptions | None = None) -> None:
        self.app = app
        self.options = _options_with_env_key(options or ServerOptions())
        keys = key_ring(self.options)
        if keys.is_ephemeral:
            _warn_if_several_workers()
        self.sealer = FlowSealer(self.options, keys)
        self.registry = ToolRegistry(app)
        self._tools = ToolMethods(app, self.registry, self.sealer, self.options)
        self._methods: dict[str, Handler] = {
            "server/discover": self._discover,
            "tools/list": self._tools.list_tools,
            "tools/call": self._tools.call_tool,
        }
        self._streams: dict[str, StreamHandler] = {}
        self._capabilities: JSONObject = {"tools": {}}
        self._mount_path: str | None = None
        self._endpoint = RpcEndpoint(self.options, lambda: self._methods, lambda: self._streams)
        app.add_middleware(MrtrMiddleware, server=self)

    # --- registration -----------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Expose a FastAPI path function as an MCP tool. Put it above ``@app.get(...)`` & co.

        ``name`` defaults to the function's name; ``description`` to its docstring. Annotations
        default from the HTTP method (GET: read-only and idempotent, PUT: idempotent, DELETE:
        destructive); the ones given here override them.
        """
        if annotations is not None and not isinstance(annotations, ToolAnnotations):
            annotations = ToolAnnotations.model_validate(dict(annotations))

        def register(endpoint: F) -> F:
            spec = ToolSpec(
                endpoint=endpoint,
                name=validate_tool_name(name or endpoint.__name__),
                title=title,
                description=description,
                annotations=annotations,
            )
            self.registry.add(spec)
            return endpoint

        return register

    def add_method(self, method: str, handler: Handler, capability: tuple[str, JSONObject] | None = None) -> None:
        """Serve another JSON-RPC method (used by prompts, resources and extensions)."""
        self._methods[method] = handler
        if capability is not None:
            self._capabilities.setdefault(capability[0], {}).update(capability[1])

    def add_stream(self, method: str, handler: StreamHandler) -> None:
        """Serve a method that answers with its own response stream (``subscriptions/listen``)."""
        self._streams[method] = handler

    # --- serving ----------------------------------------------------------------------------

    @property
    def mount_path(self) -> str | None:
        """Where the host app mounted this endpoint (found on first use)."""
        if self._mount_path is None:
            for route in self.app.router.routes:
                if isinstance(route, Mount) and route.app is self:
                    self._mount_path = route.path.rstrip("/")
        return self._mount_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._endpoint(scope, receive, send)

    async def _discover(self, rpc: RpcRequest) -> JSONObject:
        result: JSONObject = {
            "resultType": "complete",
            "supportedVersions": [PROTOCOL_VERSION],
            "capabilities": self._capabilities,
            "ttlMs": self.options.cache_ttl_ms,
            "cacheScope": self.options.cache_scope,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        return result


def _warn_if_several_workers() -> None:
    """An ephemeral key only works in one process: say so loudly where we can tell there are more."""
    under_gunicorn = "gunicorn" in os.environ.get("SERVER_SOFTWARE", "")
    spawned_worker = multiprocessing.parent_process() is not None
    if under_gunicorn or spawned_worker:
        logger.error(
            "fastapi-mrtr: this process looks like one of several workers (%s) and has no shared "
            "request_state_key: MRTR rounds served by another worker will be refused. Set "
            "ServerOptions(request_state_key=...) or the %s environment variable.",
            "gunicorn" if under_gunicorn else "a spawned worker process",
            STATE_KEY_ENV,
        )
