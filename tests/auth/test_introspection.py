"""IntrospectionVerifier against a real loopback issuer whose RFC 7662 answers the tests choose."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from fastapi_mrtr.auth import AccessToken, IntrospectionVerifier, InvalidTokenError
from tests.auth.issuer import Issuer, running_issuer

RESOURCE = "https://mcp.example.test/mcp"
pytestmark = pytest.mark.anyio
Make = Callable[..., IntrospectionVerifier]


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


@pytest.fixture
async def make(issuer: Issuer) -> AsyncIterator[Make]:
    made: list[IntrospectionVerifier] = []

    def build(**kwargs: Any) -> IntrospectionVerifier:
        options: dict[str, Any] = {"client_id": "rs", "client_secret": "rs-secret", "audience": RESOURCE, **kwargs}
        made.append(IntrospectionVerifier(issuer=issuer.url, **options))
        return made[-1]

    yield build
    for verifier in made:
        await verifier.aclose()


def answer(issuer: Issuer, **overrides: Any) -> dict[str, Any]:
    good = {
        "active": True,
        "iss": issuer.url,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app",
        "scope": "orders:read",
        "exp": int(time.time()) + 300,
    }
    return {key: value for key, value in {**good, **overrides}.items() if value is not None}


async def test_an_active_token_for_this_resource_passes(issuer: Issuer, make: Make) -> None:
    issuer.introspection = answer(issuer, aud=["https://other.test", RESOURCE])
    token = await make().verify("opaque-1")
    assert isinstance(token, AccessToken)
    assert (token.subject, token.client_id, token.scopes) == ("alice", "app", {"orders:read"})
    assert issuer.introspected == [("opaque-1", "Basic cnM6cnMtc2VjcmV0")]  # endpoint found via metadata


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"active": False}, "not active"),
        ({"exp": int(time.time()) - 10}, "expired"),
        ({"aud": "https://other.test/mcp"}, "audience"),
        ({"aud": None}, "audience"),
        ({"iss": "https://evil.test"}, "another issuer"),
    ],
)
async def test_each_unacceptable_answer_is_refused(
    issuer: Issuer, make: Make, overrides: dict[str, Any], reason: str
) -> None:
    issuer.introspection = answer(issuer, **overrides)
    with pytest.raises(InvalidTokenError, match=reason):
        await make().verify("opaque-1")


async def test_without_aud_in_answers_the_audience_check_can_be_turned_off(issuer: Issuer, make: Make) -> None:
    issuer.introspection = answer(issuer, aud=None)
    assert (await make(require_audience=False).verify("opaque-1")).subject == "alice"


async def test_wrong_resource_server_credentials_refuse_the_token_not_crash(issuer: Issuer, make: Make) -> None:
    issuer.introspection = answer(issuer)
    with pytest.raises(InvalidTokenError, match="HTTP 401"):
        await make(client_secret="wrong").verify("opaque-1")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def test_accepted_answers_are_kept_for_the_ttl_then_asked_again(issuer: Issuer, make: Make) -> None:
    clock = Clock()
    issuer.introspection = answer(issuer, exp=int(clock.now) + 300)
    verifier = make(cache_ttl=20, clock=clock)
    first = await verifier.verify("opaque-1")
    clock.now += 19
    assert await verifier.verify("opaque-1") == first
    assert [token for token, _ in issuer.introspected] == ["opaque-1"]  # the second came from the cache
    clock.now += 2  # past the ttl: asked again, and a revoked token is now refused
    issuer.introspection = answer(issuer, active=False)
    with pytest.raises(InvalidTokenError, match="not active"):
        await verifier.verify("opaque-1")
    with pytest.raises(InvalidTokenError, match="not active"):  # refusals are never kept
        await verifier.verify("opaque-1")
    assert [token for token, _ in issuer.introspected] == ["opaque-1"] * 3


async def test_an_entry_never_outlives_its_token(issuer: Issuer, make: Make) -> None:
    clock = Clock()
    issuer.introspection = answer(issuer, exp=int(clock.now) + 5)
    verifier = make(cache_ttl=60, clock=clock)
    await verifier.verify("opaque-1")
    clock.now += 6
    with pytest.raises(InvalidTokenError, match="expired"):  # asked again: the answer says expired
        await verifier.verify("opaque-1")
    assert len(issuer.introspected) == 2


async def test_the_cache_is_bounded_and_can_be_turned_off(issuer: Issuer, make: Make) -> None:
    issuer.introspection = answer(issuer)
    bounded = make(cache_size=2)
    for token in ("a", "b", "c", "a"):  # "a" went first when "c" came in
        await bounded.verify(token)
    assert len(bounded.cache) == 2
    assert [token for token, _ in issuer.introspected] == ["a", "b", "c", "a"]
    issuer.introspected.clear()
    off = make(cache_ttl=0)
    await off.verify("x")
    await off.verify("x")
    assert len(issuer.introspected) == 2 and len(off.cache) == 0
