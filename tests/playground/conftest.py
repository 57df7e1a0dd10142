"""Fixtures of the playground tests: Debian's chromium driven by Playwright, and apps on uvicorn.

scripts/install-browser.sh installs both. Playwright never downloads a browser: it launches the
system chromium through ``executable_path``.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, Playwright, sync_playwright

from tests.support import running_server

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "playground"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("no chromium on PATH: run scripts/install-browser.sh")
    return found


# Module scope, not session: while Playwright's sync API is open, its event loop counts as the
# running loop of the main thread (it runs in a greenlet), so every anyio test after it would fail
# with "Cannot run the event loop while another loop is running". Closing it with each module of
# tests/playground keeps the rest of the suite, run in the same process, unaffected.
@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright_driver: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    home = tmp_path_factory.mktemp("chromium-home")
    env: dict[str, str | float | bool] = {
        "HOME": str(home),  # chromium writes its config and cache there, not in the real home
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    launched = playwright_driver.chromium.launch(executable_path=chromium_path(), headless=True, args=FLAGS, env=env)
    yield launched
    launched.close()


class Offline:
    """Records every request the page makes to anything but its own server, and refuses it."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.allowed = [base + "/"]  # a test may add another server of its own (a sign-in's issuer)
        self.foreign: list[str] = []

    def route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(tuple(self.allowed)) or url.startswith("data:"):
            route.continue_()
        else:
            self.foreign.append(url)
            route.abort()


class PlaygroundPage:
    """One browser page on one server's playground, with screenshot and helper steps."""

    def __init__(self, context: BrowserContext, base: str, name: str) -> None:
        self.context = context
        self.base = base
        self.offline = Offline(base)
        context.route("**/*", self.offline.route)
        self.page: Page = context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.name = name
        self.step = 0

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)  # a payload that ran would show here
        dialog.dismiss()

    def open(self, mount: str = "/mcp") -> Page:
        self.page.goto(f"{self.base}{mount}/playground")
        self.page.wait_for_selector("body[data-ready='true']")
        return self.page

    def shot(self, label: str) -> Path:
        self.step += 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.name}-{self.step:02d}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def choose(self, name: str) -> None:
        self.page.locator(f"#items button[data-name='{name}']").click()

    def call(self) -> None:
        self.page.locator("#run").click()

    def ask(self, key: str) -> Any:
        """The card of the pending question ``key``."""
        card = self.page.locator(f"section.ask[data-key='{key}']")
        card.wait_for()
        return card

    def wait_rounds(self, count: int) -> None:
        self.page.wait_for_selector(f"li.round[data-round='{count}']")

    def result(self) -> Any:
        result = self.page.locator(".result-holder .result")
        result.wait_for()
        return result


@pytest.fixture
def open_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Any]:
    """``open_page(base)`` gives a fresh page (own context: no shared storage) on that server."""
    contexts: list[BrowserContext] = []
    pages: list[PlaygroundPage] = []

    def opener(base: str) -> PlaygroundPage:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = PlaygroundPage(context, base, request.node.name.replace("[", "-").replace("]", ""))
        pages.append(page)
        return page

    yield opener
    for page in pages:
        assert page.offline.foreign == [], f"the page tried to reach {page.offline.foreign}"
        assert page.errors == [], f"uncaught errors in the page: {page.errors}"
    for context in contexts:
        context.close()


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """The example bookshop on uvicorn with its own database; yields (base URL, database path)."""
    database = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(database))
    from example_app.main import app

    with running_server(app) as base:
        yield base, database


def rows(database: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(database) as connection:
        return list(connection.execute(sql).fetchall())
