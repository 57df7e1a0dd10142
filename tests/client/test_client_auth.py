"""OAuth for the MCP client (``fastapi_mrtr.client.auth``) against an in-process fake.

``FakeOAuth`` is an authorization server and a protected MCP server behind one
``httpx.MockTransport``: RFC 9728 resource metadata, RFC 8414 metadata, dynamic registration,
an authorize endpoint that approves at once and redirects with a code, and a token endpoint
that checks PKCE, the ``resource`` and the client's authentication. The MCP endpoint answers
401 without a live token and 403 ``insufficient_scope`` when the token lacks a method's scope.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

import anyio
import httpx
import pytest

from fastapi_mrtr.client import ClientOptions, MrtrClient, StatusCodeError
from fastapi_mrtr.client.auth import (
    ClientMetadata,
    InMemoryTokenStore,
    OAuthAuthorizationError,
    OAuthClientAuth,
    OAuthClientInfo,
    OAuthDiscoveryError,
    OAuthRegistrationError,
    OAuthToken,
    OAuthTokenError,
    bearer_challenge,
    follow_authorization_redirect,
)
from fastapi_mrtr.client.auth._challenge import parse_www_authenticate
from fastapi_mrtr.client.auth._discovery import (
    authorization_server_metadata_urls,
    resource_matches,
    resource_metadata_urls,
)

pytestmark = pytest.mark.anyio

MCP = "https://mcp.example/mcp"
PRM_URL = "https://mcp.example/.well-known/oauth-protected-resource/mcp"
ISSUER = "https://as.example"
REDIRECT = "http://127.0.0.1:9/callback"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str
    resource: str | None


@dataclass
class FakeOAuth:
    """The fake world. Knobs are fields; what happened is in ``log`` and the counters."""

    issuer: str = ISSUER
    metadata_issuer: str | None = None  # what the metadata claims (default: issuer)
    prm_resource: str = MCP
    prm_scopes: list[str] | None = None
    as_scopes: list[str] | None = None
    challenge_scope: str | None = None  # scope="..." in the 401
    method_scopes: dict[str, set[str]] = field(default_factory=dict)  # 403 unless the token has these
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic", "client_secret_post", "none"])
    registered_auth_method: str | None = None  # what DCR answers (None: echo the request)
    issue_secret: bool = True
    dcr: bool = True
    cimd: bool = False
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    iss_supported: bool | None = True
    iss_value: str | None = "correct"  # "correct", "wrong", None (omitted)
    expires_in: int = 3600
    refresh_tokens: bool = True
    always_forbid: bool = False

    log: list[httpx.Request] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[httpx.QueryParams] = field(default_factory=list)
    token_requests: list[tuple[dict[str, str], httpx.Headers]] = field(default_factory=list)
    clients: dict[str, str | None] = field(default_factory=dict)  # client_id -> secret
    codes: dict[str, Grant] = field(default_factory=dict)
    live: dict[str, set[str]] = field(default_factory=dict)  # access token -> scopes
    refresh: dict[str, tuple[str, set[str]]] = field(default_factory=dict)  # refresh -> (client, scopes)

    def __post_init__(self) -> None:
        self.clients.setdefault("pre-registered", "pre-secret")

    # --- routing ---------------------------------------------------------------------------

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        # A snapshot: the auth resends the same request object with a new Authorization header.
        self.log.append(
            httpx.Request(request.method, request.url, headers=request.headers.copy(), content=request.content)
        )
        url = request.url
        if url.host == "mcp.example":
            if request.method == "GET" and url.path == "/.well-known/oauth-protected-resource/mcp":
                return self._resource_metadata()
            if request.method == "POST" and url.path == "/mcp":
                return self._mcp(request)
        elif url.host == httpx.URL(self.issuer).host:
            if url.path == "/.well-known/oauth-authorization-server":
                return self._metadata()
            if url.path == "/register" and self.dcr:
                return self._register(request)
            if url.path == "/authorize":
                return self._authorize(request)
            if url.path == "/token":
                return self._token(request)
        return httpx.Response(404, json={"error": "not_found"})

    def _resource_metadata(self) -> httpx.Response:
        body: dict[str, Any] = {"resource": self.prm_resource, "authorization_servers": [self.issuer]}
        if self.prm_scopes is not None:
            body["scopes_supported"] = self.prm_scopes
        return httpx.Response(200, json=body)

    def _metadata(self) -> httpx.Response:
        body: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.dcr:
            body["registration_endpoint"] = f"{self.issuer}/register"
        if self.pkce_methods is not None:
            body["code_challenge_methods_supported"] = self.pkce_methods
        if self.iss_supported is not None:
            body["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.as_scopes is not None:
            body["scopes_supported"] = self.as_scopes
        if self.cimd:
            body["client_id_metadata_document_supported"] = True
        return httpx.Response(200, json=body)

    def _register(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.registrations.append(body)
        client_id = f"client-{len(self.registrations)}"
        method = self.registered_auth_method or body.get("token_endpoint_auth_method")
        secret = secrets.token_hex(8) if self.issue_secret and method != "none" else None
        self.clients[client_id] = secret
        reply = {**body, "client_id": client_id}
        if secret:
            reply["client_secret"] = secret
        if method:
            reply["token_endpoint_auth_method"] = method
        return httpx.Response(201, json=reply)

    def _authorize(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        self.authorizations.append(params)
        code = secrets.token_hex(8)
        self.codes[code] = Grant(
            params["client_id"],
            params["redirect_uri"],
            params["code_challenge"],
            params.get("scope", ""),
            params.get("resource"),
        )
        back: dict[str, str] = {"code": code, "state": params["state"]}
        if self.iss_value == "correct":
            back["iss"] = self.issuer
        elif self.iss_value == "wrong":
            back["iss"] = "https://evil.example"
        location = httpx.URL(params["redirect_uri"]).copy_merge_params(back)
        return httpx.Response(302, headers={"Location": str(location)})

    def _client_id(self, form: dict[str, str], headers: httpx.Headers) -> str | None:
        """The authenticated client, or None when its credentials are wrong."""
        authorization = headers.get("authorization", "")
        if authorization.startswith("Basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = (unquote_plus(part) for part in pair.partition(":"))
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        if client_id not in self.clients:
            return None
        expected = self.clients[client_id]
        if client_id.startswith("https://"):  # a CIMD client is public
            return client_id
        return client_id if (expected or "") == (secret or "") else None

    def _issue(self, client_id: str, scopes: set[str]) -> httpx.Response:
        access = f"at-{secrets.token_hex(6)}"
        self.live[access] = scopes
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
        if scopes:
            body["scope"] = " ".join(sorted(scopes))
        if self.refresh_tokens:
            refresh = f"rt-{secrets.token_hex(6)}"
            self.refresh[refresh] = (client_id, scopes)
            body["refresh_token"] = refresh
        return httpx.Response(200, json=body)

    def _token(self, request: httpx.Request) -> httpx.Response:
        form = dict(httpx.QueryParams(request.content.decode()))
        self.token_requests.append((form, request.headers))
        if form.get("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            if form.get("assertion") != "workload-jwt" or form.get("resource") != self.prm_resource:
                return httpx.Response(400, json={"error": "invalid_grant"})
            return self._issue("workload", set(form.get("scope", "").split()))
        client_id = self._client_id(form, request.headers)
        if client_id is None:
            return httpx.Response(401, json={"error": "invalid_client"})
        if form.get("resource") != self.prm_resource:
            return httpx.Response(400, json={"error": "invalid_target"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            pending = self.codes.pop(form.get("code", ""), None)
            if pending is None or pending.client_id != client_id or pending.redirect_uri != form.get("redirect_uri"):
                return httpx.Response(400, json={"error": "invalid_grant"})
            verifier = form.get("code_verifier", "")
            if _b64url(hashlib.sha256(verifier.encode()).digest()) != pending.challenge:
                return httpx.Response(400, json={"error": "invalid_grant", "error_description": "PKCE"})
            return self._issue(client_id, set(pending.scope.split()))
        if grant == "refresh_token":
            held = self.refresh.pop(form.get("refresh_token", ""), None)
            if held is None or held[0] != client_id:
                return httpx.Response(400, json={"error": "invalid_grant"})
            return self._issue(client_id, held[1])
        if grant == "client_credentials":
            return self._issue(client_id, set(form.get("scope", "").split()))
        return httpx.Response(400, json={"error": "unsupported_grant_type"})

    def _mcp(self, request: httpx.Request) -> httpx.Response:
        message = json.loads(request.content)
        authorization = request.headers.get("authorization", "")
        scopes = self.live.get(authorization.removeprefix("Bearer "))
        if not authorization.startswith("Bearer ") or scopes is None:
            challenge = f'Bearer error="invalid_token", resource_metadata="{PRM_URL}"'
            if self.challenge_scope:
                challenge += f', scope="{self.challenge_scope}"'
            return httpx.Response(401, headers={"WWW-Authenticate": challenge}, json={"error": "invalid_token"})
        needed = self.method_scopes.get(message["method"], set())
        if self.always_forbid or not needed <= scopes:
            scope = " ".join(sorted(needed)) or "admin"
            challenge = f'Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{PRM_URL}"'
            return httpx.Response(403, headers={"WWW-Authenticate": challenge}, json={"error": "insufficient_scope"})
        if message["method"] == "tools/list":
            result: dict[str, Any] = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif message["method"] == "server/discover":  # a 2026-07-28 server behind OAuth
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        else:
            result = {"content": [{"type": "text", "text": "ok"}]}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": result})

    # --- helpers for the tests -------------------------------------------------------------

    def mcp_posts(self) -> list[httpx.Request]:
        return [r for r in self.log if r.method == "POST" and r.url.path == "/mcp"]

    def revoke_access_tokens(self) -> None:
        self.live.clear()


@pytest.fixture
def fake() -> FakeOAuth:
    return FakeOAuth()


@pytest.fixture
async def http(fake: FakeOAuth) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake)) as client:
        yield client


def make_auth(http: httpx.AsyncClient, **kwargs: Any) -> OAuthClientAuth:
    kwargs.setdefault("authorization_handler", follow_authorization_redirect(http))
    kwargs.setdefault("client_metadata", ClientMetadata(redirect_uris=[REDIRECT], client_name="test"))
    return OAuthClientAuth(http_client=http, **kwargs)


async def run(fake: FakeOAuth, auth: OAuthClientAuth, *methods: str) -> None:
    """Send ``tools/list`` / ``tools/call`` requests (in order) through a client with ``auth``."""
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake), auth=auth) as http:
        # Pinned to the modern wire: these tests count the requests of an OAuth flow exactly.
        client = MrtrClient(MCP, http_client=http, options=ClientOptions(mode="2026-07-28"))
        for method in methods or ("tools/list", "tools/call"):
            if method == "tools/list":
                await client.list_tools()
            else:
                await client.call_tool("echo")


# --- the main flow -----------------------------------------------------------------------------


async def test_first_401_runs_discovery_dcr_pkce_and_resends(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    await run(fake, make_auth(http))
    gets = [str(r.url) for r in fake.log if r.method == "GET" and "/.well-known/" in r.url.path]
    assert gets == [PRM_URL, f"{ISSUER}/.well-known/oauth-authorization-server"]
    [registration] = fake.registrations
    assert registration["redirect_uris"] == [REDIRECT]
    assert registration["grant_types"] == ["authorization_code", "refresh_token"]
    assert registration["application_type"] == "native"
    assert registration["token_endpoint_auth_method"] == "none"  # public when the server allows it
    [authorization] = fake.authorizations
    assert authorization["code_challenge_method"] == "S256"
    assert authorization["resource"] == MCP
    assert authorization["redirect_uri"] == REDIRECT
    assert len(authorization["state"]) >= 32
    assert "scope" not in authorization  # neither challenge nor metadata names one
    [(form, _)] = fake.token_requests
    assert form["grant_type"] == "authorization_code"
    assert form["resource"] == MCP
    assert form["client_id"] == "client-1"
    posts = fake.mcp_posts()
    assert [("authorization" in r.headers) for r in posts] == [False, True, True]  # one resend, then reuse
    assert posts[1].content == posts[0].content


async def test_resource_is_sent_exactly_as_published(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.prm_resource = "https://mcp.example"  # a parent of the server URL, no trailing slash
    await run(fake, make_auth(http), "tools/list")
    assert fake.authorizations[0]["resource"] == "https://mcp.example"
    assert fake.token_requests[0][0]["resource"] == "https://mcp.example"


async def test_tokens_are_reused_and_kept_in_the_store(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    store = InMemoryTokenStore()
    await run(fake, make_auth(http, store=store), "tools/list")
    token = store.tokens[MCP]
    assert token.issuer == ISSUER and token.resource == MCP and token.refresh_token
    assert store.clients[ISSUER].client_id == "client-1"
    # A new auth over the same store (a restarted process) needs no new authorization.
    await run(fake, make_auth(http, store=store), "tools/list", "tools/call")
    assert len(fake.authorizations) == 1 and len(fake.registrations) == 1
    restored = OAuthToken.model_validate_json(token.model_dump_json())
    assert restored.access_token == token.access_token


# --- scopes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("challenge_scope", "prm_scopes", "as_scopes", "expected"),
    [
        ("mcp:basic", ["mcp:a", "mcp:b"], None, "mcp:basic"),
        (None, ["mcp:a", "mcp:b"], None, "mcp:a mcp:b"),
        (None, None, ["mcp:a"], None),
        (None, ["mcp:a"], ["mcp:a", "offline_access"], "mcp:a offline_access"),
        (None, ["mcp:a"], ["mcp:a", "mcp:b"], "mcp:a"),
    ],
)
async def test_scope_selection(
    fake: FakeOAuth,
    http: httpx.AsyncClient,
    challenge_scope: str | None,
    prm_scopes: list[str] | None,
    as_scopes: list[str] | None,
    expected: str | None,
) -> None:
    fake.challenge_scope, fake.prm_scopes, fake.as_scopes = challenge_scope, prm_scopes, as_scopes
    await run(fake, make_auth(http), "tools/list")
    assert fake.authorizations[0].get("scope") == expected


async def test_step_up_on_insufficient_scope(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.challenge_scope = "mcp:read"
    fake.method_scopes = {"tools/list": {"mcp:read"}, "tools/call": {"mcp:write"}}
    await run(fake, make_auth(http), "tools/list", "tools/call", "tools/call")
    assert [a.get("scope") for a in fake.authorizations] == ["mcp:read", "mcp:read mcp:write"]
    statuses = [r.headers.get("authorization") is not None for r in fake.mcp_posts()]
    assert len(statuses) == 5  # list: 401 + resend; call: 403 + resend; call again: straight through


def rpc(method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).encode()


async def test_step_up_gives_up_after_the_limit(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.always_forbid = True
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake), auth=make_auth(http, max_step_ups=2)) as client:
        response = await client.post(MCP, content=rpc("tools/list"))
    assert response.status_code == 403  # the last 403, as it came
    assert len(fake.authorizations) == 3  # the first authorization and two step-ups


async def test_a_403_without_insufficient_scope_is_returned_as_is(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    auth = make_auth(http)
    await run(fake, auth, "tools/list")

    async def forbid(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/mcp":
            return httpx.Response(403, text="go away")
        return await fake(request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(forbid), auth=auth) as client_http:
        with pytest.raises(StatusCodeError):
            await MrtrClient(MCP, http_client=client_http).list_tools()
    assert len(fake.authorizations) == 1


# --- refresh -----------------------------------------------------------------------------------


async def test_an_expiring_token_is_refreshed_before_the_request(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.expires_in = 10  # within the 30 s refresh skew: stale at once
    store = InMemoryTokenStore()
    await run(fake, make_auth(http, store=store), "tools/list")
    first = store.tokens[MCP]
    fake.expires_in = 3600
    await run(fake, make_auth(http, store=store), "tools/call")
    grants = [form["grant_type"] for form, _ in fake.token_requests]
    assert grants == ["authorization_code", "refresh_token"]
    assert len(fake.authorizations) == 1
    assert store.tokens[MCP].access_token != first.access_token
    # The first run's 401 and authorised tools/list, then the call and the tools/list the client
    # sends after it to learn the tool's outputSchema: both with the refreshed token.
    assert [r.headers.get("authorization") is not None for r in fake.mcp_posts()] == [False, True, True, True]


async def test_a_rejected_token_is_refreshed_after_401(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    auth = make_auth(http)
    await run(fake, auth, "tools/list")
    fake.revoke_access_tokens()
    await run(fake, auth, "tools/call")
    assert [form["grant_type"] for form, _ in fake.token_requests] == ["authorization_code", "refresh_token"]
    assert len(fake.authorizations) == 1


async def test_a_refused_refresh_falls_back_to_authorization(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    auth = make_auth(http)
    await run(fake, auth, "tools/list")
    fake.revoke_access_tokens()
    fake.refresh.clear()
    await run(fake, auth, "tools/call")
    assert [form["grant_type"] for form, _ in fake.token_requests] == [
        "authorization_code",
        "refresh_token",
        "authorization_code",
    ]


# --- client identity and token endpoint authentication ------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_token_endpoint_auth_methods(fake: FakeOAuth, http: httpx.AsyncClient, method: str) -> None:
    fake.auth_methods = [method]
    await run(fake, make_auth(http), "tools/list")
    assert fake.registrations[0]["token_endpoint_auth_method"] == method
    [(form, headers)] = fake.token_requests
    assert headers.get("authorization", "").startswith("Basic ") is (method == "client_secret_basic")
    assert ("client_secret" in form) is (method == "client_secret_post")
    assert ("client_id" in form) is (method != "client_secret_basic")


async def test_auth_method_falls_back_to_what_the_server_supports(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    # DCR answers a secret but no method: use one the server lists (here only post).
    fake.auth_methods = ["client_secret_post"]
    fake.registered_auth_method = None
    client = ClientMetadata(redirect_uris=[REDIRECT], token_endpoint_auth_method=None)
    auth = make_auth(http, client_metadata=client)

    original = fake._register

    def register_without_method(request: httpx.Request) -> httpx.Response:
        response = original(request)
        body = json.loads(response.content)
        body.pop("token_endpoint_auth_method", None)
        return httpx.Response(201, json=body)

    fake._register = register_without_method  # type: ignore[method-assign]
    await run(fake, auth, "tools/list")
    [(form, headers)] = fake.token_requests
    assert "client_secret" in form and "authorization" not in headers


async def test_pre_registered_client_is_used_without_dcr(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.dcr = False
    fake.auth_methods = ["client_secret_basic"]
    info = OAuthClientInfo(client_id="pre-registered", client_secret="pre-secret", issuer=ISSUER)
    await run(fake, make_auth(http, client_info=info), "tools/list")
    assert not fake.registrations
    [(_, headers)] = fake.token_requests
    assert base64.b64decode(headers["authorization"][6:]) == b"pre-registered:pre-secret"


async def test_pre_registered_client_for_another_issuer_is_not_used(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    info = OAuthClientInfo(client_id="pre-registered", client_secret="pre-secret", issuer="https://other.example")
    await run(fake, make_auth(http, client_info=info), "tools/list")
    assert fake.authorizations[0]["client_id"] == "client-1"  # registered instead


async def test_without_any_client_identity_the_flow_stops(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.dcr = False
    with pytest.raises(OAuthRegistrationError):
        await run(fake, make_auth(http), "tools/list")
    assert not fake.authorizations


async def test_cimd_url_is_the_client_id_where_supported(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.cimd = True
    url = "https://client.example/metadata.json"
    fake.clients[url] = None
    await run(fake, make_auth(http, client_metadata_url=url), "tools/list")
    assert not fake.registrations
    assert fake.authorizations[0]["client_id"] == url
    assert fake.token_requests[0][0]["client_id"] == url


async def test_cimd_url_is_ignored_where_unsupported(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    await run(fake, make_auth(http, client_metadata_url="https://client.example/metadata.json"), "tools/list")
    assert len(fake.registrations) == 1


def test_client_metadata_document() -> None:
    document = ClientMetadata(redirect_uris=[REDIRECT], client_name="x").as_document("https://c.example/m.json")
    assert document["client_id"] == "https://c.example/m.json"
    assert document["redirect_uris"] == [REDIRECT]
    with pytest.raises(ValueError):
        OAuthClientAuth(client_metadata_url="http://c.example/m.json")


async def test_a_forgotten_registration_is_dropped(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    store = InMemoryTokenStore()
    await run(fake, make_auth(http, store=store), "tools/list")
    fake.clients.clear()
    fake.revoke_access_tokens()
    with pytest.raises(OAuthTokenError) as caught:
        await run(fake, make_auth(http, store=store), "tools/list")
    assert caught.value.error == "invalid_client"
    assert ISSUER not in store.clients  # the next authorization registers again
    fake.clients["pre-registered"] = "pre-secret"
    await run(fake, make_auth(http, store=store), "tools/list")
    assert len(fake.registrations) == 2


# --- client credentials --------------------------------------------------------------------------


async def test_client_credentials_with_a_secret(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.prm_scopes = ["mcp:a"]
    info = OAuthClientInfo(client_id="pre-registered", client_secret="pre-secret")
    await run(fake, OAuthClientAuth(grant="client_credentials", client_info=info, http_client=http))
    assert not fake.authorizations and not fake.registrations
    [(form, headers)] = fake.token_requests
    assert form == {"grant_type": "client_credentials", "resource": MCP, "scope": "mcp:a"}
    assert headers["authorization"].startswith("Basic ")


async def test_client_credentials_with_private_key_jwt(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    fake.clients["jwt-client"] = None
    fake.auth_methods = ["private_key_jwt"]
    info = OAuthClientInfo(client_id="jwt-client", private_key_pem=pem)
    await run(fake, OAuthClientAuth(grant="client_credentials", client_info=info, http_client=http), "tools/list")
    [(form, _)] = fake.token_requests
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    header_b64, claims_b64, signature_b64 = form["client_assertion"].split(".")

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    assert json.loads(decode(header_b64)) == {"alg": "ES256", "typ": "JWT"}
    claims = json.loads(decode(claims_b64))
    assert claims["iss"] == claims["sub"] == "jwt-client" and claims["aud"] == ISSUER
    assert claims["exp"] > claims["iat"] and claims["jti"]
    raw = decode(signature_b64)
    signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.public_key().verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))


def test_client_credentials_needs_a_client() -> None:
    with pytest.raises(ValueError):
        OAuthClientAuth(grant="client_credentials")
    with pytest.raises(ValueError):
        OAuthClientAuth(grant="jwt_bearer")


async def test_jwt_bearer_grant_presents_a_fresh_assertion(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.refresh_tokens = False
    issued: list[str] = []

    async def workload_token() -> str:
        issued.append("workload-jwt")
        return "workload-jwt"

    auth = OAuthClientAuth(grant="jwt_bearer", assertion=workload_token, http_client=http)
    await run(fake, auth, "tools/list")
    fake.revoke_access_tokens()
    await run(fake, auth, "tools/call")
    assert len(issued) == 2 and not fake.registrations and not fake.authorizations
    form, headers = fake.token_requests[0]
    jwt_bearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert form == {"grant_type": jwt_bearer, "assertion": "workload-jwt", "resource": MCP}
    assert "authorization" not in headers


async def test_a_refused_jwt_bearer_grant_is_not_retried(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    info = OAuthClientInfo(client_id="workload", token_endpoint_auth_method="none")
    auth = OAuthClientAuth(grant="jwt_bearer", assertion="expired-jwt", client_info=info, http_client=http)
    with pytest.raises(OAuthTokenError) as caught:
        await run(fake, auth, "tools/list")
    assert caught.value.error == "invalid_grant"
    [(form, _)] = fake.token_requests  # one attempt, no other grant tried
    assert form["client_id"] == "workload"


# --- refusals ------------------------------------------------------------------------------------


async def test_mismatched_resource_metadata_is_refused(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.prm_resource = "https://evil.example/mcp"
    with pytest.raises(OAuthDiscoveryError, match=r"evil\.example"):
        await run(fake, make_auth(http), "tools/list")
    assert not fake.authorizations and not fake.registrations


async def test_mismatched_metadata_issuer_is_refused(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.metadata_issuer = "https://attacker.example"
    with pytest.raises(OAuthDiscoveryError, match="attacker"):
        await run(fake, make_auth(http), "tools/list")
    assert not fake.registrations and not fake.authorizations


async def test_a_server_without_pkce_s256_is_refused(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    fake.pkce_methods = None
    with pytest.raises(OAuthDiscoveryError, match="S256"):
        await run(fake, make_auth(http), "tools/list")
    assert not fake.authorizations


@pytest.mark.parametrize(
    ("iss_supported", "iss_value", "accepted"),
    [
        (True, "correct", True),
        (None, None, True),
        (True, None, False),
        (True, "wrong", False),
        (None, "wrong", False),
    ],
)
async def test_iss_in_the_authorization_response(
    fake: FakeOAuth, http: httpx.AsyncClient, iss_supported: bool | None, iss_value: str | None, accepted: bool
) -> None:
    fake.iss_supported, fake.iss_value = iss_supported, iss_value
    if accepted:
        await run(fake, make_auth(http), "tools/list")
    else:
        with pytest.raises(OAuthAuthorizationError, match="iss"):
            await run(fake, make_auth(http), "tools/list")
    assert bool(fake.token_requests) is accepted  # a refused code never reaches the token endpoint


async def test_iss_is_compared_without_normalisation(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    async def trailing_slash(url: str) -> str:
        redirect = await follow_authorization_redirect(http)(url)
        return redirect.replace("iss=https%3A%2F%2Fas.example", "iss=https%3A%2F%2Fas.example%2F")

    with pytest.raises(OAuthAuthorizationError, match="iss"):
        await run(fake, make_auth(http, authorization_handler=trailing_slash), "tools/list")
    assert not fake.token_requests


async def test_state_mismatch_is_refused(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    async def forged(url: str) -> str:
        redirect = str(await follow_authorization_redirect(http)(url))
        return str(httpx.URL(redirect).copy_set_param("state", "forged"))

    with pytest.raises(OAuthAuthorizationError, match="state"):
        await run(fake, make_auth(http, authorization_handler=forged), "tools/list")


async def test_an_error_response_is_raised(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    def deny(url: str) -> str:
        params = httpx.URL(url).params
        return f"{REDIRECT}?error=access_denied&error_description=no&state={params['state']}&iss={ISSUER}"

    with pytest.raises(OAuthAuthorizationError) as caught:
        await run(fake, make_auth(http, authorization_handler=deny), "tools/list")
    assert caught.value.error == "access_denied"


async def test_a_handler_may_return_the_bare_code(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    async def code_only(url: str) -> str:
        redirect = str(await follow_authorization_redirect(http)(url))
        return httpx.URL(redirect).params["code"]

    await run(fake, make_auth(http, authorization_handler=code_only), "tools/list")
    assert fake.token_requests


def test_authorization_response_parsing() -> None:
    from fastapi_mrtr.client.auth._redirect import parse_authorization_response

    custom = parse_authorization_response("com.example.app:/cb?code=c1&state=s1&iss=https%3A%2F%2Fas")
    assert (custom.code, custom.state, custom.iss, custom.redirected) == ("c1", "s1", "https://as", True)
    fragment = parse_authorization_response("http://127.0.0.1/cb#code=c2&state=s2")
    assert (fragment.code, fragment.state) == ("c2", "s2")
    bare = parse_authorization_response("  c3\n")
    assert (bare.code, bare.redirected) == ("c3", False)
    denied = parse_authorization_response("http://127.0.0.1/cb?error=access_denied&state=s")
    assert denied.error == "access_denied" and denied.code is None


async def test_no_handler_no_authorization(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    with pytest.raises(OAuthAuthorizationError, match="authorization_handler"):
        await run(fake, OAuthClientAuth(http_client=http), "tools/list")


# --- concurrency and migration -----------------------------------------------------------------


async def test_concurrent_401s_authorize_once(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake), auth=make_auth(http)) as client_http:
        client = MrtrClient(MCP, http_client=client_http)
        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(client.list_tools)
    assert len(fake.authorizations) == 1 and len(fake.registrations) == 1


async def test_a_new_authorization_server_gets_a_new_registration(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    auth = make_auth(http)
    await run(fake, auth, "tools/list")
    old_client = fake.authorizations[0]["client_id"]
    # The resource moves to another issuer; tokens of the old one stop working.
    fake.issuer = "https://as2.example"
    fake.revoke_access_tokens()
    await run(fake, auth, "tools/call")
    assert len(fake.registrations) == 2
    assert fake.authorizations[1]["client_id"] != old_client
    new_requests = [r for r in fake.log if r.url.host == "as2.example"]
    assert new_requests and all(old_client not in str(r.url) + r.content.decode() for r in new_requests)
    # The old refresh token went nowhere near the new issuer.
    assert [form["grant_type"] for form, _ in fake.token_requests] == ["authorization_code", "authorization_code"]


# --- wiring ------------------------------------------------------------------------------------


async def test_mrtr_client_auth_parameter(fake: FakeOAuth, http: httpx.AsyncClient) -> None:
    client = MrtrClient(MCP, auth=make_auth(http))
    client._wire.http.http._transport = httpx.MockTransport(fake)  # the client's own AsyncClient, in-process
    async with client:
        await client.list_tools()
    assert len(fake.authorizations) == 1
    with pytest.raises(ValueError, match="auth"):
        MrtrClient(MCP, http_client=http, auth=make_auth(http))


async def test_the_oauth_requests_may_share_the_authorized_client(fake: FakeOAuth) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake)) as shared:
        shared.auth = make_auth(shared)
        await MrtrClient(MCP, http_client=shared).list_tools()
        fake.clients.clear()  # the token endpoint now answers 401: it must not re-enter the flow
        fake.revoke_access_tokens()
        with pytest.raises(OAuthTokenError):
            await MrtrClient(MCP, http_client=shared).list_tools()


def test_sync_clients_are_refused() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200))
    with httpx.Client(transport=transport, auth=OAuthClientAuth()) as client, pytest.raises(RuntimeError):
        client.get("https://mcp.example/mcp")


async def test_follow_redirect_needs_a_redirect(http: httpx.AsyncClient) -> None:
    page = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200, text="<form>")))
    async with page:
        with pytest.raises(OAuthAuthorizationError, match="needs a user"):
            await follow_authorization_redirect(page)(f"{ISSUER}/authorize")


# --- parsing and URL rules ---------------------------------------------------------------------


def test_www_authenticate_parsing() -> None:
    [bearer] = parse_www_authenticate(['Bearer realm="x", scope="a b", error="insufficient_scope"'])
    assert bearer.scheme == "bearer" and bearer.params == {"realm": "x", "scope": "a b", "error": "insufficient_scope"}
    challenges = parse_www_authenticate(
        ['Basic realm="r", Bearer resource_metadata="https://m/x", error=invalid_token']
    )
    assert [c.scheme for c in challenges] == ["basic", "bearer"]
    assert challenges[1].params == {"resource_metadata": "https://m/x", "error": "invalid_token"}
    [escaped] = parse_www_authenticate(['Bearer error_description="say \\"hi\\", ok"'])
    assert escaped.params["error_description"] == 'say "hi", ok'
    headers = httpx.Headers([("WWW-Authenticate", 'DPoP algs="ES256"'), ("WWW-Authenticate", "Bearer scope=a")])
    assert bearer_challenge(headers).scopes == ["a"]
    assert bearer_challenge(httpx.Headers()).error is None


def test_discovery_urls() -> None:
    assert resource_metadata_urls("https://s.example/mcp", "https://s.example/custom.json") == [
        "https://s.example/custom.json",
        "https://s.example/.well-known/oauth-protected-resource/mcp",
        "https://s.example/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://s.example/") == ["https://s.example/.well-known/oauth-protected-resource"]
    assert authorization_server_metadata_urls("https://a.example/tenant1") == [
        "https://a.example/.well-known/oauth-authorization-server/tenant1",
        "https://a.example/.well-known/openid-configuration/tenant1",
        "https://a.example/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://a.example") == [
        "https://a.example/.well-known/oauth-authorization-server",
        "https://a.example/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "ok"),
    [
        ("https://s.example/mcp", True),
        ("https://s.example/mcp/", True),
        ("https://s.example", True),
        ("https://S.EXAMPLE:443/", True),
        ("https://s.example/mc", False),
        ("https://s.example/other", False),
        ("http://s.example/mcp", False),
        ("https://evil.example/mcp", False),
        ("https://s.example/mcp#frag", False),
    ],
)
def test_resource_matching(resource: str, ok: bool) -> None:
    assert resource_matches("https://s.example/mcp", resource) is ok
