"""``ctx.idempotency_key(step)`` across replicas: one key per flow and step, stable on every round.

Three replicas of tests/scaleout/payments_app.py behind nginx call a fake payment provider (in
this process) with the key; the charge runs on rounds two and three, often on two replicas.
The provider sees the same key from both, and deduplicates it into one charge per flow.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import pytest
from fastapi import FastAPI, Header

from fastapi_mrtr import MCP, Context, InMemoryReplayStore, ServerOptions
from tests.scaleout.conftest import StartNginx, StartReplicas, new_key
from tests.scaleout.flows import McpWire, Reply, accept, input_request
from tests.support import running_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
FLOWS = 120
YES = accept({"value": True})


class Provider:
    """A payment API that deduplicates on ``Idempotency-Key``, recording every call."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, int]]] = defaultdict(list)  # key -> [(caller, amount)]
        self.charges: dict[str, int] = {}
        self._lock = threading.Lock()
        self.app = FastAPI()
        self.app.post("/charges")(self.charge)

    def charge(
        self, body: dict[str, Any], idempotency_key: Annotated[str, Header()], x_caller: Annotated[str, Header()]
    ) -> dict[str, int]:
        with self._lock:
            self.calls[idempotency_key].append((x_caller, body["amount"]))
            charge_id = self.charges.setdefault(idempotency_key, len(self.charges) + 1)
        return {"id": charge_id}


@pytest.fixture
def provider() -> Iterator[tuple[Provider, str]]:
    fake = Provider()
    with running_server(fake.app) as url:
        yield fake, url


async def pay(wire: McpWire, amount: int) -> tuple[str, dict[str, Any], list[str]]:
    """One flow; returns the reference shown in round one, the result and the replicas per round."""
    arguments = {"amount": amount}
    first = await wire.call("charge", arguments)
    request, state = input_request(first, "ok")
    reference = re.fullmatch(rf"Charge {amount} cents\? Reference (\S+)\.", request["params"]["message"])
    assert reference is not None, request
    second = await wire.call("charge", arguments, responses={"ok": YES}, state=state)
    _, state = input_request(second, "receipt")
    third = await wire.call("charge", arguments, responses={"receipt": YES}, state=state)
    result = third.result
    assert result["resultType"] == "complete" and not result.get("isError"), result
    return reference.group(1), result["structuredContent"], [first.replica, second.replica, third.replica]


def test_idempotency_keys_are_per_flow_and_stable_across_rounds_and_replicas(
    provider: tuple[Provider, str], start_replicas: StartReplicas, start_nginx: StartNginx
) -> None:
    fake, provider_url = provider
    replicas = start_replicas(
        3, env={"MRTR_STATE_KEY": new_key(), "PAYMENTS_PROVIDER": provider_url}, app="tests.scaleout.payments_app:app"
    )
    nginx = start_nginx(replicas.ports)

    async def run() -> list[tuple[str, dict[str, Any], list[str]]]:
        gate = asyncio.Semaphore(20)
        async with httpx.AsyncClient(timeout=30.0) as http:
            wire = McpWire(http, nginx.url + "/mcp")

            async def one(amount: int) -> tuple[str, dict[str, Any], list[str]]:
                async with gate:
                    return await pay(wire, amount)

            return await asyncio.wait_for(asyncio.gather(*(one(100 + i) for i in range(FLOWS))), 90)

    flows = asyncio.run(run())
    keys = [result["idempotency_key"] for _, result, _ in flows]
    assert len(set(keys)) == FLOWS, "two flows shared an idempotency key"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", key) for key in keys)
    across_replicas = 0
    for index, (reference, result, served) in enumerate(flows):
        key = result["idempotency_key"]
        assert reference == key  # minted on round one, sealed, the same on round three
        calls = fake.calls[key]
        assert [amount for _, amount in calls] == [100 + index] * 2  # rounds two and three both charged...
        assert [caller for caller, _ in calls] == served[1:]  # from the replicas that served those rounds
        assert result["charge_id"] == fake.charges[key]  # ...and the provider made it one charge
        across_replicas += len({caller for caller, _ in calls}) > 1
    assert len(fake.charges) == FLOWS
    assert across_replicas >= FLOWS // 3, f"only {across_replicas} flows charged from two replicas"


def test_idempotency_key_differs_per_step_and_per_flow_but_not_per_round() -> None:
    """In process: the same arguments twice are two flows; two steps of one flow have two keys."""
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="keys", request_state_key="k" * 32))
    seen: list[tuple[int, str, str]] = []

    @mcp.tool()
    @app.post("/transfer")
    async def transfer(amount: int, ctx: Context) -> dict[str, str]:
        seen.append((ctx.round, ctx.idempotency_key("debit"), ctx.idempotency_key("credit")))
        await ctx.elicit(f"Transfer {amount}?", bool, key="ok")
        return {"debit": ctx.idempotency_key("debit")}

    app.mount("/mcp", mcp)

    async def flow(wire: McpWire) -> str:
        _, state = input_request(await wire.call("transfer", {"amount": 1}), "ok")
        done = await wire.call("transfer", {"amount": 1}, responses={"ok": YES}, state=state)
        return str(done.result["structuredContent"]["debit"])

    async def two_flows() -> list[str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            wire = McpWire(http, "/mcp")
            return [await flow(wire), await flow(wire)]

    first, second = asyncio.run(two_flows())
    assert first != second
    assert [r for r, _, _ in seen] == [0, 1, 0, 1]
    assert seen[0][1:] == seen[1][1:] and seen[2][1:] == seen[3][1:]  # same keys on both rounds
    assert seen[0][1] != seen[0][2]  # debit and credit differ
    assert (seen[0][1], seen[2][1]) == (first, second)


@pytest.mark.parametrize("single_use", [False, True], ids=["reusable-state", "single-use-state"])
def test_a_retried_last_round_reruns_once_with_the_same_idempotency_key(single_use: bool) -> None:
    """What docs/side-effects.md warns about: ``ctx.once`` cannot guard the round that runs it.

    A client that retries the completing round (its response was lost) runs the step again; the
    idempotency key is the same, so a deduplicating downstream turns it into a no-op. With a
    replay store the retry is refused instead.
    """
    app = FastAPI()
    store = InMemoryReplayStore() if single_use else None
    mcp = MCP(app, options=ServerOptions(name="retry", request_state_key="k" * 32, replay_store=store))
    created: list[str] = []

    @mcp.tool()
    @app.post("/orders")
    async def order(quantity: int, ctx: Context) -> dict[str, Any]:
        await ctx.elicit(f"Order {quantity}?", bool, key="ok")
        key = ctx.idempotency_key("create")

        def create() -> int:
            created.append(key)
            return len(created)

        order_id = await ctx.once("create", create)
        return {"order_id": order_id, "key": key}

    app.mount("/mcp", mcp)

    async def flow() -> list[Reply]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            wire = McpWire(http, "/mcp")
            _, state = input_request(await wire.call("order", {"quantity": 2}), "ok")
            return [await wire.call("order", {"quantity": 2}, responses={"ok": YES}, state=state) for _ in range(2)]

    first, retry = asyncio.run(flow())
    assert first.result["structuredContent"]["order_id"] == 1
    if single_use:
        assert retry.is_invalid_state
        assert len(created) == 1
    else:
        assert retry.result["structuredContent"]["order_id"] == 2  # the step ran again...
        assert created[0] == created[1] == first.result["structuredContent"]["key"]  # ...with the same key
