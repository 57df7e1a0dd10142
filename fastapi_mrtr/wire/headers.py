"""Header values that mirror the body (SEP-2243): one codec for ``Mcp-Name`` and ``Mcp-Param-*``.

A header carries only visible ASCII, and HTTP trims the whitespace around a value, so a name or an
argument that does not fit travels wrapped: ``=?base64?{standard Base64 of its UTF-8}?=``. The
client wraps a value when it is not plain visible ASCII (space allowed inside), has whitespace
at either end, or could be read as a wrapper itself; every other value goes as it is. The server
undoes the wrapper before it compares a header with the body. A value is read as a wrapper when
it starts with ``=?base64?`` (any letter case) and ends with ``?=``; both sides use that one
test, so a literal value shaped like a wrapper is always sent wrapped and read back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TypeGuard

X_MCP_HEADER = "x-mcp-header"  # the schema keyword that mirrors a tool argument into a header
PARAM_HEADER_PREFIX = "Mcp-Param-"

_PREFIX = "=?base64?"
_SUFFIX = "?="
_OWS = " \t"  # RFC 9110 optional whitespace: not part of a field value
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 token, as header names are


def is_token(name: object) -> TypeGuard[str]:
    """Whether ``name`` can be an HTTP header name (a non-empty RFC 9110 token)."""
    return isinstance(name, str) and _TOKEN.fullmatch(name) is not None


def looks_wrapped(value: str) -> bool:
    """Whether a header reader would take ``value`` for a ``=?base64?...?=`` wrapper."""
    return (
        len(value) >= len(_PREFIX) + len(_SUFFIX)
        and value[: len(_PREFIX)].lower() == _PREFIX
        and value.endswith(_SUFFIX)
    )


def encode_header_value(value: str) -> str:
    """``value`` as a header carries it: as it is when that is safe, else wrapped in Base64."""
    plain = all(" " <= ch <= "~" for ch in value) and value == value.strip(_OWS) and not looks_wrapped(value)
    if plain:
        return value
    return _PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SUFFIX


def decode_header_value(raw: str) -> str | None:
    """The value a header carries: surrounding whitespace dropped, a Base64 wrapper undone.

    ``None`` when the wrapper does not hold standard, padded Base64 of UTF-8 text: such a header
    matches no value, and its sender must be told so rather than have it compared as literal text.
    """
    value = raw.strip(_OWS)
    if not looks_wrapped(value):
        return value
    try:
        return base64.b64decode(value[len(_PREFIX) : -len(_SUFFIX)], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
