"""The terminal client on a pseudo-terminal, driven the way a person drives it.

The CLI's stdin, stdout and stderr are the slave side of one pty, so it sees a terminal; the test
reads everything it shows from the master side and types lines into it. Reads are bounded: every
wait has a deadline, and the process is killed when the test is done with it.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class PtyCli:
    """``python -m fastapi_mrtr.client ARGS`` on a pty; ``screen`` is everything shown so far."""

    def __init__(self, *args: str) -> None:
        master, slave = pty.openpty()
        self._master = master
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fastapi_mrtr.client", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb"},
            cwd=ROOT,
            start_new_session=True,
        )
        os.close(slave)
        self.screen = ""

    def _read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False when nothing came (or the pty closed)."""
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # EIO: the CLI closed its side (it exited)
            return False
        if not chunk:
            return False
        self.screen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        return True

    def settle(self, quiet: float = 0.4, limit: float = 20.0) -> str:
        """Read until nothing new shows for ``quiet`` seconds (or the process ends); the screen."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not self._read(quiet):
                break
        return self.screen

    def wait_for(self, text: str, limit: float = 20.0) -> str:
        """Read until ``text`` shows; the screen. Raises ``AssertionError`` at the deadline."""
        deadline = time.monotonic() + limit
        while text not in self.screen:
            if time.monotonic() > deadline or (not self._read(0.2) and self.process.poll() is not None):
                raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen}")
        return self.screen

    def type(self, line: str) -> None:
        os.write(self._master, line.encode() + b"\n")

    def interrupt(self) -> None:
        """What Ctrl-C at the terminal does: SIGINT to the CLI."""
        os.kill(self.process.pid, signal.SIGINT)

    def finish(self, limit: float = 20.0) -> int | None:
        """The exit status within ``limit`` seconds (``None`` if it is still running), all output read."""
        deadline = time.monotonic() + limit
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        return self.process.poll()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        os.close(self._master)

    def __enter__(self) -> PtyCli:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
