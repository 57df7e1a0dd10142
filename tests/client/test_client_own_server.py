"""The MRTR client against this project's own server: in-process (ASGI transport) and on uvicorn."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    InputRequiredConfig,
    InputRequiredResult,
    McpError,
    MrtrClient,
)
from tests.support import running_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(path))
    return path


def order_count(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM orders").fetchone()[0])


class Answers:
    """An elicitation handler answering by the question's text."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, params: ElicitRequestParams) -> dict[str, Any]:
        self.messages.append(params.message)
        if params.message.startswith("Place this order"):
            return {"action": "accept", "content": {"confirmed": True}}
        if params.message.startswith("Shipping"):
            return {"action": "accept", "content": {"speed": "express"}}
        if params.message.startswith("How many stars"):
            return {"action": "accept", "content": {"stars": 1}}
        if params.message.startswith("Sorry"):
            return {"action": "accept", "content": {"text": "dull"}}
        return {"action": "accept", "content": {"value": True}}


@pytest.fixture
async def in_process(database: Path) -> AsyncIterator[MrtrClient]:
    from example_app.main import app

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")
    async with MrtrClient("http://localhost/mcp", http_client=http) as client:
        yield client
    await http.aclose()


@pytest.fixture
def on_uvicorn(database: Path) -> Iterator[str]:
    from example_app.main import app

    with running_server(app) as base:
        yield f"{base}/mcp"


async def test_in_process_order_flow(in_process: MrtrClient, database: Path) -> None:
    answers = Answers()
    in_process.set_elicitation_handler(answers)
    result = await in_process.call_tool("place_order", {"book_id": 1, "quantity": 3})
    assert not isinstance(result, InputRequiredResult)
    assert result.structured_content == {"status": "placed", "order_id": 1, "total_cents": 3750, "shipping": "express"}
    assert [m.split(" ")[0] for m in answers.messages] == ["Place", "Shipping"]
    assert order_count(database) == 1


async def test_on_uvicorn_three_round_review(on_uvicorn: str) -> None:
    answers = Answers()
    async with MrtrClient(on_uvicorn) as client:
        client.set_elicitation_handler(answers)
        tools = await client.list_tools()
        assert "review_book" in [tool.name for tool in tools.tools]
        result = await client.call_tool("review_book", {"book_id": 2})
    assert not isinstance(result, InputRequiredResult)
    assert result.structured_content is not None and result.structured_content["status"] == "saved"
    assert len(answers.messages) == 3  # rating, then the conditional comment, then publish


async def test_manual_mode_against_our_server(in_process: MrtrClient, database: Path) -> None:
    in_process.set_elicitation_handler(Answers())  # declares the capability; not called in manual mode
    in_process.options = ClientOptions(input_required_config=InputRequiredConfig(auto_fulfill=False))
    first = await in_process.call_tool("place_order", {"book_id": 1})
    assert isinstance(first, InputRequiredResult)
    assert first.input_requests is not None and list(first.input_requests) == ["confirm"]
    declined = await in_process.call_tool(
        "place_order",
        {"book_id": 1},
        input_responses={"confirm": {"action": "decline"}},
        request_state=first.request_state,
    )
    assert not isinstance(declined, InputRequiredResult)
    assert declined.structured_content is not None and declined.structured_content["status"] == "cancelled"
    assert order_count(database) == 0


async def test_server_errors_surface_as_mcp_error(in_process: MrtrClient) -> None:
    in_process.set_elicitation_handler(Answers())
    with pytest.raises(McpError) as unknown:
        await in_process.call_tool("no_such_tool", {})
    assert unknown.value.code == -32602
    in_process.options = ClientOptions(input_required_config=InputRequiredConfig(auto_fulfill=False))
    first = await in_process.call_tool("place_order", {"book_id": 1})
    assert isinstance(first, InputRequiredResult) and first.request_state
    with pytest.raises(McpError) as tampered:
        await in_process.call_tool(
            "place_order", {"book_id": 1}, input_responses={}, request_state=first.request_state + "x"
        )
    assert tampered.value.code == -32602
    assert tampered.value.data == {"reason": "invalid_request_state"}


async def test_without_an_elicitation_handler_the_server_answers_32021(in_process: MrtrClient) -> None:
    with pytest.raises(McpError) as missing:
        await in_process.call_tool("place_order", {"book_id": 1})
    assert missing.value.code == -32021
    assert missing.value.data == {"requiredCapabilities": {"elicitation": {}}}
