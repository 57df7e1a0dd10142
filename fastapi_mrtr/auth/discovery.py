"""Where an issuer publishes its keys: RFC 8414 authorization server metadata, else OIDC discovery.

Both documents must name the issuer exactly as configured (RFC 8414 §3.3, OIDC Discovery §4.3):
metadata that names another issuer is refused rather than trusted.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx

from fastapi_mrtr.auth.tokens import InvalidTokenError


def metadata_urls(issuer: str) -> list[str]:
    """The RFC 8414 location first (well-known segment before the issuer's path), then OIDC's (after it)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    oauth = urlunsplit((parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", ""))
    oidc = urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", ""))
    return [oauth, oidc]


async def find_jwks_uri(client: httpx.AsyncClient, issuer: str) -> str:
    """The issuer's ``jwks_uri``, from the first metadata document it serves."""
    return await find_endpoint(client, issuer, "jwks_uri", "the issuer's signing keys could not be found")


async def find_endpoint(client: httpx.AsyncClient, issuer: str, field: str, missing: str) -> str:
    """One URL field (``jwks_uri``, ``introspection_endpoint``) of the first metadata document the issuer serves."""
    for url in metadata_urls(issuer):
        try:
            response = await client.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError:
            continue
        if response.status_code != 200:
            continue
        try:
            document = response.json()
        except ValueError:
            continue
        if not isinstance(document, dict):
            continue
        if document.get("issuer") != issuer:
            raise InvalidTokenError(f"the metadata at {url} names another issuer")
        found = document.get(field)
        if isinstance(found, str) and found:
            return found
    raise InvalidTokenError(f"{missing} (no metadata with a {field})")
