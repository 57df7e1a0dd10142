"""PKCE (RFC 7636) with S256, and the ``state`` of an authorization request."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7636 appendix A)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def s256(verifier: str) -> str:
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


@dataclass(frozen=True)
class Pkce:
    """A fresh code verifier (64 unreserved characters) and its S256 challenge."""

    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48), repr=False)

    @property
    def challenge(self) -> str:
        return s256(self.verifier)

    method = "S256"


def new_state() -> str:
    """An unguessable ``state`` value binding the authorization response to our request."""
    return secrets.token_urlsafe(32)
