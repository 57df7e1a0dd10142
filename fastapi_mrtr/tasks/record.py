"""One task as it is stored: :class:`TaskRecord`, plain JSON when serialised, and its wire views.

Everything a replica needs to answer ``tasks/get``, take ``tasks/update`` and ``tasks/cancel``, and
run the task's next leg lives in the record, so a store that keeps JSON (Redis) can hold it:

``principal``     whom the task belongs to: a digest of ``ServerOptions.principal_resolver``'s
                  answer (:func:`principal_digest`); another caller's id answers like an unknown one
``tool``, ``arguments``     what a leg replays
``client_capabilities``   what the ``tools/call`` declared; a later leg adds what ``tasks/update`` declares
``flow_id``       the flow id every leg runs with, so ``ctx.idempotency_key(step)`` is the same on
                  every leg
``answers``       engine key -> ``{"q": digest, "r": answer}``: the ledger of answers so far
``once``          step -> result of ``ctx.once`` recorded by earlier legs
``outstanding``   wire key -> ``{"key", "q", "method", "params"}``: the questions the task waits on
``issued_keys``   every wire key ever shown, so none is reused over the task's life
``result`` / ``error``      the terminal payload (``completed`` / ``failed``)
``cancel_requested``        ``tasks/cancel`` was received; the running leg is cancelled
``lease_owner`` / ``lease_expires_at``    which process runs a leg now, and until when it holds it
``version``       bumped by the store on every replace (compare-and-set)
``trace_anchor``  the ``traceparent`` of the span that created the task, so each later request and
                  leg links to it on any replica (``telemetry.tasks``); written only when tracing
                  is on: without tracing the stored JSON has no such key

Times are seconds since the epoch (floats); the wire shows them as ISO 8601.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from fastapi_mrtr.wire.tasks import INPUT_REQUIRED, TERMINAL_STATUSES, WORKING, TaskStatus

JSONObject = dict[str, Any]


def new_task_id() -> str:
    """An unguessable task id: 192 random bits, URL-safe (a task id is as good as a bearer token)."""
    return secrets.token_urlsafe(24)


def principal_digest(principal: str | None) -> str | None:
    """What a record keeps of its caller: a digest, never the credential the principal may be
    (the default principal is the ``Authorization`` header)."""
    if principal is None:
        return None
    return hashlib.sha256(b"fastapi-mrtr task owner\x00" + principal.encode()).hexdigest()


def iso8601(epoch: float) -> str:
    """``2026-12-05T19:30:00.123Z``: UTC, millisecond precision."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class TaskRecord:
    """One task (see the module docstring for each field)."""

    task_id: str
    principal: str | None
    tool: str
    arguments: JSONObject
    status: TaskStatus = WORKING
    status_message: str | None = None
    created_at: float = field(default_factory=time.time)
    last_updated_at: float = 0.0
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    flow_id: str | None = None
    client_capabilities: JSONObject = field(default_factory=dict)  # declared on the tools/call, for later legs
    answers: dict[str, JSONObject] = field(default_factory=dict)
    once: JSONObject = field(default_factory=dict)
    outstanding: dict[str, JSONObject] = field(default_factory=dict)
    issued_keys: list[str] = field(default_factory=list)
    result: JSONObject | None = None
    error: JSONObject | None = None
    cancel_requested: bool = False
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    version: int = 0
    trace_anchor: str | None = None

    def __post_init__(self) -> None:
        if not self.last_updated_at:
            self.last_updated_at = self.created_at

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def expires_at(self) -> float | None:
        """When the store may forget the task: its TTL counts from its creation (None: never)."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def touch(self) -> None:
        self.last_updated_at = time.time()

    def to_json(self) -> JSONObject:
        """The record as plain JSON (what a store keeps)."""
        data = asdict(self)
        if data["trace_anchor"] is None:  # untraced: the record stays what it always was
            del data["trace_anchor"]
        return data

    @classmethod
    def from_json(cls, data: JSONObject) -> TaskRecord:
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    # --- the wire views -------------------------------------------------------------------------

    def task_fields(self) -> JSONObject:
        """The ``Task`` fields: what ``CreateTaskResult`` and ``tasks/get`` share."""
        fields: JSONObject = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso8601(self.created_at),
            "lastUpdatedAt": iso8601(self.last_updated_at),
            "ttlMs": self.ttl_ms,
        }
        if self.status_message:
            fields["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            fields["pollIntervalMs"] = self.poll_interval_ms
        return fields

    def create_result(self) -> JSONObject:
        """``CreateTaskResult``: ``resultType: "task"`` and the task's fields, flat."""
        return {"resultType": "task", **self.task_fields()}

    def detailed(self) -> JSONObject:
        """``tasks/get``'s result: the ``DetailedTask`` of the current status, ``resultType: "complete"``."""
        body: JSONObject = {"resultType": "complete", **self.task_fields()}
        if self.status == INPUT_REQUIRED:
            body["inputRequests"] = {
                key: {"method": entry["method"], "params": entry["params"]} for key, entry in self.outstanding.items()
            }
        elif self.status == "completed" and self.result is not None:
            body["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            body["error"] = self.error
        return body
