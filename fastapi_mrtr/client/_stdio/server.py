"""What to launch as a stdio MCP server: the command, its environment, and how long to wait for it."""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# A Python server imports its app before it can answer: seconds on a busy machine, not minutes.
DEFAULT_STARTUP_TIMEOUT = 30.0
# As the HTTP client's read timeout: a tool may work for minutes before it answers.
DEFAULT_READ_TIMEOUT = 600.0


@dataclass(frozen=True)
class StdioServer:
    """A local MCP server to launch as a subprocess and talk to over its stdin and stdout.

    * ``command``: a shell-like string (split with :func:`shlex.split`, nothing is run through a
      shell) or an argument list, e.g. ``"python -m fastapi_mrtr.stdio example_app.main:app"``.
    * ``env``: variables added to this process's environment for the server (``MRTR_STDIO_AUTHORIZATION``...).
    * ``cwd``: the server's working directory (this process's by default).
    * ``startup_timeout``: seconds the server may take to write its first line, then
      :class:`~fastapi_mrtr.client.StdioServerError`.
    * ``read_timeout``: seconds a request may wait with nothing at all from the server, then the same.
    * ``echo_stderr``: copy the server's stderr (its log) to ours; the last lines are kept either
      way, for the error that says why the server stopped.
    """

    command: str | Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | Path | None = None
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    echo_stderr: bool = True
    argv: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        argv = tuple(shlex.split(self.command) if isinstance(self.command, str) else self.command)
        if not argv or not all(isinstance(part, str) for part in argv):
            raise ValueError(f"a stdio server needs a command to run, e.g. 'python -m my_server', not {self.command!r}")
        object.__setattr__(self, "argv", argv)
        for name in ("startup_timeout", "read_timeout"):
            seconds = getattr(self, name)
            if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"{name} must be a finite number of seconds > 0, not {seconds!r}")

    @property
    def shown(self) -> str:
        """The command as a person would type it, for messages."""
        return shlex.join(self.argv)

    def environment(self) -> dict[str, str] | None:
        """The server's whole environment, or ``None`` to inherit ours unchanged."""
        return {**os.environ, **self.env} if self.env else None


def as_stdio_server(stdio: str | Sequence[str] | StdioServer) -> StdioServer:
    return stdio if isinstance(stdio, StdioServer) else StdioServer(stdio)
