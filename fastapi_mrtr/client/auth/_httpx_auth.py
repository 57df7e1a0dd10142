"""``OAuthClientAuth``: MCP authorization as an ``httpx.Auth`` for any ``httpx.AsyncClient``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator

import httpx

from fastapi_mrtr.client.auth._challenge import bearer_challenge
from fastapi_mrtr.client.auth._discovery import server_key
from fastapi_mrtr.client.auth._flow import AssertionProvider, FlowSettings, Grant, OAuthFlow
from fastapi_mrtr.client.auth._models import ClientMetadata, OAuthClientInfo, OAuthToken
from fastapi_mrtr.client.auth._redirect import AuthorizationHandler
from fastapi_mrtr.client.auth._storage import InMemoryTokenStore, TokenStore
from fastapi_mrtr.client.auth._tokens import JWT_BEARER


class OAuthClientAuth(httpx.Auth):
    """OAuth 2.1 for MCP servers (MCP authorization, 2026-07-28), as an ``httpx.Auth``.

    Requests carry the stored access token for their server (the request URL without query),
    refreshed first when it is about to expire. On a 401 the auth discovers the protected
    resource and authorization server metadata, gets a client identity (``client_info`` if it
    fits the issuer, a stored registration, the ``client_metadata_url`` document when the
    server supports them, or dynamic registration), obtains a token (authorization code with
    PKCE S256 through ``authorization_handler``, ``client_credentials``, or a JWT-bearer
    ``assertion``), stores it and
    resends the request once. A 403 ``insufficient_scope`` authorizes again for the union of
    the scopes held and the ones challenged, at most ``max_step_ups`` times per request; then
    the 403 is returned as it is.

    * ``authorization_handler``: gets the authorization URL, returns the redirect URL (or the
      bare code). Required for the authorization code grant; see
      :func:`follow_authorization_redirect` for servers that approve without a user.
    * ``client_metadata``: registered through DCR, published as CIMD; its first redirect URI
      is the one every authorization request uses.
    * ``client_info``: a pre-registered client (``issuer`` set: used only with that issuer).
    * ``client_metadata_url``: an HTTPS URL serving this client's metadata document, used as
      ``client_id`` where the authorization server advertises CIMD support.
    * ``grant``: ``"authorization_code"`` (default), ``"client_credentials"`` (machine to
      machine; needs ``client_info`` with a secret or a private key) or ``"jwt_bearer"``
      (RFC 7523 with ``assertion``, e.g. a workload identity token: a string, or a sync or
      async callable returning a fresh one per token request; ``client_info`` optional).
    * ``scope``: ask for exactly this instead of what the server's challenge or metadata names.
    * ``store``: a :class:`TokenStore` (default in memory); ``http_client`` sends the OAuth
      requests (default: a short-lived client per authorization).
    """

    def __init__(
        self,
        *,
        authorization_handler: AuthorizationHandler | None = None,
        client_metadata: ClientMetadata | None = None,
        client_info: OAuthClientInfo | None = None,
        client_metadata_url: str | None = None,
        grant: Grant = "authorization_code",
        scope: str | None = None,
        store: TokenStore | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_step_ups: int = 2,
        request_offline_access: bool = True,
        refresh_skew: float = 30.0,
        assertion: AssertionProvider | None = None,
    ) -> None:
        if grant not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError(f"unsupported grant {grant!r}")
        if grant == "client_credentials" and client_info is None:
            raise ValueError("the client_credentials grant needs client_info")
        if grant == "jwt_bearer" and assertion is None:
            raise ValueError("the jwt_bearer grant needs an assertion")
        if max_step_ups < 0:
            raise ValueError("max_step_ups must be >= 0")
        if client_metadata_url is not None:
            url = httpx.URL(client_metadata_url)
            if url.scheme != "https" or url.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        metadata = client_metadata or ClientMetadata()
        if grant != "authorization_code" and client_metadata is None:
            grant_type = JWT_BEARER if grant == "jwt_bearer" else grant
            metadata = ClientMetadata(redirect_uris=[], grant_types=[grant_type], response_types=[])
        self.max_step_ups = max_step_ups
        self.store: TokenStore = store if store is not None else InMemoryTokenStore()
        self._flow = OAuthFlow(
            FlowSettings(
                grant=grant,
                client_metadata=metadata,
                client_info=client_info,
                client_metadata_url=client_metadata_url,
                authorization_handler=authorization_handler,
                store=self.store,
                http_client=http_client,
                scope=scope,
                request_offline_access=request_offline_access,
                refresh_skew=refresh_skew,
                assertion=assertion,
            )
        )

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("OAuthClientAuth works with httpx.AsyncClient only")
        yield request  # pragma: no cover  (makes this a generator, as httpx expects)

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server = server_key(request.url)
        token = await self._flow.current_token(server)
        _authorize(request, token)
        response = yield request
        reauthorized, step_ups = False, 0
        while True:
            if response.status_code == 401 and not reauthorized:
                reauthorized = True
                token = await self._flow.unauthorized(server, bearer_challenge(response.headers), token)
            elif response.status_code == 403 and step_ups < self.max_step_ups:
                challenge = bearer_challenge(response.headers)
                if challenge.error != "insufficient_scope":
                    return
                step_ups += 1
                token = await self._flow.insufficient_scope(server, challenge, token)
            else:
                return
            _authorize(request, token)
            response = yield request


def _authorize(request: httpx.Request, token: OAuthToken | None) -> None:
    if token is not None:
        request.headers["Authorization"] = f"Bearer {token.access_token}"
