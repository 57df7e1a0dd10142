"""The client's lifecycle, httpx's: unopened, opened (``async with``), closed for good.

An unopened client is usable, as an ``httpx.AsyncClient`` is; ``async with`` opens it at most
once and gives it a task group for background work (a 2025-era session's GET stream); once
closed, every use raises a ``RuntimeError`` that says so, and closing again does nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.abc


class ClientState(enum.Enum):
    UNOPENED = "unopened"
    OPENED = "opened"
    CLOSED = "closed"


class Lifecycle:
    """Where one client is in its life, and the task group it owns while opened."""

    def __init__(self) -> None:
        self.state = ClientState.UNOPENED
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def is_closed(self) -> bool:
        return self.state is ClientState.CLOSED

    def check_usable(self) -> None:
        if self.state is ClientState.CLOSED:
            raise RuntimeError("this MrtrClient has been closed; make a new one to talk to the server again")

    async def open(self) -> None:
        """Enter ``async with``: only once, and never after closing."""
        if self.state is ClientState.OPENED:
            raise RuntimeError("this MrtrClient is already open: enter it with `async with` once")
        self.check_usable()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self.state = ClientState.OPENED

    def close(self) -> bool:
        """Mark the client closed; False if it already was (nothing left to do)."""
        if self.state is ClientState.CLOSED:
            return False
        self.state = ClientState.CLOSED
        return True

    async def stop_background(self) -> None:
        """Cancel what runs in the background and wait for it to end."""
        group, self._group = self._group, None
        if group is not None:
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)

    def spawn(self, run: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Run ``run`` in the background if the client is opened; False (not run) otherwise."""
        if self._group is None:
            return False
        self._group.start_soon(run)
        return True
