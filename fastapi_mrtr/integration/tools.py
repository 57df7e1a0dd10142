"""From a FastAPI route to an MCP tool: name, description, annotations, schemas and a call plan.

Everything here is computed once per tool, when the route is first resolved, so that a
``tools/call`` only fills in a precomputed plan. Header, cookie and security parameters are never
tool arguments: they come from the caller's own HTTP request (see ``forward_headers``).
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import params as fastapi_params
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Json, TypeAdapter
from pydantic.fields import FieldInfo

from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.param_headers import ParamHeader, param_headers
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject, ToolAnnotations, dump

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

BodyMode = Literal["none", "fields", "value", "embedded"]

# What a successful response of the tool's route becomes (see "Output schema" in docs/api.md):
# "free": no outputSchema is published; a JSON object still becomes structuredContent.
# "object": the route's JSON object is structuredContent, as its outputSchema describes.
# "wrapped": the route's JSON value (not an object) is structuredContent as {"result": value}.
# "text": the route answers a string as text (PlainTextResponse...): {"result": text}.
OutputShape = Literal["free", "object", "wrapped", "text"]


@dataclass(frozen=True)
class ToolSpec:
    """What ``@mcp.tool(...)`` was told; resolved against the app's routes later."""

    endpoint: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    annotations: ToolAnnotations | None = None
    input_schema: JSONObject | None = None  # advertised instead of the generated schema


@dataclass(frozen=True)
class ArgumentKind:
    """The JSON kinds an argument carried in the URL or a form may take: what a URL string can hold.

    A single-valued parameter takes a string, number or boolean (sent as its URL text); a list
    parameter takes a list of those, or one of them. Any other value would reach the route
    stringified, so it is refused as a validation error instead (see ``invoke.argument_errors``).
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


@dataclass(frozen=True)
class ToolDefinition:
    spec: ToolSpec
    route: APIRoute
    plan: CallPlan
    wire: JSONObject  # the tools/list entry, ready to send
    output: OutputShape  # how a 2xx response becomes structuredContent
    raw_result: bool  # the route returns a CallToolResult: its JSON is the tool result
    arguments: frozenset[str] = field(default_factory=frozenset)
    param_headers: tuple[ParamHeader, ...] = ()  # x-mcp-header bindings (SEP-2243)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def has_output_schema(self) -> bool:
        return self.output != "free"


def validate_tool_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(
            f"invalid MCP tool name {name!r}: use 1 to 64 characters of letters, digits, '_', '-' or '.'"
            " (pass name=... to @mcp.tool())"
        )
    return name


def default_annotations(method: str) -> ToolAnnotations:
    """Hints from the HTTP method's semantics (RFC 9110): GET is safe, PUT and GET idempotent."""
    return ToolAnnotations(
        read_only_hint=True if method == "GET" else None,
        destructive_hint=True if method == "DELETE" else None,
        idempotent_hint=True if method in ("GET", "PUT") else None,
    )


def build_tool(spec: ToolSpec, route: APIRoute) -> ToolDefinition:
    method = _route_method(route)
    plan, arguments = _call_plan(spec.name, route, method)
    if spec.input_schema is not None:
        input_schema = _checked_schema(spec.name, spec.input_schema)
    else:
        input_schema = _input_schema(spec.name, route, plan)
    raw_result = _returns_call_tool_result(route)
    output_schema, output = (None, "free") if raw_result else _output_schema(route)
    annotations = default_annotations(method).model_copy(
        update=spec.annotations.model_dump(exclude_none=True) if spec.annotations else {}
    )
    description = spec.description or inspect.getdoc(spec.endpoint) or route.description or route.summary
    wire: JSONObject = {"name": spec.name, "inputSchema": input_schema}
    title = spec.title or (spec.annotations.title if spec.annotations else None)
    if title:
        wire["title"] = title
    if description:
        wire["description"] = description
    if output_schema is not None:
        wire["outputSchema"] = output_schema
    hints = dump(annotations)
    if hints:
        wire["annotations"] = hints
    return ToolDefinition(
        spec=spec,
        route=route,
        plan=plan,
        wire=wire,
        output=output,
        raw_result=raw_result,
        arguments=frozenset(arguments),
        param_headers=param_headers(spec.name, input_schema),
    )


def _checked_schema(tool: str, schema: JSONObject) -> JSONObject:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError(f'tool {tool!r}: input_schema must be a JSON Schema object with "type": "object"')
    return dict(schema)


def _route_method(route: APIRoute) -> str:
    declared = route.methods or {"GET"}
    methods = sorted(declared - {"HEAD", "OPTIONS"}) or sorted(declared)
    # A route for several methods is exposed with the most conservative one, GET first.
    return "GET" if "GET" in methods else methods[0]


# --- arguments --------------------------------------------------------------------------------


def _collect_params(route: APIRoute) -> tuple[list[Any], list[Any], list[Any]]:
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


def _flat_body_model(body: list[Any]) -> type[BaseModel] | None:
    """The body model whose fields become top-level arguments (a lone, non-embedded model)."""
    if len(body) != 1 or getattr(body[0].field_info, "embed", False):
        return None
    annotation = body[0].field_info.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _call_plan(tool: str, route: APIRoute, method: str) -> tuple[CallPlan, list[str]]:
    path, query, body = _collect_params(route)
    form = bool(body) and isinstance(body[0].field_info, fastapi_params.Form)
    flat = _flat_body_model(body)
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


def _input_schema(tool: str, route: APIRoute, plan: CallPlan) -> JSONObject:
    path, query, body = _collect_params(route)
    fields: dict[str, tuple[Any, FieldInfo]] = {}
    for f in [*path, *query]:
        fields[f.alias] = (f.field_info.annotation, f.field_info)
    flat = _flat_body_model(body)
    if flat is not None:
        for name, info in flat.model_fields.items():
            fields[info.alias or name] = (info.annotation, info)
    else:
        for f in body:
            fields[f.alias] = (f.field_info.annotation, f.field_info)
    return _schema_of_fields(tool, fields)


def _constrained(annotation: Any, info: FieldInfo) -> Any:
    """The argument's type with its constraints (``ge=``, ``max_length=``...) attached."""
    if not info.metadata:
        return annotation
    return Annotated.__class_getitem__((annotation, *info.metadata))  # type: ignore[attr-defined]


def _schema_of_fields(tool: str, fields: dict[str, tuple[Any, FieldInfo]]) -> JSONObject:
    # One generation pass over every argument, so models shared by several arguments (and
    # recursive ones) land once in a common $defs instead of being inlined or repeated.
    adapters: list[tuple[str, Literal["validation"], TypeAdapter[Any]]] = [
        (alias, "validation", TypeAdapter(_constrained(annotation, info)))
        for alias, (annotation, info) in fields.items()
    ]
    schemas, top = TypeAdapter.json_schemas(adapters, ref_template="#/$defs/{model}")
    properties: JSONObject = {}
    required: list[str] = []
    for alias, (_, info) in fields.items():
        prop = dict(schemas[(alias, "validation")])
        prop.setdefault("title", info.title or alias.replace("_", " ").title())
        if info.description:
            prop["description"] = info.description
        if isinstance(info.json_schema_extra, dict):  # e.g. Query(json_schema_extra={"x-mcp-header": ...})
            prop.update(info.json_schema_extra)
        if info.is_required():
            required.append(alias)
        else:
            default = info.get_default(call_default_factory=True)
            with contextlib.suppress(Exception):  # a default that is not JSON stays out of the schema
                prop["default"] = TypeAdapter(Any).dump_python(default, mode="json")
        properties[alias] = prop
    schema: JSONObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if top.get("$defs"):
        schema["$defs"] = top["$defs"]
    return schema


# --- results ----------------------------------------------------------------------------------


def _returns_call_tool_result(route: APIRoute) -> bool:
    model = route.response_model
    return isinstance(model, type) and issubclass(model, CallToolResult)


def _output_schema(route: APIRoute) -> tuple[JSONObject | None, OutputShape]:
    """The outputSchema to publish, and how results are structured to conform to it.

    A schema is published only when every 2xx response of the route, as FastAPI serializes the
    return value, can be structured to match it: JSON of the response model, or the text of a
    string sent by a text response class. Anything else (a binary or streaming response class,
    a non-string value as text, a body trimmed by ``response_model_include``/``_exclude``)
    publishes none, so that no client is promised a structure it will not get.
    """
    model = route.response_model
    if model is None or route.response_model_include or route.response_model_exclude:
        return None, "free"
    schema = TypeAdapter(model).json_schema(mode="serialization", by_alias=route.response_model_by_alias)
    schema = _resolve_root_ref(schema)
    if not schema:  # ``-> Any``: nothing is promised about the output
        return None, "free"
    if route.response_model_exclude_none:
        schema = _none_fields_optional(schema)
    response_class = _response_class(route)
    if _sends_json(response_class):
        if schema.get("type") == "object":
            return schema, "object"
        return _wrapped(schema), "wrapped"
    if _sends_text(response_class) and _is_text_schema(schema):
        return _wrapped(schema), "text"
    return None, "free"


def _wrapped(schema: JSONObject) -> JSONObject:
    schema = dict(schema)
    defs = schema.pop("$defs", None)
    wrapped: JSONObject = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def _response_class(route: APIRoute) -> type[Response]:
    value = compat.response_class_of(route)
    return value if isinstance(value, type) else JSONResponse


def _sends_json(response_class: type[Response]) -> bool:
    media_type = response_class.media_type or ""
    return issubclass(response_class, JSONResponse) or media_type == "application/json" or media_type.endswith("+json")


def _sends_text(response_class: type[Response]) -> bool:
    """A class that sends the rendered string as its body (Response, PlainTextResponse, HTMLResponse)."""
    if issubclass(response_class, (StreamingResponse, FileResponse, RedirectResponse)):
        return False
    media_type = response_class.media_type
    return media_type is None or (media_type.startswith("text/") and media_type != "text/event-stream")


def _is_text_schema(schema: JSONObject) -> bool:
    """A string value, sent as its own text (bytes are not text: their body need not be UTF-8)."""
    return schema.get("type") == "string" and schema.get("format") != "binary"


def _none_fields_optional(schema: JSONObject) -> JSONObject:
    """``response_model_exclude_none`` drops fields whose value is None: they cannot stay required."""
    defs = schema.get("$defs", {})

    def nullable(node: Any, seen: frozenset[str] = frozenset()) -> bool:
        if not isinstance(node, dict):
            return False
        if not node or node.get("type") == "null":  # ``{}`` (Any) admits null too
            return True
        if isinstance(node.get("type"), list) and "null" in node["type"]:
            return True
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            return nullable(defs.get(ref.removeprefix("#/$defs/")), seen | {ref})
        return any(nullable(v, seen) for key in ("anyOf", "oneOf") for v in node.get(key, ()))

    def relax(node: Any) -> Any:
        if isinstance(node, list):
            return [relax(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: relax(value) for key, value in node.items()}
        properties = node.get("properties")
        if isinstance(properties, dict) and isinstance(node.get("required"), list):
            out["required"] = [name for name in node["required"] if not nullable(properties.get(name))]
            if not out["required"]:
                del out["required"]
        return out

    relaxed: JSONObject = relax(schema)
    return relaxed


def _resolve_root_ref(schema: JSONObject) -> JSONObject:
    """Pydantic gives a self-recursive model as a bare ``$ref``; MCP wants the object at the root."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/") or len(schema) != 2:
        return schema
    defs = schema["$defs"]
    target = dict(defs[ref.removeprefix("#/$defs/")])
    target["$defs"] = defs
    return target
