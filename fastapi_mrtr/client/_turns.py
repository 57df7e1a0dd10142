"""One conversation at a time: the turn order of the interactive handlers.

The handlers of one round (or of several server requests on one 2025-era stream) run
concurrently, which is right for a roots handler and wrong for two handlers that both talk to a
person: each would print its prompt and read whichever line comes first. Interactive handlers
therefore take a ticket in the order the server listed the requests and run one after the other
in ticket order; the others run beside them. A ticket whose handler never runs (a failed round,
a cancelled call) is released, so the turns after it are never stuck.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class TurnOrder:
    """A ticket queue: ``take()`` in the listed order, then ``async with turn(ticket)``."""

    def __init__(self) -> None:
        self._next = 0  # the next ticket to hand out
        self._serving = 0  # the ticket whose turn it is
        self._released: set[int] = set()  # tickets done (or given up) ahead of their turn
        self._changed: anyio.Event | None = None  # made on first wait: needs a running event loop

    def take(self) -> int:
        """A ticket behind every ticket taken so far (synchronous, so the order is the caller's)."""
        ticket = self._next
        self._next += 1
        return ticket

    def release(self, ticket: int) -> None:
        """The ticket's turn is over (or will never come); idempotent."""
        if ticket < self._serving or ticket in self._released:
            return
        self._released.add(ticket)
        while self._serving in self._released:
            self._released.discard(self._serving)
            self._serving += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    @asynccontextmanager
    async def turn(self, ticket: int) -> AsyncIterator[None]:
        """Wait for the ticket's turn, hold it for the block, then pass it on (also on failure)."""
        try:
            while self._serving < ticket:
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()
            yield
        finally:
            self.release(ticket)
