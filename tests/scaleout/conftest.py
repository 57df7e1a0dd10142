"""Fixtures that start real services as subprocesses: redis-server, app replicas, gunicorn, nginx.

Everything a fixture starts is stopped when the test ends, pass or fail; starts wait a bounded
time. nginx and redis-server must be on PATH (Debian packages nginx-light and redis-server).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.scaleout.services import (
    EXAMPLE_APP,
    START_TIMEOUT,
    AppServer,
    Env,
    Nginx,
    RedisServer,
    ReplicaSet,
    Service,
    wait_for,
)
from tests.support import free_port

StartReplicas = Callable[..., ReplicaSet]
StartNginx = Callable[[list[int]], Nginx]
StartGunicorn = Callable[..., AppServer]

# Each gunicorn worker names itself, so the x-replica header tells the workers apart.
GUNICORN_CONF = """import os


def post_fork(server, worker):
    os.environ["REPLICA_NAME"] = f"w{worker.age}-{os.getpid()}"
"""


def new_key() -> str:
    """A fresh request-state secret (43 characters, 32 random bytes)."""
    return secrets.token_urlsafe(32)


@pytest.fixture
def started() -> Iterator[list[Service]]:
    """Services a test started; stopped in reverse order afterwards, whatever happened."""
    services: list[Service] = []
    yield services
    errors = []
    for service in reversed(services):
        try:
            service.stop()
        except Exception as exc:  # keep stopping the others
            errors.append(f"{service.name}: {exc!r}")
    assert not errors, f"could not stop: {errors}"


@pytest.fixture
def redis_server(tmp_path: Path, started: list[Service]) -> RedisServer:
    server = RedisServer(tmp_path / "redis")
    started.append(server)
    server.start()
    return server


@pytest.fixture
def db_dir(tmp_path: Path) -> Iterator[Path]:
    """Where the replicas keep their SQLite files: in memory when /dev/shm exists.

    The bookshop commits each order on the event loop, and a commit fsyncs; on a slow disk that,
    not the MRTR path, would set the pace of the load tests.
    """
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="mrtr-scaleout-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def start_replicas(tmp_path: Path, db_dir: Path, started: list[Service]) -> StartReplicas:
    """``start_replicas(count, env=..., per_replica=..., app=...)``: uvicorn replicas, each with its own DB."""

    def start(
        count: int = 3,
        *,
        env: Env | None = None,
        per_replica: Callable[[int], Env] | None = None,
        app: str = EXAMPLE_APP,
        prefix: str = "r",
    ) -> ReplicaSet:
        replicas = []
        for index in range(count):
            name = f"{prefix}{index + 1}"
            environment: dict[str, str | None] = {"BOOKSHOP_DB": str(db_dir / f"{name}.db")}
            environment.update(env or {})
            environment.update(per_replica(index) if per_replica else {})
            replica = AppServer.uvicorn(name, port=free_port(), log=tmp_path / f"{name}.log", env=environment, app=app)
            started.append(replica)
            replicas.append(replica)
        replica_set = ReplicaSet(replicas)
        replica_set.start()
        return replica_set

    return start


@pytest.fixture
def start_nginx(tmp_path: Path, started: list[Service]) -> StartNginx:
    """``start_nginx(ports)``: nginx round robin over the given loopback ports."""

    def start(ports: list[int]) -> Nginx:
        nginx = Nginx(tmp_path / f"nginx-{len(started)}", ports)
        started.append(nginx)
        nginx.start()
        return nginx

    return start


@pytest.fixture
def start_gunicorn(tmp_path: Path, db_dir: Path, started: list[Service]) -> StartGunicorn:
    """``start_gunicorn(env=..., workers=3)``: the bookshop under gunicorn with uvicorn workers.

    Returns once every worker has loaded the app; the workers share one database file.
    """

    def start(*, env: Env | None = None, workers: int = 3) -> AppServer:
        config = tmp_path / "gunicorn.conf.py"
        config.write_text(GUNICORN_CONF)
        environment: dict[str, str | None] = {"BOOKSHOP_DB": str(db_dir / "gunicorn.db"), **(env or {})}
        server = AppServer.gunicorn(
            "gunicorn", port=free_port(), log=tmp_path / "gunicorn.log", env=environment, workers=workers, config=config
        )
        started.append(server)
        server.start()
        wait_for(
            lambda: server.log_text().count("Application startup complete") >= workers,
            what=f"{workers} gunicorn workers started",
            timeout=START_TIMEOUT,
            process=server,
        )
        return server

    return start
