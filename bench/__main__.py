"""``python -m bench``: this project beside the floors and the peers on the shared rig.

One run: the shared rig (``../shared/bench/rig.py`` from the repository root) measures the raw
ASGI and FastAPI floors and a nested-call floor (bench/nested_floor.py) on ``echo``, and the
official SDK, FastMCP and this project on ``echo`` and ``mrtr``, and in the same passes the legacy
legs (bench/legacy.py: 2025-era sessions of this project and of the SDK, ``legacy-echo`` and the
two-round ``legacy-elicit`` flow); then the resident memory of
this project's server, the SDK's and the floors' after 1,000, 10,000 and 100,000 flows, in
several trials (bench/memory.py); then the
``requestState`` length against the number of answered questions.
Everything is printed as Markdown, ready for docs/performance.md. ``bench/run.sh`` prepares the
venv and wrk first; see docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import legacy, memory, tokens
from .memory import RIG, ROOT

# The two floors of the shared rig, and this design's own: a FastAPI route calling a route in-process.
FLOORS = [("asgi", "limit_asgi:app"), ("fastapi", "limit_fastapi:app"), ("fastapi-nested", "bench.nested_floor:app")]
PEERS = [("sdk", "peer_sdk:app"), ("fastmcp", "peer_fastmcp:app"), ("ours", "bench.app:app@/mcp")]
# The same app with FastAPI's own per-request OpenTelemetry check off: what that check costs (not a target row).
OURS_FASTAPI_OTEL_OFF = ("ours-fastapi-otel-off", "bench.app_fastapi_otel_off:app@/mcp")
# The TypeScript SDK v2 (Node, stateless), a command server of the rig; its packages live in a
# bench-only folder (bench/ts_peer.sh installs them into .bench-ts), read by the rig as MCP_TS_DIR.
TS_PEER = ("ts", "cmd:node servers/peer_ts.mjs {port} {path}@/mcp")
TS_DIR = ROOT / ".bench-ts"
TARGETS = (
    # (what, server, work, against, work against, at most)
    ("CPU per echo call vs the official SDK", "ours", "echo", "sdk", "echo", 0.25),
    ("CPU per echo call vs the FastAPI route", "ours", "echo", "fastapi", "echo", 1.5),
    ("CPU per two-round MRTR flow vs the official SDK", "ours", "mrtr", "sdk", "mrtr", 0.3),
    ("CPU per two-round MRTR flow vs this project's echo call", "ours", "mrtr", "ours", "echo", 2.3),
    (
        "CPU per legacy-session echo call vs the official SDK's legacy session (SSE)",
        "ours",
        "legacy-echo",
        "sdk",
        "legacy-echo",
        0.5,
    ),
    (
        "CPU per legacy-session echo call vs the official SDK's legacy session (JSON)",
        "ours",
        "legacy-echo",
        "sdk-json",
        "legacy-echo",
        0.5,
    ),
    (
        "CPU per two-round legacy elicitation flow vs the official SDK's",
        "ours",
        "legacy-elicit",
        "sdk",
        "legacy-elicit",
        0.5,
    ),
)


# --- the shared rig ---------------------------------------------------------------------------


def run_rig(python: str, servers: list[tuple[str, str]], work: str, secs: int, conns: int) -> list[dict[str, Any]]:
    """Rows of the rig (one per server and workload), as it prints them."""
    specs = [f"{name}={spec}" for name, spec in servers]
    command = [
        sys.executable,
        str(RIG / "rig.py"),
        "--python",
        python,
        "--secs",
        str(secs),
        "--conns",
        str(conns),
        "--path",
        str(ROOT),
        "--work",
        work,
        *specs,
    ]
    rows: list[dict[str, Any]] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as rig:
        assert rig.stdout is not None
        for line in rig.stdout:
            print(f"  rig: {line.rstrip()}", file=sys.stderr, flush=True)
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


@dataclass
class Row:
    """One server and workload over every pass of the rig: the median is what is compared."""

    server: str
    work: str
    cpu: list[float]
    rate: list[float]
    failed: int = 0
    error: str | None = None

    @property
    def median_cpu(self) -> float | None:
        return statistics.median(self.cpu) if self.cpu else None


def combine(passes: list[list[dict[str, Any]]]) -> list[Row]:
    rows: dict[tuple[str, str], Row] = {}
    for rig_rows in passes:
        for item in rig_rows:
            key = (str(item.get("server")), str(item.get("work")))
            row = rows.setdefault(key, Row(*key, cpu=[], rate=[]))
            if "error" in item:
                row.error = str(item["error"])
                continue
            if item.get("cpu_us_per_op") is not None:
                row.cpu.append(float(item["cpu_us_per_op"]))
                row.rate.append(float(item["per_s"]))
            row.failed += int(item.get("bad") or 0)
    return list(rows.values())


def cpu(rows: list[Row], server: str, work: str) -> float | None:
    for row in rows:
        if row.server == server and row.work == work:
            return row.median_cpu
    return None


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "-"


def rig_table(rows: list[Row]) -> list[str]:
    out = [
        "| server | workload | CPU us/op (median) | range | ops/s | failed | vs official SDK | vs FastAPI route |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    floor = cpu(rows, "fastapi", "echo")
    for row in rows:
        mine = row.median_cpu
        if row.error is not None or mine is None:
            out.append(f"| {row.server} | {row.work} | error: {(row.error or 'no result')[:60]} | | | | | |")
            continue
        spread = f"{min(row.cpu):.0f}-{max(row.cpu):.0f}"
        vs_floor = ratio(mine, floor) if row.work == "echo" else "-"
        out.append(
            f"| {row.server} | {row.work} | {mine:.1f} | {spread} | {statistics.median(row.rate):.0f} | "
            f"{row.failed} | {ratio(mine, cpu(rows, 'sdk', row.work))} | {vs_floor} |"
        )
    return out


def target_lines(rows: list[Row]) -> list[str]:
    out = []
    for what, server, work, other, other_work, limit in TARGETS:
        a, b = cpu(rows, server, work), cpu(rows, other, other_work)
        if a is None or not b:
            out.append(f"- {what}: not measured")
            continue
        verdict = "met" if a / b <= limit else "NOT met"
        out.append(f"- {what}: {a / b:.2f}x (target at most {limit}x): {verdict}")
    failed = sum(row.failed for row in rows if row.server == "ours")
    out.append(f"- failed operations of this project: {failed} (target 0): {'met' if failed == 0 else 'NOT met'}")
    return out


def era_dispatch_lines(rows: list[Row]) -> list[str]:
    """What the era check costs each modern request, against the modern rows' CPU per operation."""
    echo_ns, retry_ns = legacy.era_dispatch_ns()
    out = []
    for work, ns, per_op in (("echo", echo_ns, 1), ("mrtr", retry_ns, 2)):
        mine = cpu(rows, "ours", work)
        share = f", {ns * per_op / 1000 / mine:.2%} of this project's `{work}` row" if mine else ""
        out.append(f"- era dispatch on a modern `{work}` request (is_legacy_post): {ns:.0f} ns per request{share}")
    return out


def ts_peer_ready() -> bool:
    """Whether the TypeScript peer can run: its packages in MCP_TS_DIR (set here to .bench-ts if
    bench/ts_peer.sh installed them there); without them its row is left out, with a note."""
    if "MCP_TS_DIR" not in os.environ and (TS_DIR / "node_modules" / "@modelcontextprotocol" / "server").is_dir():
        os.environ["MCP_TS_DIR"] = str(TS_DIR)  # the rig and its servers inherit it
    folder = Path(os.environ.get("MCP_TS_DIR", "")) / "node_modules" / "@modelcontextprotocol" / "server"
    if "MCP_TS_DIR" not in os.environ or not folder.is_dir():
        print("bench: no TypeScript peer (run bench/ts_peer.sh, or set MCP_TS_DIR)", file=sys.stderr)
        return False
    return True


# --- the command --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=str(ROOT / ".bench-venv" / "bin" / "python"), help="servers' Python")
    parser.add_argument("--secs", type=int, default=8, help="seconds per server and workload")
    parser.add_argument("--conns", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3, help="rig passes over every server (medians are compared)")
    parser.add_argument("--flows", default="1000,10000,100000", help="memory checkpoints (cumulative flows)")
    parser.add_argument("--trials", type=int, default=3, help="fresh server processes per memory run")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: rig, ts, legacy, memory, tokens")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if not (RIG / "rig.py").exists():
        sys.exit(f"the shared rig is missing: expected {RIG}/rig.py beside the repository")
    python = str(Path(args.python).absolute())  # the rig starts servers from another directory
    peers = PEERS + [OURS_FASTAPI_OTEL_OFF] + ([TS_PEER] if "ts" not in skip and ts_peer_ready() else [])
    today = datetime.date.today().isoformat()
    report = [
        f"### Run of {today}",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}.",
    ]
    if "rig" not in skip or "legacy" not in skip:
        passes = []
        for _ in range(args.passes):  # whole passes, so that slow spells of the machine hit every server
            if "rig" not in skip:
                passes.append(run_rig(python, FLOORS, "echo", args.secs, args.conns))
                passes.append(run_rig(python, peers, "echo,mrtr", args.secs, args.conns))
            if "legacy" not in skip:
                passes.append(legacy.run_legs(python, args.secs, args.conns))
        rows = combine(passes)
        legs = {
            "rig": "the shared rig",
            "legacy": "legacy legs by bench/legacy.py, measured as the shared rig measures",
        }
        legs["both"] = f"{legs['rig']}; {legs['legacy']}"
        what = "both" if not skip & {"rig", "legacy"} else ("legacy" if "rig" in skip else "rig")
        report += [
            "",
            f"CPU per operation ({legs[what]}; median of {args.passes} passes of {args.secs} s per row, "
            f"{args.conns} connections; ratios between medians):",
            "",
        ]
        report += [*rig_table(rows), "", *target_lines(rows)]
        if "legacy" not in skip:
            report += era_dispatch_lines(rows)
    if "memory" not in skip:
        checkpoints = [int(n) for n in args.flows.split(",")]
        results = memory.measure(python, checkpoints, args.conns, args.trials)
        report += [
            "",
            f"Resident memory (KiB) of a fresh server process after N flows, {args.trials} trials "
            f"(wrk, {args.conns} connections; the floors and `ours-echo` run echo calls in pairs):",
            "",
        ]
        report += memory.report(results)
    if "tokens" not in skip:
        report += ["", "`requestState` length against answered questions (one yes/no question per round):", ""]
        report += tokens.report(asyncio.run(tokens.state_lengths([1, 3, 10])))
    print("\n".join(report))


if __name__ == "__main__":
    main()
