"""An app with what a stdio server must survive: it prints, raises, is slow, needs a principal.

Its lifespan and its slow tool write markers to the file ``STDIO_MARKERS`` names, so a test can
see that startup and shutdown ran and that a call was cancelled, after the process is gone.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions

print("printed while the app was imported")  # must reach stderr, never the protocol


def mark(event: str) -> None:
    with open(os.environ["STDIO_MARKERS"], "a", encoding="utf-8") as markers:
        markers.write(event + "\n")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
    mark("startup")
    yield {"greeting": "hello from the lifespan"}
    mark("shutdown")


app = FastAPI(lifespan=lifespan)
mcp = MCP(app, options=ServerOptions(name="quirky", version="1.0.0", request_state_key="q" * 32))
bearer = HTTPBearer(auto_error=False)


@app.middleware("http")
async def broken(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    if os.environ.get("STDIO_BROKEN_MIDDLEWARE") == "1":
        raise RuntimeError("the middleware blew up")
    return await call_next(request)


class Name(BaseModel):
    name: str


@mcp.tool()
@app.post("/shout")
def shout(text: str) -> dict[str, str]:
    """Prints in every way a route can."""
    print(text.upper())
    sys.stdout.write("written to sys.stdout\n")
    sys.stdout.flush()
    os.write(1, b"written to file descriptor 1\n")
    return {"shouted": text.upper()}


@mcp.tool()
@app.post("/explode")
def explode() -> dict[str, str]:
    raise RuntimeError("the handler blew up")


@mcp.tool()
@app.post("/slow")
async def slow(seconds: float) -> dict[str, float]:
    mark("slow started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark("slow cancelled")
        raise
    return {"slept": seconds}


@mcp.tool()
@app.get("/whoami")
def whoami(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> dict[str, str]:
    if credentials is None or credentials.credentials != "stdio-secret":
        raise HTTPException(401, "Sign in: send Authorization: Bearer <token>")
    return {"user": "the stdio user"}


@mcp.tool()
@app.get("/region")
def region(area: Annotated[str, Query(json_schema_extra={"x-mcp-header": "Region"})]) -> dict[str, str]:
    """A tool argument mirrored into a header (SEP-2243): the bridge must send Mcp-Param-Region."""
    return {"area": area}


@mcp.tool()
@app.get("/greeting")
def greeting(request: Request) -> dict[str, str]:
    """What the lifespan put in the state."""
    return {"greeting": request.state.greeting}


@mcp.tool()
@app.post("/ask")
async def ask(ctx: Context) -> dict[str, str]:
    answer = await ctx.elicit("What is your name?", Name, key="name")
    return {"hello": answer.content.name if answer.content else "nobody"}


@mcp.tool()
@app.post("/poke")
async def poke(ctx: Context) -> dict[str, bool]:
    """Reports progress, then says the tool list changed (a notification for every listener)."""
    await ctx.report_progress(1, 2, "halfway")
    mcp.notify_tools_changed()
    return {"poked": True}


app.mount("/mcp", mcp)
