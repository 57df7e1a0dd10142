"""What a verified access token says, and the one method every verifier has.

A :class:`TokenVerifier` turns the bearer string of a request into an :class:`AccessToken` or
refuses it with :class:`InvalidTokenError`. The resource server never looks inside a token
itself: JWTs (:mod:`~fastapi_mrtr.auth.jwt_verifier`), introspection or anything else plug in
behind this one protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class InvalidTokenError(Exception):
    """The token is not one this resource accepts (bad signature, expired, another audience...).

    ``description`` goes to the client in the ``WWW-Authenticate`` challenge's ``error_description``:
    it names what failed, never a key or the token itself.
    """

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True)
class AccessToken:
    """A token that passed verification: who it is for and what it allows."""

    subject: str | None
    scopes: frozenset[str]
    client_id: str | None = None
    expires_at: int | None = None  # seconds since the epoch
    claims: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class TokenVerifier(Protocol):
    """Checks one bearer token; raises :class:`InvalidTokenError` for any it does not accept."""

    async def verify(self, token: str) -> AccessToken: ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: RFC 9068 ``scope`` (space separated) or the common ``scp`` list."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, (list, tuple)):
        return frozenset(item for item in raw if isinstance(item, str))
    return frozenset()
