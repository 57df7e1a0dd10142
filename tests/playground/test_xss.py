"""Markup in what a tool supplies (title, description, schema titles, questions, results) stays text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.playground.apps import XSS, xss_app
from tests.support import running_server

pytestmark = pytest.mark.slow  # a browser and a server


@pytest.fixture
def xss_server() -> Iterator[str]:
    with running_server(xss_app()) as base:
        yield base


def assert_nothing_ran(pg: Any) -> None:
    page = pg.page
    assert pg.dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator("body script").count() == 0  # the page's own script is in <head>
    assert page.locator("img").count() == 0  # the payload's <img onerror> never became an element


def test_payloads_show_as_text_and_never_run(xss_server: str, open_page: Any) -> None:
    pg = open_page(xss_server)
    page = pg.open()
    assert page.locator("#server-name").text_content() == f"xss {XSS}"
    assert page.locator("#server-instructions").text_content() == XSS
    item = page.locator("#items button").first
    assert f"Title {XSS}" in item.text_content() and f"Description {XSS}" in item.text_content()
    item.click()
    detail = page.locator("#detail")
    assert detail.locator("h2").text_content() == f"Title {XSS}"
    assert detail.get_by_text(f"Field {XSS}").count() == 1  # a schema title, as a label
    assert detail.locator("[data-name=text]").input_value() == XSS  # a default, as a value
    assert detail.locator("[data-name=pick]").count() == 1
    pg.shot("tool")
    assert_nothing_ran(pg)
    pg.call()
    card = pg.ask("q")
    assert card.locator(".message").text_content() == f"Question {XSS}"
    assert card.get_by_text(f"Question field {XSS}").count() == 1
    assert_nothing_ran(pg)
    card.locator("input[type=checkbox]").check()
    card.get_by_role("button", name="Accept").click()
    result = pg.result()
    pg.shot("result")
    assert f"Result {XSS} {XSS} True" in result.text_content()
    assert result.locator(".structured li", has_text="<script>").count() >= 1  # the structuredContent tree
    page.locator("li.round details").first.locator("summary").click()
    assert_nothing_ran(pg)
