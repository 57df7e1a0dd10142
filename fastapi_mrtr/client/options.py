"""Client options: the MRTR loop bounds, the identity sent in ``_meta`` and HTTP defaults."""

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

    def __post_init__(self) -> None:
        if not isinstance(self.input_required_config, InputRequiredConfig):
            raise TypeError(
                "input_required_config must be the client's fastapi_mrtr.client.InputRequiredConfig, not "
                f"{type(self.input_required_config).__module__}.{type(self.input_required_config).__qualname__}"
            )
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
