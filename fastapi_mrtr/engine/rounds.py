"""One MRTR round of ``tools/call``, ``prompts/get``, ``resources/read`` or a plain REST call.

:class:`Round` is the one object for it, whichever way the call came in: it opens the incoming
state (refusing bad state before anything runs), holds the :class:`CallRecord` the handler
writes, and seals the next state when the handler stopped to ask. A single-use state is claimed
when it is opened; a refusal the client can correct (a missing capability, answers too large)
releases it, so the corrected retry finds it free. MCP methods run a whole round with
:func:`run_round`; a REST call (``integration.rest``) opens one when its route asks for ``ctx``
and answers 428 from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from fastapi_mrtr.engine.call import CallRecord, Notify
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.state.replay_store import StateHold
from fastapi_mrtr.state.sealing import StateBinding, StateClaims
from fastapi_mrtr.telemetry.flows import flow_sealed, round_opened
from fastapi_mrtr.telemetry.setup import SWITCH
from fastapi_mrtr.wire.errors import MISSING_REQUIRED_CLIENT_CAPABILITY, ServerError
from fastapi_mrtr.wire.protocol import JSONObject, dump

RunHandler = Callable[[CallRecord], Awaitable[JSONObject]]


class RoundRequest(Protocol):
    """What a round needs of the request that carries it (the transport's ``RpcRequest``)."""

    @property
    def params(self) -> JSONObject: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def client_capabilities(self) -> JSONObject: ...
    @property
    def progress_token(self) -> str | int | None: ...
    @property
    def log_level(self) -> str | None: ...
    @property
    def notify(self) -> Notify | None: ...


class Round:
    """One round of one call: the state it came with, the record its handler writes, the next state."""

    def __init__(
        self,
        guard: StateGuard,
        record: CallRecord,
        headers: Mapping[str, str],
        claims: StateClaims | None,
        hold: StateHold,
        binding: StateBinding | None,
    ) -> None:
        self.record = record
        self.correctable_status: int | None = None  # the HTTP status of a refusal the client can correct
        self._guard = guard
        self._headers = headers
        self._claims = claims
        self._hold = hold
        self._binding = binding  # None until needed: a call that brings no state and completes never digests

    @classmethod
    async def open(
        cls,
        guard: StateGuard,
        *,
        method: str,
        target: str,
        arguments: JSONObject,
        params: JSONObject,
        headers: Mapping[str, str],
        client_capabilities: JSONObject,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        notify: Notify | None = None,
    ) -> Round:
        """Check the incoming ``requestState`` and ``inputResponses`` of ``params``; raises ``ServerError``."""
        ledger, claims, hold, binding = await guard.open(params, method, target, arguments, headers)
        record = CallRecord(
            method=method,
            target=target,
            arguments=arguments,
            client_capabilities=client_capabilities,
            ledger=ledger,
            flow_id=claims.flow_id if claims else None,
            round=claims.round if claims else 0,
            progress_token=progress_token,
            log_level=log_level,
            notify=notify,
            strict_replay=guard.options.strict_replay,
        )
        if SWITCH.on:  # the one check tracing costs a round when no SDK is configured
            record.trace_anchor = round_opened(
                record.round + 1, record.flow_id, claims.trace_anchor if claims else None
            )
        return cls(guard, record, headers, claims, hold, binding)

    def seal(self) -> str:
        """The next ``requestState``. A refusal the client can correct is noted before it is raised."""
        record = self.record
        if SWITCH.on:
            record.flow_id, record.trace_anchor = flow_sealed(record.flow_id, record.trace_anchor)
        try:
            if self._binding is None:
                self._binding = self._guard.binding(record.method, record.target, record.arguments, self._headers)
            return self._guard.seal(record, self._binding, self._claims)
        except ServerError as exc:
            if exc.correctable:
                self.correctable_status = exc.http_status
            raise

    def outcome(self, result: JSONObject) -> JSONObject:
        """What the round answers, once its handler ran: ``result``, or ``input_required``."""
        record = self.record
        if record.missing_capability is not None:
            raise missing_capability(record.missing_capability)
        if not record.wants_input:
            return result
        return {"resultType": "input_required", "inputRequests": input_requests_of(record), "requestState": self.seal()}

    async def release(self) -> None:
        """Give the single-use state back: the client was refused and may correct and resend it."""
        await self._hold.release()


async def run_round(
    guard: StateGuard, rpc: RoundRequest, method: str, target: str, arguments: JSONObject, run: RunHandler
) -> JSONObject:
    """Open a round for an MCP request, run its handler, and answer its outcome."""
    round_ = await Round.open(
        guard,
        method=method,
        target=target,
        arguments=arguments,
        params=rpc.params,
        headers=rpc.headers,
        client_capabilities=rpc.client_capabilities,
        progress_token=rpc.progress_token,
        log_level=rpc.log_level,
        notify=rpc.notify,
    )
    try:
        return round_.outcome(await run(round_.record))
    except ServerError as exc:
        if exc.correctable:  # the client can fix this and resend the same state: give it back
            await round_.release()
        raise


def missing_capability(required: JSONObject) -> ServerError:
    return ServerError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": required},
        correctable=True,
    )


def input_requests_of(record: CallRecord) -> JSONObject:
    """The ``inputRequests`` of a round that stopped to ask, by key."""
    if record.manual_input_requests is not None:
        return {key: dump(request) for key, request in record.manual_input_requests.items()}
    # Each input request's params are already wire JSON (built by ctx): no model round trip is needed.
    return {entry.key: {"method": entry.method, "params": entry.params} for entry in record.ledger.input_requests}
