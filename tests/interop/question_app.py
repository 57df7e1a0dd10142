"""An app that asks every kind of question the package can ask, for the interop harness.

The fixture server and the example app ask only a few kinds (a string, a boolean, one enum); this
one adds what they leave out: Optional fields, bounds, formats, single and multi-select enums,
every shorthand, URL mode, sampling with options, roots, and MRTR on a resource template.
"""

from __future__ import annotations

import datetime
import enum
from typing import Literal

from fastapi import FastAPI
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, Context, ServerOptions, ToolContext


class Size(str, enum.Enum):
    small = "small"
    large = "large"


class Profile(BaseModel):
    name: str = Field(title="Name", min_length=2, max_length=40)
    nickname: str | None = Field(default=None, title="Nickname")
    birthday: datetime.date = Field(title="Birthday")
    age: int = Field(ge=0, le=150, title="Age")
    height_m: float = Field(default=1.7, ge=0.1, title="Height (m)")  # gt on a float: no form can carry it
    subscribe: bool = Field(default=False, title="Subscribe")
    colour: Literal["red", "green"] = Field(default="green", title="Colour")
    size: Size = Field(default=Size.small, title="Size")
    tags: list[Literal["sci-fi", "fantasy"]] = Field(default_factory=list, title="Tags")
    sizes: list[Size] = Field(default_factory=list, title="Sizes")  # a multi-select of an Enum
    note: str | None = Field(default=None, max_length=200, title="Note")


class Summary(BaseModel):
    answers: dict[str, object]


def create_app() -> FastAPI:
    app = FastAPI(title="questions")
    mcp = MCP(app, options=ServerOptions(name="questions", version="1.0.0"))

    @mcp.tool()
    @app.post("/profile", response_model=Summary)
    async def ask_profile(ctx: Context) -> Summary:
        """Asks one form with a field of every primitive kind."""
        answer = await ctx.elicit("Tell us about yourself.", Profile, key="profile")
        content = answer.content.model_dump(mode="json") if answer.content else {}
        return Summary(answers={"action": answer.action, **content})

    @mcp.tool()
    @app.post("/shorthands", response_model=Summary)
    async def ask_shorthands(ctx: Context) -> Summary:
        """Asks one shorthand question per round: bool, int, float, str, an Enum and a Literal."""
        agree = await ctx.elicit("Agree?", bool, key="agree")
        count = await ctx.elicit("How many?", int, key="count")
        ratio = await ctx.elicit("Which ratio?", float, key="ratio")
        word = await ctx.elicit("A word?", str, key="word")
        size = await ctx.elicit("Which size?", Size, key="size")
        side = await ctx.elicit("Which side?", Literal["left", "right"], key="side")  # type: ignore[call-overload]
        answers = {"agree": agree, "count": count, "ratio": ratio, "word": word, "size": size, "side": side}
        return Summary(answers={key: _plain(answer.content) for key, answer in answers.items()})

    @mcp.tool()
    @app.post("/url", response_model=Summary)
    async def ask_url(ctx: Context) -> Summary:
        """Sends the user to a page (URL mode)."""
        answer = await ctx.elicit_url("Sign in at the bank.", "https://bank.example/authorize?flow=1", key="bank")
        return Summary(answers={"action": answer.action})

    @mcp.tool()
    @app.post("/model", response_model=Summary)
    async def ask_model(ctx: Context) -> Summary:
        """Asks the client's model, with a system prompt and a temperature."""
        reply = await ctx.sample(
            "Name a colour.", max_tokens=16, system_prompt="Answer in one word.", temperature=0.2, key="colour"
        )
        text = getattr(reply.content, "text", None)
        return Summary(answers={"model": reply.model, "text": text})

    @mcp.tool()
    @app.post("/roots", response_model=Summary)
    async def ask_roots(ctx: Context) -> Summary:
        """Asks the client for its roots."""
        roots = await ctx.list_roots(key="roots")
        return Summary(answers={"roots": [root.uri for root in roots.roots]})

    @mcp.prompt()
    async def plan_trip(city: str, ctx: ToolContext) -> str:
        """A prompt that asks how long the trip is first."""
        days = await ctx.elicit(f"How many days in {city}?", int, key="days")
        return f"Plan {days.content} days in {city}."

    @mcp.resource("notes://{topic}/text", name="note", mime_type="text/plain")
    async def note(topic: str, ctx: ToolContext) -> str:
        """A resource read that asks for a confirmation first (MRTR on resources/read)."""
        answer = await ctx.elicit(f"Open the note on {topic}?", bool, key="open")
        return f"Note on {topic}" if answer.content is True else "(closed)"

    @mcp.completion(resource="notes://{topic}/text", argument="topic")
    def complete_topic(value: str) -> list[str]:
        return [topic for topic in ("mars", "moon", "maths") if topic.startswith(value)]

    app.mount("/mcp", mcp)
    return app


def _plain(value: object) -> object:
    return value.value if isinstance(value, enum.Enum) else value
