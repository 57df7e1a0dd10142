"""A small protected app for the auth tests: tools whose routes declare their scopes with Security."""

# No "from __future__ import annotations": FastAPI must evaluate the Annotated[..., Security(auth.require)]
# parameters, and `auth` is local to build_shop.

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import FastAPI, Security

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.auth import AccessToken, OAuthResourceServer, TokenVerifier


@dataclass
class Shop:
    app: FastAPI
    auth: OAuthResourceServer
    reached: list[str] = field(default_factory=list)  # the routes that ran


def build_shop(
    *,
    issuer: str,
    resource: str,
    allow_anonymous: bool = False,
    scope_hierarchy: Mapping[str, Iterable[str]] | None = None,
    verifier: TokenVerifier | None = None,
    playground_client_id: str | None = None,
) -> Shop:
    app = FastAPI()
    auth = OAuthResourceServer(
        resource=resource,
        authorization_servers=[issuer],
        verifier=verifier,
        allow_anonymous=allow_anonymous,
        scope_hierarchy=scope_hierarchy,
        resource_name="Test shop",
        playground_client_id=playground_client_id,
    )
    mcp = MCP(app, options=ServerOptions(name="shop", version="1"), auth=auth)
    shop = Shop(app, auth)

    @mcp.tool()
    @app.get("/books")
    async def list_books() -> list[str]:
        shop.reached.append("list_books")
        return ["Dune"]

    @mcp.tool()
    @app.get("/orders")
    async def my_orders(
        token: Annotated[AccessToken, Security(auth.require, scopes=["orders:read"])],
    ) -> dict[str, object]:
        shop.reached.append("my_orders")
        return {"subject": token.subject, "orders": [1, 2]}

    async def admin(token: Annotated[AccessToken, Security(auth.require, scopes=["admin"])]) -> AccessToken:
        return token

    @mcp.tool()
    @app.delete("/books/{book_id}")
    async def delete_book(
        book_id: int, ctx: Context, token: Annotated[AccessToken, Security(admin, scopes=["orders:write"])]
    ) -> dict[str, object]:
        # Needs both: its own orders:write and, through the nested dependency, admin.
        shop.reached.append("delete_book")
        await ctx.report_progress(1, 2)
        return {"deleted": book_id, "by": token.subject}

    # Prompts and resources are plain functions: their scopes are marked with auth.scopes.
    @auth.scopes("docs:read")
    @mcp.prompt()
    def briefing(topic: str) -> str:
        shop.reached.append("briefing")
        return f"Brief me on {topic}"

    @auth.scopes("docs:read")
    @mcp.resource("docs://{name}")
    def doc(name: str) -> str:
        shop.reached.append("doc")
        return f"the {name} document"

    app.mount("/mcp", mcp)
    return shop
