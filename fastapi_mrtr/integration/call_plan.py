"""How a tool's arguments become the HTTP request of its route: the call plan, made once per tool.

Path, query and body parameters (those of the route's sub-dependencies too) become tool arguments
by name; a lone, non-embedded body model spreads its fields as top-level arguments. Header, cookie
and security parameters are never tool arguments: they come from the caller's own HTTP request
(see ``forward_headers``). Each URL or form argument also records the JSON kinds a URL can carry
for it, so that a value the route could only receive stringified is refused first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import params as fastapi_params
from fastapi.routing import APIRoute
from pydantic import BaseModel, Json

from fastapi_mrtr.integration import fastapi_compat as compat

BodyMode = Literal["none", "fields", "value", "embedded"]


@dataclass(frozen=True)
class ArgumentKind:
    """The JSON kinds an argument carried in the URL or a form may take: what a URL string can hold.

    A single-valued parameter takes a string, number or boolean (sent as its URL text); a list
    parameter takes a list of those, or one of them. Any other value would reach the route
    stringified, so it is refused as a validation error instead (see ``route_request.argument_errors``).
    """

    name: str
    loc: Literal["path", "query", "body"]
    many: bool  # a list parameter
    model_field: Any = field(compare=False)  # FastAPI's field, which words the refusal

    def refuses(self, value: list[Any] | dict[str, Any]) -> bool:
        if isinstance(value, dict) or not self.many:
            return True
        return any(isinstance(item, (list, dict)) for item in value)


@dataclass(frozen=True)
class CallPlan:
    """How tool arguments become an HTTP request to the route."""

    method: str
    path_format: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    body_mode: BodyMode
    body_params: tuple[str, ...]
    form_body: bool = False
    # The path, query and form arguments, in that order, with the JSON kinds each may take.
    kinds: tuple[ArgumentKind, ...] = ()


def collect_params(route: APIRoute) -> tuple[list[Any], list[Any], list[Any]]:
    """Path, query and body fields of the route and of all its sub-dependencies (each once)."""
    path: list[Any] = []
    query: list[Any] = []
    body: list[Any] = []
    seen: set[int] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        if id(dependant) in seen:
            continue
        seen.add(id(dependant))
        path.extend(dependant.path_params)
        query.extend(_expand_param_models(dependant.query_params))
        body.extend(dependant.body_params)
        stack.extend(reversed(dependant.dependencies))
    return _unique(path), _unique(query), _unique(body)


def _expand_param_models(fields: list[Any]) -> list[Any]:
    """``Annotated[Model, Query()]`` spreads the model's fields as individual query parameters."""
    out: list[Any] = []
    for f in fields:
        annotation = f.field_info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for name, info in annotation.model_fields.items():
                out.append(compat.model_field(info, name))  # FastAPI's own wrapper, to stay alike
        else:
            out.append(f)
    return out


def _unique(fields: list[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for f in fields:
        seen.setdefault(f.alias, f)
    return list(seen.values())


def flat_body_model(body: list[Any]) -> type[BaseModel] | None:
    """The body model whose fields become top-level arguments (a lone, non-embedded model)."""
    if len(body) != 1 or getattr(body[0].field_info, "embed", False):
        return None
    annotation = body[0].field_info.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def build_call_plan(tool: str, route: APIRoute, method: str) -> tuple[CallPlan, list[str]]:
    path, query, body = collect_params(route)
    form = bool(body) and isinstance(body[0].field_info, fastapi_params.Form)
    flat = flat_body_model(body)
    if flat is not None:
        body_names = [info.alias or name for name, info in flat.model_fields.items()]
        mode: BodyMode = "fields"
    elif len(body) == 1 and not getattr(body[0].field_info, "embed", False) and not form:
        # A lone Form() field stays a named form field, as FastAPI reads it (it embeds it).
        body_names, mode = [body[0].alias], "value"
    else:
        body_names, mode = [f.alias for f in body], ("embedded" if body else "none")
    names = [f.alias for f in path] + [f.alias for f in query] + body_names
    _refuse_collisions(tool, names)
    kinds = [ArgumentKind(f.alias, "path", False, f) for f in path]
    kinds += [_kind(f, "query") for f in query if not _is_json(f)]
    if form:
        form_fields = _model_fields(flat) if flat is not None else body
        kinds += [_kind(f, "body") for f in form_fields if not _is_json(f)]
    plan = CallPlan(
        method=method,
        path_format=route.path_format,
        path_params=tuple(f.alias for f in path),
        query_params=tuple(f.alias for f in query),
        body_mode=mode,
        body_params=tuple(body_names),
        form_body=form,
        kinds=tuple(kinds),
    )
    return plan, names


def _kind(f: Any, loc: Literal["query", "body"]) -> ArgumentKind:
    """A query or form field's kind: a list one when FastAPI reads all its values (``getlist``)."""
    return ArgumentKind(f.alias, loc, compat.is_sequence_annotation(f.field_info.annotation), f)


def _is_json(f: Any) -> bool:
    """A ``Json[...]`` field: its value is JSON text, which a list or object argument is sent as."""
    return any(type(item) is Json for item in f.field_info.metadata)


def _model_fields(model: type[BaseModel]) -> list[Any]:
    """A form model's fields as FastAPI's field wrappers (which validate as the route does)."""
    return [compat.model_field(info, name) for name, info in model.model_fields.items()]


def _refuse_collisions(tool: str, names: list[str]) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(
            f"tool {tool!r}: parameter name(s) {', '.join(duplicates)} appear more than once across the "
            "path, query and body; rename one (e.g. with alias=) so every tool argument is unambiguous"
        )
