"""Small public types of the client: progress notifications and callback signatures."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Union

from fastapi_mrtr.wire.protocol import JSONRPCNotification, RequestId, WireModel


class ProgressNotification(WireModel):
    """The params of a ``notifications/progress`` about one of our requests."""

    progress_token: RequestId
    progress: float
    total: float | None = None
    message: str | None = None


ProgressCallback = Callable[[ProgressNotification], Union[Awaitable[None], None]]
NotificationCallback = Callable[[JSONRPCNotification], Union[Awaitable[None], None]]


async def call_back(fn: Callable[[Any], Any], value: Any) -> None:
    """Run a sync or async callback inline (callbacks are expected to return quickly)."""
    outcome = fn(value)
    if inspect.isawaitable(outcome):
        await outcome
