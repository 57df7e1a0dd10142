"""Run one MRTR round of ``tools/call``, ``prompts/get`` or ``resources/read``.

Open the incoming state (refusing bad state before anything runs), run the handler with the
answers it has, then either return its complete result or answer ``input_required`` with the
questions it is waiting for and the next sealed state. A single-use state is claimed when it is
opened; a refusal the client can correct (a missing capability, answers too large) releases it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from fastapi_mrtr.engine.call import CallRecord, Notify
from fastapi_mrtr.engine.flow import FlowSealer
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


async def run_round(
    sealer: FlowSealer, rpc: RoundRequest, method: str, target: str, arguments: JSONObject, run: RunHandler
) -> JSONObject:
    # Built on first use (checking an incoming state, or sealing the next one), then reused.
    binding = sealer.lazy_binding(method, target, arguments, rpc.headers)
    ledger, claims, hold = await sealer.open(rpc.params, binding, rpc.headers)
    record = CallRecord(
        method=method,
        target=target,
        arguments=arguments,
        client_capabilities=rpc.client_capabilities,
        ledger=ledger,
        flow_id=claims.flow_id if claims else None,
        round=claims.round if claims else 0,
        progress_token=rpc.progress_token,
        log_level=rpc.log_level,
        notify=rpc.notify,
        strict_replay=sealer.options.strict_replay,
    )
    try:
        result = await run(record)
        if record.missing_capability is not None:
            raise missing_capability(record.missing_capability)
        if not record.wants_input:
            return result
        return {
            "resultType": "input_required",
            "inputRequests": pending_requests(record),
            "requestState": sealer.seal(record, binding(), claims),
        }
    except ServerError as exc:
        if exc.correctable:  # the client can fix this and resend the same state: give it back
            await hold.release()
        raise


def missing_capability(required: JSONObject) -> ServerError:
    return ServerError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": required},
        correctable=True,
    )


def pending_requests(record: CallRecord) -> JSONObject:
    if record.manual_requests is not None:
        return {key: dump(request) for key, request in record.manual_requests.items()}
    # Each ask's params are already wire JSON (built by ctx): no model round trip is needed.
    return {ask.key: {"method": ask.method, "params": ask.params} for ask in record.ledger.pending}
