"""The README's quickstart code is the product's front page: it must run as printed."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from fastapi_mrtr.client import ElicitRequestParams, ElicitResult, MrtrClient
from tests.support import running_server

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
    assert len(shop.orders) == orders  # ctx.once ran once, though the handler ran once per round
