"""RFC 9728 protected resource metadata: where it is served and what it says.

The well-known location comes from the resource URI itself (RFC 9728 §3.1): the
``/.well-known/oauth-protected-resource`` segment goes between the host and the resource's path,
so ``https://api.example.com/mcp`` publishes at
``https://api.example.com/.well-known/oauth-protected-resource/mcp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from fastapi_mrtr.wire.protocol import JSONObject

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def canonical_resource(uri: str) -> str:
    """The resource URI as RFC 8707 wants it: absolute, lower-case scheme and host, no fragment or query."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the resource must be an absolute http(s) URI, got {uri!r}")
    if parts.fragment or parts.query:
        raise ValueError(f"the resource URI takes no query or fragment, got {uri!r}")
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def metadata_path(resource: str) -> str:
    """The path of the resource's own metadata document on its host."""
    return WELL_KNOWN + urlsplit(resource).path


def metadata_url(resource: str) -> str:
    parts = urlsplit(resource)
    return urlunsplit((parts.scheme, parts.netloc, metadata_path(resource), "", ""))


def metadata_document(
    resource: str,
    authorization_servers: Sequence[str],
    scopes_supported: Sequence[str],
    resource_name: str | None,
) -> JSONObject:
    document: JSONObject = {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "bearer_methods_supported": ["header"],  # never the query string or a form body
    }
    if scopes_supported:
        document["scopes_supported"] = sorted(scopes_supported)
    if resource_name:
        document["resource_name"] = resource_name
    return document
