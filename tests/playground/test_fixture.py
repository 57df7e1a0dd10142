"""The playground against the conformance fixture server: media, progress, logs, sampling, roots, prompts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.everything_server import create_app
from tests.support import running_server

pytestmark = pytest.mark.slow  # a browser and a server


@pytest.fixture(scope="module")
def fixture_server() -> Iterator[str]:
    with running_server(create_app()) as base:
        yield base


def call(pg: Any, tool: str) -> Any:
    pg.open()
    pg.choose(tool)
    pg.call()
    return pg


def test_image_tool_renders_an_image(fixture_server: str, open_page: Any) -> None:
    pg = call(open_page(fixture_server), "test_image_content")
    image = pg.result().locator("img")
    image.wait_for()
    pg.page.wait_for_function("document.querySelector('.result img').complete")
    pg.shot("image")
    assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [2, 2]
    assert image.get_attribute("src", timeout=1000).startswith("data:image/png;base64,")


def test_audio_embedded_resource_and_mixed_content(fixture_server: str, open_page: Any) -> None:
    pg = call(open_page(fixture_server), "test_audio_content")
    assert pg.result().locator("audio[controls]").get_attribute("src").startswith("data:audio/wav;base64,")
    pg.choose("test_embedded_resource")
    pg.call()
    pg.wait_rounds(1)
    assert "This is an embedded resource content." in pg.result().text_content()
    assert "test://embedded-resource" in pg.result().text_content()
    pg.choose("test_multiple_content_types")
    pg.call()
    pg.wait_rounds(1)
    result = pg.result()
    assert result.locator("img").count() == 1 and "Multiple content types test:" in result.text_content()
    pg.shot("mixed")


def test_progress_bar_and_logs_over_sse(fixture_server: str, open_page: Any) -> None:
    pg = call(open_page(fixture_server), "test_tool_with_progress")
    pg.result()
    progress = pg.page.locator("progress")
    pg.shot("progress")
    assert progress.evaluate("p => [p.value, p.max, p.hidden]") == [100, 100, False]
    assert "100% done" in pg.page.locator(".progress").text_content()
    assert "(SSE)" in pg.page.locator("li.round").text_content()
    pg.choose("test_logging_tool")
    pg.call()
    pg.wait_rounds(1)
    pg.result()
    logs = pg.page.locator("ul.logs li")
    assert logs.all_text_contents() == [
        "[info] everything-server: Tool execution started",
        "[info] everything-server: Tool processing data",
        "[info] everything-server: Tool execution completed",
    ]
    pg.shot("logs")


def test_sampling_roots_and_elicitation_in_one_round(fixture_server: str, open_page: Any) -> None:
    pg = call(open_page(fixture_server), "test_input_required_result_multiple_inputs")
    name = pg.ask("user_name")
    greeting = pg.ask("greeting")
    roots = pg.ask("client_roots")
    assert "Generate a greeting" in greeting.text_content()
    assert "null" not in greeting.text_content()  # an absent systemPrompt leaves no trace
    pg.shot("three-asks")
    greeting.get_by_label("Reply as the model").fill("Hello there,")
    greeting.get_by_role("button", name="Send reply").click()
    roots.get_by_role("button", name="Add root").click()
    roots.locator(".root-uri").nth(1).fill("file:///srv/data")
    roots.get_by_role("button", name="Send roots").click()
    name.get_by_label("name").fill("Ada")
    name.get_by_role("button", name="Accept").click()
    result = pg.result()
    pg.shot("answered")
    assert "Hello there, Ada (2 roots)" in result.text_content()


def test_enum_forms(fixture_server: str, open_page: Any) -> None:
    pg = call(open_page(fixture_server), "test_elicitation_sep1330_enums")
    card = pg.ask("enums")
    card.locator("[data-name=untitledSingle]").select_option(label="option2")
    card.locator("[data-name=titledSingle]").select_option(label="Second Option")
    card.get_by_label("Legacy titled enum").select_option(label="Option Three")
    card.get_by_label("option1").check()
    card.get_by_label("Third Choice").check()
    pg.shot("enums")
    card.get_by_role("button", name="Accept").click()
    text = pg.result().text_content()
    for part in (
        '"untitledSingle": "option2"',
        '"titledSingle": "value2"',
        '"legacyEnum": "opt3"',
        '"untitledMulti": ["option1"]',
        '"titledMulti": ["value3"]',
    ):
        assert part in text


def test_prompts_tab_with_an_mrtr_round(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    page.get_by_role("tab", name="Prompts").click()
    pg.choose("test_prompt_with_arguments")
    page.get_by_role("button", name="Get prompt").click()
    assert "arg1 is required" in page.locator("#detail .error").text_content()  # required marks are enforced
    page.get_by_label("arg1").fill("one")
    page.get_by_label("arg2").fill("two")
    page.get_by_role("button", name="Get prompt").click()
    assert "arg1='one', arg2='two'" in pg.result().text_content()
    pg.choose("test_input_required_result_prompt")
    page.get_by_role("button", name="Get prompt").click()
    card = pg.ask("user_context")
    card.get_by_label("context").fill("a rainy day")
    card.get_by_role("button", name="Accept").click()
    pg.wait_rounds(2)
    assert "Use this context: a rainy day" in pg.result().text_content()
    pg.shot("prompt")


def test_resources_tab_reads_a_resource_and_a_template(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    tab = page.get_by_role("tab", name="Resources")
    page.get_by_role("tab", name="Tools").focus()
    page.keyboard.press("ArrowRight")  # tabs move with the arrow keys
    page.keyboard.press("ArrowRight")
    assert tab.get_attribute("aria-selected") == "true"
    pg.choose("static-binary")
    page.get_by_role("button", name="Read resource").click()
    assert pg.result().locator("img").count() == 1
    pg.choose("template-data")
    page.get_by_label("id").fill("42")
    page.get_by_role("button", name="Read resource").click()
    pg.wait_rounds(1)
    assert '"Data for ID: 42"' in pg.result().text_content()
    pg.shot("template")
