"""``ctx``: what a tool handler uses to ask the user, sample a model, list roots and report progress.

Replay rules (see docs/replay.md): the handler runs from the top on every round. An ask that was
answered in an earlier round returns at once; the first unanswered ask suspends the run by
raising a private ``BaseException``, and the plugin answers ``input_required``. So everything
before the last ask must be repeatable: reads are fine, side effects go through ``ctx.once``.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar, cast, overload

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter

from fastapi_mrtr.engine.call import CallRecord, MissingCapabilitySignal, SuspendSignal
from fastapi_mrtr.engine.elicitation_schema import is_shorthand
from fastapi_mrtr.engine.input_requests import (
    REFUSED_ANSWER_META,
    elicit_wire,
    elicitation_needed,
    form_input_request_digest,
    wire_input_request_digest,
)
from fastapi_mrtr.engine.input_responses import parse_elicit_response, parse_typed_response
from fastapi_mrtr.wire.errors import ServerError
from fastapi_mrtr.wire.mrtr import (
    ELICITATION_CREATE,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    ListRootsResult,
    SamplingMessage,
)
from fastapi_mrtr.wire.protocol import LOG_LEVELS, JSONObject, TextContent, dump

logger = logging.getLogger("fastapi_mrtr")

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")


class ReplayDivergedError(Exception):
    """Raised (with ``strict_replay``) when a key's question differs from the one answered earlier."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"replay diverged at input key {key!r}: the question differs from the one answered in an "
            "earlier round; questions must be derived only from the arguments and earlier answers"
        )
        self.key = key


class _UnawaitedInputRequest:
    """An input request not yet awaited: ``await`` it, or pass several to ``ctx.gather`` to batch one round."""

    def __init__(self, run: Callable[[], Any], what: str) -> None:
        self._run = run
        self._what = what

    def __await__(self) -> Any:
        return self._run().__await__()

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the ask does not have: the answer's (.action, .content, ...).
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self._what} was not awaited: it returns an awaitable, not the answer. "
            f"Write `answer = await {self._what}`, then read answer.{name}"
        )


class ToolContext:
    """The handler's view of one MCP call (or of a plain REST call of the same endpoint)."""

    def __init__(self, record: CallRecord, request: Request | Callable[[], Request]) -> None:
        self._record = record
        self._request = request  # or how to build it, on first use

    # --- facts about this call ----------------------------------------------------------------

    @property
    def request(self) -> Request:
        """The HTTP request of the REST call that this tool call stands for."""
        if not isinstance(self._request, Request):
            self._request = self._request()
        return self._request

    @property
    def is_mcp(self) -> bool:
        """False when the endpoint was called as a plain REST route."""
        return self._record.method != "rest"

    @property
    def round(self) -> int:
        """0 on the first run, then the number of ``input_required`` answers this flow has had."""
        return self._record.round

    @property
    def is_replaying(self) -> bool:
        return self._record.round > 0

    @property
    def flow_id(self) -> str | None:
        return self._record.flow_id

    @property
    def client_capabilities(self) -> JSONObject:
        return self._record.client_capabilities

    @property
    def request_state(self) -> str | None:
        """Manual mode: the plaintext state the handler gave ``input_required`` last round."""
        return self._record.ledger.handler_state

    @property
    def input_responses(self) -> JSONObject:
        """Manual mode: this round's answers, for keys the previous round asked.

        Empty on a first round (no ``requestState``): nothing was asked yet, so whatever the client
        sent is no answer, unless ``InputRequiredConfig(accept_unsolicited_answers=True)``.
        """
        return self._record.ledger.this_round

    def supports(
        self, capability: Literal["elicitation", "elicitation.form", "elicitation.url", "sampling", "roots"]
    ) -> bool:
        """Whether this request's ``_meta`` declares the client capability.

        ``"elicitation"`` is form mode, as is ``"elicitation.form"``: a bare ``"elicitation": {}``
        declares forms only, and a client that names its modes gets forms only if it names
        ``form`` (``{"url": {}}`` alone is URL mode only). ``"elicitation.url"`` is URL mode.
        """
        caps = self._record.client_capabilities
        if capability in ("elicitation", "elicitation.form", "elicitation.url"):
            modes = caps.get("elicitation")
            if not isinstance(modes, dict):
                return False
            if capability == "elicitation.url":
                return "url" in modes
            return "form" in modes or "url" not in modes
        return isinstance(caps.get(capability), dict)

    # --- asking ---------------------------------------------------------------------------------

    @overload
    def elicit(
        self, message: str | ElicitRequestParams, schema: type[T], *, key: str | None = None
    ) -> Awaitable[ElicitResult[T]]: ...

    @overload
    def elicit(
        self, message: str | ElicitRequestParams, schema: None = None, *, key: str | None = None
    ) -> Awaitable[ElicitResult[Any]]: ...

    def elicit(
        self, message: str | ElicitRequestParams, schema: Any = None, *, key: str | None = None
    ) -> Awaitable[ElicitResult[Any]]:
        """Ask the user a question; returns their answer, typed by ``schema`` on accept.

        ``schema`` is a Pydantic model (a form of its fields) or a shorthand: ``bool``, ``str``,
        ``int``, ``float``, an ``Enum`` or a ``Literal`` (one field named ``value``; the answer's
        ``content`` is then the bare value). A URL-mode request is an ``ElicitRequestParams`` with
        ``mode="url"``. Decline and cancel are answers: they are returned, never asked again.
        """
        wire = elicit_wire(message, schema)  # a type no form can carry fails here, at the ask's line
        return _UnawaitedInputRequest(lambda: self._elicit(message, schema, wire, key), "ctx.elicit(...)")

    def elicit_url(self, message: str, url: str, *, key: str | None = None) -> Awaitable[ElicitResult[None]]:
        """Send the user to ``url`` (URL mode, for secrets or third-party flows)."""
        params = ElicitRequestParams(mode="url", message=message, url=url)
        wire = elicit_wire(params, None)
        return cast(
            "Awaitable[ElicitResult[None]]",
            _UnawaitedInputRequest(lambda: self._elicit(params, None, wire, key), "ctx.elicit_url(...)"),
        )

    def sample(
        self,
        messages: str | list[SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
        **extra: Any,
    ) -> Awaitable[CreateMessageResult]:
        """Ask the client's model (``sampling/createMessage``; deprecated in the spec, still served)."""
        if isinstance(messages, str):
            messages = [SamplingMessage(role="user", content=TextContent(text=messages))]
        params = CreateMessageRequestParams(
            messages=messages, max_tokens=max_tokens, system_prompt=system_prompt, temperature=temperature, **extra
        )
        return _UnawaitedInputRequest(lambda: self._sample(params, key), "ctx.sample(...)")

    def list_roots(self, *, key: str | None = None) -> Awaitable[ListRootsResult]:
        """Ask the client for its roots (``roots/list``; deprecated in the spec, still served)."""
        return _UnawaitedInputRequest(lambda: self._list_roots(key), "ctx.list_roots()")

    @overload
    async def gather(self, a: Awaitable[A], /) -> tuple[A]: ...
    @overload
    async def gather(self, a: Awaitable[A], b: Awaitable[B], /) -> tuple[A, B]: ...
    @overload
    async def gather(self, a: Awaitable[A], b: Awaitable[B], c: Awaitable[C], /) -> tuple[A, B, C]: ...
    @overload
    async def gather(
        self, a: Awaitable[A], b: Awaitable[B], c: Awaitable[C], d: Awaitable[D], /
    ) -> tuple[A, B, C, D]: ...
    @overload
    async def gather(self, *asks: Awaitable[Any]) -> tuple[Any, ...]: ...

    async def gather(self, *asks: Awaitable[Any]) -> tuple[Any, ...]:
        """Ask several independent questions in one round; returns every answer, in order."""
        results: list[Any] = []
        suspended = False
        for ask in asks:
            try:
                results.append(await ask)
            except SuspendSignal:
                suspended = True  # keep going: every unanswered ask joins this round
        if suspended:
            raise SuspendSignal()
        return tuple(results)

    # --- side effects -----------------------------------------------------------------------------

    async def once(self, step: str, fn: Callable[[], T | Awaitable[T]]) -> T:
        """Run ``fn`` on this round; later rounds get its recorded result (small, JSON-able).

        A retried round (the same ``requestState`` sent again) runs ``fn`` again: for an effect
        that must happen once, key it by :meth:`idempotency_key` where duplicates are refused.
        """
        ledger = self._record.ledger
        if step in ledger.once_used:
            raise ValueError(f"ctx.once step {step!r} is used twice in one run of the handler")
        if step in ledger.once_results:
            value = ledger.once_results[step]
        else:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
            value = TypeAdapter(Any).dump_python(value, mode="json")
        ledger.once_used[step] = value
        return cast("T", value)

    def idempotency_key(self, step: str) -> str:
        """A stable key for ``step`` of this flow, for downstream APIs that deduplicate requests.

        Derived from the flow id, which is random and sealed: the same on every round of one flow,
        different for every new flow. Before the first ``input_required`` the flow id is minted here.
        """
        record = self._record
        if record.flow_id is None:
            record.flow_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        digest = hashlib.sha256(f"idempotency:{record.flow_id}:{step}".encode()).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")[:32]

    # --- notifications ------------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` when the request carries a ``progressToken``."""
        record = self._record
        if record.progress_token is None or record.notify is None:
            return
        params: JSONObject = {"progressToken": record.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await record.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, *, logger_name: str | None = None) -> None:
        """Send ``notifications/message`` if the request's ``_meta`` asked for this level or lower."""
        record = self._record
        if record.log_level is None or record.notify is None or level not in LOG_LEVELS:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(record.log_level):
            return
        params: JSONObject = {"level": level, "data": data}
        if logger_name:
            params["logger"] = logger_name
        await record.notify("notifications/message", params)

    # --- manual mode ----------------------------------------------------------------------------

    def input_required(self, input_requests: dict[str, InputRequest], request_state: str | None = None) -> JSONResponse:
        """Answer ``input_required`` with hand-built requests (return the value from the handler).

        ``request_state`` is your own plaintext; it travels sealed and comes back as
        ``ctx.request_state`` on the retry.
        """
        record = self._record
        record.manual_input_requests = dict(input_requests)
        record.manual_state = request_state
        for key, request in input_requests.items():
            params = request.params or {}
            record.ledger.add_input_request(key, request.method, params, wire_input_request_digest(request))
        body: JSONObject = {
            "resultType": "input_required",
            "inputRequests": {k: dump(v) for k, v in input_requests.items()},
        }
        if record.seal_now is not None:  # a plain REST call: the 428 answer carries the state itself
            try:
                body["requestState"] = record.seal_now()
            except ServerError as exc:  # e.g. answers too large to seal: the same answer as for an auto ask
                return JSONResponse({"detail": exc.to_error()}, status_code=exc.http_status)
        return JSONResponse(body, status_code=428)

    # --- internals --------------------------------------------------------------------------------

    def _require(self, capability: JSONObject, supported: bool) -> None:
        if not supported:
            self._record.missing_capability = capability
            raise MissingCapabilitySignal()

    async def _request_input(
        self, method: str, params: JSONObject, key: str | None, q: str | None = None
    ) -> tuple[str, str, Any]:
        """(key, digest, recorded input response) for this input request; or record the input
        request in the ledger and suspend the run, when it has no response yet.

        ``q`` is the input request's digest when the caller already has it.
        """
        ledger = self._record.ledger
        key, q, answer, diverged = ledger.look_up(key, method, params, q)
        if diverged:
            if self._record.strict_replay:
                raise ReplayDivergedError(key)
            logger.info("input %r: the question changed since it was answered; asking again", key)
            ledger.forget(key)
        if answer is not None:
            return key, q, answer
        refused = ledger.refused.get(key)
        if refused is not None:  # asked again: say why (outside the digest, which is already taken)
            meta = params.get("_meta")
            meta = {**(meta if isinstance(meta, dict) else {}), REFUSED_ANSWER_META: {"reason": refused}}
            params = {**params, "_meta": meta}
        ledger.add_input_request(key, method, params, q)
        self._record.suspended = True
        raise SuspendSignal()

    def _invalid(self, key: str, why: str) -> None:
        """An answer that does not fit is refused: forget it and ask again, saying why."""
        record = self._record
        logger.warning("%s %r: input %r: answer refused (%s); asking again", record.method, record.target, key, why)
        ledger = record.ledger
        ledger.forget(key)
        ledger.keys_seen.discard(key)
        ledger.refused[key] = why

    async def _elicit(
        self, message: str | ElicitRequestParams, schema: Any, wire: JSONObject, key: str | None
    ) -> ElicitResult[Any]:
        digest = form_input_request_digest(message, schema) if isinstance(message, str) else None
        shorthand = schema is not None and is_shorthand(schema)
        url_mode = wire.get("mode") == "url"
        self._require(
            elicitation_needed(url_mode, self.client_capabilities),
            self.supports("elicitation.url" if url_mode else "elicitation"),
        )
        # The fields the form asked for (names as sent): the only content keys an answer keeps.
        properties: JSONObject = (wire.get("requestedSchema") or {}).get("properties") or {}
        for _ in range(2):  # a rejected answer is forgotten, so the second pass suspends
            key_used, q, answer = await self._request_input(ELICITATION_CREATE, wire, key, digest)
            parsed = parse_elicit_response(answer, properties, schema, shorthand, url_mode)
            if not isinstance(parsed, str):
                recorded, result = parsed
                self._record.ledger.use(key_used, q, recorded)
                return result
            self._invalid(key_used, parsed)
            key = key_used
        raise AssertionError("unreachable: the second ask suspends")  # pragma: no cover

    async def _sample(self, params: CreateMessageRequestParams, key: str | None) -> CreateMessageResult:
        needs_tools = bool(params.tools or params.tool_choice)
        caps = self._record.client_capabilities.get("sampling")
        self._require(
            {"sampling": {"tools": {}} if needs_tools else {}},
            isinstance(caps, dict) and (not needs_tools or "tools" in caps),
        )
        result: CreateMessageResult = await self._typed_input_request(
            SAMPLING_CREATE_MESSAGE, dump(params), key, CreateMessageResult
        )
        return result

    async def _list_roots(self, key: str | None) -> ListRootsResult:
        self._require({"roots": {}}, self.supports("roots"))
        roots: ListRootsResult = await self._typed_input_request(ROOTS_LIST, {}, key, ListRootsResult)
        return roots

    async def _typed_input_request(self, method: str, params: JSONObject, key: str | None, model: type[Any]) -> Any:
        for _ in range(2):
            key_used, q, answer = await self._request_input(method, params, key)
            parsed = parse_typed_response(answer, model)
            if isinstance(parsed, str):
                self._invalid(key_used, f"not a valid {method} result: {parsed}")
                key = key_used
                continue
            recorded, result = parsed
            self._record.ledger.use(key_used, q, recorded)
            return result
        raise AssertionError("unreachable: the second ask suspends")  # pragma: no cover
