"""How the page is served: where, when (docs_url and the switch), its headers, size and its JavaScript."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from fastapi_mrtr import MCP, ServerOptions
from fastapi_mrtr.playground import page_size

STATIC = Path(__file__).resolve().parents[2] / "fastapi_mrtr" / "playground" / "static"


def client(*, docs_url: str | None = "/docs", playground: bool | None = None, mount: str = "/mcp") -> TestClient:
    app = FastAPI(docs_url=docs_url)
    mcp = MCP(app, options=ServerOptions(playground=playground))
    app.mount(mount, mcp)
    return TestClient(app)


def test_the_page_and_its_assets() -> None:
    with client() as http:
        page = http.get("/mcp/playground")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert 'data-endpoint="/mcp"' in page.text and 'src="/mcp/playground/playground.js"' in page.text
        assert http.get("/mcp/playground/").text == page.text  # with a trailing slash too
        script = http.get("/mcp/playground/playground.js")
        assert (
            script.headers["content-type"].startswith("text/javascript") and "content-security-policy" in script.headers
        )
        assert http.get("/mcp/playground/playground.css").headers["content-type"].startswith("text/css")
        assert http.head("/mcp/playground").content == b""
        assert http.get("/mcp/playground/other.js").status_code == 404  # nothing else below the mount
        assert http.post("/mcp/playground", json={}).status_code == 404  # GET only: a POST is the endpoint's


def test_behind_another_mount_path() -> None:
    with client(mount="/api/mcp") as http:
        page = http.get("/api/mcp/playground")
        assert 'data-endpoint="/api/mcp"' in page.text and 'href="/api/mcp/playground/playground.css"' in page.text


@pytest.mark.parametrize(
    ("docs_url", "switch", "served"),
    [("/docs", None, True), (None, None, False), (None, True, True), ("/docs", False, False)],
)
def test_on_where_the_app_has_docs_unless_switched(docs_url: str | None, switch: bool | None, served: bool) -> None:
    with client(docs_url=docs_url, playground=switch) as http:
        assert http.get("/mcp/playground").status_code == (200 if served else 404)


def test_self_contained_and_small() -> None:
    files = {path.name: path.read_text(encoding="utf-8") for path in STATIC.iterdir()}
    assert set(files) == {"index.html", "playground.css", "playground.js", "signin.js"}
    for name, text in files.items():
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE), name  # no CDN, no host
    assert "@import" not in files["playground.css"] and "url(" not in files["playground.css"]
    assert page_size() == sum(len(path.read_bytes()) for path in STATIC.iterdir()) < 80_000


@pytest.mark.parametrize("name", ["playground.js", "signin.js"])
def test_the_script_never_writes_markup(name: str) -> None:
    script = (STATIC / name).read_text(encoding="utf-8")
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("//"))
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'setTimeout("',
    ):
        assert sink not in code, sink
    assert "<script" not in (STATIC / "index.html").read_text().replace('<script src="{{base}}', "")
