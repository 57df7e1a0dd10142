"""Every line the bridge wrote, checked against the official SDK's wire models (``mcp_types``, mcp 2.3.0).

A modern message (the answer to a request with modern ``_meta``) is checked with tests/interop's
checker (results by method and ``resultType``, each ``inputRequests`` entry, error objects by code,
notifications). A 2025-era message is checked against the SDK's 2025-11-25 models: the result of
its method, the server's requests, and that nothing modern-only (``resultType``, ``ttlMs``,
``inputRequests``...) reaches a 2025 client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_types import methods
from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
from pydantic import TypeAdapter, ValidationError

from tests.interop import wire

LEGACY = "2025-11-25"
MODERN_ONLY = ("resultType", "ttlMs", "cacheScope", "inputRequests", "requestState")


def stream_issues(
    lines: list[bytes], sent: Mapping[Any, Mapping[str, Any]], output_schemas: Mapping[str, Any]
) -> list[str]:
    """What is wrong with the stream ``lines``, given the requests ``sent`` (by id)."""
    issues: list[str] = []
    answered: dict[Any, int] = {}
    for number, line in enumerate(lines, 1):
        where = f"line {number}"
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            issues.append(f"{where}: not exactly one line")
        try:
            message = json.loads(line)
        except ValueError:
            issues.append(f"{where}: not JSON: {line[:200]!r}")
            continue
        if not isinstance(message, dict):
            issues.append(f"{where}: not a JSON-RPC object")
            continue
        if "method" in message:
            issues += [f"{where}: {issue}" for issue in _from_server(message, sent)]
            continue
        request = sent.get(message.get("id")) if message.get("id") is not None else None
        answered[message.get("id")] = answered.get(message.get("id"), 0) + 1
        issues += [f"{where}: {issue}" for issue in _response(message, request, output_schemas)]
    issues += [
        f"{count} responses to request {rid!r}" for rid, count in answered.items() if rid is not None and count > 1
    ]
    return issues


def _response(
    message: dict[str, Any], request: Mapping[str, Any] | None, output_schemas: Mapping[str, Any]
) -> list[str]:
    if request is None or "error" in message:
        return wire.error_issues(message) if "error" in message else ["a result for no request sent"]
    method = request["method"]
    params = request.get("params") or {}
    if _is_modern(request):
        tool = params.get("name") if method == "tools/call" else None
        return wire.response_issues(
            message, method=method, request_id=request["id"], tool=tool, output_schemas=output_schemas
        )
    issues = _validation(JSONRPCResponse, message, "response")
    result = message.get("result")
    if not isinstance(result, dict):
        return [*issues, "a 2025 result that is no object"]
    issues += [f"{method}: a 2025 result has {key}" for key in MODERN_ONLY if key in result]
    model = methods.SERVER_RESULTS.get((method, LEGACY))
    if model is None:
        return [*issues, f"{method}: no 2025-11-25 result model"]
    return issues + _validation(model, result, f"{method} result")


def _from_server(message: dict[str, Any], sent: Mapping[Any, Mapping[str, Any]]) -> list[str]:
    if "id" in message:  # a server request: only a 2025-era session may see one
        if not any(request.get("method") == "initialize" for request in sent.values()):
            return [f"the server sent a request ({message['method']}) and no 2025-era session was opened"]
        model = methods.SERVER_REQUESTS.get((message["method"], LEGACY))
        if model is None:
            return [f"unknown server request {message['method']}"]
        return _validation(JSONRPCRequest, message, "server request") + _validation(model, message, "request")
    issues = _validation(JSONRPCNotification, message, "notification")
    return issues or wire.notification_issues(
        message, progress_token=(message.get("params") or {}).get("progressToken")
    )


def _is_modern(request: Mapping[str, Any]) -> bool:
    meta = (request.get("params") or {}).get("_meta")
    return isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


def _validation(model: Any, value: Any, where: str) -> list[str]:
    try:
        TypeAdapter(model).validate_python(value, by_name=False)
    except ValidationError as error:
        return [f"{where}: {error.errors()[:3]}"]
    return []
