"""Resident memory of a server process after 1,000, 10,000 and 100,000 flows, in several trials.

Each trial starts every server afresh as one uvicorn worker pinned to CPU 0 and drives it with
wrk on CPU 1 to each cumulative checkpoint, reading ``VmRSS`` after each. The official SDK and
this project run the two-round MRTR flow (``flows.lua``). The rig's stateless floors, and this
project's ``echo`` for comparison, run echo calls in pairs (``echo_pairs.lua``: two requests
per "flow", as a flow has), so that every row counts the same number of requests.

The floors keep nothing per call. Whatever they grow by is CPython's allocator and uvicorn
settling at the page level, which is the scale that this project's own growth is read against.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RIG = ROOT.parent / "shared" / "bench"
FLOWS_SCRIPT = HERE / "flows.lua"
ECHO_PAIRS_SCRIPT = HERE / "echo_pairs.lua"


@dataclass(frozen=True)
class MemoryRun:
    name: str
    spec: str  # module:app[@path], as the rig names servers
    script: Path

    @property
    def load(self) -> str:
        return "MRTR flows" if self.script == FLOWS_SCRIPT else "echo pairs"


MEMORY_RUNS = (
    MemoryRun("sdk", "peer_sdk:app", FLOWS_SCRIPT),
    MemoryRun("ours", "bench.app:app@/mcp", FLOWS_SCRIPT),
    MemoryRun("asgi", "limit_asgi:app", ECHO_PAIRS_SCRIPT),
    MemoryRun("fastapi", "limit_fastapi:app", ECHO_PAIRS_SCRIPT),
    MemoryRun("ours-echo", "bench.app:app@/mcp", ECHO_PAIRS_SCRIPT),
)


@dataclass(frozen=True)
class MemoryPoint:
    flows: int
    failed: int
    rss_kib: int


Trial = list[MemoryPoint]


def growth(trial: Trial) -> int:
    return trial[-1].rss_kib - trial[0].rss_kib


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_port(port: int, timeout: float = 30) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def drive(pid: int, url: str, script: Path, flows: int, conns: int) -> tuple[int, int]:
    """Exactly ``flows`` flows (rounded to the connections) with wrk; (completed, failed).

    The Lua script stops each wrk thread at its quota; wrk itself only ends at its duration, so
    it is interrupted (it then reports) as soon as the server has been idle for a moment.
    """
    per_thread = max(1, flows // conns)
    env = dict(os.environ, FLOWS=str(per_thread))
    limit = 60 + flows // 20  # even at 20 flows/s the run ends by itself
    command = ["taskset", "-c", "1", "wrk", "-t", str(conns), "-c", str(conns), "-d", f"{limit}s"]
    wrk = subprocess.Popen([*command, "-s", str(script), url], stdout=subprocess.PIPE, text=True, env=env)
    last, idle = _cpu_ticks(pid), 0
    while wrk.poll() is None:
        time.sleep(0.25)
        now = _cpu_ticks(pid)
        idle = idle + 1 if now == last else 0
        last = now
        if idle >= 4:  # a second without a request: every thread has reached its quota
            wrk.send_signal(signal.SIGINT)
            break
    out, _ = wrk.communicate()
    for line in out.splitlines():
        if line.startswith("FLOWS"):
            fields = dict(item.split("=") for item in line.split()[1:])
            return int(fields["ok"]), int(fields["bad"])
    raise RuntimeError(f"wrk gave no flow count: {out[-300:]}")


@contextlib.contextmanager
def serving(python: str, spec: str) -> Iterator[tuple[int, str]]:
    """One fresh uvicorn worker of ``spec`` on CPU 0, started as the rig starts servers.

    Yields its process id and endpoint URL; the server is stopped on the way out.
    """
    target, _, path = spec.partition("@")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(RIG / "servers"), str(ROOT)]))
    command = ["taskset", "-c", "0", python, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--log-level", "warning", "--no-access-log"],
        cwd=RIG / "servers",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not _wait_port(port):
            raise RuntimeError(f"{spec} did not start")
        yield server.pid, f"http://127.0.0.1:{port}{path or '/mcp'}"
    finally:
        server.terminate()
        server.wait(10)


def memory_after_flows(python: str, run: MemoryRun, checkpoints: list[int], conns: int) -> Trial:
    """RSS of one fresh server process after each cumulative number of flows in ``checkpoints``."""
    points: Trial = []
    with serving(python, run.spec) as (pid, url):
        done = failed = 0
        for checkpoint in checkpoints:
            ok, bad = drive(pid, url, run.script, checkpoint - done, conns)
            done, failed = done + ok + bad, failed + bad
            points.append(MemoryPoint(done, failed, rss_kib(pid)))
            rss = points[-1].rss_kib
            print(f"  memory: {run.name} after {done} flows ({failed} failed): {rss} KiB", file=sys.stderr)
    return points


def measure(python: str, checkpoints: list[int], conns: int, trials: int) -> dict[str, list[Trial]]:
    """Every run in MEMORY_RUNS, ``trials`` times; whole rounds, so slow spells hit every server."""
    results: dict[str, list[Trial]] = {run.name: [] for run in MEMORY_RUNS}
    for _ in range(trials):
        for run in MEMORY_RUNS:
            results[run.name].append(memory_after_flows(python, run, checkpoints, conns))
    return results


def report(results: dict[str, list[Trial]]) -> list[str]:
    """The table (one row per server and trial) and the memory targets' verdicts."""
    loads = {run.name: run.load for run in MEMORY_RUNS}
    some_trial = next(trial for trials in results.values() for trial in trials)
    heads = " | ".join(f"after {p.flows:,}" for p in some_trial)
    out = [
        f"| server | load | trial | {heads} | growth | failed |",
        "|---|---|---:|" + "---:|" * len(some_trial) + "---:|---:|",
    ]
    for name, trials in results.items():
        for number, trial in enumerate(trials, 1):
            rss = " | ".join(f"{p.rss_kib:,}" for p in trial)
            out.append(f"| {name} | {loads[name]} | {number} | {rss} | {growth(trial):+d} | {trial[-1].failed} |")
    out.append("")
    out += _verdicts(results)
    return out


def _verdicts(results: dict[str, list[Trial]]) -> list[str]:
    ours, sdk = results.get("ours"), results.get("sdk")
    if not ours or not sdk:
        return []
    first, last = ours[0][0].flows, ours[0][-1].flows
    grew = [growth(trial) for trial in ours]
    flat = sum(1 for g in grew if g <= 0)
    highest = max(trial[-1].rss_kib for trial in ours)
    lowest_sdk = min(trial[-1].rss_kib for trial in sdk)
    out = [
        f"- this project, RSS after {last:,} flows no higher than after {first:,}: "
        f"{', '.join(f'{g:+d}' for g in grew)} KiB in {len(grew)} trials; held in {flat} of {len(grew)}: "
        f"{'met' if flat == len(grew) else 'NOT met'}",
        f"- this project's highest RSS after {last:,} flows, {highest:,} KiB, against the SDK's lowest, "
        f"{lowest_sdk:,} KiB: {'met' if highest <= lowest_sdk else 'NOT met'}",
    ]
    scale = [
        f"{name} {'/'.join(f'{growth(t):+d}' for t in trials)}"
        for name, trials in results.items()
        if name not in ("ours", "sdk")
    ]
    out.append(f"- for scale, growth under echo pairs (KiB per trial): {'; '.join(scale)}")
    failed = sum(trial[-1].failed for trials in results.values() for trial in trials)
    out.append(f"- failed operations in the memory runs: {failed}")
    return out
