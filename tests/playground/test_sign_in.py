"""The playground's "Sign in" in a real browser (Debian's chromium) against a protected endpoint on
uvicorn and a real authorization server (oidc-provider): the page signs the user in (authorization
code + PKCE from the browser, the login and consent pages filled in as a person would), calls a
tool with the token, gets the 403 on a tool needing more, signs in again for it and succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fastapi_mrtr.playground import CSP
from tests.auth.oidc_provider import oidc_provider
from tests.auth.serving import serving
from tests.auth.shop import Shop, build_shop

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oidc_provider() as url:
        yield url


def register_playground(issuer: str, page_url: str) -> str:
    """Register the page at the provider as a public web client (what an admin does once)."""
    body = {
        "redirect_uris": [page_url],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "application_type": "web",
        "client_name": "MCP playground",
    }
    registered = httpx.post(f"{issuer}/reg", json=body, timeout=10)
    assert registered.status_code == 201, registered.text
    return str(registered.json()["client_id"])


@pytest.fixture
def protected(issuer: str) -> Iterator[tuple[Shop, str]]:
    def build(base: str) -> Shop:
        client_id = register_playground(issuer, f"{base}/mcp/playground")
        return build_shop(issuer=issuer, resource=f"{base}/mcp", allow_anonymous=True, playground_client_id=client_id)

    with serving(build) as (shop, base):
        yield shop, base


def sign_in_at_the_provider(page: Any, account: str | None, decline: str = "") -> None:
    """Fill in the provider's pages: the login (when it asks) and the consent."""
    page.wait_for_url("**/interaction/**")
    if page.locator("input[name='login']").count():
        page.fill("input[name='login']", account or "")
        page.fill("input[name='password']", "any")
        page.get_by_role("button", name="Continue").click()
        page.wait_for_selector("input[name='decline']")
    page.fill("input[name='decline']", decline)
    page.get_by_role("button", name="Continue").click()


def test_the_page_signs_in_calls_and_steps_up(protected: tuple[Shop, str], issuer: str, open_page: Any) -> None:
    shop, base = protected
    pg = open_page(base)
    pg.offline.allowed.append(issuer + "/")  # the provider's pages and endpoints, nothing else
    page = pg.open()
    status = page.locator("#auth-status")
    sign_in = page.locator("#auth-signin")
    assert sign_in.is_visible()
    pg.shot("anonymous")

    pg.choose("my_orders")
    pg.call()
    status.filter(has_text="sign-in needed").wait_for()  # no wait_for_function: the page's CSP forbids eval
    assert status.text_content() == "sign-in needed (scope orders:read)"

    sign_in.click()  # asks for orders:read, the scope of the challenge
    sign_in_at_the_provider(page, "alice")
    page.wait_for_selector("body[data-ready='true']")
    assert "code=" not in page.url  # the code does not stay in the address bar
    assert "orders:read" in (status.text_content() or "")
    pg.shot("signed-in")
    pg.choose("my_orders")
    pg.call()
    assert '{"subject":"alice","orders":[1,2]}' in pg.result().text_content()

    pg.choose("delete_book")
    page.get_by_label("Book Id").fill("9")
    pg.call()
    status.filter(has_text="more access").wait_for()
    assert status.text_content() == "more access needed (scope admin orders:write)"
    assert sign_in.text_content() == "Sign in again"
    pg.shot("step-up-needed")

    sign_in.click()  # the provider still knows alice: only the consent for the new scopes
    sign_in_at_the_provider(page, None)
    page.wait_for_selector("body[data-ready='true']")
    assert "admin" in (status.text_content() or "")
    pg.choose("delete_book")
    page.get_by_label("Book Id").fill("9")
    pg.call()
    assert '{"deleted":9,"by":"alice"}' in pg.result().text_content()
    pg.shot("deleted")
    assert shop.reached == ["my_orders", "delete_book"]


def test_the_page_allows_connections_to_the_issuer_only_when_signing_in(
    protected: tuple[Shop, str], issuer: str
) -> None:
    _, base = protected
    csp = httpx.get(f"{base}/mcp/playground", timeout=10).headers["content-security-policy"]
    assert f"connect-src 'self' {base} {issuer};" in csp or f"connect-src 'self' {issuer} {base};" in csp
    assert csp.replace(f" {base}", "").replace(f" {issuer}", "") == CSP
