"""Client options: the MRTR loop bounds, task polling, the identity sent in ``_meta`` and HTTP defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import metadata
from typing import Literal, get_args

import httpx

from fastapi_mrtr.telemetry.setup import Telemetry
from fastapi_mrtr.wire.protocol import LEGACY_PROTOCOL_VERSIONS, PROTOCOL_VERSION, Implementation


def _package_version() -> str:
    try:
        return metadata.version("fastapi-mrtr")
    except metadata.PackageNotFoundError:  # running from a source checkout
        return "0.1.0"


def default_client_info() -> Implementation:
    """The ``clientInfo`` sent when the caller names none."""
    return Implementation(name="fastapi-mrtr-client", version=_package_version())


# Which era the client speaks: "auto" probes (server/discover, then initialize on a non-modern
# error), "legacy" opens a 2025-era session at once, "2026-07-28" never opens one.
ClientMode = Literal["auto", "legacy", "2026-07-28"]
Era = Literal["legacy", "2026-07-28"]

# Reads stay open long: a tool may stream progress over SSE for minutes before its result.
DEFAULT_HTTP_TIMEOUT = httpx.Timeout(30.0, read=600.0)


@dataclass(frozen=True, kw_only=True)
class InputRequiredConfig:
    """How the client runs the MRTR loop. The server has its own ``fastapi_mrtr.InputRequiredConfig``.

    * ``auto_fulfill``: answer input requests with the registered handlers and retry until the
      result is complete; otherwise hand the ``InputRequiredResult`` to the caller.
    * ``max_rounds``: the most retries after the first request, then ``MaxRoundsExceededError``.
    * ``round_timeout``: seconds the handlers of one round may take (0 = no limit), then
      ``RoundTimeoutError``.
    * ``max_total_timeout``: seconds for the whole flow, requests included (0 = no limit), then
      ``FlowTimeoutError``.
    """

    auto_fulfill: bool = True
    max_rounds: int = 10
    round_timeout: float = 600.0
    max_total_timeout: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise ValueError(f"max_rounds must be an integer >= 1, not {self.max_rounds!r}")
        for name in ("round_timeout", "max_total_timeout"):
            seconds = getattr(self, name)
            if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0 (0 means no limit), not {seconds!r}")


@dataclass(frozen=True, kw_only=True)
class TaskOptions:
    """How the client takes part in the tasks extension (SEP-2663) on the 2026-07-28 wire.

    * ``enabled``: declare ``io.modelcontextprotocol/tasks`` on every ``tools/call``, so a server may
      answer a long call with a task, which :meth:`~fastapi_mrtr.client.MrtrClient.call_tool` then
      drives to its result. Off: the server runs the call within the request (or refuses a tool
      that needs a task with -32021). Never declared in a 2025-era session.
    * ``default_poll_interval``: seconds between two ``tasks/get`` when the task names no
      ``pollIntervalMs``.
    * ``min_poll_interval`` / ``max_poll_interval``: the bounds put on the server's
      ``pollIntervalMs`` (a server cannot make us poll in a tight loop, nor go quiet for an hour).
    * ``max_wait``: seconds a call may wait for its task (0 = until the task ends; its TTL bounds
      it), then ``TaskTimeoutError`` and ``tasks/cancel``.
    * ``cancel_timeout``: seconds the ``tasks/cancel`` sent on the way out may take.
    """

    enabled: bool = True
    default_poll_interval: float = 1.0
    min_poll_interval: float = 0.1
    max_poll_interval: float = 30.0
    max_wait: float = 0.0
    cancel_timeout: float = 5.0

    def __post_init__(self) -> None:
        for name in ("default_poll_interval", "min_poll_interval", "max_poll_interval", "max_wait", "cancel_timeout"):
            seconds = getattr(self, name)
            if isinstance(seconds, bool) or not (isinstance(seconds, int | float) and math.isfinite(seconds)):
                raise ValueError(f"{name} must be a finite number of seconds, not {seconds!r}")
            if seconds < 0:
                raise ValueError(f"{name} must be >= 0, not {seconds!r}")
        if not 0 < self.min_poll_interval <= self.max_poll_interval:
            raise ValueError("the poll interval bounds must satisfy 0 < min_poll_interval <= max_poll_interval")

    def poll_delay(self, poll_interval_ms: int | None) -> float:
        """Seconds to wait before the next ``tasks/get``: the task's interval, within the bounds."""
        seconds = self.default_poll_interval if poll_interval_ms is None else poll_interval_ms / 1000
        return min(max(seconds, self.min_poll_interval), self.max_poll_interval)


@dataclass(frozen=True)
class ClientOptions:
    """How an :class:`~fastapi_mrtr.client.MrtrClient` talks to a server.

    * ``input_required_config``: ``auto_fulfill``, ``max_rounds``, ``round_timeout`` and
      ``max_total_timeout`` of the MRTR loop (see :class:`InputRequiredConfig`).
    * ``client_info``: sent as ``io.modelcontextprotocol/clientInfo`` on every request.
    * ``protocol_version``: sent in ``_meta`` and in the ``MCP-Protocol-Version`` header.
    * ``http_timeout``: used only when the client creates its own ``httpx.AsyncClient``; a client
      you pass in keeps its own timeouts.
    * ``state_only_backoff``: ``(first, cap)`` seconds to wait before retrying a round that
      carried only ``requestState`` (the server is shedding load); doubles up to ``cap``.
    * ``mirror_param_headers``: send ``Mcp-Param-*`` headers for tool arguments whose schema
      property carries ``x-mcp-header`` (learned from ``tools/list``).
    * ``mode``: ``"auto"`` (probe with ``server/discover``; a reply that is no recognised modern
      one means a 2025-era server, so ``initialize``), ``"legacy"`` (always a 2025-era session)
      or ``"2026-07-28"`` (never one).
    * ``legacy_protocol_version``: the version asked for in ``initialize`` (the server may answer
      an older one this client also speaks).
    * ``telemetry``: OpenTelemetry client spans and ``mcp.client.operation.duration``, with the
      trace context sent in ``_meta`` (a ``fastapi_mrtr.Telemetry``: the global providers unless it
      names its own; nothing without an SDK, docs/observability.md).
    * ``tasks``: the tasks extension: declared by default on the 2026-07-28 wire, how often to poll
      (see :class:`TaskOptions`).
    """

    input_required_config: InputRequiredConfig = field(default_factory=InputRequiredConfig)
    client_info: Implementation = field(default_factory=default_client_info)
    protocol_version: str = PROTOCOL_VERSION
    http_timeout: httpx.Timeout = field(default_factory=lambda: DEFAULT_HTTP_TIMEOUT)
    state_only_backoff: tuple[float, float] = (0.05, 0.25)
    mirror_param_headers: bool = True
    mode: ClientMode = "auto"
    legacy_protocol_version: str = LEGACY_PROTOCOL_VERSIONS[0]
    telemetry: Telemetry = field(default_factory=Telemetry)
    tasks: TaskOptions = field(default_factory=TaskOptions)

    def __post_init__(self) -> None:
        if not isinstance(self.input_required_config, InputRequiredConfig):
            raise TypeError(
                "input_required_config must be the client's fastapi_mrtr.client.InputRequiredConfig, not "
                f"{type(self.input_required_config).__module__}.{type(self.input_required_config).__qualname__}"
            )
        if not isinstance(self.tasks, TaskOptions):
            raise TypeError(f"tasks must be a fastapi_mrtr.client.TaskOptions, not {type(self.tasks).__qualname__}")
        if self.mode not in get_args(ClientMode):
            raise ValueError(f"mode must be one of {', '.join(get_args(ClientMode))}, not {self.mode!r}")
        if self.legacy_protocol_version not in LEGACY_PROTOCOL_VERSIONS:
            raise ValueError(
                f"legacy_protocol_version must be one of {', '.join(LEGACY_PROTOCOL_VERSIONS)}, "
                f"not {self.legacy_protocol_version!r}"
            )
        object.__setattr__(self, "telemetry", self.telemetry.for_client())  # the mcp.client.* metric names
        first, cap = self.state_only_backoff
        if first < 0 or cap < first:
            raise ValueError("state_only_backoff must be (first, cap) with 0 <= first <= cap")
