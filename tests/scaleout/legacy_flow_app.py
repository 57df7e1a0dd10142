"""A three-question tool for the 2025-era replica tests: each answer must come back to its own flow.

``three_answers(token)`` asks three questions with ``ctx.elicit``; the client answers each with the
flow's token and the question's number, and the tool returns what it got plus the replica that
finished it. A cross-wired answer (another flow's, or one delivered twice) shows in the result.
Environment: ``MRTR_STATE_KEY`` (one key for all replicas), ``MRTR_REDIS_URL`` (the relay, optional),
``LEGACY_ROUND_TIMEOUT`` (seconds), ``LEGACY_SSE_CLOSE_AFTER`` (seconds; streams closed for the client
to resume), ``REPLICA_NAME``, ``REPLICA_ID_IS_NAME`` (the relay names this replica by it, so a
test can tell from a request id which replica asked).
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions
from fastapi_mrtr.state import RedisRelay

REPLICA = os.environ.get("REPLICA_NAME", "main")
QUESTIONS = 3


class Answer(BaseModel):
    value: str


class Outcome(BaseModel):
    token: str
    answers: list[str]
    replica: str


app = FastAPI()
redis_url = os.environ.get("MRTR_REDIS_URL")
replica_id = REPLICA if os.environ.get("REPLICA_ID_IS_NAME") else None
mcp = MCP(
    app,
    options=ServerOptions(
        name="legacy-replicas",
        relay=RedisRelay(redis_url, replica_id=replica_id) if redis_url else None,
        input_required_config=InputRequiredConfig(round_timeout=float(os.environ.get("LEGACY_ROUND_TIMEOUT", "30"))),
        legacy_sse_close_after=float(os.environ.get("LEGACY_SSE_CLOSE_AFTER", "0")),
    ),
)


@app.get("/health")
def health() -> dict[str, str]:
    return {"replica": REPLICA}


@mcp.tool()
@app.post("/three_answers")
async def three_answers(token: str, ctx: Context) -> Outcome:
    """Ask three questions; return the answers as they came."""
    answers = []
    for number in range(1, QUESTIONS + 1):
        answer = await ctx.elicit(f"Question {number} for {token}?", Answer, key=f"q{number}")
        answers.append(answer.content.value if answer.accepted and answer.content else f"<{answer.action}>")
    return Outcome(token=token, answers=answers, replica=REPLICA)


app.mount("/mcp", mcp)
