"""A ``tools/call`` returns to an engine module it left at most three times per round (issue 26).

Counted by :mod:`tests.engine.rooms` for the benchmark's two-round ``confirm`` call: at most four
entries into each ``fastapi_mrtr.engine`` module in each round.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

from tests.engine.rooms import RoomCounter, warm_rounds

ENGINE = "fastapi_mrtr.engine."
MOST_ENTRIES = 4  # the first entry, and three returns


def crowded(entries: Counter[str]) -> dict[str, int]:
    return {module: n for module, n in entries.items() if module.startswith(ENGINE) and n > MOST_ENTRIES}


def test_each_round_enters_each_engine_module_at_most_four_times() -> None:
    first, second = asyncio.run(warm_rounds())
    assert first[ENGINE + "call"] > 0 and second[ENGINE + "call"] > 0  # the count saw the engine at all
    assert crowded(first) == {}
    assert crowded(second) == {}


def test_the_counter_counts_entries_from_another_module_only() -> None:
    from fastapi_mrtr.engine.call import find_signal
    from fastapi_mrtr.engine.ledger import canonical_json

    with RoomCounter() as counter:
        for _ in range(5):
            canonical_json({"a": 1})  # entered from this module: five entries
        find_signal(ValueError())  # find_exception, called inside engine.call, is no new entry
    sys.setprofile(None)
    assert counter.entries[ENGINE + "ledger"] == 5
    assert counter.entries[ENGINE + "call"] == 1
    assert crowded(counter.entries) == {ENGINE + "ledger": 5}
