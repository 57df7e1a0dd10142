"""The terminal client: form rendering with scripted answers, and the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field, field_validator

from fastapi_mrtr import MCP, Context
from fastapi_mrtr.client import ElicitRequestParams
from fastapi_mrtr.client._forms import TerminalElicitor
from fastapi_mrtr.client.cli import parse_arguments, render_result
from fastapi_mrtr.wire.protocol import CallToolResult, ImageContent, TextContent
from tests.support import running_server

ROOT = Path(__file__).resolve().parents[2]


class Script:
    """Feeds answers to the elicitor and keeps every prompt and message it showed."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.said: list[str] = []

    def ask(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)

    def say(self, text: str) -> None:
        self.said.append(text)

    def elicit(self, **params: Any) -> Any:
        return TerminalElicitor(self.ask, self.say)(ElicitRequestParams.model_validate(params))


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Your name", "minLength": 2},
        "age": {"type": "integer", "minimum": 0, "default": 30},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "toppings": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "ham", "title": "Ham"},
                    {"const": "egg", "title": "Egg"},
                    {"const": "kale", "title": "Kale"},
                ]
            },
            "minItems": 1,
        },
        "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
        "ratio": {"type": "number", "maximum": 1},
        "vip": {"type": "boolean", "default": False},
        "note": {"type": "string"},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["name", "size", "toppings", "ratio"],
}


def test_form_prompts_validate_reask_and_apply_defaults() -> None:
    script = Script(
        "",  # accept (the default action)
        "",
        "A",
        "Ada",  # name: required so re-asked, too short, then ok
        "-1",
        "",  # age: below minimum, then the default
        "2",  # size: choice number -> its const
        "",
        "1, Kale",  # toppings: required, then by number and by title
        "",  # colour: default
        "x",
        "2",
        "0.5",  # ratio: not a number, above maximum, ok
        "y",  # vip
        "",  # note: optional, left out
        "2026-13-01",
        "2026-07-28",  # when: bad date, then ok
    )
    result = script.elicit(message="Order?", requestedSchema=FORM)
    assert result.action == "accept"
    assert result.content == {
        "name": "Ada",
        "age": 30,
        "size": "l",
        "toppings": ["ham", "kale"],
        "colour": "red",
        "ratio": 0.5,
        "vip": True,
        "when": "2026-07-28",
    }
    shown = "\n".join(script.prompts)
    assert "Name (Your name) *" in shown and "age [30]" in shown and "colour" in shown and "[red]" in shown
    assert "1) Small" in shown and "2) Large" in shown and "3) Kale" in shown and "vip (y/n) [n]" in shown
    problems = [s for s in script.said if s.startswith("  !")]
    assert problems == [
        "  ! required: please enter a value",
        "  ! at least 2 characters",
        "  ! must be at least 0",
        "  ! required: please enter a value",
        "  ! not a number: 'x'",
        "  ! must be at most 1",
        "  ! enter a date in ISO 8601 form",
    ]
    assert "The server asks: Order?" in script.said[0]
    assert script.said.count("  (* = required: an answer is needed)") == 1


@pytest.mark.parametrize(("answer", "action"), [("d", "decline"), ("decline", "decline"), ("c", "cancel")])
def test_decline_and_cancel(answer: str, action: str) -> None:
    result = Script(answer).elicit(message="Order?", requestedSchema=FORM)
    assert result.action == action and result.content is None


def test_end_of_input_cancels() -> None:
    script = Script("a", "Ada")
    assert script.elicit(message="Order?", requestedSchema=FORM).action == "cancel"


@pytest.mark.parametrize(("answer", "action"), [("y", "accept"), ("", "decline"), ("n", "decline"), ("c", "cancel")])
def test_url_mode_asks_for_consent(answer: str, action: str) -> None:
    script = Script(answer)
    result = script.elicit(mode="url", message="Sign in", url="https://example.test/login")
    assert result.action == action and result.content is None
    assert any("https://example.test/login" in s for s in script.said)


def test_parse_arguments() -> None:
    parsed = parse_arguments(["n=3", "flag=true", "name=Ada", "list=[1,2]", 'quoted="3"', "empty="], '{"n": 1, "x": 2}')
    assert parsed == {"n": 3, "x": 2, "flag": True, "name": "Ada", "list": [1, 2], "quoted": "3", "empty": ""}
    with pytest.raises(ValueError):
        parse_arguments(["novalue"], None)
    with pytest.raises(ValueError):
        parse_arguments([], "[1]")


def test_render_result() -> None:
    result = CallToolResult(content=[TextContent(text="hi"), ImageContent(data="QUJD", mime_type="image/png")])
    assert render_result(result) == "hi\n[image image/png, 4 base64 chars]"
    assert render_result(CallToolResult(content=[], structured_content={"a": 1})) == '{\n  "a": 1\n}'


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_cli_lists_tools(sdk_url: str) -> None:
    done = run_cli(sdk_url)
    assert done.returncode == 0, done.stderr
    assert "delete_item item=<string>" in done.stdout.splitlines()
    assert "slow steps=<integer>?" in done.stdout.splitlines()


@pytest.mark.slow
def test_cli_asks_the_human_and_prints_the_result(sdk_url: str) -> None:
    done = run_cli(sdk_url, "signup", stdin="a\nAda\n\nx\n2\ny\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "signed up name=Ada age=30 colour=green subscribe=True\n"
    assert "The server asks: Tell me about yourself" in done.stderr
    assert "! choose one of: red, green, blue (or a number 1-3), not 'x'" in done.stderr


@pytest.mark.slow
def test_cli_hand_built_round_with_json_arguments(sdk_url: str) -> None:
    done = run_cli(sdk_url, "confirm", "--json", '{"item": "report.txt"}', stdin="accept\nyes\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done report.txt (state step1)\n"


@pytest.mark.slow
def test_cli_decline_gives_the_tool_error_and_exit_1(sdk_url: str) -> None:
    done = run_cli(sdk_url, "delete_item", "item=report.txt", stdin="d\n")
    assert done.returncode == 1
    assert "declin" in done.stdout


@pytest.mark.slow
def test_cli_progress_goes_to_stderr(sdk_url: str) -> None:
    done = run_cli(sdk_url, "slow", "steps=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert "progress 1/2 step 1" in done.stderr and "progress 2/2 step 2" in done.stderr


@pytest.mark.slow
def test_cli_reports_failures_with_exit_2() -> None:
    done = run_cli("http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert done.stderr.startswith("error:")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["tool-properties-list", "tool-required-int"])
def test_cli_malformed_tool_schema_is_an_error_not_a_traceback(hostile_url: str, scenario: str) -> None:
    done = run_cli(f"{hostile_url}/{scenario}")
    assert done.returncode == 2, done.stderr
    connected, error = done.stderr.splitlines()
    assert connected == "(connected: protocol 2026-07-28, stateless)"
    assert error.startswith("error: tool 't' has a malformed inputSchema")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["form-properties-list", "form-required-int"])
def test_cli_malformed_requested_schema_is_an_error_not_a_traceback(hostile_url: str, scenario: str) -> None:
    done = run_cli(f"{hostile_url}/{scenario}", "t", stdin="a\n")
    assert done.returncode == 2, done.stderr
    assert "error -32602: invalid params for elicitation/create: requestedSchema" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_key_value_pairs_may_follow_options_and_override_json(sdk_url: str) -> None:
    done = run_cli(sdk_url, "confirm", "--json", '{"item": "draft.txt"}', "item=report.txt", stdin="accept\nyes\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done report.txt (state step1)\n"


# --- what a new user meets: shorthand questions, explained mistakes, refused answers ----------


@pytest.fixture
def shop_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example bookshop on real uvicorn, with a fresh database."""
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    from example_app.main import app

    with running_server(app) as base:
        yield f"{base}/mcp"


class EvenNumber(BaseModel):
    n: int = Field(title="An even number")

    @field_validator("n")
    @classmethod
    def even(cls, value: int) -> int:
        # A rule the form's JSON Schema cannot carry: only the server can refuse the answer.
        if value % 2:
            raise ValueError("odd")
        return value


def questions_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app)

    @mcp.tool()
    @app.post("/ship")
    async def ship(ctx: Context) -> dict[str, Any]:
        speed = await ctx.elicit("Shipping speed?", Literal["standard", "express"], key="speed")
        copies = await ctx.elicit("How many copies?", int, key="copies")
        return {"speed": speed.content, "copies": copies.content}

    @mcp.tool()
    @app.post("/even")
    async def even(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("Pick a number", EvenNumber, key="pick")
        return {"n": answer.content.n if answer.content else None}

    app.mount("/mcp", mcp)
    return app


@pytest.fixture(scope="module")
def questions_url() -> Iterator[str]:
    with running_server(questions_app()) as base:
        yield f"{base}/mcp"


@pytest.mark.slow
def test_cli_bool_shorthand_shows_the_question_and_explains_a_bad_answer(shop_url: str) -> None:
    done = run_cli(
        shop_url, "-H", "Authorization: Bearer alice-token", "delete_book", "book_id=4", stdin="a\nmaybe\ny\n"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "Kindred"
    # the shorthand's one answer is required like any other (issue 28 item 6), and marked so
    assert "  Really delete 'Kindred'? This cannot be undone. (y/n) *: " in done.stderr
    assert "(* = required: an answer is needed)" in done.stderr
    assert "  ! answer y (yes) or n (no), not 'maybe'" in done.stderr
    assert "value" not in done.stderr  # the shorthand's field name is no question


@pytest.mark.slow
def test_cli_literal_and_int_shorthands_explain_what_they_take(questions_url: str) -> None:
    done = run_cli(questions_url, "ship", stdin="a\nfast\nexpress\na\nabc\n2\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"speed": "express", "copies": 2}
    assert "  Shipping speed? - a number *: " in done.stderr
    assert "  ! choose one of: standard, express (or a number 1-2), not 'fast'" in done.stderr
    assert "  How many copies? *: " in done.stderr
    assert "  ! not a whole number: 'abc'" in done.stderr
    assert "value" not in done.stderr


@pytest.mark.slow
def test_cli_explains_the_required_mark_once(shop_url: str) -> None:
    done = run_cli(shop_url, "review_book", "book_id=1", stdin="a\n\n2\na\nToo long\na\ny\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "saved"
    assert "  Stars (1 to 5) *: " in done.stderr and "  What did you not like? *: " in done.stderr
    assert done.stderr.count("(* = required: an answer is needed)") == 1
    assert "  ! required: please enter a value" in done.stderr


def test_cli_unknown_action_is_explained() -> None:
    script = Script("yes", "d")
    assert script.elicit(message="Order?", requestedSchema=FORM).action == "decline"
    assert script.said[-1] == "  ! answer a (accept), d (decline) or c (cancel)"


@pytest.mark.slow
def test_cli_says_when_the_server_did_not_accept_an_answer(questions_url: str) -> None:
    done = run_cli(questions_url, "even", stdin="a\n3\na\n4\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"n": 4}
    assert done.stderr.count("The server asks: Pick a number") == 2
    assert '! The server did not accept that answer ({"n": 3}); please answer again.' in done.stderr
    assert done.stderr.index("did not accept") > done.stderr.index("An even number")
