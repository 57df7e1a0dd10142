"""The playground follows a task (SEP-2663) in headless Chromium, against the conformance fixture.

It shows the task's status as it is polled, the form of an ``input_required`` task, the final
result or error, and cancels a task with its button.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conformance.everything_server import create_app
from tests.support import running_server

pytestmark = pytest.mark.slow  # a browser and a server


@pytest.fixture(scope="module")
def fixture_server() -> Iterator[str]:
    with running_server(create_app()) as base:
        yield base


def task_card(pg: Any) -> Any:
    card = pg.page.locator(".card.task")
    card.wait_for()
    return card


def wait_status(pg: Any, status: str) -> None:
    pg.page.wait_for_selector(f".card.task[data-status='{status}']", timeout=15_000)


def test_a_slow_call_shows_the_task_working_then_its_result(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    pg.choose("slow_compute")
    page.locator("#detail [data-name=seconds]").fill("1.5")
    page.locator("#detail [data-name=label]").fill("sum")
    pg.call()
    card = task_card(pg)
    wait_status(pg, "working")
    expect(card.locator(".task-message")).to_have_text(re.compile(r"^sum: \d"), timeout=10_000)
    pg.shot("working")
    assert card.locator(".task-status").text_content() == "working"
    assert "sum computed in 1.5 s" in pg.result().text_content()
    assert card.get_attribute("data-status") == "completed"
    rounds = page.locator("li.round h3").all_text_contents()
    assert rounds[0].endswith("task")  # tools/call answered a CreateTaskResult
    assert any("tasks/get" in r and "task completed" in r for r in rounds), rounds
    assert len(rounds) <= 4, rounds  # a card per change of status, not per poll
    request = json.loads(page.locator("li.round pre.raw-request").nth(1).text_content().split("\n\n", 1)[1])
    assert request["method"] == "tasks/get" and request["params"]["taskId"] == card.get_attribute("data-task")
    caps = request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    pg.shot("completed")


def test_an_input_required_task_shows_its_form_and_resumes(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    pg.choose("confirm_delete")
    page.locator("#detail [data-name=filename]").fill("notes.txt")
    pg.call()
    wait_status(pg, "input_required")
    ask = pg.ask("confirm")
    assert "Delete notes.txt?" in ask.text_content()
    assert "The task asks 1 question" in page.locator(".asks").text_content()
    pg.shot("asked")
    ask.locator("[data-name=confirm]").check()
    ask.get_by_role("button", name="Accept").click()
    assert "Deleted notes.txt." in pg.result().text_content()
    assert task_card(pg).get_attribute("data-status") == "completed"
    rounds = page.locator("li.round h3").all_text_contents()
    assert any(r.startswith("Round") and "tasks/update" in r for r in rounds), rounds
    pg.shot("resumed")


def test_a_task_with_two_questions_asks_each_once(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    pg.choose("multi_input")
    pg.call()
    pg.ask("name").locator("[data-name=name]").fill("Mia")
    pg.ask("name").get_by_role("button", name="Accept").click()
    pg.ask("confirm").locator("[data-name=confirm]").check()
    pg.ask("confirm").get_by_role("button", name="Accept").click()
    assert "Mia confirmed." in pg.result().text_content()
    updates = [r for r in page.locator("li.round h3").all_text_contents() if "tasks/update" in r]
    assert len(updates) == 1, updates


def test_failed_and_error_results_of_tasks(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    pg.open()
    pg.choose("protocol_error_job")
    pg.call()
    result = pg.result()
    assert "Task failed: JSON-RPC error -32603: The job hit an internal protocol error" in result.text_content()
    assert task_card(pg).get_attribute("data-status") == "failed"
    pg.choose("failing_job")
    pg.call()
    pg.page.wait_for_selector(".card.task[data-status='completed']", timeout=15_000)
    result = pg.result()
    assert "is-error" in (result.get_attribute("class") or "")
    assert "The job failed" in result.text_content()


def test_the_cancel_button_cancels_the_task(fixture_server: str, open_page: Any) -> None:
    pg = open_page(fixture_server)
    page = pg.open()
    pg.choose("slow_compute")
    page.locator("#detail [data-name=seconds]").fill("60")
    pg.call()
    wait_status(pg, "working")
    page.get_by_role("button", name="Cancel task").click()
    wait_status(pg, "cancelled")
    assert "Task cancelled" in pg.result().text_content()
    rounds = page.locator("li.round h3").all_text_contents()
    assert any("tasks/cancel" in r for r in rounds), rounds
    pg.shot("cancelled")
