"""``catch_suspension``: the one place a run that stopped to ask is caught, however it was wrapped."""

from __future__ import annotations

import pytest

from fastapi_mrtr.engine.call import MissingCapabilitySignal, SuspendSignal, catch_suspension
from fastapi_mrtr.wire.compat import BaseExceptionGroup


def wrapped_in_a_cause(signal: BaseException) -> BaseException:
    try:
        raise signal
    except BaseException as exc:
        try:
            raise RuntimeError("a handler rewrapped it") from exc
        except RuntimeError as outer:
            return outer


@pytest.mark.parametrize(
    "raised",
    [
        SuspendSignal(),
        MissingCapabilitySignal(),
        BaseExceptionGroup("a task group", [ValueError("other"), SuspendSignal()]),
        wrapped_in_a_cause(SuspendSignal()),
    ],
    ids=["suspend", "missing-capability", "in-a-group", "as-a-cause"],
)
def test_a_suspension_ends_the_block_quietly(raised: BaseException) -> None:
    ran_after = False
    with catch_suspension():
        raise raised
        ran_after = True  # pragma: no cover
    assert not ran_after


@pytest.mark.parametrize("raised", [ValueError("boom"), KeyboardInterrupt(), BaseExceptionGroup("g", [ValueError()])])
def test_anything_else_propagates(raised: BaseException) -> None:
    with pytest.raises(type(raised)), catch_suspension():
        raise raised


def test_a_block_that_does_not_suspend_runs_to_its_end() -> None:
    steps: list[str] = []
    with catch_suspension():
        steps.append("ran")
    assert steps == ["ran"]
