"""The README's quickstart code is the product's front page: it must run as printed."""

from __future__ import annotations

import asyncio
import re
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import ElicitRequestParams, ElicitResult, MrtrClient
from tests.support import rpc_body, rpc_headers, running_server

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parent.parent / "README.md"


def quickstart_module() -> types.ModuleType:
    """The README's first Python block, executed as the module a user would save."""
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert block is not None, "README.md has no Python example"
    module = types.ModuleType("shop")
    # dont_inherit: this file's "from __future__ import annotations" must not leak into the example.
    exec(compile(block.group(1), "README.md", "exec", dont_inherit=True), module.__dict__)
    return module


@pytest.mark.parametrize(("confirmed", "status", "orders"), [(True, "placed", 1), (False, "cancelled", 0)])
async def test_the_readme_example_asks_twice_and_places_the_order_once(
    confirmed: bool, status: str, orders: int
) -> None:
    shop = quickstart_module()
    asked: list[str] = []

    async def answer(params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        content: dict[str, Any] = {"speed": "express"} if "Shipping" in params.message else {"confirmed": confirmed}
        return ElicitResult(action="accept", content=content)

    with running_server(shop.app) as base:
        async with MrtrClient(f"{base}/mcp") as client:
            client.set_elicitation_handler(answer)
            tools = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("place_order", {"book_id": 1, "quantity": 2})

    assert tools == ["place_order"]
    assert asked == ["Order 2 books for 31.50 EUR?", "Shipping speed?"][: 2 if confirmed else 1]
    assert result.is_error is not True
    assert result.structured_content is not None and result.structured_content["status"] == status
    assert len(shop.orders) == orders  # one order, though the handler ran once per round


async def test_retrying_the_readme_examples_last_round_places_one_order() -> None:
    """The README's words: a retried last round, even 10 copies at once, adds no order."""
    shop = quickstart_module()
    args = {"name": "place_order", "arguments": {"book_id": 1, "quantity": 2}}
    headers = rpc_headers("tools/call", "place_order")
    with running_server(shop.app) as base:
        async with httpx.AsyncClient(base_url=base) as http:

            async def round_(request_id: int, extra: dict[str, Any]) -> dict[str, Any]:
                body = rpc_body("tools/call", {**args, **extra}, request_id=request_id)
                response = await http.post("/mcp", json=body, headers=headers)
                assert response.status_code == 200, response.text
                result: dict[str, Any] = response.json()["result"]
                return result

            first = await round_(1, {})
            confirm = {"confirm": {"action": "accept", "content": {"confirmed": True}}}
            second = await round_(2, {"inputResponses": confirm, "requestState": first["requestState"]})
            assert set(second["inputRequests"]) == {"shipping"}
            last = {
                "inputResponses": {"shipping": {"action": "accept", "content": {"speed": "express"}}},
                "requestState": second["requestState"],
            }
            results = await asyncio.gather(*(round_(3 + i, last) for i in range(10)))
    assert {result["structuredContent"]["order_id"] for result in results} == {1}
    assert len(shop.orders) == 1


# --- the two commands for a fresh machine ---------------------------------------------------------

FRESH = "fresh machine:"
CI_RUN = README.parent / ".ci" / "run"


def fresh_machine_commands() -> list[str]:
    """The README's copy-paste commands for a fresh machine (their blocks say so in a marker)."""
    text = README.read_text()
    found = re.findall(r"<!-- snippet not-run: " + FRESH + r"[^>]*-->\n```sh\n(.*?)```", text, re.DOTALL)
    return [block.strip() for block in found]


def test_exactly_two_commands_for_a_fresh_machine() -> None:
    install_and_run, test_everything = fresh_machine_commands()  # exactly two
    # One line to paste: a venv (Debian's system Python refuses a bare pip install), the package
    # in it, then the example app, in that order and each only if the one before worked.
    steps = [step.strip() for step in install_and_run.split("&&")]
    assert "\n" not in install_and_run and len(steps) == 4, install_and_run
    assert re.fullmatch(r"python3? -m venv (\S+)", steps[0]) is not None
    venv = steps[0].split()[-1]
    assert steps[1] == f". {venv}/bin/activate"
    assert steps[2] == "python -m pip install -e ."
    assert steps[3] == "uvicorn example_app.main:app"
    # The other runs everything, and CI runs exactly it.
    assert test_everything == "bash scripts/test.sh"
    assert re.search(r"^bash scripts/test\.sh\b", CI_RUN.read_text(), re.MULTILINE) is not None


def test_the_tour_comes_before_the_test_suite() -> None:
    text = README.read_text()
    start = text.index("uvicorn example_app.main:app")
    talk = text.index("python -m fastapi_mrtr.client http://127.0.0.1:8000/mcp place_order")
    playground = text.index("http://127.0.0.1:8000/mcp/playground")
    first_tool = text.index("](docs/first-tool.md)")
    tests = text.index("```sh\nbash scripts/test.sh")
    assert start < talk < playground < first_tool < tests
    # The second shell is told to enter the same environment before it talks to the server.
    assert ". .venv/bin/activate" in text[start:talk]
