"""The per-call record shared by the dispatcher, the in-process request and the handler's context.

It travels in the ASGI scope under :data:`SCOPE_KEY`. Suspension is recorded here *before* the
control-flow signal is raised, so the outcome is known even if a layer in between swallows or
rewraps the signal (a user ``except BaseException``, a middleware turning it into a 500).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TypeVar

from fastapi_mrtr.engine.ledger import ReplayLedger
from fastapi_mrtr.wire.compat import BaseExceptionGroup
from fastapi_mrtr.wire.mrtr import InputRequest
from fastapi_mrtr.wire.protocol import JSONObject

SCOPE_KEY = "fastapi_mrtr.call"

Notify = Callable[[str, JSONObject], Awaitable[None]]


class SuspendSignal(BaseException):
    """Raised by an unanswered ask. A ``BaseException`` so that ``except Exception`` cannot swallow it."""


class MissingCapabilitySignal(BaseException):
    """Raised when the handler needs an input kind the client did not declare on this request."""


@dataclass
class CallRecord:
    method: str  # "tools/call", "prompts/get", "resources/read" or "rest"
    target: str
    arguments: JSONObject
    client_capabilities: JSONObject
    ledger: ReplayLedger
    flow_id: str | None = None
    round: int = 0
    progress_token: str | int | None = None
    log_level: str | None = None
    notify: Notify | None = None
    strict_replay: bool = False
    trace_anchor: str | None = None  # round 1's traceparent, sealed on when tracing (telemetry.flows)
    # Outcomes, written by the context:
    suspended: bool = False
    missing_capability: JSONObject | None = None
    manual_input_requests: dict[str, InputRequest] | None = None
    manual_state: str | None = None
    # A plain REST call's round: how to seal the next state now, for a 428 built in the handler.
    seal_now: Callable[[], str] | None = None

    def abandon_input(self) -> None:
        self.suspended = False
        self.manual_input_requests = None
        self.missing_capability = None

    @property
    def wants_input(self) -> bool:
        return self.suspended or self.manual_input_requests is not None


E = TypeVar("E", bound=BaseException)


def find_exception(exc: BaseException, kind: type[E] | tuple[type[E], ...]) -> E | None:
    """``exc`` or the first exception inside it (exception groups, ``raise ... from``) of ``kind``."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_exception(inner, kind)
            if found is not None:
                return found
    return find_exception(exc.__cause__, kind) if exc.__cause__ is not None else None


def find_signal(exc: BaseException) -> BaseException | None:
    """Our signal, also when anyio or a task group wrapped it in an exception group."""
    return find_exception(exc, (SuspendSignal, MissingCapabilitySignal))


class _SuspensionCatcher(AbstractContextManager["_SuspensionCatcher"]):
    """Ends the ``with`` block quietly when the run inside it stopped to ask (see :data:`catch_suspension`).

    Entering does nothing (the base's ``__enter__``); all of it happens on the way out.
    """

    __slots__ = ()

    def __call__(self) -> _SuspensionCatcher:
        return self  # ``with catch_suspension():`` reads as well as ``with catch_suspension:``

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: object) -> bool:
        return exc is not None and find_signal(exc) is not None


catch_suspension = _SuspensionCatcher()
"""Where a run is caught when it suspends: ``with catch_suspension: await run()``.

The signal (an unanswered input request, or an input kind the client lacks) is swallowed, also
inside an exception group or as the cause of another exception; anything else propagates. The
block then ends early and the caller reads the outcome from the :class:`CallRecord`, where the
context wrote it before raising. Every layer that runs a handler catches the signal here.
"""
