"""The bookshop under ``gunicorn -k uvicorn_worker.UvicornWorker -w 3 --no-control-socket``.

With a shared key (``MRTR_STATE_KEY``) 2,000 flows pass with their rounds spread over the
workers (each worker names itself in ``x-replica``). Without one, every worker logs the
ephemeral-key error at start-up and a round served by another worker is refused.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from tests.scaleout.conftest import StartGunicorn, new_key
from tests.scaleout.flows import (
    McpWire,
    OrderSpec,
    Outcome,
    input_request,
    mismatched_orders,
    order_round_one,
    run_order_flows,
    summarise,
)

FLOWS = 2000
CONCURRENCY = 100
EPHEMERAL_ERROR = "may be one of several serving MCP (it runs under gunicorn"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_2000_flows_across_three_gunicorn_workers(start_gunicorn: StartGunicorn, db_dir: Path) -> None:
    server = start_gunicorn(env={"MRTR_STATE_KEY": new_key()}, workers=3)
    assert EPHEMERAL_ERROR not in server.log_text()

    specs = [OrderSpec.numbered(i, tag="gunicorn") for i in range(FLOWS)]
    began = time.monotonic()
    # A connection per request: kept-alive connections would each stay with the worker that accepted it.
    load = run_order_flows(server.url + "/mcp", specs, concurrency=CONCURRENCY, timeout=150, keepalive=False)
    outcomes = asyncio.run(load)
    summary = summarise(outcomes, began)
    print(f"\ngunicorn -w 3: {summary.describe()}")

    assert not summary.failed, f"{len(summary.failed)} flows failed, e.g. {[o.problem for o in summary.failed[:5]]}"
    assert len(summary.served) == 3, f"expected three workers to serve, got {summary.served}"
    assert summary.crossed >= FLOWS // 2, f"only {summary.crossed} of {FLOWS} flows crossed workers"
    database = db_dir / "gunicorn.db"
    assert mismatched_orders(outcomes, dict.fromkeys(summary.served, database)) == []


def test_gunicorn_workers_without_a_key_log_the_error_and_refuse_each_others_state(
    start_gunicorn: StartGunicorn,
) -> None:
    server = start_gunicorn(env={"MRTR_STATE_KEY": None}, workers=3)
    log = server.log_text()
    assert log.count(EPHEMERAL_ERROR) == 3, log  # once per worker, at start-up
    assert "ERROR fastapi_mrtr" in log and "MRTR_STATE_KEY" in log

    refused, accepted = asyncio.run(second_rounds(server.url + "/mcp", flows=30))
    print(f"\ngunicorn -w 3, ephemeral keys: {refused} second rounds refused on another worker, {accepted} on the same")
    assert refused > 0, "no second round reached another worker"
    assert refused + accepted == 30


async def second_rounds(url: str, *, flows: int) -> tuple[int, int]:
    """Round two of each flow on a fresh connection: refused on another worker, fine on the same one."""
    refused = accepted = 0
    for index in range(flows):
        spec = OrderSpec.numbered(index, tag="ephemeral")
        outcome = Outcome(spec)
        async with httpx.AsyncClient(timeout=30.0) as first:
            state = await order_round_one(McpWire(first, url), spec, outcome)
        async with httpx.AsyncClient(timeout=30.0) as second:
            reply = await McpWire(second, url).call("place_order", spec.arguments, responses=spec.confirm, state=state)
        if reply.replica == outcome.replicas[0]:
            input_request(reply, "shipping")
            accepted += 1
        else:
            assert reply.status == 400 and reply.is_invalid_state, reply.body
            refused += 1
    return refused, accepted
