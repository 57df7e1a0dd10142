"""``ServerOptions`` and its ``InputRequiredConfig``: fully defaulted, keyword-only, frozen.

The client has its own ``fastapi_mrtr.client.InputRequiredConfig``: the two sides bound a flow
differently, so they share the name and not the class.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Union

from fastapi_mrtr.telemetry.setup import Telemetry

if TYPE_CHECKING:
    from fastapi_mrtr.state.redis_relay import RedisRelay
    from fastapi_mrtr.state.replay_store import ReplayStore
    from fastapi_mrtr.state.sealing import StateClaims

SecretKey = Union[bytes, str]
PrincipalResolver = Callable[[Mapping[str, str]], str | None]
"""Maps the caller's HTTP headers (lower-case names) to a principal id, or None when anonymous."""
RequestStateVerifier = Callable[["StateClaims", Mapping[str, str]], None | Awaitable[None]]
"""Extra checks on an opened requestState; raise ``InvalidRequestStateError`` to refuse it."""


def principal_from_authorization(headers: Mapping[str, str]) -> str | None:
    """The default principal: the caller's ``Authorization`` header, when present.

    Only a keyed hash of it is sealed into ``requestState``; a flow started by one credential
    cannot be continued with another.
    """
    return headers.get("authorization") or None


@dataclass(frozen=True, kw_only=True)
class InputRequiredConfig:
    """How the server bounds an MRTR flow (SEP-2322 leaves the limits to each side).

    * ``max_rounds``: the most ``input_required`` answers one flow may receive; enforced from the
      round counter sealed in ``requestState``.
    * ``round_timeout``: seconds a client has to answer one round. Each ``requestState`` is sealed
      with ``exp = now + round_timeout`` and no other option sets that expiry (0 = none; the
      ``flow_timeout`` still applies).
    * ``flow_timeout``: seconds from a flow's first round to its last retry, sealed once and
      carried unchanged through every round (0 = no limit).
    * ``legacy_shim``: serve 2025-era clients too (on by default). They open an MCP session with
      ``initialize``; when a handler asks (``ctx.elicit`` and friends), the server sends each
      question as a real request on the call's stream and replays the handler in process with the
      answers, under the same ``max_rounds`` and with ``round_timeout`` bounding each wait for
      the client. ``False`` makes the server modern-only: ``initialize`` is refused with the
      versions it supports (docs/eras.md).
    * ``accept_unsolicited_answers``: on a first round (no ``requestState``), also use
      ``inputResponses`` for keys the handler asks, and show them in ``ctx.input_responses``.
      Off by default: answers count only for questions the server sealed into the previous
      round's state, so a first round has none (in manual mode too).
    """

    max_rounds: int = 10
    round_timeout: float = 300.0
    flow_timeout: float = 1800.0
    legacy_shim: bool = True
    accept_unsolicited_answers: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise ValueError(f"max_rounds must be an integer >= 1, not {self.max_rounds!r}")
        for name in ("round_timeout", "flow_timeout"):
            seconds = getattr(self, name)
            if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0 (0 means no limit), not {seconds!r}")


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """Everything an ``MCP`` endpoint can be told. All fields have safe defaults.

    Identity: ``name`` (also the ``requestState`` audience), ``version``, ``title``, ``instructions``.
    State sealing: ``request_state_key`` (a secret of at least 32 bytes, or a list for rotation:
    the first seals, all open; ``None`` = an ephemeral per-process key, with a warning),
    ``request_state_max_bytes``, ``request_state_verifier``, ``principal_resolver``,
    ``replay_store`` (single-use state).
    Replay: ``input_required_config`` (the rounds, and how long a state is valid: its
    ``round_timeout``), ``strict_replay`` (a changed question raises instead of being asked again).
    HTTP: ``forward_headers`` (caller headers passed to the endpoint), ``allowed_hosts`` and
    ``allowed_origins`` (besides localhost; ``"*"`` allows any), ``max_body_bytes``.
    Listing: ``page_size``, ``cache_ttl_ms``, ``cache_scope`` (the caching hints of every list,
    ``resources/read`` and ``server/discover`` result).
    2025-era sessions (see ``InputRequiredConfig.legacy_shim``): ``legacy_session_ttl`` (seconds a
    session id is valid; 0 = until the key that sealed it is retired), ``legacy_max_streams`` and
    ``legacy_max_streams_per_caller`` (open legacy streams and calls waiting for an answer in this
    process, in total and of one caller: its client address), ``legacy_sse_close_after`` (seconds
    after which a running call's stream is closed for the client to resume with ``Last-Event-ID``,
    SEP-1699 polling; 0 keeps it open), ``legacy_max_subscriptions`` and
    ``legacy_max_subscription_uri_length`` (``resources/subscribe`` per session: how many URIs, how
    long each), ``legacy_max_ended_sessions`` (ended sessions this process remembers without a
    relay; past it the oldest sessions end early), ``relay`` (a ``RedisRelay``, so that any replica
    serves any request of a session: answers, resumed streams, DELETE, notifications; and a task's
    cancel reaches the replica running it). Tasks: ``task_lease_seconds`` (how long a task's runner
    holds it without a heartbeat; a replica that died is replaced that long after, docs/tasks.md).
    Subscriptions: ``subscriptions`` (serve ``subscriptions/listen`` and advertise ``listChanged``),
    ``subscription_max_streams`` (open streams at once), ``subscription_max_streams_per_caller``
    (open streams of one caller: its client address), ``subscription_max_seconds``
    (the longest a stream stays open before the server ends it), ``subscription_keepalive_seconds``.
    Playground: ``playground`` (the page at ``{mount}/playground``; ``None`` = on when the host app
    has ``docs_url`` set, docs/playground.md).
    Telemetry: ``telemetry`` (a ``Telemetry``: OpenTelemetry spans and metrics by the MCP
    conventions, with the global providers unless it names its own; nothing when no SDK is set
    up, docs/observability.md).
    """

    name: str = "fastapi-mrtr"
    version: str = "0.0.0"
    title: str | None = None
    instructions: str | None = None

    request_state_key: SecretKey | Sequence[SecretKey] | None = None
    request_state_max_bytes: int = 16 * 1024
    request_state_verifier: RequestStateVerifier | None = None
    principal_resolver: PrincipalResolver = principal_from_authorization
    replay_store: ReplayStore | None = None

    input_required_config: InputRequiredConfig = field(default_factory=InputRequiredConfig)
    strict_replay: bool = False

    forward_headers: tuple[str, ...] = ("authorization", "cookie")
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024

    page_size: int = 100
    cache_ttl_ms: int = 60_000
    cache_scope: Literal["public", "private"] = "public"

    legacy_session_ttl: float = 86_400.0
    legacy_max_streams: int = 10_000
    legacy_max_streams_per_caller: int = 1000
    legacy_sse_close_after: float = 0.0
    legacy_max_subscriptions: int = 32
    legacy_max_subscription_uri_length: int = 2048
    legacy_max_ended_sessions: int = 100_000
    relay: RedisRelay | None = None
    task_lease_seconds: float = 30.0

    subscriptions: bool = True
    subscription_max_streams: int = 1000
    subscription_max_streams_per_caller: int = 16
    subscription_max_seconds: float = 3600.0
    subscription_keepalive_seconds: float = 15.0

    playground: bool | None = None  # None: served where the host app serves /docs (docs_url set)

    telemetry: Telemetry = field(default_factory=Telemetry)

    def __post_init__(self) -> None:
        if not isinstance(self.input_required_config, InputRequiredConfig):
            raise TypeError(
                "input_required_config must be the server's fastapi_mrtr.InputRequiredConfig, not "
                f"{type(self.input_required_config).__module__}.{type(self.input_required_config).__qualname__}"
            )
        if self.max_body_bytes <= 0 or self.page_size <= 0:
            raise ValueError("max_body_bytes and page_size must be positive")
        if self.cache_ttl_ms < 0:
            raise ValueError("cache_ttl_ms must be >= 0")
        if not (math.isfinite(self.task_lease_seconds) and self.task_lease_seconds > 0):
            lease = self.task_lease_seconds
            raise ValueError(f"task_lease_seconds must be a positive number of seconds, not {lease!r}")
        if min(self.subscription_max_streams, self.subscription_max_streams_per_caller) <= 0:
            raise ValueError("subscription_max_streams and subscription_max_streams_per_caller must be positive")
        if min(self.legacy_max_streams, self.legacy_max_streams_per_caller) <= 0:
            raise ValueError("legacy_max_streams and legacy_max_streams_per_caller must be positive")
        if min(self.legacy_max_subscriptions, self.legacy_max_subscription_uri_length) <= 0:
            raise ValueError("legacy_max_subscriptions and legacy_max_subscription_uri_length must be positive")
        if self.legacy_max_ended_sessions <= 0:
            raise ValueError("legacy_max_ended_sessions must be positive")
        if self.legacy_session_ttl < 0 or self.legacy_sse_close_after < 0:
            raise ValueError("legacy_session_ttl and legacy_sse_close_after must be >= 0 (0 = none)")
        if self.subscription_max_seconds <= 0:
            raise ValueError("subscription_max_seconds must be positive")
        if self.subscription_keepalive_seconds <= 0:
            raise ValueError("subscription_keepalive_seconds must be positive")
        object.__setattr__(self, "forward_headers", tuple(h.lower() for h in self.forward_headers))
