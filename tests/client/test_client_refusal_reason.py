"""The server's reason for asking a question again reaches the handler and the terminal, escaped."""

from __future__ import annotations

import io

from fastapi_mrtr.client._forms import TerminalElicitor
from fastapi_mrtr.client._handlers import (
    InputRequestInfo,
    _current,
    refusal_reason,
    same_question,
)
from fastapi_mrtr.client._text import printable
from fastapi_mrtr.client.cli import Terminal
from fastapi_mrtr.wire.mrtr import InputRequest

QUESTION = {"mode": "form", "message": "Pick", "requestedSchema": {"type": "object", "properties": {}}}


def asked(params: dict[str, object]) -> InputRequest:
    return InputRequest(method="elicitation/create", params=params)


def test_a_question_with_the_refusal_note_is_the_same_question() -> None:
    before = asked(QUESTION)
    again = asked({**QUESTION, "_meta": {"fastapi-mrtr/refused-answer": {"reason": "too small"}}})
    assert same_question(again, before)
    assert refusal_reason(again) == "too small" and refusal_reason(before) is None
    other_meta = asked({**QUESTION, "_meta": {"x/y": 1, "fastapi-mrtr/refused-answer": {"reason": "r"}}})
    assert not same_question(other_meta, before)  # any other change is a new question
    assert not same_question(asked({**QUESTION, "message": "Pick again"}), before)


def test_the_terminal_says_the_reason_escaped() -> None:
    # through the CLI's Terminal, which escapes everything it shows (the form itself does not escape twice)
    out = io.StringIO()
    terminal = Terminal(io.StringIO("c\n"), out)
    elicitor = TerminalElicitor(terminal.ask, terminal.say)
    hostile = "too small\x1b]0;pwned\x07\x1b[2J"
    token = _current.set(InputRequestInfo("pick", 2, {"action": "accept", "content": {"n": 0}}, hostile))
    try:
        from mcp.types import ElicitRequestFormParams

        elicitor(ElicitRequestFormParams(message="Pick", requested_schema={"type": "object", "properties": {}}))
    finally:
        _current.reset(token)
    shown = out.getvalue()
    assert "your answer was not accepted: too small" in shown
    assert "\x1b" not in shown and "\x07" not in shown
    assert printable("a\x1b[2Jb\nc\td\x9b") == "a\\u001b[2Jb\nc\td\\u009b"
