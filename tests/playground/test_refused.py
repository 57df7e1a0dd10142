"""A refused answer is visible in the playground, and what was typed stays in the form."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, Context, ServerOptions
from tests.playground.scripted import REASON, ScriptedServer
from tests.support import running_server

pytestmark = pytest.mark.slow  # a browser and a server


@pytest.fixture
def scripted() -> Iterator[tuple[str, ScriptedServer]]:
    server = ScriptedServer()
    with running_server(server) as base:
        yield base, server


def test_the_reason_the_server_gives_is_shown_as_text(scripted: tuple[str, ScriptedServer], open_page: Any) -> None:
    base, server = scripted
    pg = open_page(base)
    page = pg.open()
    pg.choose("approve")
    pg.call()
    first = pg.ask("amount")
    assert first.locator(".refused").count() == 0  # a first ask is no refusal
    first.get_by_label("Amount").fill("0")
    first.get_by_label("Note").fill("team lunch")
    first.get_by_role("button", name="Accept").click()
    pg.wait_rounds(2)
    again = pg.ask("amount")
    refused = again.locator(".refused")
    refused.wait_for()
    pg.shot("refused-with-reason")
    assert refused.text_content() == f"your answer was not accepted: {REASON}"
    assert refused.get_attribute("role") == "alert"
    assert again.locator("b").count() == 0  # the reason's markup stayed text
    assert again.get_by_label("Amount").input_value() == "0"  # what was typed is kept
    assert again.get_by_label("Note").input_value() == "team lunch"
    again.get_by_label("Amount").fill("40")
    again.get_by_role("button", name="Accept").click()
    assert pg.result().text_content() is not None and "approved 40" in pg.result().text_content()
    answers = [call.get("inputResponses") for call in server.calls]
    assert answers == [
        None,
        {"amount": {"action": "accept", "content": {"amount": 0, "note": "team lunch"}}},
        {"amount": {"action": "accept", "content": {"amount": 40, "note": "team lunch"}}},
    ]
    assert page.locator(".refused").count() == 0  # the answered question is gone with its message


class Expense(BaseModel):
    amount: int = Field(title="Amount", ge=1)
    reason: str = Field(title="Reason")


def expense_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="expenses", version="1.0.0"))

    @mcp.tool()
    @app.post("/expense")
    async def file_expense(ctx: Context) -> dict[str, int]:
        """Files an expense; asks for its amount (at least 1)."""
        answer = await ctx.elicit("What did you spend?", Expense, key="expense")
        return {"amount": answer.content.amount if answer.content else 0}

    app.mount("/mcp", mcp)
    return app


def test_a_question_asked_again_unchanged_is_a_refusal(open_page: Any) -> None:
    """A server that gives no reason asks the same question again: the page still says so."""
    with running_server(expense_app()) as base:
        pg = open_page(base)
        page = pg.open()
        pg.choose("file_expense")
        pg.call()
        first = pg.ask("expense")
        first.get_by_label("Amount").fill("0")  # breaks ge=1: the server refuses the answer
        first.get_by_label("Reason").fill("taxi")
        first.get_by_role("button", name="Accept").click()
        pg.wait_rounds(2)
        again = pg.ask("expense")
        refused = again.locator(".refused")
        refused.wait_for()
        pg.shot("refused")
        # The exact text when the server gives no reason; a server that does adds ": <reason>".
        assert (refused.text_content() or "").startswith("your answer was not accepted")
        assert again.get_by_label("Amount").input_value() == "0"
        assert again.get_by_label("Reason").input_value() == "taxi"
        again.get_by_label("Amount").fill("12")
        again.get_by_role("button", name="Accept").click()
        assert '{"amount":12}' in (pg.result().text_content() or "")
        assert page.locator("li.round").count() == 3
