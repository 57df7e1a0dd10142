"""Where a streamed notification goes: a request's own progress to its progress callback,
everything else to the client's ``on_notification``. Both eras deliver through this."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from fastapi_mrtr.client._transport import NotificationSink
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback, ProgressNotification, call_back
from fastapi_mrtr.wire.protocol import JSONObject, JSONRPCNotification

logger = logging.getLogger("fastapi_mrtr.client")


def notification_sink(
    token: str | None, progress: ProgressCallback | None, on_notification: NotificationCallback | None
) -> NotificationSink | None:
    """The sink for one request (progress ``token``, or ``None`` for none), or ``None`` when
    nobody listens."""
    if progress is None and on_notification is None:
        return None

    async def sink(message: JSONObject) -> None:
        # A server's malformed notification must not fail the request it rides on.
        notification = _notification(message)
        if notification is None:
            logger.warning("dropping malformed notification %.200r", message)
            return
        params = notification.params
        is_ours = params is not None and token is not None and params.get("progressToken") == token
        if notification.method == "notifications/progress" and is_ours and progress is not None:
            try:
                note = ProgressNotification.model_validate(params)
            except ValidationError:
                logger.warning("dropping malformed progress notification %r", params)
                return
            await call_back(progress, note)
        elif on_notification is not None:
            await call_back(on_notification, notification)

    return sink


def _notification(message: JSONObject) -> JSONRPCNotification | None:
    """A streamed notification, or ``None`` for a malformed one (no ``"jsonrpc": "2.0"``, a
    method that is no string, params that are no object). The model defaults ``jsonrpc``, so
    its absence is checked here."""
    if message.get("jsonrpc") != "2.0":
        return None
    try:
        return JSONRPCNotification.model_validate(message)
    except ValidationError:
        return None
