"""``ctx: Context``: how a path function receives the :class:`ToolContext` of its call.

An in-process MCP call carries its call record in the ASGI scope; a plain REST call gets one
built from its ``MRTR-*`` headers (see :mod:`fastapi_mrtr.integration.rest`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from fastapi_mrtr.engine.call import SCOPE_KEY
from fastapi_mrtr.engine.context import ToolContext
from fastapi_mrtr.integration.rest import rest_record


async def get_context(request: Request) -> ToolContext:
    """FastAPI dependency: the context of the current MCP call, or of a plain REST call."""
    record = request.scope.get(SCOPE_KEY)
    if record is None:
        record = await rest_record(request)
    return ToolContext(record, request)


Context = Annotated[ToolContext, Depends(get_context)]
"""Declare ``ctx: Context`` in a path function to receive the :class:`ToolContext`."""
