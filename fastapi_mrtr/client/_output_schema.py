"""Checking a tool's ``structuredContent`` against the ``outputSchema`` it declared.

The spec says a tool with an ``outputSchema`` MUST return conforming ``structuredContent``
(tools/call, spec-notes 4.2), and the official clients refuse a result that does not. The client
learns each tool's schema from ``tools/list`` and keeps it with the listing's ``ttlMs``: within
that time the server promised the listing holds, so a result that breaks a fresh schema is the
server's fault; after it, the schema may have changed and is worth listing again before blaming
the server (``OutputSchemas.is_stale``).

Schemas are JSON Schema (2020-12 unless ``$schema`` names another draft). ``$ref`` resolves
only inside the schema itself: a server's schema must not make the client fetch URLs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from jsonschema import exceptions as jsonschema_errors  # type: ignore[import-untyped]
from jsonschema.validators import Draft202012Validator, validator_for  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable

from fastapi_mrtr.client._errors import InvalidStructuredContentError
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject, Tool, dump

Problem = Literal["missing", "nonconforming", "invalid_schema"]

_MAX_DETAIL = 300  # a jsonschema message quotes the instance, which may be a whole result


@dataclass
class _Entry:
    """One tool's schema as the last listing gave it (``None``: the tool declares none)."""

    schema: JSONObject | None
    fresh_until: float  # monotonic seconds: when the listing's ttlMs runs out
    validator: Any = field(default=None)  # compiled on first use; compiling costs more than checking


class OutputSchemas:
    """Per tool name, the ``outputSchema`` learned from ``tools/list``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, _Entry] = {}

    def learn(self, tool: Tool, ttl_ms: int) -> None:
        fresh_until = self._clock() + max(ttl_ms, 0) / 1000
        old = self._entries.get(tool.name)
        validator = old.validator if old is not None and old.schema == tool.output_schema else None
        self._entries[tool.name] = _Entry(tool.output_schema, fresh_until, validator)

    def forget(self, name: str) -> None:
        self._entries.pop(name, None)

    def knows(self, name: str) -> bool:
        return name in self._entries

    def is_stale(self, name: str) -> bool:
        """True when the listing that gave this tool's schema is older than its ``ttlMs``."""
        entry = self._entries.get(name)
        return entry is None or self._clock() >= entry.fresh_until

    def check(self, name: str, result: CallToolResult) -> InvalidStructuredContentError | None:
        """The error ``result`` deserves, or ``None`` when it conforms (or there is nothing to
        check: an unknown tool, a tool without ``outputSchema``, an ``isError`` result)."""
        entry = self._entries.get(name)
        if entry is None or entry.schema is None or result.is_error:
            return None
        schema = entry.schema
        # Only an absent field counts as missing; an explicit null is checked like any value.
        if "structured_content" not in result.model_fields_set:
            return _error(name, result, schema, "missing", "has an outputSchema but returned no structuredContent")
        try:
            if entry.validator is None:
                entry.validator = _compile(schema)
            error = jsonschema_errors.best_match(entry.validator.iter_errors(result.structured_content))
        except (jsonschema_errors.SchemaError, Unresolvable, RecursionError) as exc:
            detail = f"has an invalid outputSchema ({_short(_reason(exc))}), so its structuredContent cannot be checked"
            return _error(name, result, schema, "invalid_schema", detail)
        if error is None:
            return None
        where = error.json_path
        detail = f"returned structuredContent that does not conform to its outputSchema: at {where}: "
        return _error(name, result, schema, "nonconforming", detail + _short(error.message), where)


def _compile(schema: JSONObject) -> Any:
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    # An empty registry: references resolve within the schema (and the drafts' metaschemas), never
    # over the network or the file system.
    return cls(schema, registry=Registry())


def _reason(exc: BaseException) -> str:
    if isinstance(exc, jsonschema_errors.SchemaError):
        return f"at {exc.json_path}: {exc.message}"
    if isinstance(exc, RecursionError):
        return "checking recursed too deeply: a $ref that loops back on itself?"
    return str(exc)


def _short(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def _error(
    name: str, result: CallToolResult, schema: JSONObject, problem: Problem, detail: str, path: str | None = None
) -> InvalidStructuredContentError:
    message = f"tool {name!r} {detail}"
    return InvalidStructuredContentError(
        message, tool=name, problem=problem, result=result, schema=schema, path=path, body=dump(result)
    )
