"""``initialize``: the request that opens a 2025-era session.

The session is sealed into its ``Mcp-Session-Id`` (:mod:`~fastapi_mrtr.transport.legacy.session_id`):
the version agreed, the client's capabilities and info, the caller's principal. No process stores
it. A malformed ``initialize`` is refused before any session exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.legacy.replies import invalid_params, invalid_request, rpc_message, valid_id
from fastapi_mrtr.transport.legacy.session_id import SessionSealer
from fastapi_mrtr.wire.protocol import LEGACY_PROTOCOL_VERSIONS, JSONObject


@dataclass(frozen=True)
class OpenedSession:
    """The answer to ``initialize``: its JSON-RPC response and the new session's id."""

    response: JSONObject
    session_id: str


class SessionOpener:
    """Answers ``initialize`` with a new sealed session, or refuses it."""

    def __init__(
        self,
        options: ServerOptions,
        ids: SessionSealer,
        capabilities: Callable[[], JSONObject],
        server_info: JSONObject,
    ) -> None:
        self.options = options
        self.ids = ids
        self._capabilities = capabilities
        self._server_info = server_info

    def open(self, message: JSONObject, principal: str | None) -> OpenedSession:
        request_id = message.get("id")
        if not valid_id(request_id):
            raise invalid_request("Invalid request: initialize needs an id")
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            raise invalid_params("initialize needs params.protocolVersion", request_id)
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or (client_info is not None and not isinstance(client_info, dict)):
            raise invalid_params("initialize needs params.capabilities (an object) and params.clientInfo", request_id)
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        try:
            session_id, _ = self.ids.mint(version, capabilities, client_info or {}, principal)
        except ValueError as exc:  # the sealed session would be too large
            raise invalid_params(str(exc), request_id) from None
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self._server_info,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        return OpenedSession(rpc_message(request_id, result=result), session_id)

    def server_capabilities(self) -> JSONObject:
        capabilities = {name: dict(value) for name, value in self._capabilities().items()}
        capabilities["logging"] = {}  # the session's own logging/setLevel (builtins)
        return capabilities
