"""Key rotation end to end: three replicas behind nginx, flows in flight across every change.

The procedure (docs/deployment.md): ``MRTR_STATE_KEY=A`` → ``A,B`` (the new key second: every
replica learns to open B, A still seals) → ``B,A`` (promote B: it seals, A still opens) → after
one TTL ``B`` (retire A). Each change is rolled out replica by replica between rounds, so rounds
also run while the replicas disagree. Every in-flight flow completes; the sealing key of each
state is read from its key id; after the retirement a state sealed only by A is refused.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx
import pytest

from fastapi_mrtr.state import StateKeyRing
from tests.scaleout.conftest import StartNginx, StartReplicas, new_key
from tests.scaleout.flows import (
    McpWire,
    OrderSpec,
    Outcome,
    input_request,
    order_round_one,
    order_round_three,
    order_round_two,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(200)]
BATCH = 30


def kid(key: str) -> str:
    return StateKeyRing(key).key_ids[0]


def sealed_by(state: str) -> str:
    """The key id a token was sealed with (the first 4 bytes after ``v1.``)."""
    raw = state.removeprefix("v1.")
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))[:4].hex()


@dataclass
class Flow:
    """One in-flight order: its next round, its latest state and who sealed what."""

    spec: OrderSpec
    outcome: Outcome = field(init=False)
    state: str | None = None
    rounds: int = 0
    seals: list[tuple[str, str]] = field(default_factory=list)  # (replica, key id)

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.spec)

    async def advance(self, wire: McpWire) -> None:
        if self.rounds == 0:
            self.state = await order_round_one(wire, self.spec, self.outcome)
        elif self.rounds == 1:
            assert self.state is not None
            self.state = await order_round_two(wire, self.spec, self.outcome, self.state)
        else:
            assert self.state is not None
            await order_round_three(wire, self.spec, self.outcome, self.state)
            self.state = None
        if self.state is not None:
            self.seals.append((self.outcome.replicas[-1], sealed_by(self.state)))
        self.rounds += 1

    @property
    def done(self) -> bool:
        return self.outcome.receipt is not None


def batch(tag: str) -> list[Flow]:
    return [Flow(OrderSpec.numbered(i, tag=tag)) for i in range(BATCH)]


async def advance_all(url: str, flows: Iterable[Flow]) -> None:
    async with httpx.AsyncClient(timeout=30.0) as http:
        wire = McpWire(http, url)
        await asyncio.wait_for(asyncio.gather(*(f.advance(wire) for f in flows)), 60)


def latest_seals(flows: Iterable[Flow]) -> set[str]:
    return {f.seals[-1][1] for f in flows}


def test_three_phase_rotation_with_flows_in_flight(start_replicas: StartReplicas, start_nginx: StartNginx) -> None:
    old, new = new_key(), new_key()
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": old})
    nginx = start_nginx(replicas.ports)
    url = nginx.url + "/mcp"
    early, middle, late = batch("early"), batch("middle"), batch("late")
    stale = Flow(OrderSpec.numbered(0, tag="stale"))

    asyncio.run(advance_all(url, [*early, stale]))  # round one everywhere under [A]
    assert latest_seals([*early, stale]) == {kid(old)}

    # Phase 1: add B second, one replica first. A still seals everywhere.
    replicas.restart({"MRTR_STATE_KEY": f"{old},{new}"}, only=[0])
    asyncio.run(advance_all(url, early))  # round two while replicas disagree ([A,B] / [A])
    assert latest_seals(early) == {kid(old)}
    replicas.restart({"MRTR_STATE_KEY": f"{old},{new}"}, only=[1, 2])
    asyncio.run(advance_all(url, middle))
    assert latest_seals(middle) == {kid(old)}

    # Phase 2: promote B, one replica first. Its B-sealed states open on the [A,B] replicas.
    replicas.restart({"MRTR_STATE_KEY": f"{new},{old}"}, only=[0])
    asyncio.run(advance_all(url, [*early, *middle]))  # early completes, middle reaches round three
    promoted = replicas[0].name
    for flow in middle:
        replica, key_id = flow.seals[-1]
        assert key_id == (kid(new) if replica == promoted else kid(old)), flow.seals
    assert any(f.seals[-1][1] == kid(new) for f in middle), "no state was sealed by the promoted replica"
    replicas.restart({"MRTR_STATE_KEY": f"{new},{old}"}, only=[1, 2])
    asyncio.run(advance_all(url, [*middle, *late]))  # middle completes; late starts, sealed by B
    assert latest_seals(late) == {kid(new)}

    # Phase 3, one TTL later: retire A. Flows sealed by B go on; a state sealed by A is refused.
    replicas.restart({"MRTR_STATE_KEY": new})
    asyncio.run(advance_all(url, late))
    asyncio.run(advance_all(url, late))
    for flow in [*early, *middle, *late]:
        assert flow.done, f"{flow.spec.note} did not complete: {flow.outcome.problem}"
        receipt = flow.outcome.receipt
        assert receipt is not None and {k: receipt[k] for k in flow.spec.expected_receipt} == flow.spec.expected_receipt
    crossed = sum(f.outcome.crossed for f in [*early, *middle, *late])
    assert crossed >= BATCH, f"only {crossed} rotated flows crossed replicas"

    assert stale.state is not None and sealed_by(stale.state) == kid(old)
    asyncio.run(refused_by_every_replica(stale, replicas.ports))


async def refused_by_every_replica(flow: Flow, ports: list[int]) -> None:
    """The flow's next round, sent to each replica directly: all refuse its state."""
    assert flow.state is not None
    async with httpx.AsyncClient(timeout=30.0) as http:
        wire = McpWire(http, "")
        for port in ports:
            reply = await wire.call(
                "place_order",
                flow.spec.arguments,
                responses=flow.spec.confirm,
                state=flow.state,
                url=f"http://127.0.0.1:{port}/mcp",
            )
            assert reply.status == 400 and reply.is_invalid_state, reply.body


def test_promoting_a_key_before_every_replica_knows_it_breaks_flows(
    start_replicas: StartReplicas, start_nginx: StartNginx
) -> None:
    """Why phase 1 exists: a replica sealing with B while the others only know A strands flows."""
    old, new = new_key(), new_key()
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": old})
    nginx = start_nginx(replicas.ports)
    replicas.restart({"MRTR_STATE_KEY": f"{new},{old}"}, only=[0])
    promoted = replicas[0].name

    async def rounds() -> tuple[int, int]:
        stranded = fine = 0
        async with httpx.AsyncClient(timeout=30.0) as http:
            wire = McpWire(http, nginx.url + "/mcp")
            for index in range(12):
                spec = OrderSpec.numbered(index, tag="skipped-phase")
                outcome = Outcome(spec)
                state = await order_round_one(wire, spec, outcome)
                reply = await wire.call("place_order", spec.arguments, responses=spec.confirm, state=state)
                if outcome.replicas[0] == promoted and reply.replica != promoted:
                    assert reply.status == 400 and reply.is_invalid_state, reply.body
                    stranded += 1
                else:
                    input_request(reply, "shipping")
                    fine += 1
        return stranded, fine

    stranded, fine = asyncio.run(rounds())
    assert stranded >= 2, f"expected flows sealed by the promoted replica to fail elsewhere ({stranded}, {fine})"
