"""Finding who guards the MCP server: RFC 9728 resource metadata, then RFC 8414 / OIDC metadata.

Protected resource metadata comes from the URL in the 401's ``resource_metadata`` parameter when
there is one, else from the path-based well-known URL, else from the root one. Its ``resource``
must be the MCP server or a parent of it (same origin, a path prefix), or the flow stops: a
server must not send us to authorize for someone else's resource.

Authorization server metadata for an issuer with a path is looked for at the RFC 8414 path-based
URL, then the OIDC path-inserted and path-appended ones; without a path at the two root URLs.
Its ``issuer`` must equal the issuer we built the URL from (RFC 8414 section 3.3), character for
character, or the flow stops.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from fastapi_mrtr.client.auth._errors import OAuthDiscoveryError
from fastapi_mrtr.client.auth._http import NO_AUTH
from fastapi_mrtr.client.auth._models import AuthorizationServerMetadata, ProtectedResourceMetadata

M = TypeVar("M", bound=BaseModel)

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Discovery:
    """What the flow learned about one MCP server's authorization."""

    server_url: str
    resource_metadata: ProtectedResourceMetadata
    metadata: AuthorizationServerMetadata

    @property
    def resource(self) -> str:
        """The RFC 8707 ``resource`` value: exactly as the resource metadata publishes it."""
        return self.resource_metadata.resource

    @property
    def issuer(self) -> str:
        return self.metadata.issuer


def server_key(url: httpx.URL | str) -> str:
    """The MCP server a request goes to: its URL without query or fragment."""
    return str(httpx.URL(url).copy_with(query=None, fragment=None))


def _with_path(url: httpx.URL, path: str) -> str:
    return str(url.copy_with(path=path, query=None, fragment=None))


def resource_metadata_urls(server_url: str, hint: str | None = None) -> list[str]:
    """Where to look for the server's protected resource metadata, in order."""
    url = httpx.URL(server_url)
    path = url.path.rstrip("/")
    candidates = [hint] if hint else []
    if path:
        candidates.append(_with_path(url, PRM_WELL_KNOWN + path))
    candidates.append(_with_path(url, PRM_WELL_KNOWN))
    return list(dict.fromkeys(candidates))


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an issuer's metadata, in order (MCP authorization, discovery section)."""
    url = httpx.URL(issuer)
    path = url.path.rstrip("/")
    if not path:
        return [_with_path(url, OAUTH_WELL_KNOWN), _with_path(url, OIDC_WELL_KNOWN)]
    return [
        _with_path(url, OAUTH_WELL_KNOWN + path),
        _with_path(url, OIDC_WELL_KNOWN + path),
        _with_path(url, path + OIDC_WELL_KNOWN),
    ]


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)


def resource_matches(server_url: str, resource: str) -> bool:
    """True when ``resource`` identifies the server: same origin, its path a prefix of the server's."""
    try:
        target, claimed = httpx.URL(server_url), httpx.URL(resource)
    except httpx.InvalidURL:
        return False
    if claimed.fragment or not claimed.host or _origin(target) != _origin(claimed):
        return False
    prefix, path = claimed.path.rstrip("/"), target.path.rstrip("/")
    return not prefix or path == prefix or path.startswith(prefix + "/")


async def _fetch(http: httpx.AsyncClient, url: str, model: type[M]) -> M | str:
    """The document at ``url``, or why there is none there (to try the next candidate)."""
    try:
        response = await http.get(url, headers={"Accept": "application/json"}, auth=NO_AUTH)
    except httpx.TransportError as exc:
        return f"{url}: {exc.__class__.__name__}"
    if not response.is_success:
        return f"{url}: HTTP {response.status_code}"
    try:
        return model.model_validate(json.loads(response.content))
    except (ValueError, ValidationError):
        return f"{url}: not a valid metadata document"


async def fetch_resource_metadata(
    http: httpx.AsyncClient, server_url: str, hint: str | None = None
) -> ProtectedResourceMetadata:
    misses: list[str] = []
    for url in resource_metadata_urls(server_url, hint):
        found = await _fetch(http, url, ProtectedResourceMetadata)
        if isinstance(found, str):
            misses.append(found)
            continue
        if not resource_matches(server_url, found.resource):
            raise OAuthDiscoveryError(
                f"protected resource metadata at {url} is for {found.resource!r}, not for {server_url}"
            )
        if not found.authorization_servers:
            raise OAuthDiscoveryError(f"protected resource metadata at {url} names no authorization server")
        return found
    raise OAuthDiscoveryError("no protected resource metadata found (" + "; ".join(misses) + ")")


async def fetch_authorization_server_metadata(http: httpx.AsyncClient, issuer: str) -> AuthorizationServerMetadata:
    misses: list[str] = []
    for url in authorization_server_metadata_urls(issuer):
        found = await _fetch(http, url, AuthorizationServerMetadata)
        if isinstance(found, str):
            misses.append(found)
            continue
        if found.issuer != issuer:
            raise OAuthDiscoveryError(
                f"authorization server metadata at {url} names issuer {found.issuer!r}, not {issuer!r}"
            )
        return found
    raise OAuthDiscoveryError(f"no authorization server metadata for {issuer} (" + "; ".join(misses) + ")")


async def discover(http: httpx.AsyncClient, server_url: str, hint: str | None = None) -> Discovery:
    """Resource metadata, then the metadata of its first authorization server."""
    prm = await fetch_resource_metadata(http, server_url, hint)
    metadata = await fetch_authorization_server_metadata(http, prm.authorization_servers[0])
    return Discovery(server_url, prm, metadata)
