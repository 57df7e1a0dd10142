"""A question type no form can carry fails when the tool, prompt or resource is registered.

``ctx.elicit`` checks its type on the line that asks; registration reads the handler's source so
that a question asked only on a rare branch fails at import instead. These tests try to fool it
both ways: a bad type must be caught wherever it is written plainly, and nothing that the ask
itself would accept (or that registration cannot know) may be refused.
"""

from __future__ import annotations

import datetime
import linecache
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, Context, ServerOptions

KEY = "static-questions-key-0123456789abcdef01"


class Nested(BaseModel):
    inner: Confirm


class Confirm(BaseModel):
    ok: bool


class Amount(BaseModel):
    cents: int = Field(gt=0)


class Pattern(BaseModel):
    code: str = Field(pattern=r"^[A-Z]{3}$")


Nested.model_rebuild()


def new_mcp() -> tuple[FastAPI, MCP]:
    app = FastAPI()
    return app, MCP(app, options=ServerOptions(name="s", version="1", request_state_key=KEY))


def test_a_nested_model_on_a_rare_branch_fails_at_registration_naming_the_line() -> None:
    app, mcp = new_mcp()
    with pytest.raises(TypeError) as caught:

        @mcp.tool()
        @app.post("/rare")
        async def rare(flag: bool, ctx: Context) -> str:
            if flag:  # never taken in a quick manual test
                await ctx.elicit("Which?", Nested)
            return "ok"

    message = str(caught.value)
    assert "rare" in message and "line" in message and "test_static_questions.py" in message
    assert "Nested" in message


@pytest.mark.parametrize(
    "schema_source",
    ["list[str]", "tuple[int, int]", "Nested", "Pattern", "dict[str, int]"],
)
def test_type_expressions_are_checked(schema_source: str) -> None:
    app, mcp = new_mcp()
    namespace: dict[str, Any] = {
        "app": app,
        "mcp": mcp,
        "Context": Context,
        "Pattern": Pattern,
        "Nested": Nested,
        "datetime": datetime,
    }
    source = (
        "@mcp.tool()\n"
        "@app.post('/t')\n"
        "async def t(ctx: Context) -> str:\n"
        f"    await ctx.elicit('Q?', {schema_source}, key='q')\n"
        "    return 'ok'\n"
    )
    path = f"<static-{abs(hash(schema_source))}>"
    code = compile(source, path, "exec")
    # inspect needs the source: register it in linecache as a real file would be.
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    with pytest.raises(TypeError):
        exec(code, namespace)


def test_what_the_ask_accepts_is_accepted_at_registration() -> None:
    app, mcp = new_mcp()

    @mcp.tool()
    @app.post("/fine")
    async def fine(ctx: Context) -> str:
        await ctx.elicit("Sure?", Confirm, key="a")
        await ctx.elicit("How much?", Amount, key="b")  # gt=0 is carried as minimum 1
        await ctx.elicit("Day?", datetime.date, key="c")
        await ctx.elicit("Yes?", bool, key="d")
        return "ok"

    assert fine.__name__ == "fine"  # registered: no TypeError for any of the four


def test_what_registration_cannot_know_is_left_to_the_ask() -> None:
    app, mcp = new_mcp()

    # A schema in a variable, a class defined in the handler that shadows a bad module name, a
    # call on something that is not a parameter: none is refused at registration.
    @mcp.tool()
    @app.post("/unknown")
    async def unknown(kind: str, ctx: Context) -> str:
        schema: Any = Confirm if kind else Nested
        await ctx.elicit("A?", schema, key="a")

        class Pattern(BaseModel):  # shadows the module's bad Pattern
            code: str

        await ctx.elicit("B?", Pattern, key="b")
        return "ok"

    @mcp.prompt()
    def greeting(name: str) -> str:
        return f"Hello {name}"


def test_prompts_and_resources_are_checked_too() -> None:
    _app, mcp = new_mcp()
    with pytest.raises(TypeError, match="Pattern"):

        @mcp.prompt()
        async def ask_code(ctx: Context) -> str:
            answer = await ctx.elicit("Code?", Pattern)
            return str(answer)

    with pytest.raises(TypeError, match="Nested"):

        @mcp.resource("test://r")
        async def read_r(ctx: Context) -> str:
            await ctx.elicit("Which?", schema=Nested)
            return "r"
