"""Sealed MRTR ``requestState`` tokens (AES-256-GCM). Pure: stdlib and ``cryptography`` only.

``requestState`` is attacker-controlled input that the client echoes back, so the server seals
everything it needs into it and refuses anything it did not seal for this very request.

Token layout (every token is ASCII)::

    "v1." + b64url_nopad( kid[4] || nonce[12] || ciphertext || tag[16] )

    ciphertext, tag = AESGCM(k_enc).encrypt(nonce, plaintext, aad)
    aad             = b"v1." + kid + audience.encode("utf-8")
    plaintext       = compact JSON object (UTF-8, no compression):
        {"v":1, "jti", "fid", "r", "iat", "exp", "fexp", "m", "t", "a", "aud", "p", "d"[, "tc"]}

* ``kid = SHA-256(b"kid:" + k_enc)[:4]`` picks the key that opens the token.
* Each secret of a :class:`StateKeyRing` yields ``k_enc`` and ``k_bind`` via HKDF-SHA256
  (:mod:`fastapi_mrtr.state.keyring`).
* ``iat``/``exp``/``fexp`` are unix seconds (``exp``/``fexp`` may be null = no limit).
* ``m``/``t``/``a``/``aud`` bind the token to method, target, :func:`arguments_digest`
  (:mod:`fastapi_mrtr.state.digest`) and server.
* ``p = b64url_nopad(HMAC-SHA256(k_bind, principal))[:22]`` or null: the principal is never stored.
* ``d`` is the caller's JSON object.
* ``tc`` (optional, only when tracing is on): the ``traceparent`` of the flow's first traced round,
  so a later round's span links to it on any replica (``fastapi_mrtr.telemetry.flows``). A token
  without it opens as before, and readers that predate it ignore it.

Tokens are not single-use: a captured token can be replayed (by the same principal, for the same
request) until it expires. Callers needing at-most-once must track ``jti`` themselves.

:class:`RequestStateSealer` is the public face: it picks every nonce itself, since AES-GCM under one
key never survives a nonce used twice. The functions below it take a nonce only for golden tests,
and stay private for that reason.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag

import fastapi_mrtr.wire.json_codec as json_codec
from fastapi_mrtr.state.b64url import b64url_decode_strict, b64url_encode
from fastapi_mrtr.state.digest import arguments_digest
from fastapi_mrtr.state.keyring import KID_LEN, SealingKey, StateKeyRing

__all__ = [
    "InvalidRequestStateError", "RequestStateSealer", "RequestStateTooLargeError", "StateBinding", "StateClaims",
    "StateKeyRing", "arguments_digest",
]  # fmt: skip

PREFIX = "v1."
_VERSION = 1
_NONCE_LEN, _TAG_LEN = 12, 16


class InvalidRequestStateError(Exception):
    """Raised when a requestState token cannot be trusted. ``reason`` is for logs, never for clients."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid requestState ({reason})")
        self.reason = reason


class RequestStateTooLargeError(ValueError):
    """Raised by :meth:`RequestStateSealer.seal` when the token would exceed ``max_bytes``."""


# --- binding and claims -------------------------------------------------------------------------


@dataclass(frozen=True)
class StateBinding:
    """What a token is bound to; verification needs the same values the token was minted with."""

    method: str
    target: str
    arguments_digest: str
    audience: str
    principal: str | None


@dataclass(frozen=True)
class StateClaims:
    """The verified contents of a token."""

    jti: str
    flow_id: str
    round: int
    issued_at: int
    expires_at: int | None
    flow_deadline: int | None
    key_id: str
    data: dict[str, Any]
    trace_anchor: str | None = None  # the ``tc`` claim: round 1's span context, when traced


def _principal_tag(key: SealingKey, principal: str | None) -> str | None:
    if principal is None:
        return None
    return b64url_encode(hmac.new(key.k_bind, principal.encode("utf-8"), hashlib.sha256).digest())[:22]


def _aad(kid: bytes, audience: str) -> bytes:
    return PREFIX.encode("ascii") + kid + audience.encode("utf-8")


def _seconds(value: float | None) -> int | None:
    # Rounded up, so a token never expires before the requested moment.
    return None if value is None else math.ceil(value)


# --- mint ---------------------------------------------------------------------------------------


def _mint_request_state(
    data: Mapping[str, Any],
    *,
    keys: StateKeyRing,
    binding: StateBinding,
    ttl: float,
    round: int,
    flow_id: str | None = None,
    flow_deadline: float | None = None,
    max_bytes: int = 16384,
    now: float | None = None,
    nonce: bytes | None = None,
    jti: str | None = None,
    trace_anchor: str | None = None,
) -> str:
    """Seal ``data`` for ``binding`` with the ring's first key. ``ttl`` in seconds (0 = never expires);
    ``flow_deadline`` is an absolute unix time. ``now``/``nonce``/``jti`` exist for golden tests."""
    if ttl < 0 or round < 0:
        raise ValueError("ttl and round must be >= 0")
    fresh = os.urandom(_NONCE_LEN + 32)  # nonce, jti, flow id: one system call for the three
    nonce = fresh[:_NONCE_LEN] if nonce is None else nonce
    if len(nonce) != _NONCE_LEN:
        raise ValueError(f"nonce must be {_NONCE_LEN} bytes")
    issued = time.time() if now is None else now
    key = keys.sealing_key
    claims = {
        "v": _VERSION,
        "jti": b64url_encode(fresh[_NONCE_LEN : _NONCE_LEN + 16]) if jti is None else jti,
        "fid": b64url_encode(fresh[_NONCE_LEN + 16 :]) if flow_id is None else flow_id,
        "r": round,
        "iat": math.floor(issued),
        "exp": _seconds(issued + ttl) if ttl else None,
        "fexp": _seconds(flow_deadline),
        "m": binding.method,
        "t": binding.target,
        "a": binding.arguments_digest,
        "aud": binding.audience,
        "p": _principal_tag(key, binding.principal),
        "d": dict(data),
    }
    if trace_anchor is not None:
        claims["tc"] = trace_anchor
    plaintext = json_codec.encode(claims, finite=True)  # the reader is strict: refuse NaN here
    sealed = key.aead.encrypt(nonce, plaintext, _aad(key.kid, binding.audience))
    token = PREFIX + b64url_encode(key.kid + nonce + sealed)
    if len(token) > max_bytes:
        raise RequestStateTooLargeError(f"requestState would be {len(token)} bytes (limit {max_bytes})")
    return token


# --- verify -------------------------------------------------------------------------------------


def _open(token: object, keys: StateKeyRing, audience: str, max_bytes: int) -> tuple[SealingKey, bytes]:
    """Steps 1-3: type and size (before any decoding), envelope, kid, then AES-GCM."""
    if not isinstance(token, str):
        raise InvalidRequestStateError("not_a_string")
    if len(token) > max_bytes:
        raise InvalidRequestStateError("too_large")
    if not token.startswith(PREFIX):
        raise InvalidRequestStateError("bad_prefix")
    raw = b64url_decode_strict(token[len(PREFIX) :])
    if raw is None:
        raise InvalidRequestStateError("bad_encoding")
    if len(raw) < KID_LEN + _NONCE_LEN + _TAG_LEN:
        raise InvalidRequestStateError("truncated")
    kid, nonce, sealed = raw[:KID_LEN], raw[KID_LEN : KID_LEN + _NONCE_LEN], raw[KID_LEN + _NONCE_LEN :]
    # A 4-byte kid can collide, so every key carrying it gets a try.
    candidates = keys.keys_with_id(kid)
    if not candidates:
        raise InvalidRequestStateError("unknown_key")
    for key in candidates:
        try:
            return key, key.aead.decrypt(nonce, sealed, _aad(kid, audience))
        except InvalidTag:
            continue
    raise InvalidRequestStateError("tampered")


# Exact types: decoded JSON holds only the builtin types themselves, and a bool (true/false) is
# never a valid number here, which an exact match refuses without a second test.
_STR, _INT, _OPT_INT, _OPT_STR = (str,), (int,), (int, type(None)), (str, type(None))
_CLAIM_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("jti", _STR), ("fid", _STR), ("r", _INT), ("iat", _INT), ("exp", _OPT_INT), ("fexp", _OPT_INT),
    ("m", _STR), ("t", _STR), ("a", _STR), ("aud", _STR), ("p", _OPT_STR), ("d", (dict,)),
)  # fmt: skip
_ABSENT = object()  # a claim that is missing: its type is none of the above


def _parse(plaintext: bytes) -> dict[str, Any]:
    """Step 4. The plaintext is authenticated, so a failure here means a bug or a foreign minter."""
    try:
        claims = json_codec.decode_finite(plaintext)
    except ValueError:
        raise InvalidRequestStateError("malformed") from None
    if not isinstance(claims, dict) or type(claims.get("v")) is not int or claims["v"] != _VERSION:
        raise InvalidRequestStateError("malformed")
    for name, types in _CLAIM_TYPES:
        if type(claims.get(name, _ABSENT)) not in types:
            raise InvalidRequestStateError("malformed")
    return claims


def _check_time(claims: Mapping[str, Any], now: float, max_clock_skew: float) -> None:
    if claims["iat"] > now + max_clock_skew:
        raise InvalidRequestStateError("issued_in_future")
    if claims["exp"] is not None and now >= claims["exp"]:
        raise InvalidRequestStateError("expired")
    if claims["fexp"] is not None and now >= claims["fexp"]:
        raise InvalidRequestStateError("flow_expired")


# (claim, StateBinding attribute, reason)
_BOUND = (
    ("m", "method", "wrong_method"),
    ("t", "target", "wrong_target"),
    ("a", "arguments_digest", "wrong_arguments"),
    ("aud", "audience", "wrong_audience"),
)


def _check_binding(claims: Mapping[str, Any], key: SealingKey, binding: StateBinding) -> None:
    for claim, attr, reason in _BOUND:
        if claims[claim] != getattr(binding, attr):
            raise InvalidRequestStateError(reason)
    sealed, current = claims["p"], _principal_tag(key, binding.principal)
    if sealed is None and current is None:
        return
    if sealed is None or current is None or not hmac.compare_digest(sealed, current):
        raise InvalidRequestStateError("wrong_principal")


def _verify_request_state(
    token: object,
    *,
    keys: StateKeyRing,
    binding: StateBinding,
    max_bytes: int = 16384,
    now: float | None = None,
    max_clock_skew: float = 60,
) -> StateClaims:
    """Open ``token`` and check it against ``binding``; raise :class:`InvalidRequestStateError` otherwise.

    The audience is part of the AAD, so a token for another server fails as ``tampered``.
    """
    key, plaintext = _open(token, keys, binding.audience, max_bytes)
    claims = _parse(plaintext)
    _check_time(claims, time.time() if now is None else now, max_clock_skew)
    _check_binding(claims, key, binding)
    return StateClaims(
        jti=claims["jti"],
        flow_id=claims["fid"],
        round=claims["r"],
        issued_at=claims["iat"],
        expires_at=claims["exp"],
        flow_deadline=claims["fexp"],
        key_id=key.kid.hex(),
        data=claims["d"],
        trace_anchor=claims["tc"] if isinstance(claims.get("tc"), str) else None,
    )


# --- the public face ----------------------------------------------------------------------------


class RequestStateSealer:
    """Seals JSON objects into ``requestState`` tokens bound to one request, and opens them again.

    ::

        sealer = RequestStateSealer(StateKeyRing([new_secret, old_secret]), ttl=300)
        token = sealer.seal({"step": 2}, binding)
        claims = sealer.open(token, binding)  # raises InvalidRequestStateError, or claims.data == {"step": 2}

    The sealer draws a fresh nonce, token id and flow id for every token: there is no way to pass
    one in, so no caller can reuse an AES-GCM nonce. ``ttl`` is in seconds (0 = tokens never
    expire); ``max_bytes`` bounds a token both ways (sealing refuses with
    :class:`RequestStateTooLargeError`, opening with ``InvalidRequestStateError("too_large")``);
    ``max_clock_skew`` is how far in the future an ``issued_at`` may lie (clocks of replicas differ).
    """

    def __init__(
        self,
        keys: StateKeyRing | bytes | str | Sequence[bytes | str],
        *,
        ttl: float = 600.0,
        max_bytes: int = 16384,
        max_clock_skew: float = 60.0,
    ) -> None:
        if ttl < 0:
            raise ValueError("ttl must be >= 0 (0 means tokens never expire)")
        self._keys = keys if isinstance(keys, StateKeyRing) else StateKeyRing(keys)
        self._ttl = ttl
        self._max_bytes = max_bytes
        self._max_clock_skew = max_clock_skew

    @property
    def keys(self) -> StateKeyRing:
        return self._keys

    def seal(
        self,
        data: Mapping[str, Any],
        binding: StateBinding,
        *,
        round: int = 1,
        flow_id: str | None = None,
        flow_deadline: float | None = None,
        now: float | None = None,
        trace_anchor: str | None = None,
    ) -> str:
        """A token carrying ``data`` (a JSON object) that opens only for ``binding``.

        Pass the previous round's ``claims.flow_id`` to keep one flow id across rounds;
        ``flow_deadline`` is an absolute Unix time; ``now`` fixes the clock (one clock per round);
        ``trace_anchor`` is a ``traceparent`` to carry (``claims.trace_anchor``), for tracing.
        """
        return _mint_request_state(
            data,
            keys=self._keys,
            binding=binding,
            ttl=self._ttl,
            round=round,
            flow_id=flow_id,
            flow_deadline=flow_deadline,
            max_bytes=self._max_bytes,
            now=now,
            trace_anchor=trace_anchor,
        )

    def open(self, token: object, binding: StateBinding, *, now: float | None = None) -> StateClaims:
        """The claims of ``token`` if it was sealed for ``binding`` and is still valid; otherwise
        :class:`InvalidRequestStateError` (its ``reason`` is for logs, never for clients)."""
        return _verify_request_state(
            token,
            keys=self._keys,
            binding=binding,
            max_bytes=self._max_bytes,
            now=now,
            max_clock_skew=self._max_clock_skew,
        )

    def __repr__(self) -> str:
        return f"RequestStateSealer({self._keys!r}, ttl={self._ttl!r}, max_bytes={self._max_bytes!r})"
