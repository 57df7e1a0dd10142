"""The terminal form marks every required answer with ``*``, the yes/no shorthand too (issue 28)."""

from __future__ import annotations

from fastapi_mrtr.client import ElicitRequestParams
from fastapi_mrtr.client._forms import TerminalElicitor, prompt_line
from fastapi_mrtr.engine.elicitation_schema import requested_schema_for

QUESTION = "Delete the book?"


def test_the_bool_shorthand_prompt_is_marked_required() -> None:
    schema = requested_schema_for(bool)  # what ctx.elicit("...", bool) sends
    prop = schema["properties"]["value"]
    assert prompt_line("value", prop, True, QUESTION) == f"  {QUESTION} (y/n) *: "
    assert prompt_line("value", {**prop, "default": False}, True, QUESTION).endswith("[n]: ")


def test_the_legend_explains_the_mark_on_a_shorthand_form() -> None:
    said: list[str] = []
    answers = iter(["a", "y"])
    elicitor = TerminalElicitor(lambda prompt: said.append(prompt) or next(answers), said.append)
    result = elicitor(ElicitRequestParams(message=QUESTION, requested_schema=requested_schema_for(bool)))
    assert result.action == "accept" and result.content == {"value": True}
    assert any("* = required" in line for line in said)
    assert f"  {QUESTION} (y/n) *: " in said
