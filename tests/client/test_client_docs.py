"""The code in docs/client.md runs and does what the text around it says."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fastapi_mrtr.client import ClientOptions, InputRequiredResult
from fastapi_mrtr.wire.protocol import CallToolResult
from tests.support import running_server

pytestmark = pytest.mark.anyio

DOC = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text(encoding="utf-8")


def snippet(heading: str) -> str:
    """The first ```python block after ``heading``."""
    match = re.search(re.escape(heading) + r"\n.*?```python\n(.*?)```", DOC, re.DOTALL)
    assert match is not None, heading
    return match.group(1)


def test_options_snippet_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(snippet("## Options"), namespace)
    options = namespace["options"]
    assert isinstance(options, ClientOptions) and options.client_info.name == "my-agent"


async def test_manual_mode_snippet_gets_input_required_and_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    from example_app.main import app

    # The snippet uses top-level await: run it as the body of a coroutine, against a live app.
    body = textwrap.indent(snippet("### Manual mode"), "    ")
    source = "async def manual():\n" + body + "    return locals()\n"
    with running_server(app) as base:
        namespace: dict[str, Any] = {}
        exec(source.replace("http://127.0.0.1:8000", base), namespace)
        done = await namespace["manual"]()
    first = done["first"]
    assert isinstance(first, InputRequiredResult) and list(first.input_requests or {}) == ["confirm"]
    result = done["done"]
    assert isinstance(result, CallToolResult) and result.structured_content["status"] == "cancelled"
