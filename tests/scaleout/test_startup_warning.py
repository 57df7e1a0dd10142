"""The ephemeral-key error at start-up: what is detected, and the real ``uvicorn --workers`` case.

(gunicorn's workers are checked in test_gunicorn.py.)
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI

from fastapi_mrtr import MCP, ServerOptions
from fastapi_mrtr.integration.workers import several_processes_hint
from tests.scaleout.conftest import new_key
from tests.scaleout.services import EXAMPLE_APP, START_TIMEOUT, AppServer, Service, wait_for
from tests.support import free_port

UVICORN = ["uvicorn", "app:app"]


@pytest.mark.parametrize(
    ("environ", "argv", "spawned", "expected"),
    [
        pytest.param({}, UVICORN, False, None, id="one-process"),
        pytest.param({"SERVER_SOFTWARE": "gunicorn/27.0.1"}, ["gunicorn"], False, "gunicorn", id="gunicorn"),
        pytest.param({"WEB_CONCURRENCY": "4"}, UVICORN, False, "WEB_CONCURRENCY=4", id="web-concurrency"),
        pytest.param({"WEB_CONCURRENCY": "1"}, UVICORN, False, None, id="web-concurrency-1"),
        pytest.param({}, [*UVICORN, "--workers", "2"], True, "spawned worker", id="uvicorn-workers"),
        pytest.param({}, [*UVICORN, "--reload"], True, None, id="uvicorn-reload-child"),
        pytest.param({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, UVICORN, False, "Kubernetes", id="kubernetes"),
    ],
)
def test_what_counts_as_several_processes(
    environ: dict[str, str], argv: list[str], spawned: bool, expected: str | None
) -> None:
    hint = several_processes_hint(environ, argv=argv, spawned=spawned)
    if expected is None:
        assert hint is None
    else:
        assert hint is not None and expected in hint


@pytest.mark.parametrize("key", [None, "k" * 32])
def test_the_error_is_logged_only_without_a_key(
    key: str | None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("MRTR_STATE_KEY", raising=False)
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        MCP(FastAPI(), options=ServerOptions(request_state_key=key))
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    if key is None:
        assert len(errors) == 1
        assert "WEB_CONCURRENCY=3" in errors[0].getMessage() and "MRTR_STATE_KEY" in errors[0].getMessage()
    else:
        assert errors == []


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("key", [None, new_key()], ids=["no-key", "shared-key"])
def test_uvicorn_workers_without_a_key_each_log_the_error(
    key: str | None, tmp_path: Path, db_dir: Path, started: list[Service]
) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", EXAMPLE_APP, "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    env = {"MRTR_STATE_KEY": key, "BOOKSHOP_DB": str(db_dir / "workers.db")}
    server = AppServer("uvicorn-workers", argv, port=port, log=tmp_path / "uvicorn.log", env=env)
    started.append(server)
    server.start()
    wait_for(
        lambda: server.log_text().count("Application startup complete") >= 2,
        what="two uvicorn workers started",
        timeout=START_TIMEOUT,
        process=server,
    )
    errors = server.log_text().count("ERROR fastapi_mrtr: fastapi-mrtr: this process may be one of several")
    assert errors == (2 if key is None else 0), server.log_text()
