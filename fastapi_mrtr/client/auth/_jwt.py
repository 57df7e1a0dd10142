"""Signed client assertions (RFC 7523 section 2.2) for ``private_key_jwt`` client authentication.

Only what the token endpoint needs: a compact JWS over a JSON claim set, signed with an EC
(ES256/ES384/ES512) or RSA (RS256/PS256 and friends) private key given as PEM.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from fastapi_mrtr.client.auth._pkce import b64url

_EC_ALGS = {"ES256": 32, "ES384": 48, "ES512": 66}


def _hash(alg: str) -> Any:
    from cryptography.hazmat.primitives import hashes

    return {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[alg[2:]]


def _default_alg(key: Any) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec

    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "ES256")
    return "RS256"


def _sign(key: Any, alg: str, data: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    if alg in _EC_ALGS and isinstance(key, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(_hash(alg))))
        size = _EC_ALGS[alg]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")  # JWS wants r || s, not DER
    if alg[:2] in ("RS", "PS") and isinstance(key, rsa.RSAPrivateKey):
        pad: padding.AsymmetricPadding
        if alg.startswith("PS"):
            pad = padding.PSS(mgf=padding.MGF1(_hash(alg)), salt_length=padding.PSS.DIGEST_LENGTH)
        else:
            pad = padding.PKCS1v15()
        return key.sign(data, pad, _hash(alg))
    raise ValueError(f"cannot sign {alg} with a {type(key).__name__}")


def sign_jwt(claims: dict[str, Any], private_key_pem: str, alg: str | None = None, kid: str | None = None) -> str:
    """A compact JWS of ``claims``; ``alg`` defaults to the key's natural algorithm."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(private_key_pem.encode(), password=None)
    alg = alg or _default_alg(key)
    header: dict[str, Any] = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    signing_input = ".".join(
        b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
    ).encode("ascii")
    return signing_input.decode("ascii") + "." + b64url(_sign(key, alg, signing_input))


def client_assertion(
    client_id: str, audience: str, private_key_pem: str, alg: str | None = None, lifetime: int = 300
) -> str:
    """The ``client_assertion`` for ``private_key_jwt``: iss = sub = client_id, aud = the issuer."""
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_urlsafe(16),
    }
    return sign_jwt(claims, private_key_pem, alg)
