"""Options shared by the server and the client. Plain dataclasses: no FastAPI, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputRequiredConfig:
    """How MRTR rounds are bounded (SEP-2322 leaves the limits to each side).

    Server side (``ServerOptions.input_required_config``):
      * ``max_rounds``: the most ``input_required`` answers one flow may receive; enforced from the
        round counter sealed in ``requestState``.
      * ``round_timeout``: seconds a client may take between an ``input_required`` answer and its
        retry (caps the state's expiry; 0 = no cap).
      * ``flow_timeout``: seconds from a flow's first round to its last retry (0 = no limit).
      * ``legacy_shim``: reserved for serving pre-2026 clients; not used by the stateless wire.
      * ``accept_unsolicited_answers``: on a first round (no ``requestState``), also use
        ``inputResponses`` for keys the handler asks, and show them in ``ctx.input_responses``.
        Off by default: answers count only for questions the server sealed into the previous
        round's state, so a first round has none (in manual mode too).

    Client side (``ClientOptions.input_required_config``):
      * ``auto_fulfill``: answer input requests with the registered handlers and retry until the
        result is complete; otherwise hand the ``InputRequiredResult`` to the caller.
      * ``max_rounds``: the most retries before ``InputRequiredRoundsExceeded``.
      * ``round_timeout``: seconds the handlers of one round may take.
      * ``max_total_timeout``: seconds for the whole flow (0 = no limit).
    """

    max_rounds: int = 10
    round_timeout: float = 600.0
    flow_timeout: float = 1800.0
    legacy_shim: bool = False
    accept_unsolicited_answers: bool = False
    auto_fulfill: bool = True
    max_total_timeout: float = 0.0

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        for name in ("round_timeout", "flow_timeout", "max_total_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 means no limit)")
