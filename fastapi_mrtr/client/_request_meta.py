"""A request's progress token and ``_meta``, built alike by both eras' transports.

A request asks for progress (a ``progressToken`` in its ``_meta``) only when a progress callback
listens; the token is unique per request, as a 2025-era session requires of the tokens in use.
The caller's ``_meta`` keys go first and the era's protocol keys over them: those must agree with
the headers sent beside them (2026-07-28), and a 2025-era request has none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi_mrtr.client._notifications import notification_sink
from fastapi_mrtr.client._transport import NotificationSink
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback
from fastapi_mrtr.wire.protocol import JSONObject


@dataclass(frozen=True)
class Listening:
    """What one request listens with: its progress token (``None``: no progress asked) and the
    sink its streamed notifications go to (``None``: nobody listens)."""

    token: str | None
    sink: NotificationSink | None


def listening(
    progress: ProgressCallback | None,
    on_notification: NotificationCallback | None,
    number: int | Callable[[], int],
) -> Listening:
    """The token ``mrtr-progress-<number>`` when ``progress`` listens. ``number`` is the request's
    own id, or a counter drawn only then (a request without a callback uses up no number)."""
    token = None
    if progress is not None:
        token = f"mrtr-progress-{number() if callable(number) else number}"
    return Listening(token, notification_sink(token, progress, on_notification))


def with_meta(
    params: JSONObject,
    meta: Mapping[str, Any] | None,
    token: str | None,
    protocol: Mapping[str, Any] | None = None,
) -> JSONObject:
    """``params`` with its ``_meta``: the caller's keys, the era's ``protocol`` keys over them, the
    progress token; without a ``_meta`` when all of that is empty."""
    request_meta: JSONObject = {**(meta or {}), **(protocol or {})}
    if token is not None:
        request_meta["progressToken"] = token
    return {**params, "_meta": request_meta} if request_meta else dict(params)
