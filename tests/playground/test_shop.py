"""The playground in a real browser against the example bookshop on uvicorn (Debian's chromium)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.playground.conftest import rows

pytestmark = pytest.mark.slow  # a browser and a server: about a second each


def test_place_order_through_both_forms(shop: tuple[str, Path], open_page: Any) -> None:
    base, database = shop
    pg = open_page(base)
    page = pg.open()
    assert page.locator("#server-name").text_content() == "bookshop"
    pg.shot("tools")
    pg.choose("place_order")
    page.get_by_label("Book Id").fill("2")
    page.get_by_label("Quantity").fill("3")
    pg.shot("form")
    pg.call()
    confirm = pg.ask("confirm")
    assert "3 x 'The Left Hand of Darkness', 33.00 EUR" in confirm.text_content()
    pg.shot("confirm-asked")
    confirm.get_by_label("Confirm").check()
    confirm.get_by_role("button", name="Accept").click()
    shipping = pg.ask("shipping")
    shipping.get_by_label("Shipping speed").select_option(label="express")
    shipping.get_by_label("Gift note").fill("For Ursula's fans")
    pg.shot("shipping-asked")
    shipping.get_by_role("button", name="Accept").click()
    result = pg.result()
    pg.shot("placed")
    assert "placed" in result.text_content()
    assert page.locator("li.round").count() == 3
    assert rows(database, "SELECT book_id, quantity, shipping, gift_note FROM orders") == [
        (2, 3, "express", "For Ursula's fans")
    ]


def round_bodies(page: Any, round_number: int) -> tuple[dict[str, Any], str]:
    """The JSON-RPC request of a round (as the timeline shows it) and the raw response text."""
    card = page.locator(f"li.round[data-round='{round_number}']")
    request_text = card.locator("pre.raw-request").text_content()
    headers, _, body = request_text.partition("\n\n")
    return {"headers": headers, **json.loads(body)}, card.locator("pre.raw-response").text_content()


def final_message(raw: str) -> dict[str, Any]:
    """The JSON-RPC answer in a raw response: a JSON body or the last SSE data line."""
    if raw.lstrip().startswith("{"):
        return dict(json.loads(raw))
    data = [line[len("data: ") :] for line in raw.splitlines() if line.startswith("data: ")]
    return dict(json.loads(data[-1]))


def test_rounds_carry_the_headers_meta_and_state_a_client_sends(shop: tuple[str, Path], open_page: Any) -> None:
    base, database = shop
    pg = open_page(base)
    page = pg.open()
    pg.choose("place_order")
    page.get_by_label("Book Id").fill("1")
    pg.call()
    confirm = pg.ask("confirm")
    confirm.get_by_label("Confirm").check()
    confirm.get_by_role("button", name="Accept").click()
    pg.ask("shipping")
    first, first_raw = round_bodies(page, 1)
    second, _ = round_bodies(page, 2)
    for header in ("MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: place_order"):
        assert header in first["headers"] and header in second["headers"]
    meta = first["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {
        "elicitation": {"form": {}, "url": {}},
        "sampling": {},
        "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},  # a tools/call may become a task
    }
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "fastapi-mrtr-playground"
    assert "requestState" not in first["params"] and "inputResponses" not in first["params"]
    issued = final_message(first_raw)["result"]["requestState"]
    assert second["params"]["requestState"] == issued  # echoed exactly
    assert second["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"confirmed": True}}}
    assert second["id"] != first["id"] and second["params"]["arguments"] == first["params"]["arguments"]
    # Copy as curl: the command shown runs as it is and gets the same kind of answer.
    page.locator("li.round[data-round='1'] button.copy-curl").click()
    command = page.locator("li.round[data-round='1'] pre.curl").text_content()
    pg.shot("curl")
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=True).stdout
    assert final_message(out)["result"]["inputRequests"]["confirm"]["method"] == "elicitation/create"
    assert rows(database, "SELECT COUNT(*) FROM orders") == [(0,)]


def test_decline_places_no_order(shop: tuple[str, Path], open_page: Any) -> None:
    base, database = shop
    pg = open_page(base)
    page = pg.open()
    pg.choose("place_order")
    page.get_by_label("Book Id").fill("1")
    pg.call()
    confirm = pg.ask("confirm")
    confirm.get_by_role("button", name="Decline").click()
    result = pg.result()
    pg.shot("declined")
    assert "cancelled" in result.text_content()
    assert page.locator("li.round").count() == 2
    assert rows(database, "SELECT COUNT(*) FROM orders") == [(0,)]


def test_review_book_in_three_rounds(shop: tuple[str, Path], open_page: Any) -> None:
    base, database = shop
    pg = open_page(base)
    page = pg.open()
    page.get_by_label("Filter").fill("review")
    assert page.locator("#items button").count() == 1
    pg.choose("review_book")
    page.get_by_label("Book Id").fill("4")
    pg.call()
    rating = pg.ask("rating")
    rating.get_by_label("Stars (1 to 5)").fill("2")
    pg.shot("rating")
    rating.get_by_role("button", name="Accept").click()
    comment = pg.ask("comment")
    comment.get_by_label("What did you not like?").fill("Too short")
    pg.shot("comment")
    comment.get_by_role("button", name="Accept").click()
    publish = pg.ask("publish")
    publish.locator("input[type=checkbox]").check()
    publish.get_by_role("button", name="Accept").click()
    result = pg.result()
    pg.shot("saved")
    assert "saved" in result.text_content()
    assert page.locator("li.round").count() == 4  # three rounds asked, the fourth completed
    assert rows(database, "SELECT book_id, rating, comment FROM reviews") == [(4, 2, "Too short")]


def test_an_error_result_is_shown_as_an_error(shop: tuple[str, Path], open_page: Any) -> None:
    base, _ = shop
    pg = open_page(base)
    page = pg.open()
    pg.choose("get_book")
    page.get_by_label("Book Id").fill("999")
    pg.call()
    result = pg.result()
    pg.shot("error")
    assert "is-error" in (result.get_attribute("class") or "")
    assert result.get_attribute("role") == "alert"
    assert "No such book" in result.text_content() and "isError" in result.text_content()


def test_authorization_box(shop: tuple[str, Path], open_page: Any) -> None:
    base, _ = shop
    pg = open_page(base)
    page = pg.open()
    pg.choose("my_orders")
    pg.call()
    result = pg.result()
    pg.shot("without-authorization")
    assert "is-error" in (result.get_attribute("class") or "") and "401" in result.text_content()
    page.get_by_label("Authorization header").fill("Bearer bob-token")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_selector("#items button[data-name='my_orders']")
    pg.choose("my_orders")
    pg.call()
    pg.wait_rounds(1)
    result = pg.result()
    pg.shot("with-authorization")
    assert "is-error" not in (result.get_attribute("class") or "")
    assert "structuredContent" in result.text_content()
    request, _ = round_bodies(page, 1)
    assert "Authorization: Bearer bob-token" in request["headers"]
