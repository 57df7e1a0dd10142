"""How a tool runs as a task (SEP-2663): :class:`TaskConfig`, what ``@mcp.tool(task=...)`` records.

``mode``: ``"optional"`` (a plain call for a client without the tasks extension, a task when the
call outlives ``promote_after`` and the client declared it) or ``"required"`` (a client that did
not declare the extension is refused with -32021; a 2025-era session still runs the tool as a
plain call, since tasks do not exist there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskMode = Literal["optional", "required"]


@dataclass(frozen=True)
class TaskConfig:
    """A tool's task settings (see the module docstring and docs/tasks.md).

    ``promote_after``: seconds the call may run before it becomes a task; a call that finishes
    (or stops to ask, before it became a task) within them answers as a plain call.
    ``ttl_ms``: how long the task is kept after its creation (None: until the store is cleared).
    ``poll_interval_ms``: the polling interval suggested to the client.
    ``resumable``: whether another replica may run the task again from its ledger when the process
    running it died (True: the handler is replayed, so its side effects must be safe to repeat,
    e.g. keyed by ``ctx.idempotency_key``; False: such a task ends ``failed``). docs/tasks.md, Storage.
    """

    mode: TaskMode = "optional"
    promote_after: float = 1.0
    ttl_ms: int | None = 3_600_000
    poll_interval_ms: int | None = 1000
    resumable: bool = True

    def __post_init__(self) -> None:
        if self.mode not in ("optional", "required"):
            raise ValueError(f'task mode must be "optional" or "required", not {self.mode!r}')
        if self.promote_after < 0:
            raise ValueError("promote_after must be >= 0 seconds")
        if self.ttl_ms is not None and self.ttl_ms <= 0:
            raise ValueError("ttl_ms must be a positive number of milliseconds, or None")
        if self.poll_interval_ms is not None and self.poll_interval_ms <= 0:
            raise ValueError("poll_interval_ms must be a positive number of milliseconds, or None")


def task_config(value: TaskMode | TaskConfig | None) -> TaskConfig | None:
    """``@mcp.tool(task=...)``'s value as a :class:`TaskConfig` (a mode alone takes the defaults)."""
    if value is None or isinstance(value, TaskConfig):
        return value
    return TaskConfig(mode=value)
