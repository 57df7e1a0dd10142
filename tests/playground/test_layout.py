"""The page on a narrow screen, with no empty card, and with no request that fails (the favicon)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Response

pytestmark = pytest.mark.slow  # a browser and a server


def fits(page: Any) -> bool:
    width: list[int] = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    return width[0] <= width[1]


def test_narrow_screen_no_empty_card_no_failed_request(shop: tuple[str, Path], browser: Browser) -> None:
    base, _ = shop
    context = browser.new_context(viewport={"width": 420, "height": 900})
    try:
        page = context.new_page()
        failed: list[str] = []
        csp: list[str] = []

        def check(response: Response) -> None:
            if response.status >= 400:
                failed.append(f"{response.status} {response.url}")

        page.on("response", check)
        page.on("requestfailed", lambda request: failed.append(f"failed {request.url}"))
        page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(f"{base}/mcp/playground")
        page.wait_for_selector("body[data-ready='true']")
        assert fits(page), "the tool list overflows sideways at 420 px"
        # Headless chromium never asks for a favicon, so the page must name one itself: a data:
        # URL (the CSP's img-src allows it) keeps a desktop browser off /favicon.ico, a 404.
        icon = page.locator("link[rel~='icon']")
        assert icon.count() == 1 and (icon.get_attribute("href") or "").startswith("data:")
        page.locator("#items button[data-name='place_order']").click()
        page.get_by_label("Book Id").fill("2")
        page.get_by_label("Quantity").fill("1")
        page.locator("#run").click()
        page.locator("section.ask[data-key='confirm']").wait_for()
        page.wait_for_selector("li.round[data-round='1']")
        assert fits(page), "the conversation overflows sideways at 420 px"
        page.locator("li.round[data-round='1'] summary", has_text="Response").click()  # the raw answer, long lines
        assert fits(page), "the raw response overflows sideways at 420 px"
        page.screenshot(path=str(_artifact("narrow-420.png")), full_page=True)
        # Every card says something beyond a heading (no empty "Call" card above the rounds).
        empty = page.evaluate(
            """[...document.querySelectorAll('#conversation .card')]
                 .filter(card => card.offsetParent !== null)
                 .filter(card => [...card.children].every(c => /^H[1-6]$/.test(c.tagName) || !c.innerText.trim()))
                 .map(card => card.innerText)"""
        )
        assert empty == []
        assert page.locator("#conversation .conversation-title").text_content() == "Call place_order"
        assert failed == [] and csp == []
    finally:
        context.close()


def _artifact(name: str) -> Path:
    from tests.playground.conftest import ARTIFACTS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name
