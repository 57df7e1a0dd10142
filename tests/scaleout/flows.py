"""An async load client for the bookshop's ``place_order`` flow (three tools/call requests per flow).

Each flow has its own arguments (book, quantity) and its own answers (speed, a unique gift note),
so a result or stored order that mixes up two flows is detected. The replica that answered each
round is read from the ``x-replica`` response header.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from example_app.db import SEED_BOOKS

PRICES = {index + 1: price for index, (_, _, price) in enumerate(SEED_BOOKS)}
TITLES = {index + 1: title for index, (title, _, _) in enumerate(SEED_BOOKS)}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
INVALID_STATE = -32602

JSON = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    status: int
    body: JSON
    replica: str

    @property
    def result(self) -> JSON:
        result = self.body.get("result")
        assert isinstance(result, dict), f"no result (HTTP {self.status}): {self.body}"
        return result

    @property
    def error(self) -> JSON | None:
        error = self.body.get("error")
        return error if isinstance(error, dict) else None

    @property
    def is_invalid_state(self) -> bool:
        error = self.error or {}
        data = error.get("data") or {}
        return error.get("code") == INVALID_STATE and data.get("reason") == "invalid_request_state"


class McpWire:
    """Raw MCP 2026-07-28 ``tools/call`` requests over an ``httpx.AsyncClient``."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self._ids = itertools.count(1)

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        responses: Mapping[str, Any] | None = None,
        state: str | None = None,
        url: str | None = None,
    ) -> Reply:
        params: JSON = {"name": tool, "arguments": dict(arguments), "_meta": META}
        if responses is not None:
            params["inputResponses"] = dict(responses)
        if state is not None:
            params["requestState"] = state
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call", "params": params}
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        response = await self.http.post(url or self.url, json=body, headers=headers)
        return Reply(response.status_code, response.json(), response.headers.get("x-replica", "?"))


def accept(content: Mapping[str, Any]) -> JSON:
    return {"action": "accept", "content": dict(content)}


@dataclass(frozen=True)
class OrderSpec:
    """One flow's arguments and answers, all derived from its index."""

    index: int
    book_id: int
    quantity: int
    speed: str
    note: str

    @classmethod
    def numbered(cls, index: int, tag: str = "flow") -> OrderSpec:
        return cls(
            index=index,
            book_id=index % len(PRICES) + 1,
            quantity=index % 20 + 1,
            speed="express" if index % 3 == 0 else "standard",
            note=f"{tag}-{index}",
        )

    @property
    def arguments(self) -> JSON:
        return {"book_id": self.book_id, "quantity": self.quantity}

    @property
    def question(self) -> str:
        total = PRICES[self.book_id] * self.quantity
        return f"Place this order for {self.quantity} x {TITLES[self.book_id]!r}, {total / 100:.2f} EUR?"

    @property
    def confirm(self) -> JSON:
        return {"confirm": accept({"confirmed": True})}

    @property
    def shipping(self) -> JSON:
        return {"shipping": accept({"speed": self.speed, "gift_note": self.note})}

    @property
    def expected_receipt(self) -> JSON:
        total = PRICES[self.book_id] * self.quantity
        return {"status": "placed", "total_cents": total, "shipping": self.speed}


@dataclass
class Outcome:
    spec: OrderSpec
    replicas: list[str] = field(default_factory=list)
    receipt: JSON | None = None
    problem: str | None = None

    @property
    def crossed(self) -> bool:
        """Whether the rounds of this flow were served by more than one replica."""
        return len(set(self.replicas)) > 1


def input_request(reply: Reply, key: str) -> tuple[JSON, str]:
    """The ``key`` input request and the state of an ``input_required`` reply."""
    result = reply.result
    assert result.get("resultType") == "input_required", f"expected input_required, got {result}"
    requests = result.get("inputRequests") or {}
    assert list(requests) == [key], f"expected to be asked {key!r}, got {list(requests)}"
    state = result.get("requestState")
    assert isinstance(state, str), "input_required without requestState"
    return requests[key], state


async def order_round_one(wire: McpWire, spec: OrderSpec, outcome: Outcome) -> str:
    reply = await wire.call("place_order", spec.arguments)
    outcome.replicas.append(reply.replica)
    request, state = input_request(reply, "confirm")
    message = request["params"]["message"]
    assert message == spec.question, f"flow {spec.index} was asked {message!r}"
    return state


async def order_round_two(wire: McpWire, spec: OrderSpec, outcome: Outcome, state: str) -> str:
    reply = await wire.call("place_order", spec.arguments, responses=spec.confirm, state=state)
    outcome.replicas.append(reply.replica)
    _, state = input_request(reply, "shipping")
    return state


async def order_round_three(wire: McpWire, spec: OrderSpec, outcome: Outcome, state: str) -> None:
    reply = await wire.call("place_order", spec.arguments, responses=spec.shipping, state=state)
    outcome.replicas.append(reply.replica)
    result = reply.result
    assert result.get("resultType") == "complete" and not result.get("isError"), f"not complete: {result}"
    receipt = result["structuredContent"]
    wanted = spec.expected_receipt
    got = {k: receipt.get(k) for k in wanted}
    assert got == wanted, f"flow {spec.index}: receipt {receipt} does not match {wanted}"
    assert isinstance(receipt.get("order_id"), int), f"flow {spec.index}: no order id in {receipt}"
    outcome.receipt = receipt


async def run_order_flow(wire: McpWire, spec: OrderSpec) -> Outcome:
    outcome = Outcome(spec)
    try:
        state = await order_round_one(wire, spec, outcome)
        state = await order_round_two(wire, spec, outcome, state)
        await order_round_three(wire, spec, outcome, state)
    except (AssertionError, httpx.HTTPError, ValueError, KeyError) as exc:
        outcome.problem = f"{type(exc).__name__}: {exc}"
    return outcome


CONNECTIONS_PER_CLIENT = 5


def client(connections: int = CONNECTIONS_PER_CLIENT, *, keepalive: bool = True) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections if keepalive else 0)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0))


async def run_order_flows(
    url: str, specs: Sequence[OrderSpec], *, concurrency: int, timeout: float, keepalive: bool = True
) -> list[Outcome]:
    """Run every flow, at most ``concurrency`` at once; fail if the whole run takes over ``timeout`` s.

    The connections are spread over several small clients: one httpx pool's cost per request
    grows with its size, and the load client shares the CPU with the servers it measures.
    ``keepalive=False`` opens a connection per request (a kept-alive connection stays with the
    gunicorn worker that accepted it).
    """
    gate = asyncio.Semaphore(concurrency)
    clients = [client(keepalive=keepalive) for _ in range(max(1, concurrency // CONNECTIONS_PER_CLIENT))]

    async def one(spec: OrderSpec) -> Outcome:
        async with gate:
            return await run_order_flow(McpWire(clients[spec.index % len(clients)], url), spec)

    try:
        return await asyncio.wait_for(asyncio.gather(*(one(s) for s in specs)), timeout)
    finally:
        for http in clients:
            await http.aclose()


@dataclass
class Summary:
    flows: int
    failed: list[Outcome]
    crossed: int
    served: Counter[str]
    seconds: float

    def describe(self) -> str:
        return (
            f"{self.flows} flows in {self.seconds:.1f} s, {len(self.failed)} failed, {self.crossed} crossed replicas, "
            f"requests per replica {dict(sorted(self.served.items()))}"
        )


def summarise(outcomes: Sequence[Outcome], started: float) -> Summary:
    served: Counter[str] = Counter(name for o in outcomes for name in o.replicas)
    return Summary(
        flows=len(outcomes),
        failed=[o for o in outcomes if o.problem is not None],
        crossed=sum(o.crossed for o in outcomes),
        served=served,
        seconds=time.monotonic() - started,
    )


def stored_orders(paths: Iterable[Path]) -> dict[tuple[Path, int], tuple[Any, ...]]:
    """Every order row of every database, keyed by (database, order id)."""
    rows: dict[tuple[Path, int], tuple[Any, ...]] = {}
    for path in set(paths):
        # The app creates its tables on its first request: a replica that served none has none.
        if not path.exists():
            continue
        with contextlib.closing(sqlite3.connect(path)) as connection:
            has_orders = connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'orders'")
            if has_orders.fetchone() is None:
                continue
            query = "SELECT id, book_id, quantity, shipping, gift_note FROM orders"
            for order_id, *rest in connection.execute(query):
                rows[(path, order_id)] = tuple(rest)
    return rows


def mismatched_orders(outcomes: Iterable[Outcome], database_of: Mapping[str, Path]) -> list[str]:
    """Flows whose order, in the database of the replica that completed them, is not theirs.

    ``database_of`` maps replica names to database files (workers of one server share one file).
    """
    rows = stored_orders(database_of.values())
    problems = []
    claimed: set[tuple[Path, int]] = set()
    for outcome in outcomes:
        assert outcome.receipt is not None
        where = (database_of[outcome.replicas[-1]], outcome.receipt["order_id"])
        spec = outcome.spec
        expected = (spec.book_id, spec.quantity, spec.speed, spec.note)
        if rows.get(where) != expected:
            problems.append(f"flow {spec.index}: order {where} is {rows.get(where)}, expected {expected}")
        if where in claimed:
            problems.append(f"flow {spec.index}: order {where} claimed by two flows")
        claimed.add(where)
    if len(rows) != len(claimed):
        problems.append(f"{len(rows)} orders stored for {len(claimed)} completed flows")
    return problems
