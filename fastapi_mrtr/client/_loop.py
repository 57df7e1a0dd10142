"""The auto-fulfil loop: answer ``input_required`` results and retry until a complete result.

Bounded the way an HTTP client bounds redirects: a retry budget (``max_rounds``), a per-round
deadline for the handlers (``round_timeout``) and an optional deadline for the whole flow
(``max_total_timeout``). Each retry is a fresh request built by ``send``: a new JSON-RPC id, the
original params, the answers under the server's keys and the server's ``requestState`` exactly
as received (or none when the server sent none).

A server asks a question again, unchanged, when it did not accept the answer (it did not
validate). The loop notices: it logs a warning and tells the handler (``current_input_request()``),
so an answer that can never pass does not loop silently until ``max_rounds``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

from fastapi_mrtr.client._errors import FlowTimeoutError, MaxRoundsExceededError, RoundTimeoutError
from fastapi_mrtr.client._handlers import InputHandlers, same_question
from fastapi_mrtr.client.options import InputRequiredConfig
from fastapi_mrtr.wire.mrtr import InputRequest, InputRequiredResult, InputResponses
from fastapi_mrtr.wire.protocol import JSONObject

T = TypeVar("T")

logger = logging.getLogger("fastapi_mrtr.client")


class InputRequiredLoop(Generic[T]):
    """Runs one MRTR flow for one ``tools/call``, ``prompts/get`` or ``resources/read``."""

    def __init__(
        self,
        # One round trip: (inputResponses or None, requestState or None) -> the parsed result.
        send: Callable[[InputResponses | None, str | None], Awaitable[T | InputRequiredResult]],
        handlers: InputHandlers,
        config: InputRequiredConfig,
        backoff: tuple[float, float] = (0.05, 0.25),
    ) -> None:
        self._send = send
        self._handlers = handlers
        self._config = config
        self._backoff = backoff

    async def run(
        self, input_responses: InputResponses | None = None, request_state: str | None = None
    ) -> T | InputRequiredResult:
        """The first request (optionally seeded), then, with ``auto_fulfill``, every retry."""
        total = self._config.max_total_timeout
        with anyio.move_on_after(total if total > 0 else math.inf) as scope:
            return await self._rounds(input_responses, request_state)
        assert scope.cancelled_caught  # the only way out of the block without returning
        raise FlowTimeoutError(f"MRTR flow exceeded max_total_timeout={total}s", total)

    async def _rounds(
        self, input_responses: InputResponses | None, request_state: str | None
    ) -> T | InputRequiredResult:
        result = await self._send(input_responses, request_state)
        if not self._config.auto_fulfill:
            return result
        retries = 0
        delay = self._backoff[0]
        answered: dict[str, tuple[InputRequest, JSONObject]] = {}  # the last round's questions and answers
        while isinstance(result, InputRequiredResult):
            if retries >= self._config.max_rounds:
                raise MaxRoundsExceededError(self._config.max_rounds, result)
            retries += 1
            if result.input_requests:
                rejected = _asked_again(answered, result.input_requests)
                round_answers = await self._answer(result, retries, rejected)
                answered = {key: (result.input_requests[key], answer) for key, answer in round_answers.items()}
                answers: InputResponses | None = round_answers
                delay = self._backoff[0]
            else:
                # State only: the server is shedding load; don't hammer it.
                answers = None
                await anyio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])
            result = await self._send(answers, result.request_state)
        return result

    async def _answer(
        self, result: InputRequiredResult, round_number: int, rejected: dict[str, JSONObject]
    ) -> InputResponses:
        limit = self._config.round_timeout
        requests = result.input_requests or {}
        with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
            return await self._handlers.answer_all(requests, round_number=round_number, rejected=rejected)
        assert scope.cancelled_caught
        raise RoundTimeoutError(f"input handlers exceeded round_timeout={limit}s", limit)


def _asked_again(
    answered: dict[str, tuple[InputRequest, JSONObject]], requests: dict[str, InputRequest]
) -> dict[str, JSONObject]:
    """The keys asked again with the very question we answered last round, and what we answered.

    A server pins each key to a digest of its question and asks again only when the answer did
    not count (it did not validate), so the same key with the same request means "not accepted".
    A key asked with a changed question is a new question, not a refusal. The server may add why
    it refused the answer (``params._meta["fastapi-mrtr/refused-answer"]``); that is no change.
    """
    rejected = {
        key: answer
        for key, (request, answer) in answered.items()
        if key in requests and same_question(requests[key], request)
    }
    for key, answer in rejected.items():
        logger.warning(
            "the server asked %r again, unchanged, after we answered it: it did not accept the answer %s",
            key,
            json.dumps(answer, ensure_ascii=False)[:200],
        )
    return rejected
