"""Library users' interactive handlers take turns, as the terminal client's do (issue 34 item 1).

One round of the conformance fixture asks a form, a model reply and the roots at once. Handlers
registered with ``interactive=True`` must talk to the person one at a time, in the order the server
listed the requests, in both eras; a handler that is not interactive (roots) runs beside them.
Each handler here awaits in the middle of its "conversation", so handlers that ran side by side
would interleave: the control without ``interactive=True`` shows that they then do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from fastapi_mrtr.client import ClientOptions, CreateMessageRequestParams, ElicitRequestParams, MrtrClient
from fastapi_mrtr.client._turns import TurnOrder
from fastapi_mrtr.client.options import ClientMode
from fastapi_mrtr.wire.protocol import CallToolResult, TextContent
from tests.support import running_server

# Sampling and roots are deprecated in 2026-07-28 and the fixture still asks for them: expected.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:sampling is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:roots are deprecated:DeprecationWarning"),
]

TOOL = "test_input_required_result_multiple_inputs"


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


class Conversations:
    """Handlers that log when each conversation starts and ends, pausing in between."""

    def __init__(self) -> None:
        self.log: list[str] = []

    async def _talk(self, who: str) -> None:
        self.log.append(f"{who} starts")
        for _ in range(5):  # a person reading and typing: the event loop runs other tasks meanwhile
            await anyio.sleep(0.01)
        self.log.append(f"{who} ends")

    async def elicit(self, params: ElicitRequestParams) -> dict[str, Any]:
        await self._talk("form")
        return {"action": "accept", "content": {"name": "Mia"}}

    async def sample(self, params: CreateMessageRequestParams) -> dict[str, Any]:
        await self._talk("model")
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "a-person"}

    async def roots(self) -> dict[str, Any]:
        self.log.append("roots")
        return {"roots": [{"uri": "file:///work/a"}]}

    def attach(self, client: MrtrClient, *, interactive: bool) -> None:
        client.set_elicitation_handler(self.elicit, interactive=interactive)
        client.set_sampling_handler(self.sample, interactive=interactive)
        client.set_roots_handler(self.roots)


def text(result: Any) -> str:
    assert isinstance(result, CallToolResult), result
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_interactive_handlers_take_turns_in_the_listed_order(fixture_url: str, mode: ClientMode) -> None:
    for _ in range(3):  # one order each time, not by luck
        person = Conversations()
        async with MrtrClient(fixture_url, options=ClientOptions(mode=mode)) as client:
            person.attach(client, interactive=True)
            assert text(await client.call_tool(TOOL, {})) == "Paris Mia (1 roots)"
        talks = [entry for entry in person.log if entry != "roots"]
        assert talks == ["form starts", "form ends", "model starts", "model ends"]  # the server lists the form first
        assert person.log.count("roots") == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_interactive_the_handlers_run_side_by_side(fixture_url: str, mode: ClientMode) -> None:
    person = Conversations()
    async with MrtrClient(fixture_url, options=ClientOptions(mode=mode)) as client:
        person.attach(client, interactive=False)
        assert text(await client.call_tool(TOOL, {})) == "Paris Mia (1 roots)"
    talks = [entry for entry in person.log if entry != "roots"]
    assert talks[:2] in (["form starts", "model starts"], ["model starts", "form starts"])  # interleaved


async def test_a_ticket_given_up_before_its_turn_does_not_stop_the_ones_after_it() -> None:
    turns = TurnOrder()
    first, second, third = turns.take(), turns.take(), turns.take()
    served: list[int] = []

    async def run(ticket: int) -> None:
        async with turns.turn(ticket):
            served.append(ticket)

    with anyio.fail_after(2):
        async with anyio.create_task_group() as group:
            group.start_soon(run, third)
            group.start_soon(run, first)
            turns.release(second)  # e.g. its round failed before the handler ran
    assert served == [first, third]
    turns.release(second)  # idempotent
    assert turns.take() == 3
