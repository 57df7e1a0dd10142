"""2025-era sessions on three replicas behind real nginx, with and without the Redis relay.

Every flow is a three-question ``ctx.elicit`` tool (legacy_flow_app.py) driven by a real 2025-era
client: the official Python client (``mcp`` 2.3.0, ``mode="legacy"``) and the TypeScript SDK
client (``@modelcontextprotocol/sdk`` 1.32.2) in one Node process. Each flow answers with its own
token, so an answer delivered to the wrong flow, or twice, shows in that flow's result.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestFormParams, ElicitRequestParams, ElicitResult

from tests.legacy_clients.test_js_client import JS, node
from tests.scaleout.conftest import new_key
from tests.scaleout.services import NGINX_CONF, Nginx, RedisServer, Service
from tests.scaleout.wire_flows import FlowOutcome

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

APP = "tests.scaleout.legacy_flow_app:app"
PYTHON_FLOWS = 150
JS_FLOWS = 60
QUESTION = re.compile(r"^Question (\d+) for (.+)\?$")
# The access log names the session of every request, so the rounds of one flow can be followed.
SESSION_LOG = "log_format up '\"$request\" $status upstream=$upstream_addr session=$http_mcp_session_id';"

__all__ = ["node"]  # the fixture, imported for its use below


class SessionNginx(Nginx):
    """nginx with the session id in its access log; ``sticky`` hashes on ``Mcp-Session-Id``."""

    def __init__(self, directory: Path, upstream_ports: list[int], *, sticky: bool) -> None:
        super().__init__(directory, upstream_ports)
        servers = " ".join(f"server 127.0.0.1:{p};" for p in upstream_ports)
        if sticky:
            servers = "hash $http_mcp_session_id consistent; " + servers
        conf = NGINX_CONF.format(p=directory, servers=servers, port=self.port)
        conf = re.sub(r"log_format up .*?;\n", SESSION_LOG + "\n", conf, count=1)
        # A request a dead replica never received is safe to send to another (docs/deployment.md).
        conf = conf.replace("proxy_buffering off;", "proxy_buffering off; proxy_next_upstream error non_idempotent;")
        (directory / "nginx.conf").write_text(conf)

    def replicas_by_session(self) -> dict[str, set[str]]:
        """For each session, the upstreams that served its POSTs."""
        served: dict[str, set[str]] = defaultdict(set)
        for line in self.access_log():
            found = re.search(r'"POST [^"]*" \d+ upstream=(\S+) session=(\S+)', line)
            if found and found.group(2) != "-":
                served[found.group(2)].add(found.group(1))
        return served


async def _python_flow(url: str, token: str, think: float = 0.0, asked: list[str] | None = None) -> FlowOutcome:
    """One flow; ``think`` seconds before each answer keep it in flight (for the fault tests), and
    ``asked`` records each question as it arrives."""

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        found = QUESTION.match(params.message)
        assert found is not None, params.message
        if asked is not None:
            asked.append(params.message)
        await asyncio.sleep(think)
        return ElicitResult(action="accept", content={"value": f"{found.group(2)}:{found.group(1)}"})

    started = time.monotonic()
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=elicit) as client,
        ):
            result = await client.call_tool("three_answers", {"token": token})
        if result.is_error:
            return FlowOutcome(token, None, str(result.content), time.monotonic() - started)
        return FlowOutcome(token, result.structured_content, None, time.monotonic() - started)
    except Exception as exc:  # a flow that fails is counted, not raised: the others must finish too
        return FlowOutcome(token, None, _innermost(exc), time.monotonic() - started)


def _innermost(exc: BaseException) -> str:
    """The error a person would read: the client wraps it in task groups."""
    while getattr(exc, "exceptions", None):  # an exception group (Python 3.10 has no name for it)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


def _js_flows(node_path: str, url: str, count: int, prefix: str) -> subprocess.Popen[str]:
    command = [node_path, str(JS / "concurrent_flows.mjs"), url, str(count), prefix]
    return subprocess.Popen(command, cwd=JS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _js_outcomes(process: subprocess.Popen[str]) -> list[FlowOutcome]:
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0, err[-2000:]
    flows = json.loads(out)["flows"]
    return [FlowOutcome(f["token"], f.get("result"), f.get("error"), f["ms"] / 1000) for f in flows]


async def _run_all(
    url: str, node_path: str, python_flows: int = PYTHON_FLOWS, js_flows: int = JS_FLOWS
) -> list[FlowOutcome]:
    """``python_flows`` official-client flows and ``js_flows`` TypeScript-client flows, all at once."""
    js = _js_flows(node_path, url, js_flows, "js") if js_flows else None
    outcomes = list(await asyncio.gather(*(_python_flow(url, f"py-{i}") for i in range(python_flows))))
    if js is not None:
        outcomes += await asyncio.to_thread(_js_outcomes, js)
    return outcomes


def _summary(outcomes: list[FlowOutcome]) -> str:
    failed = [o for o in outcomes if not o.own_answers]
    return f"{len(outcomes) - len(failed)} ok, {len(failed)} not: " + "; ".join(
        f"{o.token}: {o.error or o.result}" for o in failed[:5]
    )


def _start(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], *, env: dict[str, str], sticky: bool
) -> SessionNginx:
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": new_key(), **env}, app=APP)
    nginx = SessionNginx(tmp_path / f"nginx-{len(started)}", replicas.ports, sticky=sticky)
    started.append(nginx)
    nginx.start()
    return nginx


async def test_round_robin_with_the_relay_serves_every_flow_with_its_own_answers(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], redis_server: RedisServer, node: str
) -> None:
    nginx = _start(started, tmp_path, start_replicas, env={"MRTR_REDIS_URL": redis_server.url}, sticky=False)
    outcomes = await _run_all(nginx.url + "/mcp", node)
    assert len(outcomes) == PYTHON_FLOWS + JS_FLOWS >= 200
    assert all(o.own_answers for o in outcomes), _summary(outcomes)
    # The rounds of one flow really were served by different replicas (no stickiness anywhere).
    spread = [upstreams for upstreams in nginx.replicas_by_session().values() if len(upstreams) > 1]
    assert len(spread) >= 150, f"only {len(spread)} sessions had POSTs on more than one replica"
    finishers = {o.result["replica"] for o in outcomes if o.result is not None}
    assert finishers == {"r1", "r2", "r3"}


async def test_sticky_routing_without_redis_serves_every_flow(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], node: str
) -> None:
    nginx = _start(started, tmp_path, start_replicas, env={}, sticky=True)
    outcomes = await _run_all(nginx.url + "/mcp", node, python_flows=100, js_flows=40)
    assert all(o.own_answers for o in outcomes), _summary(outcomes)
    assert all(len(upstreams) == 1 for upstreams in nginx.replicas_by_session().values())


async def test_round_robin_without_redis_fails_misrouted_answers_fast(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], node: str
) -> None:
    """The negative control: no relay, no stickiness. Misrouted answers get 421 at once, and no
    flow outlives the round timeout (3 s) by much."""
    nginx = _start(started, tmp_path, start_replicas, env={"LEGACY_ROUND_TIMEOUT": "3"}, sticky=False)
    outcomes = await _run_all(nginx.url + "/mcp", node, python_flows=30, js_flows=10)
    statuses = [line for line in nginx.access_log() if '"POST' in line and " 421 " in line]
    assert statuses, "no answer was misrouted: the control did not exercise anything"
    assert any(not o.own_answers for o in outcomes)  # without a relay, round robin cannot work
    assert max(o.seconds for o in outcomes) < 3 + 15, sorted(o.seconds for o in outcomes)[-5:]
    assert all(o.result is None or o.own_answers for o in outcomes)  # whatever completed is right


async def _until_asked(asked: list[str], count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(asked) < count:
        assert time.monotonic() < deadline, f"only {len(asked)} of {count} flows were asked"
        await asyncio.sleep(0.02)


async def test_redis_restarted_mid_run_fails_cleanly_and_then_works(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], redis_server: RedisServer
) -> None:
    nginx = _start(started, tmp_path, start_replicas, env={"MRTR_REDIS_URL": redis_server.url}, sticky=False)
    url = nginx.url + "/mcp"
    asked: list[str] = []
    running = [asyncio.ensure_future(_python_flow(url, f"before-{i}", think=1.0, asked=asked)) for i in range(60)]
    await _until_asked(asked, 60)  # every flow waits for its first answer: then Redis goes away
    await asyncio.to_thread(redis_server.stop)
    await asyncio.sleep(1.5)
    await asyncio.to_thread(redis_server.start)
    outcomes = await asyncio.gather(*running)
    # In flight: each completed with its own answers or failed; none got another's or one twice.
    assert all(o.result is None or o.own_answers for o in outcomes), _summary(outcomes)
    assert all(o.error is not None for o in outcomes if o.result is None)
    assert max(o.seconds for o in outcomes) < 45
    # Redis is back: new flows work (the subscribers reconnect by themselves within a second).
    await asyncio.sleep(1.5)
    after = await asyncio.gather(*(_python_flow(url, f"after-{i}") for i in range(40)))
    assert all(o.own_answers for o in after), _summary(after)


async def test_a_replica_killed_mid_run_ends_only_its_flows(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], redis_server: RedisServer
) -> None:
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": new_key(), "MRTR_REDIS_URL": redis_server.url}, app=APP)
    nginx = SessionNginx(tmp_path / "nginx-kill", replicas.ports, sticky=False)
    started.append(nginx)
    nginx.start()
    url = nginx.url + "/mcp"
    asked: list[str] = []
    running = [asyncio.ensure_future(_python_flow(url, f"k-{i}", think=1.0, asked=asked)) for i in range(60)]
    await _until_asked(asked, 60)  # every flow's call runs, and waits for its first answer
    os.kill(replicas[1].pid, signal.SIGKILL)  # r2 dies with its calls in flight
    outcomes = await asyncio.gather(*running)
    assert all(o.result is None or o.own_answers for o in outcomes), _summary(outcomes)
    failed = [o for o in outcomes if o.result is None]
    assert all(o.error for o in failed) and max(o.seconds for o in outcomes) < 60
    # The flows r2 was running end with an error; the others are untouched.
    assert len(failed) <= len(outcomes) // 2, _summary(outcomes)
    assert failed and all("replica running this call stopped" in str(o.error) for o in failed), _summary(outcomes)
    survivors = await asyncio.gather(*(_python_flow(url, f"later-{i}") for i in range(30)))
    assert all(o.own_answers and o.result is not None and o.result["replica"] != "r2" for o in survivors)


async def test_sessions_survive_key_rotation(
    started: list[Service], tmp_path: Path, start_replicas: Callable[..., Any], redis_server: RedisServer
) -> None:
    old, new = new_key(), new_key()
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": old, "MRTR_REDIS_URL": redis_server.url}, app=APP)
    nginx = SessionNginx(tmp_path / "nginx-rotate", replicas.ports, sticky=False)
    started.append(nginx)
    nginx.start()
    url = nginx.url + "/mcp"

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        found = QUESTION.match(params.message)
        assert found is not None
        return ElicitResult(action="accept", content={"value": f"{found.group(2)}:{found.group(1)}"})

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=elicit) as client,
    ):
        first = await client.call_tool("three_answers", {"token": "before"})
        assert first.structured_content is not None and first.structured_content["answers"][0] == "before:1"
        # Rotate: every replica restarts with the new key first and the old one still opening.
        for index in range(3):
            await asyncio.to_thread(replicas.restart, {"MRTR_STATE_KEY": f"{new},{old}"}, [index])
        again = await client.call_tool("three_answers", {"token": "after"})  # the same session id
    assert not again.is_error and again.structured_content is not None
    assert again.structured_content["answers"] == ["after:1", "after:2", "after:3"]
