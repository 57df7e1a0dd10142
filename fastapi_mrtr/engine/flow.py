"""The rules on ``requestState``: every check on the incoming one, the flow's limits on the next.

:class:`StateGuard` is what a round (``engine.rounds.Round``) opens its state with and seals the
next one with; ``state.sealing`` does the cryptography. Every check on the incoming state
happens here, before any handler runs. Whatever the cause
(tampered, expired, another tool, arguments or caller, replayed when single-use is on), the client
gets one frozen error; the cause goes to the log only.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.input_responses import malformed_reason
from fastapi_mrtr.engine.ledger import ReplayLedger
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.replay_store import NO_HOLD, StateHold, hold_state
from fastapi_mrtr.state.sealing import (
    InvalidRequestStateError,
    RequestStateSealer,
    RequestStateTooLargeError,
    StateBinding,
    StateClaims,
    StateKeyRing,
    arguments_digest,
)
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, ServerError
from fastapi_mrtr.wire.protocol import JSONObject

logger = logging.getLogger("fastapi_mrtr")

INVALID_STATE_MESSAGE = "Invalid or expired requestState"
# Why a state sealed by this app is not opened by this process, when it has no configured key: the
# usual cause is several workers or replicas, each with its own ephemeral key (or a restart). Only
# said when the key is ephemeral, which is no secret: every such server says it in its log at start.
KEYS_DIFFER = (
    "it was sealed with a key this server process does not have. This process has no configured key, so "
    "each worker or replica (and each restart) seals with its own; set the same secret on all of them with "
    "the MRTR_STATE_KEY environment variable or ServerOptions(request_state_key=...)"
)


def invalid_state() -> ServerError:
    return ServerError(INVALID_PARAMS, INVALID_STATE_MESSAGE, {"reason": "invalid_request_state"})


def key_ring(options: ServerOptions) -> StateKeyRing:
    if options.request_state_key is None:
        logger.warning(
            "fastapi-mrtr: no request_state_key configured; using an ephemeral per-process key. "
            "requestState sealed by this process cannot be opened by another worker or replica, nor "
            "after a restart: set ServerOptions(request_state_key=...) (or MRTR_STATE_KEY) for any "
            "multi-worker or multi-replica deployment."
        )
        return StateKeyRing.ephemeral()
    return StateKeyRing(options.request_state_key)


class StateGuard:
    """Opens and seals ``requestState`` for one server, with its key ring, options and limits."""

    def __init__(self, options: ServerOptions, keys: StateKeyRing) -> None:
        self.options = options
        self.keys = keys
        # A state lives one round: round_timeout is its whole expiry (0 = none).
        self.round_ttl = options.input_required_config.round_timeout
        self._tokens = RequestStateSealer(keys, ttl=self.round_ttl, max_bytes=options.request_state_max_bytes)

    def binding(
        self, method: str, target: str, arguments: Mapping[str, Any], headers: Mapping[str, str]
    ) -> StateBinding:
        return StateBinding(
            method=method,
            target=target,
            arguments_digest=arguments_digest(arguments),
            audience=self.options.name,
            principal=self.options.principal_resolver(headers),
        )

    async def open(
        self, params: JSONObject, method: str, target: str, arguments: Mapping[str, Any], headers: Mapping[str, str]
    ) -> tuple[ReplayLedger, StateClaims | None, StateHold, StateBinding | None]:
        """The ledger of this round, the claims of the incoming state (None on a first round), the
        round's hold on that state when it is single-use (release it on a ``correctable`` refusal),
        and the binding it was checked against.

        The binding is only computed when there is a state to check (else None): a call that
        brings none (and then completes) never pays for digesting its arguments.
        """
        responses = params.get("inputResponses")
        if responses is None:
            responses = {}
        if not isinstance(responses, dict):
            raise ServerError(INVALID_PARAMS, "inputResponses must be an object mapping keys to results")
        token = params.get("requestState")
        if token is None:
            accept = self.options.input_required_config.accept_unsolicited_answers
            if accept:  # which keys are elicitations is not known yet: every kind of result is an object
                refuse_malformed({"asked": dict.fromkeys(responses, "")}, responses)
            return ReplayLedger.first_round(responses, accept), None, NO_HOLD, None
        binding = self.binding(method, target, arguments, headers)
        claims = await self._verify(token, binding, headers)
        refuse_malformed(claims.data, responses)
        hold = await self._claim(claims) if self.options.replay_store is not None else NO_HOLD
        return ReplayLedger.from_sealed(claims.data, responses), claims, hold, binding

    async def _verify(self, token: object, binding: StateBinding, headers: Mapping[str, str]) -> StateClaims:
        options = self.options
        try:
            claims = self._tokens.open(token, binding)
            if options.request_state_verifier is not None:
                outcome = options.request_state_verifier(claims, headers)
                if inspect.isawaitable(outcome):
                    await outcome
        except InvalidRequestStateError as exc:
            if exc.reason == "unknown_key" and self.keys.is_ephemeral:
                logger.warning(
                    "requestState refused for %s %r: %s. %s", binding.method, binding.target, exc.reason, KEYS_DIFFER
                )
                raise ServerError(
                    INVALID_PARAMS, f"{INVALID_STATE_MESSAGE}: {KEYS_DIFFER}", {"reason": "invalid_request_state"}
                ) from None
            logger.warning("requestState refused for %s %r: %s", binding.method, binding.target, exc.reason)
            raise invalid_state() from None
        return claims

    async def _claim(self, claims: StateClaims) -> StateHold:
        """Claim the single-use state before the handler runs: a second claim is refused."""
        store = self.options.replay_store
        assert store is not None
        try:
            hold = await hold_state(store, claims.jti, _usable_until(claims))
        except Exception:
            logger.exception("replay store unavailable; refusing the round (fail closed)")
            raise ServerError(
                INTERNAL_ERROR,
                "requestState replay store unavailable; retry later",
                {"reason": "replay_store_unavailable"},
                http_status=503,
            ) from None
        if hold is None:
            logger.warning("requestState %s was already used (single-use store)", claims.jti)
            raise invalid_state()
        return hold

    def seal(self, record: CallRecord, binding: StateBinding, claims: StateClaims | None) -> str:
        config = self.options.input_required_config
        next_round = (claims.round if claims else 0) + 1
        if next_round > config.max_rounds:
            raise ServerError(
                INVALID_PARAMS,
                f"Too many input rounds: this flow reached the limit of {config.max_rounds}",
                {"reason": "max_rounds_exceeded", "maxRounds": config.max_rounds},
            )
        now = time.time()
        if claims is not None:
            deadline = claims.flow_deadline
        else:
            deadline = int(now + config.flow_timeout) if config.flow_timeout > 0 else None
        data = record.ledger.next_state(record.manual_state)
        limit = self.options.request_state_max_bytes

        def mint(payload: JSONObject) -> str:
            return self._tokens.seal(
                payload,
                binding,
                round=next_round,
                flow_id=record.flow_id,
                flow_deadline=deadline,
                now=now,
                trace_anchor=record.trace_anchor,
            )

        try:
            return mint(data)
        except RequestStateTooLargeError:
            pass
        # The recorded answers ("ans") are the client's words; the rest is the server's. If the
        # state fits without them, the answers made it too large: the client's error, and its
        # previous state still works with shorter answers. Only this failing round pays the retry.
        if "ans" in data and _fits(mint, {k: v for k, v in data.items() if k != "ans"}):
            logger.info("answers for %r too large to seal in %d bytes; refused", binding.target, limit)
            raise ServerError(
                INVALID_PARAMS,
                f"The answers in inputResponses are too large to carry in requestState ({limit} bytes); "
                "send shorter answers",
                {"reason": "input_responses_too_large"},
                correctable=True,
            )
        logger.error("requestState for %r exceeds %d bytes", binding.target, limit)
        raise ServerError(
            INTERNAL_ERROR,
            "The state of this flow grew too large to send; keep ctx.once results small",
            {"reason": "request_state_too_large"},
        )


def refuse_malformed(data: JSONObject, responses: JSONObject) -> None:
    """Refuse (-32602) an answer to a question of the last round that is no result at all.

    Checked before the handler runs (and before a single-use state is claimed, so the client can
    resend the same state with a well-formed answer). Asking again would bring the same message
    back until ``max_rounds``; the spec's "ask again" is for an answer that is missing.
    """
    asked = data.get("asked") or {}
    elicitations = set(data.get("el") or ())
    for key, response in responses.items():
        if key not in asked:
            continue  # unknown keys are ignored (spec-notes 1.6)
        why = malformed_reason(response, elicitation=key in elicitations)
        if why is not None:
            logger.warning("inputResponses[%r] refused as malformed: %s", key, why)
            raise ServerError(
                INVALID_PARAMS,
                f"Invalid inputResponses[{key!r}]: {why}",
                {"reason": "malformed_input_response", "key": key},
                correctable=True,
            )


def _fits(mint: Callable[[JSONObject], str], data: JSONObject) -> bool:
    try:
        mint(data)
    except RequestStateTooLargeError:
        return False
    return True


def _usable_until(claims: StateClaims) -> int | None:
    """When the token stops opening: its own expiry or the flow's deadline, whichever comes first."""
    limits = [t for t in (claims.expires_at, claims.flow_deadline) if t is not None]
    return min(limits) if limits else None
