"""JwtVerifier against a real issuer on loopback: good tokens pass, each kind of bad token is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable, Iterator

import jwt
import pytest

from fastapi_mrtr.auth import AccessToken, InvalidTokenError, JwtVerifier
from tests.auth.issuer import Issuer, ec_key, rsa_key, running_issuer

RESOURCE = "https://mcp.example.test/mcp"
KEY = rsa_key("key-1")

pytestmark = pytest.mark.anyio


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer(KEY) as running:
        yield running


Make = Callable[..., JwtVerifier]


@pytest.fixture
async def make() -> AsyncIterator[Make]:
    """Builds verifiers and closes their HTTP clients after the test."""
    made: list[JwtVerifier] = []

    def build(issuer: str, **kwargs: object) -> JwtVerifier:
        made.append(JwtVerifier(issuer=issuer, audience=RESOURCE, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield build
    for verifier in made:
        await verifier.aclose()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims: dict[str, object], header: dict[str, object]) -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"


async def refused(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(InvalidTokenError) as caught:
        await verifier.verify(token)
    return caught.value.description


async def test_a_good_token_gives_its_subject_client_and_scopes(issuer: Issuer, make: Make) -> None:
    token = await make(issuer.url).verify(issuer.mint(KEY, audience=RESOURCE, scope="orders:read admin"))
    assert isinstance(token, AccessToken)
    assert (token.subject, token.client_id, token.scopes) == ("alice", "test-client", {"orders:read", "admin"})


async def test_an_expired_token_is_refused(issuer: Issuer, make: Make) -> None:
    token = issuer.mint(KEY, audience=RESOURCE, expires_in=-120)
    assert "expired" in await refused(make(issuer.url), token)


async def test_a_token_for_another_resource_is_refused(issuer: Issuer, make: Make) -> None:
    token = issuer.mint(KEY, audience="https://other.example.test/mcp")
    assert "audience" in await refused(make(issuer.url), token)


async def test_a_token_without_an_audience_is_refused(issuer: Issuer, make: Make) -> None:
    token = issuer.mint(KEY, audience=RESOURCE)
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    del claims["aud"]
    bare = jwt.encode(claims, KEY.private, algorithm="RS256", headers={"kid": KEY.kid})
    assert "lacks the 'aud' claim" in await refused(make(issuer.url), bare)


async def test_a_token_from_another_issuer_is_refused(issuer: Issuer, make: Make) -> None:
    token = issuer.mint(KEY, audience=RESOURCE, issuer="https://evil.example.test")
    assert "another issuer" in await refused(make(issuer.url), token)


async def test_an_unknown_key_id_is_refused_after_one_refetch(issuer: Issuer, make: Make) -> None:
    check = make(issuer.url)
    await check.verify(issuer.mint(KEY, audience=RESOURCE))
    assert issuer.jwks_hits == 1
    stranger = rsa_key("not-published")
    token = issuer.mint(stranger, audience=RESOURCE)
    assert "unknown key" in await refused(check, token)
    # One more fetch was allowed only once the interval passed: none here (interval 30 s).
    assert issuer.jwks_hits == 1
    eager = make(issuer.url, refetch_interval=0.0)
    await eager.verify(issuer.mint(KEY, audience=RESOURCE))
    hits = issuer.jwks_hits
    assert "unknown key" in await refused(eager, token)
    assert issuer.jwks_hits == hits + 1  # looked once more, then refused


async def test_a_rotated_key_is_picked_up(issuer: Issuer, make: Make) -> None:
    check = make(issuer.url, refetch_interval=0.0)
    await check.verify(issuer.mint(KEY, audience=RESOURCE))
    new = ec_key("key-2")
    issuer.published.append(new)
    token = await check.verify(issuer.mint(new, audience=RESOURCE, subject="bob"))
    assert token.subject == "bob"


async def test_alg_none_is_refused_before_any_key_is_fetched(issuer: Issuer, make: Make) -> None:
    token = unsigned({"iss": issuer.url, "aud": RESOURCE, "exp": 2**33, "sub": "x"}, {"alg": "none", "kid": KEY.kid})
    token += "."
    assert "'none'" in await refused(make(issuer.url), token)
    assert issuer.jwks_hits == 0


async def test_hs256_signed_with_the_public_key_is_refused(issuer: Issuer, make: Make) -> None:
    # The classic confusion: the published key used as an HMAC secret.
    header = {"alg": "HS256", "typ": "JWT", "kid": KEY.kid}
    claims = {"iss": issuer.url, "aud": RESOURCE, "exp": 2**33, "sub": "mallory", "scope": "admin"}
    signing_input = unsigned(claims, header)
    signature = hmac.new(KEY.public_pem(), signing_input.encode(), hashlib.sha256).digest()
    token = f"{signing_input}.{b64(signature)}"
    assert "'HS256'" in await refused(make(issuer.url), token)


async def test_a_signature_by_another_key_under_a_published_kid_is_refused(issuer: Issuer, make: Make) -> None:
    impostor = rsa_key(KEY.kid)  # same kid, different key
    token = issuer.mint(impostor, audience=RESOURCE)
    assert "InvalidSignatureError" in await refused(make(issuer.url), token)


async def test_garbage_is_refused(issuer: Issuer, make: Make) -> None:
    assert "well-formed" in await refused(make(issuer.url), "not-a-jwt")


async def test_metadata_naming_another_issuer_is_refused(issuer: Issuer, make: Make) -> None:
    check = make(issuer.url + "/tenant")
    # The RFC 8414 document at /.well-known/oauth-authorization-server/tenant does not exist, and
    # no OIDC document either: the keys cannot be found, and the token is refused (not a 500).
    assert "signing keys" in await refused(check, issuer.mint(KEY, audience=RESOURCE))


def test_symmetric_or_no_algorithms_cannot_be_configured() -> None:
    for algorithms in (["HS256"], ["none"], [], ["RS256", "HS512"]):
        with pytest.raises(ValueError, match="asymmetric"):
            JwtVerifier(issuer="https://issuer.test", audience=RESOURCE, algorithms=algorithms)
    with pytest.raises(ValueError, match="audience"):
        JwtVerifier(issuer="https://issuer.test", audience=[])
