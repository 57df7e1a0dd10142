"""The client's answers to the server's requests (elicitations, sampling, roots) in 2025-era sessions.

A question is asked on a call's stream by the replica running the call; the answer is a POST that
may reach any replica. Without a relay, only the asker can take it (another replica says 421:
route sessions to one replica). With one, an answer to a question asked here is delivered here
first (even when Redis restarted and forgot the wait); any other is claimed in the relay (one
answer wins) and handed to the replica that asked. Within 15 s of a Redis restart, a claim that
finds nothing is tried again for up to 3 s, while the asker writes its waits back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from starlette.types import Send

from fastapi_mrtr.transport.http import send_empty
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.replies import asker_lost, invalid_request, relay_down
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.wire.errors import INVALID_PARAMS, McpError, RequestRejectedError
from fastapi_mrtr.wire.protocol import JSONObject

RESTART_GRACE_SECONDS = 15.0  # after a Redis restart, waits may be missing until their replicas write them back
RESTART_CLAIMS = 10  # claims tried, RESTART_CLAIM_PAUSE apart, for an answer whose wait is missing then
RESTART_CLAIM_PAUSE = 0.3

logger = logging.getLogger("fastapi_mrtr")


class ClientAnswers:
    """Takes the client's answers and hands each to the call waiting for it, here or elsewhere."""

    def __init__(self, live: LiveSessions, cluster: SessionCluster) -> None:
        self._live = live
        self._cluster = cluster

    async def receive(self, info: SessionInfo, message: JSONObject, send: Send) -> None:
        """A JSON-RPC response to one of the server's requests (an elicitation, sampling, roots)."""
        answer_id = message.get("id")
        result, error = message.get("result"), message.get("error")
        if (result is None) == (error is None) or not isinstance(result if error is None else error, dict):
            why = "a response needs a result object or an error object"
            logger.warning("malformed response %r from a 2025-era client: %s", answer_id, why)
            # A call waits for this id: end it now with the reason, rather than after round_timeout.
            ended = isinstance(answer_id, str) and self.deliver(
                info.key,
                answer_id,
                {"id": answer_id, "error": McpError(INVALID_PARAMS, f"malformed response: {why}").to_error()},
            )
            raise invalid_request(f"Invalid request: {why}" + ("; the call waiting for it was ended" if ended else ""))
        asker = LiveSessions.replica_of(answer_id)
        if asker is None or not isinstance(answer_id, str):
            raise invalid_request(f"Invalid request: this session sent no request {answer_id!r}")
        if self._cluster.relay is not None:
            await self._through_relay(info, answer_id, message, send)
            return
        if self.deliver(info.key, answer_id, message):
            await send_empty(send, 202)
        elif asker != self._live.replica_id:
            raise invalid_request(
                f"Misdirected request: request {answer_id!r} was sent by another server replica, which waits "
                "for this answer; route each session to one replica (by Mcp-Session-Id) or give the replicas "
                "a relay (MRTR_REDIS_URL)",
                http_status=421,
            )
        else:
            raise self._not_awaited(info.key, answer_id)

    async def _through_relay(self, info: SessionInfo, answer_id: str, message: JSONObject, send: Send) -> None:
        """Claim the wait for ``answer_id`` in the relay (one answer wins), then hand it to its asker.
        A question this replica asked is answered here first, whatever the relay knows (a Redis
        that restarted has forgotten every wait)."""
        if self.deliver(info.key, answer_id, message):
            with contextlib.suppress(Exception):  # so that no other replica hands it over as well
                await self._cluster.claim(info.key, answer_id)
            await send_empty(send, 202)
            return
        try:
            delivered = await self._hand_over(info, answer_id, message)
        except RequestRejectedError:
            raise
        except Exception as exc:  # Redis
            raise relay_down(exc) from exc
        if not delivered:  # no Retry-After: trying this answer again cannot help
            raise asker_lost(answer_id)
        await send_empty(send, 202)

    async def _hand_over(self, info: SessionInfo, answer_id: str, message: JSONObject) -> bool:
        """Claim the wait in the relay and deliver the answer to the replica that asked: whether it took it."""
        owner = await self._cluster.claim(info.key, answer_id)
        if owner is None and LiveSessions.replica_of(answer_id) != self._live.replica_id:
            owner = await self._claim_after_restart(info.key, answer_id)
        if owner is None:
            raise self._not_awaited(info.key, answer_id)
        if owner.get("r") == self._live.replica_id:
            return self.deliver(info.key, answer_id, message)
        handover = {"t": "answer", "s": info.key, "id": answer_id, "m": message}
        return await self._cluster.relay.send(str(owner.get("r")), handover)  # type: ignore[union-attr]

    async def _claim_after_restart(self, session_key: str, answer_id: str) -> dict[str, Any] | None:
        """A Redis that restarted a moment ago has forgotten every wait, and the replica that asked
        writes its own back within about a second: wait for that (a few claims, a bounded time)
        instead of refusing an answer its call still waits for. Any other miss is final at once."""
        relay = self._cluster.relay
        assert relay is not None
        if not await relay.restarted_within(RESTART_GRACE_SECONDS):
            return None
        for _ in range(RESTART_CLAIMS):
            await asyncio.sleep(RESTART_CLAIM_PAUSE)
            owner = await self._cluster.claim(session_key, answer_id)
            if owner is not None:
                return owner
        return None

    def deliver(self, session_key: str, answer_id: str, message: JSONObject) -> bool:
        live = self._live.get(session_key)
        future = live.waiting.get(answer_id) if live is not None else None
        if live is None or future is None or future.done():
            return False
        future.set_result(message)
        self._live.close_request(live, answer_id, "it was answered already")
        self._cluster.answered(session_key, answer_id)
        return True

    def _not_awaited(self, session_key: str, answer_id: str) -> RequestRejectedError:
        why = self._live.why_closed(session_key, answer_id) or (
            "it was answered already, the server stopped waiting, or this session sent no such request"
        )
        return invalid_request(f"Invalid request: no request {answer_id!r} awaits an answer: {why}")
