"""The server process: launched with pipes, written to and read from line by line, stopped for sure.

stdout carries JSON-RPC, one message per line; stderr is the server's log, copied to ours (unless
told not to) with its last lines kept for the error that says why the server stopped. Stopping
is the spec's order: close its stdin, wait, then SIGTERM, then SIGKILL, each wait bounded.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from fastapi_mrtr.client._errors import StdioServerError
from fastapi_mrtr.client._stdio.server import StdioServer

# The longest line read from the server: an MCP message is far smaller, and a server that writes
# without end must not fill our memory (the same bound as an SSE line).
MAX_LINE_BYTES = 16 * 1024 * 1024
STDERR_TAIL_BYTES = 4000  # kept for the error message: the last few lines of a traceback
EXIT_GRACE = 3.0  # seconds after stdin closes for the server to finish and run its shutdown
SIGNAL_GRACE = 2.0  # seconds after SIGTERM before SIGKILL, and after SIGKILL for the exit


class ServerProcess:
    """One running server; :meth:`launch` starts it, :meth:`stop` ends it (idempotent)."""

    def __init__(self, server: StdioServer) -> None:
        self.server = server
        self._process: anyio.abc.Process | None = None
        self._stdout: BufferedByteReceiveStream | None = None
        self._tail = bytearray()
        self._stderr_done = anyio.Event()

    async def launch(self) -> None:
        try:
            self._process = await anyio.open_process(
                list(self.server.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.server.cwd,
                env=self.server.environment(),
            )
        except OSError as exc:
            self._stderr_done.set()
            raise StdioServerError(f"could not start the stdio server `{self.server.shown}`: {exc}") from exc
        assert self._process.stdout is not None
        self._stdout = BufferedByteReceiveStream(self._process.stdout)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def send_line(self, data: bytes) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            await self._process.stdin.send(data + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise await self.gone(f"the stdio server `{self.server.shown}` stopped reading its stdin ({exc})") from None

    async def read_line(self) -> bytes | None:
        """The next line of stdout, without its newline; ``None`` once stdout has ended."""
        assert self._stdout is not None
        try:
            return (await self._stdout.receive_until(b"\n", MAX_LINE_BYTES)).rstrip(b"\r")
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return None
        except anyio.DelimiterNotFound:
            raise StdioServerError(
                f"the stdio server wrote a line longer than {MAX_LINE_BYTES} bytes; the client stopped reading it"
            ) from None

    async def pump_stderr(self) -> None:
        """Copy stderr to ours until it ends, keeping its tail."""
        try:
            if self._process is None or self._process.stderr is None:
                return
            async for chunk in self._process.stderr:
                self._tail += chunk
                del self._tail[:-STDERR_TAIL_BYTES]
                if self.server.echo_stderr:
                    sys.stderr.write(chunk.decode("utf-8", "replace"))
                    sys.stderr.flush()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the pipe went away with the process: what it said is kept
        finally:
            self._stderr_done.set()

    async def gone(self, what: str) -> StdioServerError:
        """The error for a server that stopped talking: its exit status and stderr, once known."""
        with anyio.move_on_after(SIGNAL_GRACE):
            if self._process is not None:
                await self._process.wait()
            await self._stderr_done.wait()  # the last words of a crash come just before the exit
        code = self.returncode
        status = f" (exit status {code})" if code is not None else ""
        return StdioServerError(what + status, returncode=code, stderr=self._tail.decode("utf-8", "replace"))

    async def stop(self) -> None:
        """Close stdin, wait for the exit; SIGTERM, then SIGKILL, if the server lingers."""
        process = self._process
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            await self._end(process)
            with anyio.move_on_after(SIGNAL_GRACE):
                await process.aclose()  # its pipes: no resource left behind

    async def _end(self, process: anyio.abc.Process) -> None:
        if process.returncode is None:
            if process.stdin is not None:
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await process.stdin.aclose()
            for grace, end in ((EXIT_GRACE, process.terminate), (SIGNAL_GRACE, process.kill)):
                with anyio.move_on_after(grace):
                    await process.wait()
                    return
                try:
                    end()
                except ProcessLookupError:
                    return
