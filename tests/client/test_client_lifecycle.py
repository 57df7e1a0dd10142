"""``MrtrClient``'s lifecycle, like httpx's: usable unopened, ``async with`` once, closed for good.

Against the official Python SDK's server (``mcp`` 2.3.0, both eras) on real uvicorn, through an
``httpx.AsyncClient`` the test owns, so that what reaches the server is recorded and the HTTP
client itself stays open: a closed ``MrtrClient`` must refuse on its own, not through httpx.
The era is found once per client and kept, whichever era.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import ClientOptions, MrtrClient
from fastapi_mrtr.client.options import ClientMode
from tests.client import sdk_dual_server
from tests.support import running_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def dual_url() -> Iterator[str]:
    with running_server(sdk_dual_server.build_app()) as base:
        yield f"{base}/mcp"


class Traffic:
    """Every request that left the HTTP client: (HTTP method, JSON-RPC method or None)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    async def record(self, request: httpx.Request) -> None:
        body: Any = json.loads(request.content) if request.content else None
        self.sent.append((request.method, body.get("method") if isinstance(body, dict) else None))

    def count(self, http_method: str, rpc_method: str | None = None) -> int:
        return sum(1 for sent in self.sent if sent[0] == http_method and (rpc_method is None or sent[1] == rpc_method))


@asynccontextmanager
async def recorded_http() -> AsyncIterator[tuple[httpx.AsyncClient, Traffic]]:
    traffic = Traffic()
    async with httpx.AsyncClient(event_hooks={"request": [traffic.record]}) as http:
        yield http, traffic


def text(result: Any) -> str:
    return str(result.content[0].text)


MODES: list[ClientMode] = ["auto", "2026-07-28", "legacy"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_closed_client_refuses_every_request_before_it_leaves(dual_url: str, mode: ClientMode) -> None:
    async with recorded_http() as (http, traffic):
        client = MrtrClient(dual_url, http_client=http, options=ClientOptions(mode=mode))
        async with client:
            assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        sent_before = list(traffic.sent)
        for use in (
            lambda: client.call_tool("echo", {"text": "again"}),
            client.list_tools,
            client.connect,
            client.discover,
            lambda: client.request("tools/list"),
            lambda: client.set_log_level("info"),
        ):
            with pytest.raises(RuntimeError, match="has been closed"):
                await use()
        assert traffic.sent == sent_before, "a closed client sent something"
        assert not http.is_closed, "the caller's HTTP client is the caller's to close"


@pytest.mark.parametrize("mode", MODES)
async def test_entering_twice_or_after_closing_is_an_error(dual_url: str, mode: ClientMode) -> None:
    async with recorded_http() as (http, _):
        client = MrtrClient(dual_url, http_client=http, options=ClientOptions(mode=mode))
        async with client:
            with pytest.raises(RuntimeError, match="already open"):
                await client.__aenter__()
            assert text(await client.call_tool("echo", {"text": "still"})) == "still", "the failed entry broke it"
        with pytest.raises(RuntimeError, match="has been closed"):
            async with client:
                pass


async def test_aclose_is_idempotent_and_ends_a_2025_era_session_once(dual_url: str) -> None:
    async with recorded_http() as (http, traffic):
        async with MrtrClient(dual_url, http_client=http, options=ClientOptions(mode="legacy")) as client:
            await client.list_tools()
            await client.aclose()
            await client.aclose()
        assert traffic.count("DELETE") == 1


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "legacy")])
async def test_an_unopened_client_works_and_finds_its_era_once(dual_url: str, mode: ClientMode, era: str) -> None:
    """No ``async with``: usable at once, as an ``httpx.AsyncClient`` is; the era is chosen on first
    use and kept, whatever runs after."""
    async with recorded_http() as (http, traffic):
        client = MrtrClient(dual_url, http_client=http, options=ClientOptions(mode=mode))
        assert client.era == (None if mode == "auto" else era)
        await client.list_tools()
        assert client.era == era
        for word in ("one", "two"):
            assert text(await client.call_tool("echo", {"text": word})) == word
        assert await client.connect() == era
        await client.aclose()
    assert traffic.count("POST", "server/discover") == (1 if mode == "auto" else 0)
    assert traffic.count("POST", "initialize") == (1 if era == "legacy" else 0)
    assert traffic.count("DELETE") == (1 if era == "legacy" else 0)
