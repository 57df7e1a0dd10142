"""The ``initialize`` handshake of a 2025-era session, whatever carries it (HTTP or a stdio pipe)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi_mrtr.client._errors import InvalidServerResponseError
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.telemetry.client import client_request
from fastapi_mrtr.wire.protocol import LEGACY_PROTOCOL_VERSIONS, Implementation, JSONObject, dump

INITIALIZED: JSONObject = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize_params(options: ClientOptions, handlers: InputHandlers) -> JSONObject:
    return {
        "protocolVersion": options.legacy_protocol_version,
        "capabilities": handlers.capabilities(),
        "clientInfo": dump(options.client_info),
    }


def initialize_message(request_id: int, params: JSONObject, meta: Mapping[str, Any] | None) -> JSONObject:
    """The ``initialize`` request; ``meta`` (the trace context of its client span) goes in
    ``params._meta`` when there is one, and nothing changes without it."""
    if meta:
        params = {**params, "_meta": dict(meta)}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def traced_initialize(
    options: ClientOptions,
    params: JSONObject,
    url: str | None,
    send: Callable[[Mapping[str, Any] | None], Awaitable[dict[str, Any]]],
) -> Awaitable[dict[str, Any]]:
    """``send(meta)`` as the ``initialize`` client span (when traced), like any other request's."""
    return client_request(options.telemetry, "initialize", params, None, url, options.legacy_protocol_version, send)


@dataclass(frozen=True)
class ServerHello:
    """What the ``initialize`` result says: the version chosen and what the server said of itself."""

    protocol_version: str
    server_info: Implementation | None = None
    capabilities: JSONObject = field(default_factory=dict)
    instructions: str | None = None

    @classmethod
    def parse(cls, result: JSONObject) -> ServerHello:
        """Raises :class:`InvalidServerResponseError` for a version this client does not speak."""
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in LEGACY_PROTOCOL_VERSIONS:
            raise InvalidServerResponseError(
                f"the server chose protocol version {version!r}, which this client does not speak "
                f"(it speaks {', '.join(LEGACY_PROTOCOL_VERSIONS)})",
                result,
            )
        info = result.get("serverInfo")
        try:
            server_info = Implementation.model_validate(info) if isinstance(info, dict) else None
        except ValueError:
            server_info = None
        capabilities = result.get("capabilities")
        instructions = result.get("instructions")
        return cls(
            version,
            server_info,
            capabilities if isinstance(capabilities, dict) else {},
            instructions if isinstance(instructions, str) else None,
        )
