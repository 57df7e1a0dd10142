"""Which scopes one JSON-RPC operation needs.

``tools/call``: the scopes in its route's ``Security(..., scopes=[...])`` tree
(:func:`~fastapi_mrtr.auth.scopes.route_scopes`). ``prompts/get`` and ``resources/read`` run
plain functions with no route, so they say it with ``@auth.scopes(...)`` on the function
(:func:`mark_scopes`). Every other method needs none beyond a valid token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi.routing import APIRoute

from fastapi_mrtr.auth.operations import Operation
from fastapi_mrtr.auth.scopes import route_scopes
from fastapi_mrtr.features.prompts import PromptRegistry
from fastapi_mrtr.features.resources import ResourceRegistry
from fastapi_mrtr.integration.tool_methods import ToolRegistry

F = TypeVar("F", bound=Callable[..., Any])
_ATTRIBUTE = "__fastapi_mrtr_oauth_scopes__"


def mark_scopes(fn: F, scopes: tuple[str, ...]) -> F:
    """Record on a prompt or resource function the scopes reading it needs."""
    setattr(fn, _ATTRIBUTE, frozenset(getattr(fn, _ATTRIBUTE, frozenset())) | frozenset(scopes))
    return fn


def marked_scopes(fn: Callable[..., Any]) -> frozenset[str]:
    return frozenset(getattr(fn, _ATTRIBUTE, frozenset()))


class OperationScopes:
    """Looks an operation up in the endpoint's registries; route scopes are read once per route."""

    def __init__(self, tools: ToolRegistry, prompts: PromptRegistry, resources: ResourceRegistry) -> None:
        self._tools = tools
        self._prompts = prompts
        self._resources = resources
        self._by_route: dict[int, frozenset[str]] = {}

    def of_route(self, route: APIRoute) -> frozenset[str]:
        key = id(route)
        if key not in self._by_route:
            self._by_route[key] = route_scopes(route)
        return self._by_route[key]

    def needed(self, operation: Operation) -> frozenset[str]:
        if operation.name is None:
            return frozenset()
        if operation.method == "tools/call":
            tool = self._tools.resolved().get(operation.name)
            return self.of_route(tool.route) if tool is not None else frozenset()
        if operation.method == "prompts/get":
            prompt = self._prompts.get(operation.name)
            return marked_scopes(prompt.signature.fn) if prompt is not None else frozenset()
        if operation.method == "resources/read":
            found = self._resources.find(operation.name)
            return marked_scopes(found[0].signature.fn) if found is not None else frozenset()
        return frozenset()

    def all_declared(self) -> frozenset[str]:
        """Every scope some operation needs (the default ``scopes_supported``)."""
        found: set[str] = set()
        for tool in self._tools.resolved().values():
            found |= self.of_route(tool.route)
        for prompt in self._prompts.all():
            found |= marked_scopes(prompt.signature.fn)
        for resource in [*self._resources.resources(), *self._resources.templates()]:
            found |= marked_scopes(resource.signature.fn)
        return frozenset(found)
