"""The 401 and 403 answers of a protected endpoint: a Bearer challenge (RFC 6750 §3, RFC 9728 §5.1)
and a JSON-RPC error body echoing the request id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.types import Send

from fastapi_mrtr.wire.errors import INVALID_REQUEST

# RFC 6750 §3.1 error codes.
INVALID_TOKEN = "invalid_token"
INSUFFICIENT_SCOPE = "insufficient_scope"
INVALID_REQUEST_ERROR = "invalid_request"


def _quoted(value: str) -> str:
    # A quoted-string (RFC 9110 §5.6.4): backslash and double quote escaped, nothing else special.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(
    resource_metadata: str,
    scopes: Iterable[str] = (),
    error: str | None = None,
    description: str | None = None,
) -> str:
    """``Bearer error="...", error_description="...", scope="...", resource_metadata="..."``."""
    params: list[str] = []
    if error is not None:
        params.append(f"error={_quoted(error)}")
    if description:
        # error_description is limited to printable ASCII without " and \ (RFC 6750 §3).
        printable = "".join(c for c in description if " " <= c <= "~" and c not in '"\\')
        params.append(f"error_description={_quoted(printable)}")
    scope = " ".join(sorted(set(scopes)))
    if scope:
        params.append(f"scope={_quoted(scope)}")
    params.append(f"resource_metadata={_quoted(resource_metadata)}")
    return "Bearer " + ", ".join(params)


async def send_challenge(
    send: Send,
    status: int,
    challenge: str,
    message: str,
    request_id: Any = None,
    data: dict[str, Any] | None = None,
) -> None:
    """The whole answer: status, ``WWW-Authenticate`` and a JSON-RPC error naming what is wanted."""
    error: dict[str, Any] = {"code": INVALID_REQUEST, "message": message}
    if data:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode("latin-1")),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
