"""The REST request a tool call stands for: its path, query and body, and what it answered.

Tool arguments become the route's request by its call plan (``call_plan``). Arguments no request
of the route can carry as what they are are refused first, as FastAPI refuses an invalid value
(:func:`argument_errors`, :func:`path_errors`), so a tool call is a request of its own route and
of nothing else. Only the caller headers in ``forward_headers`` are passed on.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from fastapi.encoders import jsonable_encoder
from starlette.types import Message, Scope

from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.call_plan import ArgumentKind, CallPlan

_SEGMENT = "[^/]+"  # Starlette's pattern of a plain ``{name}``: one segment


@dataclass
class CapturedResponse:
    status: int = 500
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)

    async def send(self, message: Message) -> None:
        """The ASGI ``send`` of the request: records what the app answers."""
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    @property
    def content_type(self) -> str:
        for name, value in self.headers:
            if name.lower() == b"content-type":
                return _media_type(value)
        return ""


@functools.lru_cache(maxsize=64)  # a server's routes answer a handful of content types; the answer is pure
def _media_type(content_type: bytes) -> str:
    """The media type of a ``content-type`` value, lower case, without its parameters."""
    return content_type.decode("latin-1").split(";", 1)[0].strip().lower()


def query_text(value: Any) -> str:
    """One argument value as it appears in the route's query string (decoded)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def query_pairs(plan: CallPlan, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The query string's (name, value) pairs for the route, before URL encoding."""
    pairs: list[tuple[str, str]] = []
    for name in plan.query_params:
        value = arguments.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        pairs.extend((name, query_text(v)) for v in values)
    return pairs


def argument_errors(plan: CallPlan, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The 422 errors of the arguments no request of the route can carry, in FastAPI's form.

    A missing path argument leaves no URL to build. A list or object for a single-valued path,
    query or form parameter, or an object or a list holding lists or objects for a list
    parameter, has no URL or form text that means it: sent, it would reach the route as some
    other value (the last of a list, the JSON text of an object). Both are refused as FastAPI
    refuses a missing or invalid value, before anything runs.
    """
    errors: list[dict[str, Any]] = []
    for kind in plan.kinds:
        value = arguments.get(kind.name)
        if value is None:
            if kind.loc == "path":
                errors.append({"type": "missing", "loc": ["path", kind.name], "msg": "Field required", "input": None})
        elif isinstance(value, (list, dict)) and kind.refuses(value):
            errors.extend(_kind_errors(kind, value))
    return errors


def _kind_errors(kind: ArgumentKind, value: list[Any] | dict[str, Any]) -> list[dict[str, Any]]:
    """What the parameter's own field says of ``value`` (its list's single values as URL text)."""
    if isinstance(value, list) and kind.many:
        value = [item if isinstance(item, (list, dict)) else query_text(item) for item in value]
    _, errors = compat.validate_field(kind.model_field, value, {}, (kind.loc, kind.name))
    if errors:
        return list(jsonable_encoder(errors))  # as FastAPI's 422 answer shows them
    # The field takes any value (``Any``), yet the URL can only carry a single one of them.
    wanted = "a list of single values" if kind.many else "a single value, not a list or an object"
    return [{"type": "value_error", "loc": [kind.loc, kind.name], "msg": f"Input should be {wanted}", "input": value}]


def path_errors(route: Any, plan: CallPlan, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The 422 errors of the path arguments no request of ``route`` carries as what they are.

    Starlette matches routes against the decoded path, where a ``%2F`` is a ``/`` like any other.
    So a value must match its parameter's convertor: one non-empty segment without ``/`` for a
    plain ``{name}``, any text of one line for ``{name:path}`` (which takes ``/`` as REST does),
    digits for ``{name:int}``. And the whole path must read back as exactly the values sent (two
    parameters in one segment could split another way). Anything else would be a request of
    another route, or of other values, so it is refused as FastAPI refuses an invalid value.
    """
    errors: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for name in plan.path_params:
        value = arguments.get(name)
        if value is None or isinstance(value, (list, dict)):
            continue  # missing or of a kind no URL carries: ``argument_errors`` words it
        text = texts[name] = str(value)
        pattern = _path_pattern(route, name)
        if re.fullmatch(pattern, text) is None:
            errors.append(_pattern_error(name, text, pattern))
    path_regex = getattr(route, "path_regex", None)
    if errors or not texts or len(texts) != len(plan.path_params) or path_regex is None:
        return errors
    found = path_regex.match(plan.path_format.format(**texts))
    for name, text in texts.items():
        read = found.group(name) if found is not None else None
        if read != text:
            msg = f"Value error, the route's path {route.path} would read this parameter as {read!r}"
            errors.append({"type": "value_error", "loc": ["path", name], "msg": msg, "input": text})
    return errors


def _path_pattern(route: Any, name: str) -> str:
    convertor = getattr(route, "param_convertors", {}).get(name)
    return str(getattr(convertor, "regex", _SEGMENT))


def _pattern_error(name: str, text: str, pattern: str) -> dict[str, Any]:
    """A value its path parameter's convertor refuses, as pydantic words a pattern mismatch."""
    msg = f"String should match pattern '{pattern}'"
    if pattern == _SEGMENT:
        msg += ": one path segment, not empty and without '/' (not even as %2F)"
    return {
        "type": "string_pattern_mismatch",
        "loc": ["path", name],
        "msg": msg,
        "input": text,
        "ctx": {"pattern": pattern},
    }


def body_value(plan: CallPlan, arguments: Mapping[str, Any]) -> Any:
    """The request body for the route, as the JSON value it encodes (the route's form fields too)."""
    if plan.body_mode == "value":
        return arguments.get(plan.body_params[0])
    return {name: arguments[name] for name in plan.body_params if name in arguments}


def build_request(plan: CallPlan, arguments: Mapping[str, Any]) -> tuple[str, bytes, bytes, bytes]:
    """(path, raw_path, query_string, body) for the route, from the tool arguments.

    The path values are those :func:`path_errors` let through: each is one segment (a ``/`` only
    in a ``{name:path}`` one), percent-encoded in ``raw_path`` as a REST client would send it.
    """
    path_values = {name: str(arguments.get(name, "")) for name in plan.path_params}
    path = plan.path_format.format(**path_values) if path_values else plan.path_format
    raw_path = plan.path_format.format(**{k: quote(v, safe="/") for k, v in path_values.items()})
    pairs = query_pairs(plan, arguments)
    query = urlencode(pairs).encode() if pairs else b""
    return path, raw_path.encode(), query, _body(plan, arguments)


def _body(plan: CallPlan, arguments: Mapping[str, Any]) -> bytes:
    if plan.body_mode == "none":
        return b""
    value = body_value(plan, arguments)
    if plan.form_body and isinstance(value, dict):
        fields = [(k, v) for k, v in value.items() if v is not None]  # as a query string: None is left out
        pairs = [(k, query_text(item)) for k, v in fields for item in (v if isinstance(v, list) else [v])]
        return urlencode(pairs).encode()
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def invalid_arguments(errors: list[dict[str, Any]]) -> CapturedResponse:
    """FastAPI's 422 answer to ``errors``, as the route would have sent it."""
    body = json.dumps({"detail": errors}, separators=(",", ":"), ensure_ascii=False).encode()
    return CapturedResponse(status=422, headers=[(b"content-type", b"application/json")], body=bytearray(body))


def forwarded_headers(outer_scope: Scope, allowed: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    wanted = _header_names(allowed)
    return [(name, value) for name, value in outer_scope["headers"] if name.lower() in wanted]


@functools.lru_cache(maxsize=16)
def _header_names(allowed: tuple[str, ...]) -> frozenset[bytes]:
    """``forward_headers`` as the byte strings ASGI uses (a server has one such tuple)."""
    return frozenset(name.encode() for name in allowed)
