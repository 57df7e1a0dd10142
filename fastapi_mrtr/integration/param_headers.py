"""``Mcp-Param-*`` headers (SEP-2243): tool arguments mirrored into HTTP headers.

A tool input property marked ``"x-mcp-header": "Region"`` (for a route parameter:
``Query(json_schema_extra={"x-mcp-header": "Region"})``) must travel twice on ``tools/call``: in
the body and as ``Mcp-Param-Region``, so that gateways can route on it without parsing bodies.
The server checks that both agree and answers 400 / -32020 (HeaderMismatch) otherwise.

Rules enforced when a tool is built: the name is an RFC 9110 token, unique ignoring case within
the tool, on a string, integer or boolean property reached through ``properties`` alone.
Values are read with :func:`fastapi_mrtr.wire.headers.decode_header_value` (the ``=?base64?``
wrapper undone, invalid Base64 refused, surrounding whitespace dropped), then compared: strings
as they are, integers numerically, booleans as ``true``/``false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi_mrtr.wire.errors import HEADER_MISMATCH, ServerError
from fastapi_mrtr.wire.headers import X_MCP_HEADER, decode_header_value, is_token
from fastapi_mrtr.wire.protocol import JSONObject

_SCALARS = ("string", "integer", "boolean")
_MISSING = object()


@dataclass(frozen=True)
class ParamHeader:
    """One mirrored argument: ``Mcp-Param-{name}`` carries the value at ``path`` of the arguments."""

    name: str
    path: tuple[str, ...]
    type: str

    @property
    def header(self) -> str:
        return f"mcp-param-{self.name.lower()}"


def param_headers(tool: str, schema: JSONObject) -> tuple[ParamHeader, ...]:
    """The ``x-mcp-header`` bindings of an input schema; ``ValueError`` on an invalid one."""
    found: list[ParamHeader] = []

    def visit(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        if X_MCP_HEADER in node and path:
            found.append(_binding(tool, node, path))
        properties = node.get("properties")
        if isinstance(properties, dict):
            for key, child in properties.items():
                visit(child, (*path, key))

    visit(schema, ())
    seen: dict[str, ParamHeader] = {}
    for binding in found:
        other = seen.get(binding.name.lower())
        if other is not None:
            raise ValueError(
                f"tool {tool!r}: x-mcp-header {binding.name!r} is used by both {'.'.join(other.path)!r} and "
                f"{'.'.join(binding.path)!r} (names are compared ignoring case)"
            )
        seen[binding.name.lower()] = binding
    return tuple(found)


def _binding(tool: str, node: JSONObject, path: tuple[str, ...]) -> ParamHeader:
    name = node[X_MCP_HEADER]
    where = f"tool {tool!r} argument {'.'.join(path)!r}"
    if not is_token(name):
        raise ValueError(f"{where}: x-mcp-header must be a non-empty HTTP token (ASCII, no spaces), got {name!r}")
    kind = node.get("type")
    if kind not in _SCALARS:
        raise ValueError(f"{where}: x-mcp-header is only allowed on string, integer or boolean properties")
    return ParamHeader(name=name, path=path, type=str(kind))


def check_param_headers(bindings: tuple[ParamHeader, ...], arguments: JSONObject, headers: Mapping[str, str]) -> None:
    """Refuse the call (400 / -32020) when a mirrored argument and its header disagree."""
    for binding in bindings:
        value = _lookup(arguments, binding.path)
        raw = headers.get(binding.header)
        if value is _MISSING or value is None:
            if raw is not None:
                raise _mismatch(binding, "the header is set but the argument is absent")
            continue
        if raw is None:
            raise _mismatch(binding, "the header is missing")
        decoded = decode_header_value(raw)
        if decoded is None:
            raise _mismatch(binding, "the header is not valid =?base64?...?= encoding")
        if not _same(binding.type, decoded, value):
            raise _mismatch(binding, "the header value differs from the argument")


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _same(kind: str, header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if kind == "integer" and isinstance(value, (int, float)):
        try:
            return int(header) == value
        except ValueError:
            return False
    return header == (value if isinstance(value, str) else str(value))


def _mismatch(binding: ParamHeader, why: str) -> ServerError:
    return ServerError(
        HEADER_MISMATCH,
        f"Header mismatch: Mcp-Param-{binding.name}: {why}",
        {"header": f"Mcp-Param-{binding.name}", "argument": ".".join(binding.path)},
    )
