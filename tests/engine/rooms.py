"""Count the rooms one two-round ``tools/call`` visits: entries into a module from another.

A "room" is a module of the package. Following a call, a reader enters a room each time the
running code moves into it from another module, and comes back to a room each time it enters it
again. This counts those entries with ``sys.setprofile`` for the benchmark's two-round
``confirm`` call (``bench.app``: one boolean question, then the answer with its
``requestState``), in-process and after a warm-up, one round at a time.

    python -m tests.engine.rooms        # prints every module entered, per round
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from contextlib import nullcontext
from types import FrameType
from typing import Any

from bench.app import app
from bench.inproc import FIRST, post, retry_body

PACKAGE = "fastapi_mrtr"


def module_of(frame: FrameType | None) -> str:
    return frame.f_globals.get("__name__", "") if frame is not None else ""


class RoomCounter:
    """While active, counts each entry into a module of the package from another module."""

    def __init__(self) -> None:
        self.entries: Counter[str] = Counter()

    def __enter__(self) -> RoomCounter:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":  # a Python frame starting, or a coroutine resuming
            return
        module = module_of(frame)
        if module.startswith(PACKAGE) and module_of(frame.f_back) != module:
            self.entries[module] += 1


async def two_rounds(count: bool = True) -> tuple[Counter[str], Counter[str]]:
    """The entries of each round of one ``confirm`` call (empty counters when not ``count``)."""
    first, second = RoomCounter(), RoomCounter()
    with first if count else nullcontext():
        status, body = await post(app, "/mcp", "confirm", FIRST)
    result = json.loads(body)["result"]
    if status != 200 or result.get("resultType") != "input_required":
        raise RuntimeError(f"first round failed: {status} {body[:300]!r}")
    key = next(iter(result["inputRequests"]))
    with second if count else nullcontext():
        status, body = await post(app, "/mcp", "confirm", retry_body(key, result["requestState"]))
    if status != 200 or b'"complete"' not in body:
        raise RuntimeError(f"second round failed: {status} {body[:300]!r}")
    return first.entries, second.entries


async def warm_rounds(warm_up: int = 2) -> tuple[Counter[str], Counter[str]]:
    """The counts after ``warm_up`` uncounted calls (lazy imports and caches fill on the first)."""
    for _ in range(warm_up):
        await two_rounds(count=False)
    return await two_rounds()


def main() -> None:
    rounds = asyncio.run(warm_rounds())
    modules = sorted(set(rounds[0]) | set(rounds[1]))
    print(f"{'module':45} round 1  round 2")
    for module in modules:
        print(f"{module:45} {rounds[0][module]:7}  {rounds[1][module]:7}")
    print(f"{'total':45} {sum(rounds[0].values()):7}  {sum(rounds[1].values()):7}")


if __name__ == "__main__":
    main()
