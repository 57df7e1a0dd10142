"""LoopbackSignIn on real loopback sockets: what the browser gets back, and what the flow gets."""

from __future__ import annotations

import anyio
import httpx
import pytest

from fastapi_mrtr.client.auth import LoopbackSignIn, OAuthAuthorizationError

pytestmark = pytest.mark.anyio


async def test_only_the_callback_ends_the_wait_and_the_flow_gets_the_whole_redirect() -> None:
    said: list[str] = []
    async with await LoopbackSignIn.bind(said.append, open_browser=False, timeout=10) as sign_in:
        assert sign_in.redirect_uri.startswith("http://127.0.0.1:") and sign_in.redirect_uri.endswith("/callback")
        found: list[str] = []
        answers: list[httpx.Response] = []

        async def browser() -> None:
            async with httpx.AsyncClient(timeout=5) as http:
                base = sign_in.redirect_uri.removesuffix("/callback")
                answers.append(await http.get(f"{base}/favicon.ico"))
                answers.append(await http.get(f"{sign_in.redirect_uri}?code=abc&state=s1&iss=https%3A%2F%2Fas.test"))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(browser)
            found.append(await sign_in("https://as.test/authorize?x=1"))
    assert [answer.status_code for answer in answers] == [404, 200]
    assert "Signed in" in answers[1].text
    assert found == [f"{sign_in.redirect_uri}?code=abc&state=s1&iss=https%3A%2F%2Fas.test"]
    assert said[0] == "Sign in to continue: https://as.test/authorize?x=1"


async def test_no_redirect_in_time_is_an_authorization_error() -> None:
    async with await LoopbackSignIn.bind(lambda _: None, open_browser=False, timeout=0.5) as sign_in:
        with pytest.raises(OAuthAuthorizationError, match="no sign-in came back"):
            await sign_in("https://as.test/authorize")
