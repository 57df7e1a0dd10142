"""The scopes an operation needs, read from its route's own ``Security(..., scopes=[...])``.

No second declaration: what FastAPI hands a route's ``SecurityScopes`` is what the MCP endpoint
asks of a token before the call runs. A scope hierarchy the app declares (``{"admin":
["orders:write"], "orders:write": ["orders:read"]}``: holding ``admin`` grants the others) is
applied when a token's scopes are compared with what is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fastapi.routing import APIRoute

from fastapi_mrtr.integration.fastapi_compat import declared_scopes


def route_scopes(route: APIRoute) -> frozenset[str]:
    """Every scope declared anywhere in the route's dependency tree.

    Where FastAPI keeps them depends on its version, so ``fastapi_compat`` reads them.
    """
    return declared_scopes(route)


class ScopeHierarchy:
    """Which scopes a granted scope implies, transitively (a scope always implies itself)."""

    def __init__(self, implies: Mapping[str, Iterable[str]] | None = None) -> None:
        self._implies = {scope: tuple(below) for scope, below in (implies or {}).items()}

    def expand(self, granted: Iterable[str]) -> frozenset[str]:
        held: set[str] = set()
        stack = list(granted)
        while stack:
            scope = stack.pop()
            if scope not in held:
                held.add(scope)
                stack.extend(self._implies.get(scope, ()))
        return frozenset(held)

    def missing(self, granted: Iterable[str], needed: Iterable[str]) -> frozenset[str]:
        """The needed scopes the granted ones do not cover."""
        return frozenset(needed) - self.expand(granted)
