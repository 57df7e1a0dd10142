"""Errors of the OAuth flow. All derive from :class:`~fastapi_mrtr.client.MrtrClientError`.

::

    MrtrClientError
    └── OAuthError                      the client could not obtain a usable access token
        ├── OAuthDiscoveryError         no usable protected resource or authorization server
        │                                metadata (missing, malformed, mismatched resource or
        │                                issuer, no PKCE S256)
        ├── OAuthRegistrationError      no client identity: no pre-registration, CIMD or DCR,
        │                                or the registration endpoint refused us
        ├── OAuthAuthorizationError     the authorization response was an error, or failed the
        │                                state or issuer (RFC 9207) checks
        └── OAuthTokenError             the token endpoint refused a grant (``error``,
                                         ``error_description``, ``status_code``)
"""

from __future__ import annotations

from fastapi_mrtr.client._errors import MrtrClientError


class OAuthError(MrtrClientError):
    """The OAuth flow failed; the request that needed a token was not retried."""


class OAuthDiscoveryError(OAuthError):
    """Protected resource or authorization server metadata is missing or must not be used."""


class OAuthRegistrationError(OAuthError):
    """No client identity is available for the authorization server."""


class OAuthAuthorizationError(OAuthError):
    """The authorization step failed (``error`` is the OAuth error code when the server sent one)."""

    def __init__(self, message: str, error: str | None = None, description: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.description = description


class OAuthTokenError(OAuthError):
    """The token endpoint answered with an error (RFC 6749 section 5.2)."""

    def __init__(
        self, message: str, error: str | None = None, description: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.error = error
        self.description = description
        self.status_code = status_code
