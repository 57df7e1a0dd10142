"""The example app in OAuth mode, end to end: uvicorn serving ``example_app.main:app`` with
``BOOKSHOP_OAUTH_ISSUER`` and ``BOOKSHOP_PUBLIC_URL`` set, a real authorization server
(oidc-provider) on loopback, and this project's client and CLI signing the user in on a 401 and
stepping up on a 403 (authorization code + PKCE, dynamic registration; the login step filled in by
a stand-in browser), in a 2026-07-28 session and a 2025-era one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import ClientOptions, ElicitRequestParams, MrtrClient
from fastapi_mrtr.client.auth import ClientMetadata, OAuthClientAuth
from tests.auth.oidc_provider import oidc_provider
from tests.auth.signin import Browser, SignIn
from tests.scaleout.services import AppServer
from tests.support import free_port, rpc_body, rpc_headers

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/callback"  # never opened: the stand-in browser stops at it
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oidc_provider() as url:
        yield url


@pytest.fixture
def bookshop(issuer: str, tmp_path: Path) -> Iterator[str]:
    """The example app in OAuth mode on 127.0.0.1, with a fresh database; yields its base URL."""
    port = free_port()
    env = {
        "BOOKSHOP_OAUTH_ISSUER": issuer,
        "BOOKSHOP_PUBLIC_URL": f"http://127.0.0.1:{port}/mcp",
        "BOOKSHOP_DB": str(tmp_path / "shop.db"),
    }
    server = AppServer.uvicorn("bookshop-oauth", port=port, log=tmp_path / "bookshop.log", env=env)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def answer(params: ElicitRequestParams) -> dict[str, Any]:
    """The user confirms whatever the shop asks."""
    if params.message.startswith("Place this order"):
        return {"action": "accept", "content": {"confirmed": True}}
    if params.message.startswith("Shipping"):
        return {"action": "accept", "content": {"speed": "standard"}}
    return {"action": "accept", "content": {"value": True}}


def test_the_catalogue_is_public_and_the_rest_is_challenged_with_the_routes_own_scopes(bookshop: str) -> None:
    metadata = httpx.get(f"{bookshop}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert metadata["resource"] == f"{bookshop}/mcp"
    assert metadata["scopes_supported"] == ["admin", "orders:read", "orders:write"]

    def call(tool: str, arguments: dict[str, Any]) -> httpx.Response:
        body = rpc_body("tools/call", {"name": tool, "arguments": arguments})
        return httpx.post(f"{bookshop}/mcp", json=body, headers=rpc_headers("tools/call", tool), timeout=10)

    assert call("list_books", {}).status_code == 200
    assert call("get_book", {"book_id": 1}).json()["result"]["structuredContent"]["title"] == "Dune"
    needs = {
        "my_orders": ({}, "orders:read"),
        "place_order": ({"book_id": 1}, "orders:write"),
        "review_book": ({"book_id": 1}, "orders:write"),
        "delete_book": ({"book_id": 1}, "admin"),
    }
    for tool, (arguments, scope) in needs.items():
        refused = call(tool, arguments)
        assert refused.status_code == 401, (tool, refused.text)
        assert f'scope="{scope}"' in refused.headers["www-authenticate"], tool
    # REST callers of the same routes meet the same dependency.
    assert httpx.get(f"{bookshop}/me/orders", timeout=10).status_code == 401
    assert httpx.get(f"{bookshop}/books/2", timeout=10).status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_the_client_signs_in_on_401_and_steps_up_on_403(bookshop: str, era: str) -> None:
    browser = Browser(REDIRECT, [SignIn("alice"), SignIn("alice"), SignIn("alice")])
    auth = OAuthClientAuth(
        authorization_handler=browser.redirect, client_metadata=ClientMetadata(redirect_uris=[REDIRECT])
    )
    options = ClientOptions(mode="legacy" if era == "legacy" else "2026-07-28")
    async with MrtrClient(f"{bookshop}/mcp", auth=auth, options=options) as client:
        client.set_elicitation_handler(answer)
        books = await client.call_tool("list_books", {})
        assert not books.is_error and browser.signed_in == []  # public: nobody was asked to sign in

        orders = await client.call_tool("my_orders", {})  # 401: sign in for orders:read
        assert not orders.is_error, orders
        assert orders.structured_content == {"result": []}
        assert browser.signed_in == ["alice"]

        placed = await client.call_tool("place_order", {"book_id": 2})  # 403: step up for orders:write
        assert not placed.is_error, placed
        assert placed.structured_content is not None and placed.structured_content["status"] == "placed"
        orders = await client.call_tool("my_orders", {})
        assert orders.structured_content is not None
        assert [order["customer"] for order in orders.structured_content["result"]] == ["alice"]

        deleted = await client.call_tool("delete_book", {"book_id": 3})  # 403: this token lacks admin
        assert not deleted.is_error, deleted
        assert deleted.structured_content is not None and deleted.structured_content["title"] == "Neuromancer"
    assert browser.signed_in == ["alice", "alice", "alice"]
    asked = [set(scope.split()) for scope in browser.requested]
    assert {"orders:read"} <= asked[0] and not {"orders:write", "admin"} & asked[0]
    assert {"orders:read", "orders:write"} <= asked[1] and "admin" not in asked[1]
    assert {"orders:read", "orders:write", "admin"} <= asked[2]


def run_cli(
    bookshop: str, plan: list[dict[str, str]], tmp_path: Path, *args: str, stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    requested = plan_file.with_suffix(".requested")
    requested.unlink(missing_ok=True)
    env = {
        **os.environ,
        "BROWSER": f"{sys.executable} {HERE / 'cli_browser.py'} {plan_file} %s",
    }
    done = subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", f"{bookshop}/mcp", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert json.loads(plan_file.read_text()) == [], "a planned sign-in did not happen"
    return done, requested.read_text().splitlines() if requested.exists() else []


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_the_cli_signs_in_through_the_browser_and_steps_up(bookshop: str, era: str, tmp_path: Path) -> None:
    done, asked = run_cli(bookshop, [{"account": "bob"}], tmp_path, "my_orders", "--json", "--era", era)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": []}
    assert "Sign in to continue: " in done.stderr and "Traceback" not in done.stderr
    assert [set(scope.split()) & {"orders:read", "orders:write", "admin"} for scope in asked] == [{"orders:read"}]

    # bob declines admin at the first sign-in; the 403 makes the CLI ask again, and he grants it.
    plan = [{"account": "bob", "decline": "admin"}, {"account": "bob"}]
    done, asked = run_cli(bookshop, plan, tmp_path, "delete_book", "book_id=4", "--json", "--era", era, stdin="a\ny\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"]["title"] == "Kindred"
    assert len(asked) == 2 and "admin" in asked[1].split()
