"""The ``Mcp-Session-Id`` of a 2025-era session: what the session is, sealed, so any replica opens it.

A legacy session is small, fixed data: the negotiated version, the client's capabilities and
info, who opened it and when. The server seals it into the id it
hands out at ``initialize`` (AES-256-GCM, with the same key ring, key ids and rotation as
``requestState``: :mod:`fastapi_mrtr.state.sealing`), bound to this server's name (the
audience) and to the caller (the principal binding), valid for ``legacy_session_ttl`` seconds.
Any replica holding the key reads the session from the id alone; an id that was tampered with,
sealed for another server or caller, or has expired opens to nothing and the session is unknown
(404). What changes during a session cannot be sealed into an id handed out at its start: whether
it was ended (DELETE) and the log level it set; :mod:`~fastapi_mrtr.transport.legacy.cluster`
remembers those.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from fastapi_mrtr.state.sealing import (
    InvalidRequestStateError,
    RequestStateSealer,
    RequestStateTooLargeError,
    StateBinding,
    StateKeyRing,
)
from fastapi_mrtr.wire.protocol import JSONObject

SESSION_METHOD = "mcp/session"  # the binding's method: a session id never opens as a requestState
MAX_ID_BYTES = 4096  # well inside every proxy's header limit (nginx: 8 KB per header line)
CLIENT_INFO_ESSENTIALS = ("name", "version", "title")
OPENED_CACHE = 4096  # session ids whose opening this process remembers


@dataclass(frozen=True)
class SessionInfo:
    """What ``initialize`` negotiated; ``key`` names the session in stores and logs (not secret)."""

    key: str
    protocol_version: str
    client_capabilities: JSONObject
    client_info: JSONObject
    issued_at: int
    expires_at: int | None

    @property
    def primes_streams(self) -> bool:
        """Priming events (SEP-1699) are 2025-11-25: older clients may choke on an empty event."""
        return self.protocol_version >= "2025-11-25"


class SessionSealer:
    """Mints session ids at ``initialize`` and opens them on every later request of the session."""

    def __init__(self, keys: StateKeyRing, audience: str, ttl: float) -> None:
        self._audience = audience
        self._sealer = RequestStateSealer(keys, ttl=ttl, max_bytes=MAX_ID_BYTES)
        # Every request of a session presents the same id: remember what recent ids opened to
        # (for the same caller), so most requests skip the AES-GCM open. Expiry is still checked.
        self._opened: OrderedDict[tuple[str, str | None], SessionInfo] = OrderedDict()

    def mint(
        self, protocol_version: str, capabilities: JSONObject, client_info: JSONObject, principal: str | None
    ) -> tuple[str, SessionInfo]:
        """A new session's id and what it says. A client info too large for a header keeps its name,
        version and title only; capabilities too large fail with ``ValueError``."""
        data: dict[str, Any] = {"pv": protocol_version, "cc": capabilities, "ci": client_info}
        binding = self._binding(principal)
        try:
            token = self._sealer.seal(data, binding)
        except RequestStateTooLargeError:
            data["ci"] = {k: v for k, v in client_info.items() if k in CLIENT_INFO_ESSENTIALS}
            try:
                token = self._sealer.seal(data, binding)
            except RequestStateTooLargeError:
                raise ValueError("the client's capabilities are too large for a session id") from None
        info = self.open(token, principal)
        assert info is not None  # just sealed with the newest key
        return token, info

    def open(self, session_id: str, principal: str | None) -> SessionInfo | None:
        """The session ``session_id`` names, or None when it is not one this server sealed for this
        caller, or it has expired."""
        session_id = session_id.strip()
        cached = self._opened.get((session_id, principal))
        if cached is not None:
            if cached.expires_at is None or time.time() < cached.expires_at:
                self._opened.move_to_end((session_id, principal))
                return cached
            del self._opened[(session_id, principal)]
        info = self._open(session_id, principal)
        if info is not None:
            self._opened[(session_id, principal)] = info
            while len(self._opened) > OPENED_CACHE:
                self._opened.popitem(last=False)
        return info

    def _open(self, session_id: str, principal: str | None) -> SessionInfo | None:
        try:
            claims = self._sealer.open(session_id, self._binding(principal))
        except InvalidRequestStateError:
            return None
        data = claims.data
        version, capabilities, client_info = data.get("pv"), data.get("cc"), data.get("ci")
        if not isinstance(version, str) or not isinstance(capabilities, dict) or not isinstance(client_info, dict):
            return None
        return SessionInfo(
            key=claims.flow_id,
            protocol_version=version,
            client_capabilities=capabilities,
            client_info=client_info,
            issued_at=claims.issued_at,
            expires_at=claims.expires_at,
        )

    def _binding(self, principal: str | None) -> StateBinding:
        return StateBinding(
            method=SESSION_METHOD, target="", arguments_digest="", audience=self._audience, principal=principal
        )
