"""Resources and resource templates: ``@mcp.resource(uri)`` on a plain function.

    @mcp.resource("config://app", mime_type="application/json")
    def app_config() -> dict[str, str]: ...

    @mcp.resource("users://{user_id}/profile")
    async def profile(user_id: int, ctx: ToolContext) -> str: ...

A URI with ``{name}`` expressions is a template (RFC 6570 simple expansion, ``{+name}`` for
reserved expansion that may contain ``/``); its variables are the function's parameters, validated
and converted by Pydantic. Served as ``resources/list`` (direct resources), ``resources/templates/list``
and ``resources/read`` (with MRTR: a resource function may ``await ctx.elicit(...)``).

What the function may return: ``str`` (text), ``bytes`` (a base64 blob), a
``TextResourceContents``/``BlobResourceContents`` or a list of them, a ``ReadResourceResult``,
or any other JSON-able value (sent as JSON text). A URI that matches nothing, a function that
raises :class:`ResourceNotFoundError`, and a function that returns ``None`` or ``[]`` get
-32602 with ``data.uri`` (SEP-2164: never an empty ``contents``).
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

from pydantic import TypeAdapter

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.rounds import run_round
from fastapi_mrtr.integration.functions import (
    SUSPENDED,
    FunctionSignature,
    call_function,
    inspect_function,
    validate_arguments,
)
from fastapi_mrtr.integration.pagination import listing
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    McpError,
    ServerError,
)
from fastapi_mrtr.wire.protocol import BlobResourceContents, JSONObject, ReadResourceResult, TextResourceContents, dump

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARIABLE = re.compile(r"^[A-Za-z0-9_]+$")


class ResourceNotFoundError(McpError):
    """Raise from a resource function when the URI names nothing: -32602 with ``data.uri``.

    A 2025-era session gets the code that era used, -32002.
    """

    legacy_code = LEGACY_RESOURCE_NOT_FOUND

    def __init__(self, uri: str, message: str = "Resource not found") -> None:
        super().__init__(INVALID_PARAMS, message, {"uri": uri})
        self.uri = uri


class UriTemplate:
    """A URI template of ``{name}`` (one segment, no ``/``) and ``{+name}`` (anything) expressions."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = ""
        variables: list[str] = []
        position = 0
        for match in _EXPRESSION.finditer(template):
            pattern += re.escape(template[position : match.start()])
            expression = match.group(1)
            reserved = expression.startswith("+")
            name = expression[1:] if reserved else expression
            if not _VARIABLE.match(name):
                raise ValueError(
                    f"resource template {template!r}: unsupported expression {{{expression}}}; "
                    "use {name} or {+name} with letters, digits and '_'"
                )
            if name in variables:
                raise ValueError(f"resource template {template!r}: variable {name!r} appears twice")
            variables.append(name)
            pattern += f"(?P<{name}>.+?)" if reserved else f"(?P<{name}>[^/?#]+?)"
            position = match.end()
        pattern += re.escape(template[position:])
        if "{" in template[position:] or "}" in template[position:]:
            raise ValueError(f"resource template {template!r}: unbalanced braces")
        self.variables = tuple(variables)
        self._regex = re.compile(f"^{pattern}$")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self._regex.match(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    signature: FunctionSignature
    template: UriTemplate | None
    ttl_ms: int | None
    cache_scope: Literal["public", "private"] | None

    @property
    def wire(self) -> JSONObject:
        entry: JSONObject = {"uriTemplate": self.uri} if self.template is not None else {"uri": self.uri}
        entry["name"] = self.name
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        if self.mime_type:
            entry["mimeType"] = self.mime_type
        return entry


class ResourceRegistry:
    """Direct resources (by exact URI) and templates (matched in registration order)."""

    def __init__(self) -> None:
        self._static: dict[str, ResourceSpec] = {}
        self._templates: dict[str, ResourceSpec] = {}

    def __bool__(self) -> bool:
        return bool(self._static or self._templates)

    def resources(self) -> list[ResourceSpec]:
        return list(self._static.values())

    def templates(self) -> list[ResourceSpec]:
        return list(self._templates.values())

    def template(self, uri_template: str) -> ResourceSpec | None:
        return self._templates.get(uri_template)

    def add(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
    ) -> ResourceSpec:
        if not isinstance(uri, str) or not uri:
            raise ValueError("@mcp.resource(uri): the URI must be a non-empty string")
        if ttl_ms is not None and ttl_ms < 0:
            raise ValueError("ttl_ms must be >= 0")
        template = UriTemplate(uri) if "{" in uri or "}" in uri else None
        signature = inspect_function(fn, "resource")
        _check_parameters(uri, signature, template)
        if uri in self._static or uri in self._templates:
            raise ValueError(f"an MCP resource {uri!r} is already registered")
        spec = ResourceSpec(
            uri=uri,
            name=name or fn.__name__,
            title=title,
            description=description or inspect.getdoc(fn),
            mime_type=mime_type,
            signature=signature,
            template=template,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
        )
        (self._templates if template is not None else self._static)[uri] = spec
        return spec

    def find(self, uri: str) -> tuple[ResourceSpec, dict[str, str]] | None:
        spec = self._static.get(uri)
        if spec is not None:
            return spec, {}
        for candidate in self._templates.values():
            assert candidate.template is not None
            values = candidate.template.match(uri)
            if values is not None:
                return candidate, values
        return None


def _check_parameters(uri: str, signature: FunctionSignature, template: UriTemplate | None) -> None:
    variables = set(template.variables) if template else set()
    fields = signature.fields
    missing = sorted(variables - set(fields))
    if missing:
        raise TypeError(
            f"@mcp.resource({uri!r}) {signature.fn.__qualname__}: no parameter for template variable(s) "
            + ", ".join(missing)
        )
    unfilled = sorted(name for name, info in fields.items() if info.is_required() and name not in variables)
    if unfilled:
        raise TypeError(
            f"@mcp.resource({uri!r}) {signature.fn.__qualname__}: parameter(s) {', '.join(unfilled)} "
            "are not variables of the URI (give them defaults or put {name} in the URI)"
        )


class ResourceMethods:
    """``resources/list``, ``resources/templates/list`` and ``resources/read``."""

    def __init__(self, registry: ResourceRegistry, state_guard: StateGuard, options: ServerOptions) -> None:
        self._registry = registry
        self._state_guard = state_guard
        self._options = options

    def _listing(self, rpc: RpcRequest, key: str, entries: list[JSONObject]) -> JSONObject:
        return listing(key, entries, rpc.params.get("cursor"), self._options)

    async def list_resources(self, rpc: RpcRequest) -> JSONObject:
        return self._listing(rpc, "resources", [spec.wire for spec in self._registry.resources()])

    async def list_templates(self, rpc: RpcRequest) -> JSONObject:
        return self._listing(rpc, "resourceTemplates", [spec.wire for spec in self._registry.templates()])

    async def read_resource(self, rpc: RpcRequest) -> JSONObject:
        uri = rpc.params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise ServerError(INVALID_PARAMS, "Invalid params: resources/read needs a uri")
        found = self._registry.find(uri)
        if found is None:
            raise ResourceNotFoundError(uri)
        spec, values = found
        kwargs = validate_arguments(spec.signature, values, f"resource {uri!r}")

        async def run(record: CallRecord) -> JSONObject:
            value = await call_function(spec.signature, kwargs, rpc, record, f"resource {uri!r}")
            if value is SUSPENDED:
                return {}
            result = read_result(spec, uri, value)
            result.setdefault("ttlMs", spec.ttl_ms if spec.ttl_ms is not None else self._options.cache_ttl_ms)
            result.setdefault("cacheScope", spec.cache_scope or self._options.cache_scope)
            return result

        return await run_round(self._state_guard, rpc, "resources/read", uri, {}, run)


def read_result(spec: ResourceSpec, uri: str, value: Any) -> JSONObject:
    """What a resource function returned, as a ``ReadResourceResult`` (a dict ready to encode)."""
    if isinstance(value, ReadResourceResult):
        result = dump(value)
        for field, key in (("ttl_ms", "ttlMs"), ("cache_scope", "cacheScope")):
            if field not in value.model_fields_set:  # unset: the resource's or the server's default applies
                result.pop(key, None)
    else:
        result = {"contents": [dump(item) for item in _contents(spec, uri, value)]}
    if not result.get("contents"):
        raise ResourceNotFoundError(uri, "Resource not found (the resource function returned no contents)")
    result["resultType"] = "complete"
    result.pop("_meta", None)
    return result


def _contents(spec: ResourceSpec, uri: str, value: Any) -> list[TextResourceContents | BlobResourceContents]:
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [value]
    if isinstance(value, (list, tuple)) and all(
        isinstance(item, (TextResourceContents, BlobResourceContents)) for item in value
    ):
        return list(value)  # an empty list is "nothing there": not found
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, mime_type=spec.mime_type or "text/plain", text=value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [BlobResourceContents(uri=uri, mime_type=spec.mime_type or "application/octet-stream", blob=blob)]
    if value is None:
        return []
    try:
        text = json.dumps(TypeAdapter(Any).dump_python(value, mode="json"), ensure_ascii=False, separators=(",", ":"))
    except Exception as exc:
        raise ServerError(
            INTERNAL_ERROR, f"Resource {uri!r}: the function returned a value that is not JSON-able: {exc}"
        ) from None
    return [TextResourceContents(uri=uri, mime_type=spec.mime_type or "application/json", text=text)]
