"""The tool form drawn from an inputSchema, the raw-JSON toggle, Authorization, URL mode, MRTR resources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.playground.apps import forms_app
from tests.support import running_server

pytestmark = pytest.mark.slow  # a browser and a server


@pytest.fixture(scope="module")
def forms_server() -> Iterator[str]:
    with running_server(forms_app()) as base:
        yield base


def structured(pg: Any) -> Any:
    """The structuredContent of the result, read back from the text block (the JSON of it)."""
    return json.loads(pg.result().locator("pre.text").first.text_content())


def test_every_kind_of_field(forms_server: str, open_page: Any) -> None:
    pg = open_page(forms_server)
    page = pg.open()
    pg.choose("echo")
    form = page.locator("#detail")
    # Required marks and defaults as the schema says.
    assert form.locator("[data-name=name]").get_attribute("aria-required") == "true"
    assert form.locator("[data-name=note]").get_attribute("aria-required") is None
    assert form.locator("[data-name=count]").input_value() == "2"
    assert form.locator("[data-name=city]").input_value() == "Paris"  # a default inside $defs
    page.get_by_role("button", name="Call tool").click()
    assert "Name is required" in form.locator(".error").text_content()  # nothing sent
    assert page.locator("li.round").count() == 0
    form.locator("[data-name=name]").fill("Ada")
    form.locator("[data-name=ratio]").fill("0.5")
    form.locator("[data-name=urgent]").check()
    form.locator("[data-name=colour]").select_option(label="green")
    form.locator("[data-name=size]").select_option(label="Large")  # titled oneOf: the title shows
    page.get_by_role("button", name="Add Tags item").click()
    page.get_by_role("button", name="Add Tags item").click()
    form.locator(".array-items input").nth(0).fill("new")
    form.locator(".array-items input").nth(1).fill("sale")
    form.locator("[data-name=street]").fill("1 Rue de Rivoli")
    pg.shot("form")
    pg.call()
    pg.wait_rounds(1)
    pg.shot("echoed")
    assert structured(pg) == {
        "name": "Ada",
        "count": 2,
        "ratio": 0.5,
        "urgent": True,
        "colour": "green",
        "size": "l",
        "tags": ["new", "sale"],
        "address": {"street": "1 Rue de Rivoli", "city": "Paris"},
        "note": None,
    }
    table = pg.result().locator(".structured")
    assert table.locator("li", has_text="street").count() >= 1  # a nested value is drawn as a tree


def test_raw_json_toggle(forms_server: str, open_page: Any) -> None:
    pg = open_page(forms_server)
    page = pg.open()
    pg.choose("echo")
    page.locator("[data-name=name]").fill("Grace")
    page.get_by_label("Raw JSON").check()
    raw = page.get_by_label("Arguments as JSON")
    shown = json.loads(raw.input_value())
    assert shown["name"] == "Grace" and shown["count"] == 2
    edited = {**shown, "ratio": 2.5, "colour": "blue", "size": "m", "address": {"street": "Main St"}}
    raw.fill(json.dumps(edited))
    pg.shot("raw")
    page.get_by_label("Raw JSON").uncheck()  # back to the form, with the edited values
    assert page.locator("[data-name=ratio]").input_value() == "2.5"
    assert page.locator("[data-name=street]").input_value() == "Main St"
    page.get_by_label("Raw JSON").check()
    page.get_by_label("Arguments as JSON").fill(json.dumps({**edited, "count": 7}))
    pg.call()
    pg.wait_rounds(1)
    assert structured(pg)["count"] == 7 and structured(pg)["size"] == "m"


def test_a_tool_that_needs_authorization(forms_server: str, open_page: Any) -> None:
    pg = open_page(forms_server)
    page = pg.open()
    pg.choose("whoami")
    pg.call()
    assert "Sign in first" in pg.result().text_content()
    assert "is-error" in (pg.result().get_attribute("class") or "")
    page.get_by_label("Authorization header").fill("Bearer sesame")
    page.get_by_label("Authorization header").press("Enter")  # the keyboard applies it too
    assert page.locator("#auth-status").text_content() == "sent with every request"
    page.wait_for_selector("#items button[data-name='whoami']")
    pg.choose("whoami")
    pg.call()
    pg.wait_rounds(1)
    pg.shot("authorized")
    assert "is-error" not in (pg.result().get_attribute("class") or "")
    assert structured(pg) == {"user": "ada"}


def test_url_mode_is_a_link_and_a_done_step(forms_server: str, open_page: Any) -> None:
    pg = open_page(forms_server)
    pg.open()
    pg.choose("connect")
    pg.call()
    card = pg.ask("signin")
    link = card.get_by_role("link")
    assert link.get_attribute("href") == "https://archive.example/sign-in?flow=1"
    assert link.get_attribute("rel") == "noopener noreferrer" and link.get_attribute("target") == "_blank"
    pg.shot("url-mode")
    card.get_by_role("button", name="Done").click()
    pg.wait_rounds(2)
    assert structured(pg) == {"action": "accept"}


def test_a_resource_template_read_in_two_rounds(forms_server: str, open_page: Any) -> None:
    pg = open_page(forms_server)
    page = pg.open()
    page.get_by_role("tab", name="Resources").click()
    pg.choose("note")  # waits for the resource list; ".first" could still be the tools list
    page.get_by_label("topic").fill("tea & biscuits")
    page.get_by_role("button", name="Read resource").click()
    card = pg.ask("reader")
    card.locator("input").fill("Mia")
    card.get_by_role("button", name="Accept").click()
    pg.wait_rounds(2)
    assert "Note on tea & biscuits for Mia" in pg.result().text_content()
    assert "Mcp-Name: notes://tea%20%26%20biscuits" in page.locator("pre.raw-request").first.text_content()
    pg.shot("resource")
