"""Opaque cursors for list methods: a bad cursor is invalid params, never a crash."""

from __future__ import annotations

import base64
import binascii
from typing import Any, TypeVar

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.wire.errors import INVALID_PARAMS, ServerError
from fastapi_mrtr.wire.protocol import JSONObject

T = TypeVar("T")


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def _decode(cursor: Any) -> int:
    if not isinstance(cursor, str):
        raise ValueError("cursor must be a string")
    padded = cursor + "=" * (-len(cursor) % 4)
    text = base64.urlsafe_b64decode(padded.encode()).decode()
    kind, _, number = text.partition(":")
    if kind != "offset" or not number.isdigit():
        raise ValueError("unknown cursor")
    return int(number)


def page(items: list[T], cursor: Any, size: int) -> tuple[list[T], str | None]:
    """One page of ``items`` starting at ``cursor``, and the cursor of the next page (or None)."""
    start = 0
    if cursor is not None:
        try:
            start = _decode(cursor)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise ServerError(INVALID_PARAMS, "Invalid params: unknown cursor") from None
        if start > len(items):
            raise ServerError(INVALID_PARAMS, "Invalid params: unknown cursor")
    end = start + size
    return items[start:end], (_encode(end) if end < len(items) else None)


def listing(field: str, entries: list[JSONObject], cursor: Any, options: ServerOptions) -> JSONObject:
    """A complete, cacheable list result (``tools/list``, ``prompts/list``, ``resources/list``...)."""
    items, next_cursor = page(entries, cursor, options.page_size)
    result: JSONObject = {
        "resultType": "complete",
        field: items,
        "ttlMs": options.cache_ttl_ms,
        "cacheScope": options.cache_scope,
    }
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
