"""The OAuth engine behind :class:`OAuthClientAuth`: discovery, client identity, grants, refresh.

Each entry point runs under one lock, so concurrent requests that all meet a 401 authorize once:
the first does the work, the others find its token in the store and use it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal, Union

import anyio
import httpx

from fastapi_mrtr.client.auth._authorize import authorization_url, check_response, require_pkce
from fastapi_mrtr.client.auth._challenge import BearerChallenge
from fastapi_mrtr.client.auth._discovery import Discovery, discover
from fastapi_mrtr.client.auth._errors import OAuthAuthorizationError, OAuthRegistrationError, OAuthTokenError
from fastapi_mrtr.client.auth._models import ClientMetadata, OAuthClientInfo, OAuthToken
from fastapi_mrtr.client.auth._pkce import Pkce, new_state
from fastapi_mrtr.client.auth._redirect import AuthorizationHandler, parse_authorization_response, run_handler
from fastapi_mrtr.client.auth._registration import client_for
from fastapi_mrtr.client.auth._scopes import select_scope, union
from fastapi_mrtr.client.auth._storage import TokenStore
from fastapi_mrtr.client.auth._tokens import (
    authorization_code_grant,
    client_credentials_grant,
    jwt_bearer_grant,
    refresh_grant,
    request_token,
)

logger = logging.getLogger("fastapi_mrtr.client.auth")

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]
# The JWT of the jwt_bearer grant: a fixed string, or a callable asked for a fresh one each time.
AssertionProvider = Union[str, Callable[[], Union[Awaitable[str], str]]]
OAUTH_HTTP_TIMEOUT = httpx.Timeout(30.0)


@dataclass(frozen=True)
class FlowSettings:
    grant: Grant
    client_metadata: ClientMetadata
    client_info: OAuthClientInfo | None
    client_metadata_url: str | None
    authorization_handler: AuthorizationHandler | None
    store: TokenStore
    http_client: httpx.AsyncClient | None
    scope: str | None
    request_offline_access: bool
    refresh_skew: float
    assertion: AssertionProvider | None = None


async def _assertion(provider: AssertionProvider | None) -> str:
    if provider is None:
        raise OAuthAuthorizationError("the jwt_bearer grant needs an assertion")
    if isinstance(provider, str):
        return provider
    outcome = provider()
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


def _replaced(stored: OAuthToken | None, sent: OAuthToken | None) -> bool:
    """True when another request already put a new, live token in the store."""
    if stored is None or stored.expired():
        return False
    return sent is None or stored.access_token != sent.access_token


class OAuthFlow:
    def __init__(self, settings: FlowSettings) -> None:
        self.settings = settings
        self._lock = anyio.Lock()
        self._discovered: dict[str, Discovery] = {}

    # --- entry points ----------------------------------------------------------------------

    async def current_token(self, server: str) -> OAuthToken | None:
        """The stored token for ``server``, refreshed first when it has (nearly) expired."""
        store, skew = self.settings.store, self.settings.refresh_skew
        token = await store.get_tokens(server)
        if token is None or not token.refresh_token or not token.expired(skew):
            return token
        async with self._lock:
            token = await store.get_tokens(server)
            if token is None or not token.refresh_token or not token.expired(skew):
                return token
            async with self._http() as http:
                discovery = self._discovered.get(server) or await self._discover(http, server, None)
                return await self._refresh(http, server, discovery, token) or token

    async def unauthorized(self, server: str, challenge: BearerChallenge, sent: OAuthToken | None) -> OAuthToken:
        """After a 401: refresh the token that failed if we can, else authorize afresh.

        Discovery runs again first: the server may have moved to another authorization server,
        whose credentials and tokens must then be new ones.
        """
        async with self._lock:
            stored = await self.settings.store.get_tokens(server)
            if _replaced(stored, sent):
                assert stored is not None
                return stored
            async with self._http() as http:
                discovery = await self._discover(http, server, challenge.resource_metadata)
                same_issuer = sent is not None and sent.issuer == discovery.issuer
                if sent is not None and same_issuer and sent.refresh_token:
                    refreshed = await self._refresh(http, server, discovery, sent)
                    if refreshed is not None:
                        return refreshed
                previous = sent.scopes if sent is not None and same_issuer else []
                return await self._obtain(http, server, discovery, self._scope(discovery, challenge, previous))

    async def insufficient_scope(self, server: str, challenge: BearerChallenge, sent: OAuthToken | None) -> OAuthToken:
        """After a 403 ``insufficient_scope``: authorize again for what we had plus what it names."""
        async with self._lock:
            stored = await self.settings.store.get_tokens(server)
            if _replaced(stored, sent) and stored is not None and set(challenge.scopes) <= set(stored.scopes):
                return stored
            async with self._http() as http:
                discovery = self._discovered.get(server)
                if discovery is None:
                    discovery = await self._discover(http, server, challenge.resource_metadata)
                previous = sent.scopes if sent is not None else []
                scope = " ".join(union(previous, challenge.scopes)) or self._scope(discovery, challenge, previous)
                logger.info("stepping up authorization for %s to scope %r", server, scope)
                return await self._obtain(http, server, discovery, scope)

    # --- steps -----------------------------------------------------------------------------

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        # The client given, or a short-lived one. Either way requests pass NO_AUTH (see _http).
        if self.settings.http_client is not None:
            yield self.settings.http_client
            return
        async with httpx.AsyncClient(timeout=OAUTH_HTTP_TIMEOUT) as http:
            yield http

    async def _discover(self, http: httpx.AsyncClient, server: str, hint: str | None) -> Discovery:
        discovery = await discover(http, server, hint)
        self._discovered[server] = discovery
        logger.debug("%s is guarded by %s (resource %s)", server, discovery.issuer, discovery.resource)
        return discovery

    def _scope(self, discovery: Discovery, challenge: BearerChallenge, previous: list[str]) -> str | None:
        settings = self.settings
        grant_types = settings.client_metadata.grant_types
        wants_refresh = settings.grant == "authorization_code" and "refresh_token" in grant_types
        return select_scope(
            discovery,
            challenge,
            configured=settings.scope,
            previous=previous,
            offline_access=settings.request_offline_access and wants_refresh,
        )

    async def _client(self, http: httpx.AsyncClient, discovery: Discovery) -> OAuthClientInfo | None:
        """The client identity for this issuer; for jwt_bearer only the configured one, if any."""
        settings = self.settings
        if settings.grant == "jwt_bearer":
            return settings.client_info
        return await client_for(
            http,
            discovery,
            settings.store,
            preregistered=settings.client_info,
            client_metadata=settings.client_metadata,
            client_metadata_url=settings.client_metadata_url,
        )

    async def _obtain(
        self, http: httpx.AsyncClient, server: str, discovery: Discovery, scope: str | None
    ) -> OAuthToken:
        settings = self.settings
        client = await self._client(http, discovery)
        try:
            if settings.grant == "jwt_bearer":
                # The assertion is the grant: no registration, and a refusal is final (SEP-1933).
                grant = jwt_bearer_grant(await _assertion(settings.assertion), scope, discovery.resource)
                token = await request_token(http, discovery, client, grant, requested_scope=scope)
            elif settings.grant == "client_credentials":
                grant = client_credentials_grant(scope, discovery.resource)
                token = await request_token(http, discovery, client, grant, requested_scope=scope)
            else:
                assert client is not None
                token = await self._authorization_code(http, discovery, client, scope)
        except OAuthTokenError as exc:
            if exc.error == "invalid_client" and client is not None and client is not settings.client_info:
                # A registration the server has forgotten: register again next time.
                await self.settings.store.set_client_info(discovery.issuer, None)
            raise
        await self.settings.store.set_tokens(server, token)
        return token

    async def _authorization_code(
        self, http: httpx.AsyncClient, discovery: Discovery, client: OAuthClientInfo, scope: str | None
    ) -> OAuthToken:
        handler = self.settings.authorization_handler
        if handler is None:
            raise OAuthAuthorizationError("authorization is needed but no authorization_handler is configured")
        require_pkce(discovery)
        pkce, state = Pkce(), new_state()
        redirect_uri = self.settings.client_metadata.redirect_uri
        url = authorization_url(discovery, client.client_id, redirect_uri, pkce, state, scope)
        code = check_response(parse_authorization_response(await run_handler(handler, url)), discovery, state)
        grant = authorization_code_grant(code, redirect_uri, pkce.verifier, discovery.resource)
        return await request_token(http, discovery, client, grant, requested_scope=scope)

    async def _refresh(
        self, http: httpx.AsyncClient, server: str, discovery: Discovery, token: OAuthToken
    ) -> OAuthToken | None:
        """The refreshed token, or ``None`` (and the refresh token forgotten) when refused."""
        assert token.refresh_token is not None
        if token.issuer is not None and token.issuer != discovery.issuer:
            return None  # a refresh token goes back only to the server that issued it
        try:
            client = await self._client(http, discovery)
            grant = refresh_grant(token.refresh_token, discovery.resource)
            refreshed = await request_token(http, discovery, client, grant, requested_scope=token.scope, previous=token)
        except (OAuthTokenError, OAuthRegistrationError) as exc:
            logger.info("refreshing the token for %s failed (%s); authorizing again", server, exc)
            await self.settings.store.set_tokens(server, token.model_copy(update={"refresh_token": None}))
            return None
        await self.settings.store.set_tokens(server, refreshed)
        return refreshed
