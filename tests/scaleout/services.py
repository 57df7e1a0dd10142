"""Real processes for the scale-out tests: app replicas, gunicorn, nginx and redis-server on loopback.

Every start waits a bounded time and fails with the process's log when it does not come up;
every ``stop`` escalates from a polite signal to SIGKILL, so no test leaves a process behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support import free_port

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_APP = "example_app.main:app"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
DEBIAN_PACKAGES = {"nginx": "nginx-light", "redis-server": "redis-server"}
# Variables the tests set explicitly; never inherited from the environment the tests run in.
CONTROLLED_ENV = ("MRTR_STATE_KEY", "MRTR_REDIS_URL", "REPLICA_NAME", "BOOKSHOP_DB", "WEB_CONCURRENCY")
Env = Mapping[str, str | None]


def require_program(name: str) -> str:
    """The path of ``name`` on PATH; a missing tool fails the test (it is never skipped)."""
    path = shutil.which(name)
    if path is None:
        package = DEBIAN_PACKAGES.get(name, name)
        pytest.fail(f"{name!r} is not on PATH: install it (Debian: apt-get install -y {package})", pytrace=False)
    return path


def wait_for(check: Callable[[], bool], *, what: str, timeout: float, process: Service | None = None) -> None:
    """Poll ``check`` until it is true; fail with ``what`` (and the process log) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if process is not None and not process.running:
            raise AssertionError(f"{what}: {process.name} exited with {process.returncode}\n{process.log_tail()}")
        if time.monotonic() > deadline:
            tail = process.log_tail() if process is not None else ""
            raise AssertionError(f"{what}: not ready after {timeout:.0f} s\n{tail}")
        time.sleep(0.05)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


class Service:
    """One subprocess with its output in a log file; ``start``/``stop`` are idempotent."""

    def __init__(self, name: str, argv: Sequence[str], *, log: Path, env: Env | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.env: dict[str, str | None] = dict(env or {})
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    @property
    def pid(self) -> int:
        assert self._process is not None, f"{self.name} was never started"
        return self._process.pid

    def spawn(self) -> None:
        """Start the process without waiting for it to be ready."""
        if self.running:
            return
        environment = {k: v for k, v in os.environ.items() if k not in CONTROLLED_ENV}
        environment["PYTHONUNBUFFERED"] = "1"
        for key, value in self.env.items():
            if value is None:
                environment.pop(key, None)
            else:
                environment[key] = value
        with self.log.open("ab") as out:
            out.write(f"--- start {self.name}: {' '.join(self.argv)}\n".encode())
            out.flush()
            self._process = subprocess.Popen(
                self.argv, cwd=REPO, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()  # the process we started, by its handle; never a broad name match
            process.wait(STOP_TIMEOUT)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class AppServer(Service):
    """An ASGI app served on one loopback port (uvicorn, or gunicorn with uvicorn workers)."""

    def __init__(
        self, name: str, argv: Sequence[str], *, port: int, log: Path, env: Env, health: str = "/health"
    ) -> None:
        super().__init__(name, argv, log=log, env=env)
        self.port = port
        self.health = health

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        wait_for(
            lambda: http_ok(self.url + self.health), what=f"{self.name} health", timeout=START_TIMEOUT, process=self
        )

    @classmethod
    def uvicorn(cls, name: str, *, port: int, log: Path, env: Env, app: str = EXAMPLE_APP) -> AppServer:
        argv = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)]
        argv += ["--log-level", "info", "--no-access-log", "--timeout-graceful-shutdown", "10"]
        return cls(name, argv, port=port, log=log, env={"REPLICA_NAME": name, **env})

    @classmethod
    def gunicorn(
        cls, name: str, *, port: int, log: Path, env: Env, workers: int = 3, config: Path | None = None
    ) -> AppServer:
        argv = [sys.executable, "-m", "gunicorn", EXAMPLE_APP, "-k", "uvicorn_worker.UvicornWorker"]
        argv += ["-w", str(workers), "-b", f"127.0.0.1:{port}", "--no-control-socket", "--graceful-timeout", "10"]
        argv += ["--keep-alive", "10"]  # longer than the clients' idle expiry (httpx: 5 s), so no close race
        if config is not None:
            argv += ["-c", str(config)]
        return cls(name, argv, port=port, log=log, env={"REPLICA_NAME": name, **env})

    def restart(self, env: Env | None = None) -> None:
        self.stop()
        if env is not None:
            self.env.update(env)
        self.start()


class ReplicaSet:
    """Several app replicas, started and restarted in parallel."""

    def __init__(self, replicas: Sequence[AppServer]) -> None:
        self.replicas = list(replicas)

    def __iter__(self) -> Iterator[AppServer]:
        return iter(self.replicas)

    def __getitem__(self, index: int) -> AppServer:
        return self.replicas[index]

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.replicas]

    @property
    def ports(self) -> list[int]:
        return [r.port for r in self.replicas]

    def start(self) -> None:
        for replica in self.replicas:
            replica.spawn()
        with ThreadPoolExecutor(len(self.replicas)) as pool:
            list(pool.map(lambda r: r.wait_ready(), self.replicas))

    def restart(self, env: Env, only: Sequence[int] | None = None) -> None:
        """Restart the replicas (all, or those at the ``only`` indexes) with ``env`` added."""
        chosen = [self.replicas[i] for i in only] if only is not None else self.replicas
        for replica in chosen:
            replica.stop()
            replica.env.update(env)
            replica.spawn()
        with ThreadPoolExecutor(len(chosen)) as pool:
            list(pool.map(lambda r: r.wait_ready(), chosen))

    def stop(self) -> None:
        with ThreadPoolExecutor(len(self.replicas)) as pool:
            list(pool.map(lambda r: r.stop(), self.replicas))


NGINX_CONF = """worker_processes 1; daemon off; pid {p}/nginx.pid; error_log {p}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  client_body_temp_path {p}/temp/body; proxy_temp_path {p}/temp/proxy; fastcgi_temp_path {p}/temp/f;
  uwsgi_temp_path {p}/temp/u; scgi_temp_path {p}/temp/s;
  log_format up '"$request" $status upstream=$upstream_addr mcp_method=$http_mcp_method';
  upstream mcp_pool {{ {servers} keepalive 16; keepalive_timeout 4s; }}
  server {{ listen 127.0.0.1:{port}; access_log {p}/logs/up.log up;
    location / {{ proxy_pass http://mcp_pool; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Host $http_host; proxy_buffering off; proxy_read_timeout 300s; }} }} }}
"""


class Nginx(Service):
    """nginx-light in the foreground: plain round robin over the upstream ports, no stickiness."""

    def __init__(self, directory: Path, upstream_ports: Sequence[int]) -> None:
        self.directory = directory
        self.port = free_port()
        (directory / "logs").mkdir(parents=True, exist_ok=True)
        (directory / "temp").mkdir(exist_ok=True)
        servers = " ".join(f"server 127.0.0.1:{p};" for p in upstream_ports)
        conf = directory / "nginx.conf"
        conf.write_text(NGINX_CONF.format(p=directory, servers=servers, port=self.port))
        argv = [require_program("nginx"), "-p", str(directory), "-c", str(conf)]
        super().__init__("nginx", argv, log=directory / "logs" / "stdout.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        wait_for(lambda: port_open(self.port), what="nginx listening", timeout=START_TIMEOUT, process=self)

    def stop(self, sig: signal.Signals = signal.SIGQUIT) -> None:
        super().stop(sig)

    def access_log(self) -> list[str]:
        path = self.directory / "logs" / "up.log"
        return path.read_text().splitlines() if path.exists() else []

    def log_tail(self, lines: int = 40) -> str:
        error_log = self.directory / "logs" / "error.log"
        errors = error_log.read_text(errors="replace") if error_log.exists() else ""
        return super().log_tail(lines) + "\n" + "\n".join(errors.splitlines()[-lines:])


class RedisServer(Service):
    """A throw-away redis-server: loopback only, a free port, no persistence."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        argv = [require_program("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(directory), "--protected-mode", "yes"]
        super().__init__("redis-server", argv, log=directory / "redis.log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def wait_ready(self) -> None:
        wait_for(self.ping, what="redis-server PING", timeout=START_TIMEOUT, process=self)
