"""Small apps the playground tests serve besides the example bookshop and the conformance fixture."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel, Field, WithJsonSchema

from fastapi_mrtr import MCP, CallToolResult, Context, ServerOptions, TextContent, ToolContext

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


class Address(BaseModel):
    street: str = Field(title="Street")
    city: str = Field(default="Paris", title="City")


class Everything(BaseModel):
    """Every kind of field the tool form draws ($defs for Address)."""

    name: str = Field(title="Name", description="Who is asking")
    count: int = Field(default=2, title="Count", ge=0, le=10)
    ratio: float = Field(title="Ratio")
    urgent: bool = Field(default=False, title="Urgent")
    colour: Literal["red", "green", "blue"] = Field(title="Colour")
    size: Annotated[
        Literal["s", "m", "l"],
        WithJsonSchema(
            {
                "type": "string",
                "oneOf": [
                    {"const": "s", "title": "Small"},
                    {"const": "m", "title": "Medium"},
                    {"const": "l", "title": "Large"},
                ],
            }
        ),
    ] = Field(title="Size")
    tags: list[str] = Field(default_factory=list, title="Tags")
    address: Address = Field(title="Address")
    note: str | None = Field(default=None, title="Note")


class Payload(BaseModel):
    text: str = Field(default=XSS, title=f"Field {XSS}", description=XSS)
    pick: Literal["a", "b"] = Field(default="a", title=XSS)


class Question(BaseModel):
    ok: bool = Field(title=f"Question field {XSS}")


def forms_app() -> FastAPI:
    """One echo tool with a rich input schema; one that needs Authorization."""
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="forms", version="1.0.0"))

    @mcp.tool()
    @app.post("/echo")
    async def echo(body: Everything) -> Everything:
        """Echoes what the form sent."""
        return body

    @mcp.tool()
    @app.get("/whoami")
    def whoami(authorization: Annotated[str | None, Header()] = None) -> dict[str, str]:
        """Needs Authorization: Bearer <token>."""
        if authorization != "Bearer sesame":
            raise HTTPException(401, "Sign in first")
        return {"user": "ada"}

    @mcp.tool()
    @app.post("/connect")
    async def connect(ctx: Context) -> dict[str, str]:
        """Sends the user to a sign-in page (URL-mode elicitation)."""
        answer = await ctx.elicit_url("Sign in to the archive", "https://archive.example/sign-in?flow=1", key="signin")
        return {"action": answer.action}

    @mcp.resource("notes://{topic}", mime_type="text/plain")
    async def note(topic: str, ctx: ToolContext) -> str:
        """A note on a topic; asks who reads it first (MRTR on resources/read)."""
        reader = await ctx.elicit("Who reads this note?", str, key="reader")
        return f"Note on {topic} for {reader.content}"

    app.mount("/mcp", mcp)
    return app


def xss_app() -> FastAPI:
    """Tool title, description, schema titles, a question and results all carry markup payloads."""
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name=f"xss {XSS}", version=XSS, instructions=XSS))

    @mcp.tool(title=f"Title {XSS}", description=f"Description {XSS}")
    @app.post("/xss")
    async def xss(payload: Payload, ctx: Context) -> CallToolResult:
        answer = await ctx.elicit(f"Question {XSS}", Question, key="q")
        ok = answer.content is not None and answer.content.ok
        text = f"Result {XSS} {payload.text} {ok}"
        return CallToolResult(
            content=[TextContent(text=text)], structured_content={"html": XSS, "rows": [{"cell": XSS}]}
        )

    app.mount("/mcp", mcp)
    return app
