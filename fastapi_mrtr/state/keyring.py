"""The secrets that seal and open ``requestState`` tokens, and the keys derived from them.

Each secret yields two keys through HKDF-SHA256: ``k_enc`` (AES-256-GCM) and ``k_bind`` (the HMAC
that stands for a principal in a token). A token names its key by a 4-byte id,
``SHA-256(b"kid:" + k_enc)[:4]``; the token format itself is in :mod:`fastapi_mrtr.state.sealing`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["KID_LEN", "SealingKey", "StateKeyRing"]

KID_LEN = 4
_MIN_SECRET_BYTES = 32
_INFO = b"fastapi-mrtr/request-state/v1/"


def _derive(secret: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO + label).derive(secret)


@dataclass(frozen=True, repr=False)
class SealingKey:
    """The keys of one secret: its id, its AEAD and its binding key. ``repr`` hides them all."""

    kid: bytes
    aead: AESGCM
    k_bind: bytes

    @classmethod
    def from_secret(cls, secret: bytes | str) -> SealingKey:
        raw = secret.encode("utf-8") if isinstance(secret, str) else secret
        if not isinstance(raw, bytes):
            raise TypeError("request_state_key must be bytes or str")
        if len(raw) < _MIN_SECRET_BYTES:
            raise ValueError(
                f"request_state_key must be at least {_MIN_SECRET_BYTES} bytes, got {len(raw)} (set by "
                "ServerOptions(request_state_key=...) or the MRTR_STATE_KEY environment variable); make one with "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        k_enc = _derive(raw, b"enc")
        kid = hashlib.sha256(b"kid:" + k_enc).digest()[:KID_LEN]
        return cls(kid=kid, aead=AESGCM(k_enc), k_bind=_derive(raw, b"bind"))


class StateKeyRing:
    """Secrets for sealing: ``secrets[0]`` seals, every secret opens (newest first for rotation)."""

    def __init__(self, secrets: bytes | str | Sequence[bytes | str]) -> None:
        # A str or bytes is itself a Sequence, so single secrets are recognised first.
        items = [secrets] if isinstance(secrets, (bytes, str)) else list(secrets)
        if not items:
            raise ValueError("request_state_key needs at least one secret")
        self._keys = tuple(SealingKey.from_secret(s) for s in items)
        self._ephemeral = False

    @classmethod
    def ephemeral(cls) -> StateKeyRing:
        """A ring with one random secret: tokens die with the process and no other process opens them."""
        ring = cls(os.urandom(32))
        ring._ephemeral = True
        return ring

    @property
    def is_ephemeral(self) -> bool:
        return self._ephemeral

    @property
    def key_ids(self) -> list[str]:
        return [k.kid.hex() for k in self._keys]

    @property
    def sealing_key(self) -> SealingKey:
        """The key new tokens are sealed with (the first secret's)."""
        return self._keys[0]

    def keys_with_id(self, kid: bytes) -> list[SealingKey]:
        """Every key that may open a token naming ``kid``: a 4-byte id can collide, so maybe several."""
        return [k for k in self._keys if k.kid == kid]

    def __repr__(self) -> str:
        extra = ", ephemeral=True" if self._ephemeral else ""
        return f"StateKeyRing(kids={self.key_ids!r}{extra})"
