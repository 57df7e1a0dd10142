"""A small real token issuer for the tests: RSA and EC keys made here, its metadata and JWKS served
over loopback HTTP by uvicorn, and tokens minted with PyJWT (good ones and each kind of bad one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support import running_server


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Any

    def public_jwk(self) -> dict[str, Any]:
        algorithm = RSAAlgorithm if self.alg.startswith(("RS", "PS")) else ECAlgorithm
        jwk: dict[str, Any] = json.loads(algorithm.to_jwk(self.private.public_key()))
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


def rsa_key(kid: str) -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@dataclass
class Issuer:
    """Serves ``/.well-known/oauth-authorization-server`` and ``/jwks``; counts JWKS fetches."""

    url: str = ""
    published: list[SigningKey] = field(default_factory=list)
    jwks_hits: int = 0
    introspection: dict[str, Any] = field(default_factory=lambda: {"active": False})  # what /introspect answers
    introspected: list[tuple[str, str]] = field(default_factory=list)  # (token, Authorization header)

    def app(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(
                {"issuer": self.url, "jwks_uri": f"{self.url}/jwks", "introspection_endpoint": f"{self.url}/introspect"}
            )

        async def jwks(request: Request) -> JSONResponse:
            self.jwks_hits += 1
            return JSONResponse({"keys": [key.public_jwk() for key in self.published]})

        async def introspect(request: Request) -> JSONResponse:
            form = await request.form()
            self.introspected.append((str(form.get("token")), request.headers.get("authorization", "")))
            if request.headers.get("authorization") != "Basic cnM6cnMtc2VjcmV0":  # rs:rs-secret
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            return JSONResponse(self.introspection)

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/jwks", jwks),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )

    def mint(
        self,
        key: SigningKey,
        *,
        audience: str,
        scope: str = "",
        issuer: str | None = None,
        expires_in: int = 300,
        subject: str = "alice",
        **extra: Any,
    ) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url if issuer is None else issuer,
            "aud": audience,
            "sub": subject,
            "client_id": "test-client",
            "iat": now,
            "exp": now + expires_in,
            "scope": scope,
            **extra,
        }
        return jwt.encode(claims, key.private, algorithm=key.alg, headers={"kid": key.kid})


@contextmanager
def running_issuer(*keys: SigningKey) -> Iterator[Issuer]:
    issuer = Issuer(published=list(keys))
    with running_server(issuer.app()) as url:
        issuer.url = url
        yield issuer
