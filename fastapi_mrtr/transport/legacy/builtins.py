"""The methods a 2025-era session has that the modern handlers do not: ``ping``,
``logging/setLevel``, ``resources/subscribe`` and ``resources/unsubscribe``.

Subscriptions are bounded per session (``legacy_max_subscriptions`` URIs, each at most
``legacy_max_subscription_uri_length`` characters): past the count a subscribe is refused with
-32600, a longer URI with -32602. They live as long as the session (in Redis with the relay) and
go when it is DELETEd.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.shapes import Handler
from fastapi_mrtr.wire.errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from fastapi_mrtr.wire.protocol import LOG_LEVELS, JSONObject

Builtin = Callable[[SessionInfo, JSONObject], Awaitable[JSONObject]]


class SessionBuiltins:
    """The session's own methods, by name (``methods``)."""

    def __init__(
        self, options: ServerOptions, methods: Callable[[], Mapping[str, Handler]], cluster: SessionCluster
    ) -> None:
        self.options = options
        self._methods = methods
        self.cluster = cluster
        self.methods: dict[str, Builtin] = {
            "ping": self._ping,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
        }

    async def _ping(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        return {}

    async def _set_level(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        await self.cluster.set_level(info, level)
        return {}

    async def _subscribe(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        if not await self.cluster.subscribe(info, self._subscription_uri(params)):
            limit = self.options.legacy_max_subscriptions
            raise McpError(
                INVALID_REQUEST,
                f"Invalid request: this session holds {limit} resource subscriptions, the most it may; "
                "unsubscribe from one first",
            )
        return {}

    async def _unsubscribe(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        await self.cluster.unsubscribe(info, self._subscription_uri(params))
        return {}

    def _subscription_uri(self, params: JSONObject) -> str:
        if "resources/read" not in self._methods():
            raise McpError(METHOD_NOT_FOUND, "Method not found: this server has no resources")
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise McpError(INVALID_PARAMS, "Invalid params: uri is required")
        limit = self.options.legacy_max_subscription_uri_length
        if len(uri) > limit:
            raise McpError(INVALID_PARAMS, f"Invalid params: uri is longer than {limit} characters")
        return uri
