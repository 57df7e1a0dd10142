"""Which scope to ask for (MCP authorization, scope selection and scope challenge sections).

First the ``scope`` of the server's challenge, else the resource metadata's ``scopes_supported``,
else none at all (the parameter is omitted). A re-authorization keeps what was asked for before
and adds what the challenge names (SEP-2350). ``offline_access`` is added only when the
authorization server lists it and the client registers for refresh tokens (SEP-2207).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fastapi_mrtr.client.auth._challenge import BearerChallenge
from fastapi_mrtr.client.auth._discovery import Discovery

OFFLINE_ACCESS = "offline_access"


def union(*groups: Iterable[str]) -> list[str]:
    """The scopes of every group, first occurrence order, no duplicates."""
    return list(dict.fromkeys(scope for group in groups for scope in group))


def select_scope(
    discovery: Discovery,
    challenge: BearerChallenge,
    *,
    configured: str | None = None,
    previous: Sequence[str] = (),
    offline_access: bool = False,
) -> str | None:
    """The space-separated scope for an authorization request, or ``None`` to omit it."""
    if configured is not None:
        base = configured.split()
    elif challenge.scopes:
        base = challenge.scopes
    else:
        base = list(discovery.resource_metadata.scopes_supported or ())
    scopes = union(previous, base)
    if offline_access and scopes and OFFLINE_ACCESS in (discovery.metadata.scopes_supported or ()):
        scopes = union(scopes, [OFFLINE_ACCESS])
    return " ".join(scopes) or None
