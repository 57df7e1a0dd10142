"""The legacy legs: 2025-era MCP sessions, this project beside the official SDK's.

Measured as the shared rig measures (``../shared/bench/rig.py``): each server runs alone as one
uvicorn worker pinned to CPU 0 (started by :func:`bench.memory.serving`, the rig's command), the
load runs pinned to CPU 1, a 2 s warm-up run comes first, and the figure is the server process's
own CPU time (user + system, from ``/proc``) per operation over the measured run. The rig itself
cannot run these legs: it only runs its own wrk scripts, and the elicitation flow needs two
connections per client at once, which wrk cannot do. Workloads:

- ``legacy-echo``: ``tools/call`` of ``echo(text="hello")`` in a session that each wrk
  connection opens once (``legacy_echo.lua``);
- ``legacy-elicit``: ``tools/call`` of ``confirm_twice(item="book")``, whose two
  ``elicitation/create`` requests arrive on the call's SSE stream and are answered by POST; one
  operation is the whole flow (``legacy_flows.py``, one session per worker).

Servers: ``ours`` (``bench/legacy_app.py``), ``ours-relay`` (the same app with the Redis relay on,
a redis-server of its own pinned to CPU 1 beside the load: its CPU is not counted, the server's
Redis round trips are), the SDK's stateful app answering in SSE (``sdk``,
``bench/legacy_sdk.py``: its default, and the only mode in which its tools can ask), and the same
SDK server answering each POST with one JSON body (``sdk-json``, echo only: it cannot elicit).
Rows come out in the rig's shape, so ``bench.__main__`` puts them in the same table.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Iterator
from typing import Any

from .memory import HERE, ROOT, _cpu_ticks, _free_port, serving

ECHO_SCRIPT = HERE / "legacy_echo.lua"
WARMUP_SECS = 2
# (name, module:app[@path], workloads): the peers of this project's legacy sessions
LEGACY_SERVERS = (
    ("sdk", "bench.legacy_sdk:app", ("legacy-echo", "legacy-elicit")),
    ("sdk-json", "bench.legacy_sdk:app_json", ("legacy-echo",)),
    ("ours", "bench.legacy_app:app@/mcp", ("legacy-echo", "legacy-elicit")),
    ("ours-relay", "bench.legacy_app:app@/mcp", ("legacy-echo", "legacy-elicit")),
)
WORKLOADS = ("legacy-echo", "legacy-elicit")


def _driver(python: str, work: str, url: str, secs: int, conns: int) -> list[str]:
    if work == "legacy-echo":
        wrk = ["wrk", "-t", str(conns), "-c", str(conns), "-d", f"{secs}s", "-s", str(ECHO_SCRIPT), url]
        return ["taskset", "-c", "1", *wrk]
    flows = [python, "-m", "bench.legacy_flows", url, "--secs", str(secs), "--conns", str(conns)]
    return ["taskset", "-c", "1", *flows]


def _drive(command: list[str]) -> str:
    """Run a driver from the repository root (``bench`` importable); its standard output."""
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False).stdout


def _result(out: str) -> tuple[int, int]:
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT"):
            fields = dict(item.split("=", 1) for item in line.split()[1:])
            return int(fields["ok"]), int(fields["bad"])
    raise RuntimeError(f"the driver printed no RESULT line: {out[-300:]}")


def run_one(python: str, name: str, spec: str, work: str, secs: int, conns: int) -> dict[str, Any]:
    """One server and workload on a fresh server process: a row as the rig prints it."""
    row: dict[str, Any] = {"server": name, "work": work}
    try:
        with _relay_env(name == "ours-relay"), serving(python, spec) as (pid, url):
            _drive(_driver(python, work, url, WARMUP_SECS, conns))
            c0, w0 = _cpu_ticks(pid), time.time()
            out = _drive(_driver(python, work, url, secs, conns))
            c1, w1 = _cpu_ticks(pid), time.time()
            ok, bad = _result(out)
    except RuntimeError as exc:
        row["error"] = str(exc)
        return row
    cpu_s = (c1 - c0) / os.sysconf("SC_CLK_TCK")
    row.update(
        ok=ok,
        bad=bad,
        per_s=round(ok / (w1 - w0), 1),
        cpu_us_per_op=round(cpu_s / ok * 1e6, 1) if ok else None,
        server_cpu_util=round(cpu_s / (w1 - w0), 2),
    )
    return row


@contextlib.contextmanager
def _relay_env(wanted: bool) -> Iterator[None]:
    """A throw-away redis-server on CPU 1, named to the server by ``BENCH_RELAY_URL``."""
    if not wanted:
        yield
        return
    program = shutil.which("redis-server")
    if program is None:
        raise RuntimeError("the relay leg needs redis-server on PATH")
    port = _free_port()
    with tempfile.TemporaryDirectory() as directory:
        argv = ["taskset", "-c", "1", program, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        redis = subprocess.Popen([*argv, "--dir", directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                time.sleep(0.05)
            os.environ["BENCH_RELAY_URL"] = f"redis://127.0.0.1:{port}/0"
            yield
        finally:
            os.environ.pop("BENCH_RELAY_URL", None)
            redis.terminate()
            redis.wait(10)


def run_legs(python: str, secs: int, conns: int, works: tuple[str, ...] = WORKLOADS) -> list[dict[str, Any]]:
    """One pass over every legacy server and workload."""
    rows = []
    for name, spec, offered in LEGACY_SERVERS:
        for work in offered:
            if work in works:
                row = run_one(python, name, spec, work, secs, conns)
                print(f"  legacy: {row}", file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def era_dispatch_ns() -> tuple[float, float]:
    """What choosing the era costs a modern request, in ns: (an echo call, an MRTR retry).

    ``is_legacy_post`` is the one check the modern path gained with the legacy era, run here on
    the rig's own modern requests (decoded body and header map), best of several timings.
    """
    from fastapi_mrtr.transport.legacy.era import is_legacy_post
    from fastapi_mrtr.wire.json_codec import decode

    from .inproc import ECHO, headers_for, retry_body

    cases = []
    for tool, body in (("echo", ECHO), ("confirm", retry_body("k" * 43, "s" * 378))):
        headers = {name.decode(): value.decode() for name, value in headers_for(tool, body.encode())}
        message = decode(body.encode())
        assert not is_legacy_post(headers, message)
        timer = timeit.Timer(functools.partial(is_legacy_post, headers, message))
        loops = 200_000
        cases.append(min(timer.repeat(5, loops)) / loops * 1e9)
    return cases[0], cases[1]
