"""Where a request carries its access token: only the ``Authorization: Bearer`` header (OAuth 2.1 §5.2).

A token in the query string is refused outright (it ends up in logs and ``Referer``), and so is
a form-body ``access_token``: the MCP spec allows the header only.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None without one (any other scheme too)."""
    value = headers.get("authorization", "")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def token_in_query(query_string: bytes) -> bool:
    try:
        pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    except ValueError:
        return False
    return any(name == "access_token" for name, _ in pairs)
