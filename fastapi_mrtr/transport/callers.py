"""Who a per-caller bound counts: never a credential the caller could simply invent.

Per-caller bounds (open 2025-era streams and waiting calls, ``subscriptions/listen`` streams)
stop one client from taking every slot. The ``Authorization`` header is not verified by this
plugin (the host app may or may not check it), so keying a bound on it would let a client mint
a new caller with every made-up header value. A bound therefore keys on the client's address
(behind a proxy, the address the ASGI server reports: run it with the proxy's forwarded headers
trusted, docs/deployment.md). ``verified_principal`` is the seam for an identity the server has
verified itself (OAuth, later): a caller with one is counted by it instead.
"""

from __future__ import annotations

import hashlib

from starlette.types import Scope


def caller_key(scope: Scope, verified_principal: str | None = None) -> str:
    """The name one caller's streams are counted under."""
    if verified_principal is not None:  # no token is kept: only its digest
        return "principal:" + hashlib.sha256(verified_principal.encode("utf-8")).hexdigest()
    client = scope.get("client")
    return f"address:{client[0] if client else 'unknown'}"
