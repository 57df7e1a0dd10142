"""The HTTP headers of a 2026-07-28 request (SEP-2243).

Standard headers mirror the body so intermediaries can route without parsing JSON:
``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name`` for the three named methods. Custom
``Mcp-Param-{Name}`` headers mirror tool arguments whose schema property says
``"x-mcp-header": "Name"``. A tool whose annotations break the rules is unusable: the client
must not call it, so :func:`scan_param_headers` rejects it and ``list_tools`` drops it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi_mrtr.client._errors import InvalidToolHeadersError
from fastapi_mrtr.wire.headers import PARAM_HEADER_PREFIX, X_MCP_HEADER, encode_header_value, is_token
from fastapi_mrtr.wire.protocol import NAMED_METHODS, JSONObject

ACCEPT = "application/json, text/event-stream"

_HEADER_TYPES = ("string", "integer", "boolean")

# Subschema keywords: an annotation anywhere under these is unreachable through ``properties``.
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_MAPS = ("patternProperties", "$defs", "definitions", "dependentSchemas")


@dataclass(frozen=True)
class ParamHeader:
    """One mirrored argument: its path through ``arguments`` and its header name."""

    path: tuple[str, ...]
    name: str

    @property
    def header(self) -> str:
        return PARAM_HEADER_PREFIX + self.name


def standard_headers(protocol_version: str, method: str, params: Mapping[str, Any]) -> dict[str, str]:
    """The headers every POST carries, plus ``Mcp-Name`` where the method names a target."""
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": protocol_version,
        "Mcp-Method": method,
    }
    name_key = NAMED_METHODS.get(method)
    if name_key is not None and isinstance(params.get(name_key), str):
        headers["Mcp-Name"] = encode_header_value(params[name_key])
    return headers


def scan_param_headers(input_schema: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """The ``x-mcp-header`` declarations of a tool's input schema, validated.

    Raises :class:`InvalidToolHeadersError` for an empty or non-token name, a duplicate name
    (case-insensitive), a type other than string/integer/boolean, or an annotation that is not
    reached from the root through ``properties`` alone.
    """
    found: list[ParamHeader] = []
    _walk(input_schema, (), reachable=True, found=found)
    seen: set[str] = set()
    for decl in found:
        folded = decl.name.lower()
        if folded in seen:
            raise InvalidToolHeadersError(f"duplicate x-mcp-header {decl.name!r}")
        seen.add(folded)
    return tuple(found)


def _walk(schema: Any, path: tuple[str, ...], *, reachable: bool, found: list[ParamHeader]) -> None:
    if not isinstance(schema, Mapping):
        return
    if X_MCP_HEADER in schema:
        if not (reachable and path):  # the root is no property
            raise InvalidToolHeadersError(f"x-mcp-header not reachable through properties at {path}")
        found.append(ParamHeader(path, _checked_name(schema)))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            _walk(sub, (*path, str(key)), reachable=reachable, found=found)
    for sub in _other_subschemas(schema):  # an annotation under these is not a property of the call
        _walk(sub, path, reachable=False, found=found)


def _other_subschemas(schema: Mapping[str, Any]) -> list[Any]:
    """The subschemas reached other than through ``properties`` (items, allOf, $defs, ...)."""
    subs = [schema.get(keyword) for keyword in _SCHEMA_VALUES]
    for keyword in _SCHEMA_LISTS:
        listed = schema.get(keyword)
        subs += listed if isinstance(listed, list) else []
    for keyword in _SCHEMA_MAPS:
        mapped = schema.get(keyword)
        subs += list(mapped.values()) if isinstance(mapped, Mapping) else []
    return subs


def _checked_name(prop: Mapping[str, Any]) -> str:
    name = prop[X_MCP_HEADER]
    if not is_token(name):
        raise InvalidToolHeadersError(f"x-mcp-header {name!r} is not a non-empty HTTP token")
    if prop.get("type") not in _HEADER_TYPES:
        raise InvalidToolHeadersError(f"x-mcp-header {name!r} on type {prop.get('type')!r}")
    return name


def param_headers(decls: tuple[ParamHeader, ...], arguments: JSONObject | None) -> dict[str, str]:
    """``Mcp-Param-*`` headers for one call; null or absent arguments get no header."""
    headers: dict[str, str] = {}
    for decl in decls:
        value: Any = arguments
        for key in decl.path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        headers[decl.header] = encode_header_value(text)
    return headers
