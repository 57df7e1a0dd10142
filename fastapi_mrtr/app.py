"""``MCP``: the single entry point that turns a FastAPI app's path functions into MCP tools.

    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="bookshop", version="1.0.0"))

    @mcp.tool()
    @app.get("/books/{book_id}")
    async def get_book(book_id: int) -> Book: ...

    app.mount("/mcp", mcp)

``MCP`` is itself the ASGI app of the endpoint. Starlette does not run a mounted app's lifespan:
the plugin's middleware on the host app calls :meth:`MCP.start` at the host's startup (the relay
listens, and notifications published before the first MCP request reach other replicas) and
:meth:`MCP.aclose` at its shutdown; without a lifespan, the first request starts them.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from fastapi import FastAPI
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from fastapi_mrtr.auth.principal import with_verified_principal
from fastapi_mrtr.auth.resource_server import OAuthResourceServer
from fastapi_mrtr.engine.flow import StateGuard, key_ring
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.static_questions import check_static_questions
from fastapi_mrtr.engine.task_config import TaskConfig, TaskMode, task_config
from fastapi_mrtr.features.completions import CompletionRegistry
from fastapi_mrtr.features.prompts import PromptMethods, PromptRegistry
from fastapi_mrtr.features.resources import ResourceMethods, ResourceRegistry
from fastapi_mrtr.features.subscriptions import (
    PROMPTS_LIST_CHANGED,
    RESOURCE_UPDATED,
    RESOURCES_LIST_CHANGED,
    TOOLS_LIST_CHANGED,
    SubscriptionHub,
)
from fastapi_mrtr.integration.call_runner import CallRunner
from fastapi_mrtr.integration.middleware import MrtrMiddleware
from fastapi_mrtr.integration.tool_methods import ToolMethods, ToolRegistry
from fastapi_mrtr.integration.tools import ToolSpec, validate_tool_name
from fastapi_mrtr.integration.workers import several_processes_hint
from fastapi_mrtr.playground import Playground
from fastapi_mrtr.tasks.legs import TaskLegs
from fastapi_mrtr.tasks.memory_store import InMemoryTaskStore
from fastapi_mrtr.tasks.methods import TaskMethods
from fastapi_mrtr.tasks.store import TaskStore
from fastapi_mrtr.tasks.tool_calls import TaskToolCalls
from fastapi_mrtr.transport.endpoint import Handler, RpcEndpoint, StreamHandler
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.protocol import PROTOCOL_VERSION, JSONObject, ToolAnnotations
from fastapi_mrtr.wire.tasks import TASKS_CANCEL, TASKS_EXTENSION, TASKS_GET, TASKS_UPDATE

if TYPE_CHECKING:
    from fastapi_mrtr.state.redis_relay import RedisRelay

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

    def __init__(
        self,
        app: FastAPI,
        *,
        options: ServerOptions | None = None,
        auth: OAuthResourceServer | None = None,
        task_store: TaskStore | None = None,
    ) -> None:
        self.app = app
        self.options = _options_with_env_key(options or ServerOptions())
        if auth is not None:  # requestState and sessions bind to the verified caller (docs/oauth.md)
            self.options = with_verified_principal(self.options)
        keys = key_ring(self.options)
        if keys.is_ephemeral:
            _warn_if_several_workers()
        self.state_guard = StateGuard(self.options, keys)
        self.registry = ToolRegistry(app)
        self.call_runner = CallRunner(app, self.options.forward_headers)  # how a tool call runs
        self._tools = ToolMethods(self.registry, self.state_guard, self.options, self.call_runner)
        self._methods: dict[str, Handler] = {
            "server/discover": self._discover,
            "tools/list": self._tools.list_tools,
            "tools/call": self._tools.call_tool,
        }
        self._streams: dict[str, StreamHandler] = {}
        # Tasks (docs/tasks.md): served once a tool is declared with task=...; the store is kept here.
        self.task_store: TaskStore = task_store if task_store is not None else InMemoryTaskStore()
        self._task_legs: TaskLegs | None = None
        self._capabilities: JSONObject = {"tools": self._list_changed({})}
        self._mount_path: str | None = None
        if self.options.relay is not None:
            self.options.relay.serve(self.options.name)  # its channels carry the server's name
        self._warned_unmounted = False
        self._endpoint = RpcEndpoint(
            self.options, lambda: self._methods, lambda: self._streams, lambda: self._capabilities, keys
        )
        self._loop: asyncio.AbstractEventLoop | None = None  # the serving loop, seen on the first request
        self.prompts = PromptRegistry()
        self.resources = ResourceRegistry()
        self.completions = CompletionRegistry(self.prompts, self.resources)
        self.subscriptions = SubscriptionHub(
            self._capabilities,
            self._endpoint.server_info,
            max_streams=self.options.subscription_max_streams,
            max_streams_per_caller=self.options.subscription_max_streams_per_caller,
            max_seconds=self.options.subscription_max_seconds,
            keepalive_seconds=self.options.subscription_keepalive_seconds,
        )
        if self.options.subscriptions:
            self.add_stream("subscriptions/listen", self.subscriptions.listen)
        # The playground page (docs/playground.md): on by default wherever the app serves /docs.
        on = self.options.playground if self.options.playground is not None else app.docs_url is not None
        self._playground = Playground(auth) if on else None  # with auth: its "Sign in"
        # An OAuth resource server (docs/oauth.md): its metadata routes, and a check before the endpoint.
        self._auth = auth
        self._guard = (
            auth.attach(app, self.registry, self.prompts, self.resources, self.options.max_body_bytes)
            if auth is not None
            else None
        )
        app.add_middleware(MrtrMiddleware, server=self)

    # --- registration -----------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        task: TaskMode | TaskConfig | None = None,
    ) -> Callable[[F], F]:
        """Expose a FastAPI path function as an MCP tool. Put it above ``@app.get(...)`` & co.

        ``name`` defaults to the function's name; ``description`` to its docstring. Annotations
        default from the HTTP method (GET: read-only and idempotent, PUT: idempotent, DELETE:
        destructive); the ones given here override them. ``input_schema`` replaces the generated
        input schema in ``tools/list`` (for JSON Schema keywords Pydantic cannot express); the
        arguments still reach the route by name and FastAPI still validates them.

        ``task`` (``"optional"``, ``"required"`` or a ``TaskConfig``) lets a call that outlives its
        promotion deadline become a task (SEP-2663) for a client that declared the extension; see
        docs/tasks.md.
        """
        config = task_config(task)
        if annotations is not None and not isinstance(annotations, ToolAnnotations):
            annotations = ToolAnnotations.model_validate(dict(annotations))

        def register(endpoint: F) -> F:
            check_static_questions(endpoint)  # a form type no client can fill fails at import
            spec = ToolSpec(
                endpoint=endpoint,
                name=validate_tool_name(endpoint.__name__ if name is None else name),
                title=title,
                description=description,
                annotations=annotations,
                input_schema=dict(input_schema) if input_schema is not None else None,
                task=config,
            )
            self.registry.add(spec)
            if config is not None:
                self._serve_tasks()
            self.notify_tools_changed()
            return endpoint

        return register

    def _serve_tasks(self) -> None:
        """Serve the tasks extension (once): tools/call that may promote, tasks/*, the capability."""
        if self._task_legs is not None:
            return
        self._task_legs = TaskLegs(
            self.task_store, lease_seconds=self.options.task_lease_seconds, relay=self.options.relay
        )
        calls = TaskToolCalls(self._tools, self._task_legs, self.options)
        methods = TaskMethods(self._tools, self._task_legs, self.options)
        self._methods["tools/call"] = calls.call_tool
        self.add_method(TASKS_GET, methods.get)
        self.add_method(TASKS_UPDATE, methods.update)
        self.add_method(TASKS_CANCEL, methods.cancel)
        self._capabilities.setdefault("extensions", {})[TASKS_EXTENSION] = {}

    def prompt(
        self, name: str | None = None, *, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Expose a plain function as an MCP prompt; its parameters are the prompt's arguments.

        ``name`` defaults to the function's name, ``description`` to its docstring. See
        docs/prompts-and-resources.md for what the function may take and return.
        """
        _refuse_bare_decorator("prompt", name)

        def register(fn: F) -> F:
            check_static_questions(fn)
            self.prompts.add(fn, name, title, description)
            if "prompts/get" not in self._methods:
                methods = PromptMethods(self.prompts, self.state_guard, self.options)
                self.add_method("prompts/list", methods.list_prompts, ("prompts", self._list_changed({})))
                self.add_method("prompts/get", methods.get_prompt)
            self.notify_prompts_changed()
            return fn

        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
    ) -> Callable[[F], F]:
        """Expose a plain function as an MCP resource, or a resource template when ``uri`` has ``{name}``.

        ``ttl_ms``/``cache_scope`` override the server's caching hints on this resource's reads.
        """
        _refuse_bare_decorator("resource", uri)

        def register(fn: F) -> F:
            check_static_questions(fn)
            self.resources.add(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
            )
            if "resources/read" not in self._methods:
                methods = ResourceMethods(self.resources, self.state_guard, self.options)
                capability = self._list_changed({"subscribe": True} if self.options.subscriptions else {})
                self.add_method("resources/list", methods.list_resources, ("resources", capability))
                self.add_method("resources/templates/list", methods.list_templates)
                self.add_method("resources/read", methods.read_resource)
            self.notify_resources_changed()
            return fn

        return register

    def completion(self, *, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
        """Complete ``argument`` of a prompt (``prompt=name``) or resource template (``resource=template``)."""

        def register(fn: F) -> F:
            self.completions.add(fn, prompt=prompt, resource=resource, argument=argument)
            if "completion/complete" not in self._methods:
                self.add_method("completion/complete", self.completions.complete, ("completions", {}))
            return fn

        return register

    # --- notifications on subscriptions/listen streams ------------------------------------------

    def notify_tools_changed(self) -> None:
        """Tell listening clients that the tool list changed (``notifications/tools/list_changed``)."""
        self._publish(TOOLS_LIST_CHANGED)

    def notify_prompts_changed(self) -> None:
        """Tell listening clients that the prompt list changed."""
        self._publish(PROMPTS_LIST_CHANGED)

    def notify_resources_changed(self) -> None:
        """Tell listening clients that the resource list changed."""
        self._publish(RESOURCES_LIST_CHANGED)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell clients subscribed to ``uri`` that it changed (``notifications/resources/updated``)."""
        self._publish(RESOURCE_UPDATED, {"uri": uri})

    def _publish(self, method: str, params: JSONObject | None = None) -> None:
        """To listeners here and, through the relay, on every other replica."""
        self._publish_here(method, params)
        relay, loop = self.options.relay, self._loop
        if relay is not None and loop is not None and not loop.is_closed():
            message = {"t": "notify", "method": method, "params": dict(params or {})}
            loop.call_soon_threadsafe(lambda: loop.create_task(_broadcast(relay, message)))

    def _publish_here(self, method: str, params: JSONObject | None = None) -> None:
        """To modern listeners (``subscriptions/listen``) and 2025-era sessions (their GET stream)."""
        self.subscriptions.publish(method, params)
        if self._endpoint.legacy is not None:
            self._endpoint.legacy.publish(method, params)

    def _on_relay_message(self, message: JSONObject) -> None:
        """A message from another replica: a notification to pass on, or something of a session."""
        if message.get("t") == "notify":
            params = message.get("params")
            self._publish_here(str(message.get("method")), params if isinstance(params, dict) else None)
        elif self._task_legs is not None and self._task_legs.on_relay_message(message):
            return  # a task's cancel, for the leg running here
        elif self._endpoint.legacy is not None:
            self._endpoint.legacy.on_relay_message(message)

    def _list_changed(self, capability: JSONObject) -> JSONObject:
        return {**capability, "listChanged": True} if self.options.subscriptions else capability

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
            if self._mount_path is None and not self._warned_unmounted:
                self._warned_unmounted = True  # read on the app's first request: say it once
                if not _mounted_within(self.app.router.routes, self):
                    logger.warning(
                        "fastapi-mrtr: an MCP endpoint was created for this app but is mounted nowhere in it, so "
                        'MCP clients get 404: add app.mount("/mcp", mcp) after creating it (see docs/api.md)'
                    )
        return self._mount_path

    def start(self) -> None:
        """Take the running loop as the serving loop and start listening on the relay (idempotent;
        the app's startup calls it, else the first request)."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        legacy = self._endpoint.legacy
        if legacy is not None:
            legacy.start(self._loop)
        if self.options.relay is not None:
            on_reconnect = legacy.on_relay_reconnect if legacy is not None else None
            self.options.relay.start(self._on_relay_message, on_reconnect)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._loop is None and scope["type"] == "http":
            self.start()
        if self._playground is not None and self._playground.serves(scope):  # before any era's GET
            await self._playground(scope, receive, send)
            return
        if self._guard is not None:
            await self._guard(scope, receive, send, self._endpoint)
            return
        await self._endpoint(scope, receive, send)

    async def aclose(self) -> None:
        """End this process's 2025-era calls and close the relay (the app's shutdown calls this)."""
        if self._endpoint.legacy is not None:
            await self._endpoint.legacy.aclose()
        if self._task_legs is not None:
            await self._task_legs.aclose()  # before the store closes: stopped legs give their leases back
        close_store = getattr(self.task_store, "aclose", None)
        if close_store is not None:  # e.g. RedisTaskStore's own client
            await close_store()
        if self._auth is not None:
            await self._auth.aclose()
        if self.options.relay is not None:
            try:
                await self.options.relay.aclose()
            except Exception as exc:  # shutting down: say so, and go on
                logger.warning("could not close the relay: %s", exc)

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


async def _broadcast(relay: RedisRelay, message: JSONObject) -> None:
    try:
        await relay.broadcast(message)
    except Exception as exc:  # Redis down: this replica's listeners got it; the others miss it
        logger.warning("could not relay a notification to the other replicas: %s", exc)


def _mounted_within(routes: Any, endpoint: object, depth: int = 0) -> bool:
    """Whether ``endpoint`` is mounted anywhere below ``routes`` (in a sub-application or router)."""
    for route in routes if depth < 8 else ():
        if isinstance(route, Mount):
            if route.app is endpoint:
                return True
            inner = getattr(route.app, "routes", None) or getattr(getattr(route.app, "router", None), "routes", None)
            if inner and _mounted_within(inner, endpoint, depth + 1):
                return True
    return False


def _refuse_bare_decorator(kind: str, first: object) -> None:
    if callable(first):
        raise TypeError(f"use @mcp.{kind}(...) with parentheses")


def _warn_if_several_workers() -> None:
    """An ephemeral key only works in one process: say so loudly where we can tell there are more."""
    reason = several_processes_hint()
    if reason is not None:
        logger.error(
            "fastapi-mrtr: this process may be one of several serving MCP (%s) and has no shared "
            "request_state_key: MRTR rounds served by another worker, replica or after a restart will "
            "be refused with invalid_request_state. Set ServerOptions(request_state_key=...) or the %s "
            "environment variable (see docs/deployment.md).",
            reason,
            STATE_KEY_ENV,
        )
