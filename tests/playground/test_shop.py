"""The playground in a real browser against the example bookshop on uvicorn (Debian's chromium)."""

from __future__ import annotations

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
