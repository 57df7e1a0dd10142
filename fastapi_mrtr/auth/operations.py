"""What a JSON-RPC body asks for, read before the endpoint sees it, to know which scopes it needs.

Only a complete, well-formed body is read; anything else is left for the endpoint to refuse with
its own error (after the token was checked).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Operation:
    request_id: Any
    method: str
    name: str | None  # tools/call's tool, prompts/get's prompt, resources/read's URI


_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def operations_of(body: bytes) -> list[Operation]:
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return []
    messages = message if isinstance(message, list) else [message]
    found: list[Operation] = []
    for item in messages:
        if not isinstance(item, dict) or not isinstance(item.get("method"), str):
            continue
        method = item["method"]
        params = item.get("params")
        key = _NAME_PARAM.get(method)
        name = params.get(key) if key and isinstance(params, dict) else None
        request_id = item.get("id")
        found.append(
            Operation(
                request_id if isinstance(request_id, (str, int)) else None,
                method,
                name if isinstance(name, str) else None,
            )
        )
    return found
