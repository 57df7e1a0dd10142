"""What the official SDK's wire models (``mcp_types``, mcp 2.3.0) say about a message the server sent.

The generated 2026-07-28 models ignore unknown keys and type every optional field ``X | None``, so
pydantic alone accepts a key the schema does not have and an explicit ``null`` where the schema
wants a value. ``strict_issues`` walks the model next to the data and reports both. Requested
schemas of elicitation forms are ``dict[str, Any]`` in the models; each property is checked here
against the schema's primitive definitions, as a client renders them.
"""

from __future__ import annotations

import functools
import types as pytypes
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Union, get_args, get_origin

import jsonschema  # type: ignore[import-untyped]
import mcp_types
import mcp_types._v2026_07_28 as wire
from mcp_types import methods
from mcp_types.jsonrpc import JSONRPCError, JSONRPCNotification, JSONRPCResponse
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import TypeAliasType

VERSION = "2026-07-28"
RESULT_TYPES = ("complete", "input_required")

# The error response model the schema has for each code (the others use the generic Error).
ERROR_RESPONSES: dict[int, type[BaseModel]] = {
    mcp_types.HEADER_MISMATCH: wire.HeaderMismatchError,
    mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY: wire.MissingRequiredClientCapabilityError,
    mcp_types.UNSUPPORTED_PROTOCOL_VERSION: wire.UnsupportedProtocolVersionError,
}
ERROR_OBJECTS: dict[int, type[BaseModel]] = {
    mcp_types.PARSE_ERROR: wire.ParseError,
    mcp_types.INVALID_REQUEST: wire.InvalidRequestError,
    mcp_types.METHOD_NOT_FOUND: wire.MethodNotFoundError,
    mcp_types.INVALID_PARAMS: wire.InvalidParamsError,
    mcp_types.INTERNAL_ERROR: wire.InternalError,
}
PRIMITIVE_SCHEMA: Any = wire.PrimitiveSchemaDefinition


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _validation_issues(annotation: Any, value: Any, where: str, name: str | None = None) -> list[str]:
    try:
        _adapter(annotation).validate_python(value, by_name=False)
    except ValidationError as error:
        return [f"{where}: {name or _name(annotation)} rejects it: {_short(error)}"]
    return []


def _short(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in error.errors()[:5])


def _name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


# --- strictness: unknown keys and explicit nulls ------------------------------------------------------


def strict_issues(annotation: Any, value: Any, where: str) -> list[str]:
    """Keys the schema does not define and ``null`` where it wants a value, below ``where``."""
    if isinstance(annotation, TypeAliasType):
        return strict_issues(annotation.__value__, value, where)
    origin = get_origin(annotation)
    if origin is Annotated:
        return strict_issues(get_args(annotation)[0], value, where)
    if origin in (Union, pytypes.UnionType):
        return _union_issues(get_args(annotation), value, where)
    if origin is list and isinstance(value, list):
        (item,) = get_args(annotation) or (Any,)
        return [issue for i, v in enumerate(value) for issue in strict_issues(item, v, f"{where}[{i}]")]
    if origin is dict and isinstance(value, dict):
        args = get_args(annotation)
        item = args[1] if len(args) == 2 else Any
        return [issue for k, v in value.items() for issue in strict_issues(item, v, f"{where}.{k}")]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(value, dict):
        return _model_issues(annotation, value, where)
    return []


def _model_issues(model: type[BaseModel], value: Mapping[str, Any], where: str) -> list[str]:
    issues: list[str] = []
    known: set[str] = set()
    for name, field in model.model_fields.items():
        key = field.alias or name
        known.add(key)
        if key not in value:
            continue
        if value[key] is None and not _null_allowed(field.annotation):
            issues.append(f"{where}.{key}: null is not a valid {model.__name__}.{key} (leave the key out)")
            continue
        issues.extend(strict_issues(field.annotation, value[key], f"{where}.{key}"))
    if model.model_config.get("extra") != "allow":
        issues.extend(f"{where}.{key}: not a field of {model.__name__}" for key in value if key not in known)
    return issues


def _null_allowed(annotation: Any) -> bool:
    """The generated models write "optional" as ``X | None``; only ``Any`` really means "or null"."""
    if annotation is Any:
        return True
    if isinstance(annotation, TypeAliasType):
        return _null_allowed(annotation.__value__)
    if get_origin(annotation) is Annotated:
        return _null_allowed(get_args(annotation)[0])
    return any(arg is Any for arg in get_args(annotation))


def _union_issues(arms: Iterable[Any], value: Any, where: str) -> list[str]:
    """Conforming to one arm strictly is enough; otherwise report the first arm that validates."""
    candidates = [arm for arm in arms if arm is not type(None) and not _validation_issues(arm, value, where)]
    if not candidates:
        return [f"{where}: matches none of {[_name(a) for a in arms]}"]
    reports = [strict_issues(arm, value, where) for arm in candidates]
    return [] if any(not report for report in reports) else reports[0]


# --- results ------------------------------------------------------------------------------------------

# The requests an ``input_required`` result may embed (the schema's ``InputRequest``).
INPUT_REQUESTS: dict[str, type[BaseModel]] = {
    "elicitation/create": wire.ElicitRequest,
    "sampling/createMessage": wire.CreateMessageRequest,
    "roots/list": wire.ListRootsRequest,
}


def result_issues(method: str, result: Any) -> list[str]:
    """A ``result`` of ``method``: the model of its ``resultType``, strictly, then as the SDK's client
    parses it (the version's surface models, then the version-free models it hands to user code).

    The model is picked by ``resultType`` first, so a problem is reported against the one model it
    breaks rather than as the failures of every arm of the method's union.
    """
    if not isinstance(result, dict):
        return [f"result of {method} is not an object"]
    surface = methods.SERVER_RESULTS.get((method, VERSION))
    if surface is None:
        return [f"{method}: the SDK has no result model for this method at {VERSION}"]
    result_type = result.get("resultType", "complete")  # a missing one is the model's to report
    if result_type not in RESULT_TYPES:
        return [f"result of {method}: resultType {result_type!r} is none of {RESULT_TYPES}"]
    arms = get_args(surface) or (surface,)
    if result_type == "input_required":
        if wire.InputRequiredResult not in arms:
            return [f"result of {method}: input_required is not a result this method may have"]
        model: Any = wire.InputRequiredResult
        issues = _input_requests_issues(result)
    else:
        (model,) = [arm for arm in arms if arm is not wire.InputRequiredResult]
        issues = []
    return (
        issues
        or _validation_issues(model, result, "result")
        or strict_issues(model, result, "result")
        or _client_parse_issues(method, result)
    )


def _client_parse_issues(method: str, result: Mapping[str, Any]) -> list[str]:
    """The version-free model the SDK's client hands to user code, of the arm ``resultType`` names."""
    row = methods.MONOLITH_RESULTS[method]
    input_required = result.get("resultType") == "input_required"
    arms = get_args(row) or (row,)
    (model,) = [arm for arm in arms if issubclass(arm, mcp_types.InputRequiredResult) is input_required]
    return _validation_issues(model, result, "result", f"the SDK's client model {model.__name__}")


def tool_result_issues(name: str, result: Any, output_schemas: Mapping[str, Any]) -> list[str]:
    """``result_issues`` for a ``tools/call`` of tool ``name``, with the tools spec's MUST: a tool
    that declares an ``outputSchema`` returns ``structuredContent`` that conforms to it."""
    issues = result_issues("tools/call", result)
    if issues or result.get("resultType") != "complete" or result.get("isError"):
        return issues
    schema = output_schemas.get(name)
    if schema is None:
        return []
    if "structuredContent" not in result:
        return [f"tools/call {name}: the tool has an outputSchema but the result has no structuredContent"]
    try:
        jsonschema.validate(result["structuredContent"], schema)
    except jsonschema.ValidationError as error:
        return [f"tools/call {name}: structuredContent does not conform to the outputSchema: {error.message}"]
    return []


def _input_requests_issues(result: Mapping[str, Any]) -> list[str]:
    requests = result.get("inputRequests")
    if not isinstance(requests, dict):
        return []  # absent, or not a map: the model reports it
    issues: list[str] = []
    for key, request in requests.items():
        issues.extend(input_request_issues(request, f"result.inputRequests[{key!r}]"))
    return issues


def input_request_issues(request: Any, where: str) -> list[str]:
    """One ``inputRequests`` entry: the schema's model of its method, strictly, and for a form each
    property of its requested schema."""
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return [f"{where}: not a request object with a method"]
    model = INPUT_REQUESTS.get(request["method"])
    if model is None:
        return [f"{where}: {request['method']!r} is not an input request"]
    issues = _validation_issues(model, request, where) or strict_issues(model, request, where)
    if request["method"] == "elicitation/create" and not issues:
        issues = _form_issues(request.get("params") or {}, f"{where}.params")
    return issues


def _form_issues(params: Mapping[str, Any], where: str) -> list[str]:
    if params.get("mode", "form") != "form":
        return []
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        return [f"{where}.requestedSchema: missing"]
    issues: list[str] = []
    properties = schema.get("properties") or {}
    for name, prop in properties.items():
        issues += property_issues(prop, f"{where}.requestedSchema.properties.{name}")
    for name in schema.get("required") or []:
        if name not in properties:
            issues.append(f"{where}.requestedSchema.required: {name!r} is not a property")
    return issues


def property_issues(prop: Any, where: str) -> list[str]:
    """One property of a form's requested schema: a primitive schema definition, strictly, whose
    default is one of its own values."""
    found = _validation_issues(PRIMITIVE_SCHEMA, prop, where, "PrimitiveSchemaDefinition")
    return found or strict_issues(PRIMITIVE_SCHEMA, prop, where) or _default_issues(prop, where)


def _default_issues(prop: Mapping[str, Any], where: str) -> list[str]:
    """A default must be one of the choices and within the bounds the property states."""
    if "default" not in prop:
        return []
    try:
        jsonschema.validate(prop["default"], _choices_schema(prop))
    except jsonschema.ValidationError as error:
        return [f"{where}.default: {error.message}"]
    return []


def _choices_schema(prop: Mapping[str, Any]) -> dict[str, Any]:
    schema = {k: v for k, v in prop.items() if k not in ("default", "title", "description", "enumNames")}
    if "oneOf" in schema:  # titled single select: the consts are the choices
        schema = {"type": "string", "enum": [option["const"] for option in schema.pop("oneOf")]}
    items = schema.get("items")
    if isinstance(items, dict) and "anyOf" in items:
        schema["items"] = {"type": "string", "enum": [option["const"] for option in items["anyOf"]]}
    schema.pop("format", None)  # a format is an annotation here, not a rule jsonschema enforces by default
    return schema


# --- JSON-RPC envelopes -------------------------------------------------------------------------------


def response_issues(
    message: Any, *, method: str | None, request_id: Any, tool: str | None, output_schemas: Mapping[str, Any]
) -> list[str]:
    """A JSON-RPC response (result or error) to the request ``request_id`` of ``method``."""
    if not isinstance(message, dict):
        return ["response is not a JSON object"]
    if "error" in message:
        issues = error_issues(message)
    elif "result" in message:
        issues = _validation_issues(JSONRPCResponse, message, "response")
        issues += [f"response.{key}: not a response field" for key in message if key not in ("jsonrpc", "id", "result")]
        if method is not None and not issues:
            if method == "tools/call" and tool is not None:
                issues += tool_result_issues(tool, message["result"], output_schemas)
            else:
                issues += result_issues(method, message["result"])
    else:
        return ["response has neither result nor error"]
    if message.get("id") != request_id:
        issues.append(f"response id {message.get('id')!r} is not the request's id {request_id!r}")
    return issues


def error_issues(message: Mapping[str, Any]) -> list[str]:
    """An error response: the SDK's envelope, the schema's error object, and the code's own model."""
    issues = _validation_issues(JSONRPCError, message, "error response")
    if issues:
        return issues
    envelope = {k: v for k, v in message.items() if not (k == "id" and v is None)}  # JSON-RPC's id: null
    code = message["error"]["code"]
    model = ERROR_RESPONSES.get(code, wire.JSONRPCErrorResponse)
    issues = _validation_issues(model, envelope, "error response") or strict_issues(model, envelope, "error")
    error_object = ERROR_OBJECTS.get(code)
    if error_object is not None and not issues:
        issues = _validation_issues(error_object, message["error"], "error") or strict_issues(
            error_object, message["error"], "error"
        )
    return issues


def notification_issues(message: Any, *, progress_token: Any = None) -> list[str]:
    """A notification the server sent on a response stream."""
    issues = _validation_issues(JSONRPCNotification, message, "notification")
    if issues:
        return issues
    method = message["method"]
    surface = methods.SERVER_NOTIFICATIONS.get((method, VERSION))
    if surface is None:
        return [f"notification {method!r}: not a server notification at {VERSION}"]
    try:
        methods.parse_server_notification(method, VERSION, message.get("params"))
    except ValidationError as error:
        return [f"notification {method}: {_short(error)}"]
    issues = strict_issues(surface, message, f"notification {method}")
    if method == "notifications/progress" and message["params"].get("progressToken") != progress_token:
        issues.append(f"progress notification for token {message['params'].get('progressToken')!r}, not ours")
    return issues
