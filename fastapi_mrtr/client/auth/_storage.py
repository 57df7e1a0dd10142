"""Where the flow keeps tokens (per MCP server URL) and registered clients (per issuer).

Implement :class:`TokenStore` to persist them (a keyring, a database); the models round-trip
through ``model_dump_json`` / ``model_validate_json``. The default keeps them in memory.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from fastapi_mrtr.client.auth._models import OAuthClientInfo, OAuthToken


@runtime_checkable
class TokenStore(Protocol):
    """Async storage for tokens and client registrations. ``None`` deletes."""

    async def get_tokens(self, server_url: str) -> OAuthToken | None: ...

    async def set_tokens(self, server_url: str, tokens: OAuthToken | None) -> None: ...

    async def get_client_info(self, issuer: str) -> OAuthClientInfo | None: ...

    async def set_client_info(self, issuer: str, client: OAuthClientInfo | None) -> None: ...


class InMemoryTokenStore:
    """A :class:`TokenStore` in two dicts; gone with the process."""

    def __init__(self) -> None:
        self.tokens: dict[str, OAuthToken] = {}
        self.clients: dict[str, OAuthClientInfo] = {}

    async def get_tokens(self, server_url: str) -> OAuthToken | None:
        return self.tokens.get(server_url)

    async def set_tokens(self, server_url: str, tokens: OAuthToken | None) -> None:
        if tokens is None:
            self.tokens.pop(server_url, None)
        else:
            self.tokens[server_url] = tokens

    async def get_client_info(self, issuer: str) -> OAuthClientInfo | None:
        return self.clients.get(issuer)

    async def set_client_info(self, issuer: str, client: OAuthClientInfo | None) -> None:
        if client is None:
            self.clients.pop(issuer, None)
        else:
            self.clients[issuer] = client
