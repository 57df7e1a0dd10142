"""The terminal client on a pseudo-terminal, against real servers of both eras.

A person answers the prompt the terminal shows last. When one round asks a form and a model reply
(and the roots), the CLI must hold one conversation at a time, in the order the server listed the
requests, or a typed line goes to the wrong question.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.pty_cli import PtyCli
from tests.support import db_rows, running_server

pytestmark = pytest.mark.slow

ERAS = pytest.mark.parametrize("era", [(), ("--era", "legacy")], ids=["2026-07-28", "legacy"])
ACTION_PROMPT = "Answer? [A]ccept / [d]ecline / [c]ancel: "


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


def answer_for(screen: str) -> str | None:
    """What the person types for the prompt shown last on the screen (``None``: no prompt)."""
    last = screen.rsplit("\n", 1)[-1]
    if last.endswith("reply> "):
        return "Hello"
    if last.endswith(ACTION_PROMPT):
        return "a"
    if last.rstrip().endswith(":") and "name" in last.lower():
        return "Mia"
    return None


@ERAS
@pytest.mark.parametrize("run", range(3))
def test_one_round_asking_a_form_and_a_model_reply_gets_each_answer_right(
    fixture_url: str, era: tuple[str, ...], run: int
) -> None:
    with PtyCli(fixture_url, "test_input_required_result_multiple_inputs", "--root", "file:///w", *era) as cli:
        cli.wait_for("(connected")
        for _ in range(6):  # three prompts in all; a few spare turns, never an endless loop
            line = answer_for(cli.settle())
            if line is None:  # no prompt shown: the CLI is done (or stuck: finish() says which)
                break
            cli.type(line)
        assert cli.finish() == 0, cli.screen
        assert "Hello Mia (1 roots)" in cli.screen, cli.screen
        # One conversation at a time: the form's action prompt shows once, before the reply prompt.
        assert cli.screen.count(ACTION_PROMPT) == 1, cli.screen


@ERAS
def test_one_ctrl_c_exits_at_once_with_130_and_sends_nothing(shop: tuple[str, Path], era: tuple[str, ...]) -> None:
    url, database = shop
    with PtyCli(url, "place_order", "book_id=1", "quantity=2", *era) as cli:
        cli.wait_for(ACTION_PROMPT)
        cli.type("a")  # accept the first form, then stop at its field
        cli.wait_for("*: ")
        pressed = time.monotonic()
        cli.interrupt()
        status = cli.finish(limit=10)
        assert status == 130, cli.screen
        assert time.monotonic() - pressed < 2.0, "one Ctrl-C must end the CLI at once"
        assert "interrupted" in cli.screen
    # Nothing was answered on the person's behalf: no second round, so no order.
    assert db_rows(database, "SELECT * FROM orders") == []
