"""The user-agent step of the authorization code grant, pluggable.

An :data:`AuthorizationHandler` gets the authorization URL and returns where the authorization
server sent the user agent back: the full redirect URL (``...?code=...&state=...&iss=...``),
or just the code. Open a browser and catch the redirect on a loopback listener, print the URL
and read the pasted redirect back, or, against a server that approves without a user, follow
it over HTTP with :func:`follow_authorization_redirect`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Union

import httpx

from fastapi_mrtr.client.auth._errors import OAuthAuthorizationError
from fastapi_mrtr.client.auth._http import NO_AUTH

AuthorizationHandler = Callable[[str], Union[Awaitable[str], str]]

_MAX_HOPS = 5


@dataclass(frozen=True)
class AuthorizationResponse:
    """The parameters of an authorization response (RFC 6749 section 4.1.2, RFC 9207).

    ``redirected`` is False when the handler returned a bare code: there is then no ``state``
    or ``iss`` to check, and the handler vouches for the code.
    """

    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None
    redirected: bool = True


def parse_authorization_response(value: str) -> AuthorizationResponse:
    """Read a redirect URL (query, or fragment when the query is empty) or a bare code."""
    value = value.strip()
    if "?" not in value and "#" not in value:  # no query, no fragment: the code itself
        return AuthorizationResponse(code=value or None, redirected=False)
    url = httpx.URL(value)
    params = url.params if url.query else httpx.QueryParams(url.fragment)
    return AuthorizationResponse(
        code=params.get("code"),
        state=params.get("state"),
        iss=params.get("iss"),
        error=params.get("error"),
        error_description=params.get("error_description"),
    )


async def run_handler(handler: AuthorizationHandler, authorization_url: str) -> str:
    outcome = handler(authorization_url)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    if not isinstance(outcome, str):
        raise TypeError(f"the authorization handler returned {type(outcome).__name__}, not a URL or code")
    return outcome


def _is_response(url: httpx.URL) -> bool:
    return "code" in url.params or "error" in url.params


def follow_authorization_redirect(http_client: httpx.AsyncClient | None = None) -> Callable[[str], Awaitable[str]]:
    """A handler that GETs the authorization URL and returns the redirect back to the client.

    For authorization servers that approve without a user (test servers, some machine setups):
    it follows redirects within the server's origin and returns the first ``Location`` that
    carries ``code`` or ``error`` or leaves that origin. It never requests the redirect URI.
    ``http_client`` is used when given (left open), else a client per call.
    """

    async def follow(authorization_url: str) -> str:
        if http_client is not None:
            return await _follow(http_client, authorization_url)
        async with httpx.AsyncClient() as http:
            return await _follow(http, authorization_url)

    return follow


async def _follow(http: httpx.AsyncClient, authorization_url: str) -> str:
    url = httpx.URL(authorization_url)
    for _ in range(_MAX_HOPS):
        response = await http.get(url, follow_redirects=False, auth=NO_AUTH)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise OAuthAuthorizationError(
                f"the authorization endpoint answered HTTP {response.status_code} without a redirect; "
                "it needs a user: use an authorization handler that opens a browser"
            )
        target = url.join(location)
        if _is_response(target) or (target.scheme, target.netloc) != (url.scheme, url.netloc):
            return str(target)
        url = target
    raise OAuthAuthorizationError(f"more than {_MAX_HOPS} redirects inside the authorization server")
