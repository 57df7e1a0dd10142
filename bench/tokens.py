"""``requestState`` size against the number of answered questions.

A tool asks yes/no questions one per round; the state sent with the question after ``k``
answers carries those ``k`` answers (and the digest of the question being asked), so its length
against ``k`` shows the fixed part and the cost of each answer. Runs in-process.

    python -m bench.tokens [--answers 1,3,10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions

from .app import BENCH_STATE_KEY
from .inproc import call_body, post

STATE_CAP = 16 * 1024


class Answer(BaseModel):
    ok: bool


def survey_app() -> FastAPI:
    app = FastAPI()
    options = ServerOptions(
        name="bench",
        version="1.0.0",
        request_state_key=BENCH_STATE_KEY,
        input_required_config=InputRequiredConfig(max_rounds=64),  # room for long surveys
    )
    mcp = MCP(app, options=options)

    @mcp.tool()
    @app.post("/survey")
    async def survey(questions: int, ctx: Context) -> int:
        """Ask ``questions`` yes/no questions, one per round; return how many were yes."""
        yes = 0
        for number in range(questions):
            answer = await ctx.elicit(f"Question {number + 1}: agree?", Answer, key=f"q{number}")
            yes += int(answer.accepted and answer.content is not None and answer.content.ok)
        return yes

    app.mount("/mcp", mcp)
    return app


async def state_lengths(answers: list[int]) -> dict[int, int]:
    """Token length of the state that carries ``k`` answers, for each ``k`` in ``answers``."""
    app = survey_app()
    rounds = max(answers) + 1
    arguments = {"questions": rounds}
    lengths: dict[int, int] = {}
    extra: dict[str, Any] = {}
    for answered in range(rounds):
        _, body = await post(app, "/mcp", "survey", call_body(answered + 1, "survey", arguments, **extra))
        result = json.loads(body)["result"]
        if result.get("resultType") != "input_required":
            raise RuntimeError(f"round {answered}: expected input_required, got {body[:200]!r}")
        state = result["requestState"]
        lengths[answered] = len(state)
        key = next(iter(result["inputRequests"]))
        extra = {"inputResponses": {key: {"action": "accept", "content": {"ok": True}}}, "requestState": state}
    return {k: lengths[k] for k in [0, *answers]}


def report(lengths: dict[int, int]) -> list[str]:
    """Markdown table rows plus a line on the fixed part and the cost per answer."""
    base = lengths[0]
    rows = ["| answered questions | requestState length (chars) | beyond the first round |", "|---:|---:|---:|"]
    rows += [f"| {k} | {n} | {n - base:+d} |" for k, n in lengths.items()]
    most = max(lengths)
    per_answer = (lengths[most] - base) / most if most else 0.0
    rows.append("")
    rows.append(
        f"Fixed part (claims, binding, nonce, tag): {base} chars; each answer adds ~{per_answer:.0f} chars; "
        f"cap {STATE_CAP} chars ({'within' if max(lengths.values()) <= STATE_CAP else 'OVER'} the cap)."
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", default="1,3,10")
    args = parser.parse_args()
    answers = [int(k) for k in args.answers.split(",")]
    print("\n".join(report(asyncio.run(state_lengths(answers)))))


if __name__ == "__main__":
    main()
