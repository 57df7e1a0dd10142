"""What ``tools/list`` said of each tool, the client's only memory across requests.

Two things are kept per tool: its ``x-mcp-header`` declarations, used to mirror arguments into
``Mcp-Param-*`` headers (a tool whose declarations are invalid is dropped from listings and
refused), and its ``outputSchema``, used to check the ``structuredContent`` of its results.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from fastapi_mrtr.client._errors import InvalidToolHeadersError, MrtrClientError
from fastapi_mrtr.client._headers import ParamHeader, param_headers, scan_param_headers
from fastapi_mrtr.client._output_schema import OutputSchemas
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.protocol import CallToolResult, Tool

logger = logging.getLogger("fastapi_mrtr.client")


class ToolCatalogue:
    """The tools learnt from listings; ``list_all`` lists every page again (and teaches us them)."""

    def __init__(self, list_all: Callable[[], Awaitable[Any]]) -> None:
        self._list_all = list_all
        self._headers: dict[str, tuple[ParamHeader, ...]] = {}
        self._invalid: dict[str, str] = {}
        self._schemas = OutputSchemas()
        self._unlisted: set[str] = set()  # called tools that a full listing did not include

    def learn(self, tool: Tool, ttl_ms: int) -> bool:
        """Remember a listed tool; False (and a warning) for one with invalid header declarations."""
        self._unlisted.discard(tool.name)
        try:
            self._headers[tool.name] = scan_param_headers(tool.input_schema)
        except InvalidToolHeadersError as exc:
            logger.warning("excluding tool %r from tools/list: %s", tool.name, exc)
            self._headers.pop(tool.name, None)
            self._schemas.forget(tool.name)
            self._invalid[tool.name] = str(exc)
            return False
        self._invalid.pop(tool.name, None)
        self._schemas.learn(tool, ttl_ms)
        return True

    async def relearn(self) -> None:
        """List every tool again, so that what we keep of each is the server's current word."""
        await self._list_all()

    def check_callable(self, name: str) -> None:
        """Raise :class:`InvalidToolHeadersError` for a tool whose listing was invalid."""
        if name in self._invalid:
            raise InvalidToolHeadersError(f"tool {name!r} must not be called: {self._invalid[name]}")

    def param_headers(self, name: str, arguments: Any) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers that mirror ``arguments`` of tool ``name``."""
        return param_headers(self._headers.get(name, ()), arguments)

    async def check_structured_content(self, name: str, result: CallToolResult) -> None:
        """Raise if ``result`` breaks the tool's ``outputSchema``.

        A tool never listed is listed lazily (once per name); one whose listing outlived its
        ``ttlMs`` is listed again before a result that breaks the cached schema is refused,
        since the server may have changed the schema since.
        """
        if result.is_error:
            return  # a tool error need not fit the schema (and skipping spares the lazy listing)
        if not self._schemas.knows(name) and name not in self._unlisted and not await self._list_for(name):
            return
        error = self._schemas.check(name, result)
        if error is not None and self._schemas.is_stale(name) and await self._list_for(name):
            error = self._schemas.check(name, result)
        if error is not None:
            raise error

    async def _list_for(self, name: str) -> bool:
        """List every tool to learn ``name``'s schema; False (and a logged warning) if that fails
        or the server does not list it: its results then go unchecked rather than unreturned."""
        try:
            await self._list_all()
        except (McpError, MrtrClientError, httpx.HTTPError) as exc:
            logger.warning("cannot check the structuredContent of tool %r: tools/list failed: %s", name, exc)
            return False
        if not self._schemas.knows(name):
            self._unlisted.add(name)
            logger.warning("tool %r is not in tools/list, so its structuredContent is not checked", name)
            return False
        return True
