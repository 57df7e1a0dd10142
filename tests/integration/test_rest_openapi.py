"""/docs tells a REST caller about the 428 answer and the MRTR-* headers of a route that asks."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.integration.rest import document_rest_answers
from tests.support import rpc_body, rpc_headers


def app_with_tools() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(request_state_key=b"k" * 32))

    @mcp.tool()
    @app.delete("/items/{item_id}")
    async def delete_item(item_id: int, ctx: Context) -> dict[str, int]:
        answer = await ctx.elicit("Really delete it?", bool, key="confirm")
        return {"deleted": item_id if answer.content else 0}

    @mcp.tool()
    @app.get("/items/{item_id}")
    async def get_item(item_id: int) -> dict[str, int]:
        return {"id": item_id}

    app.mount("/mcp", mcp)
    return app


def operation(spec: Any, path: str, method: str) -> Any:
    return spec["paths"][path][method]


def test_a_route_that_asks_documents_428_and_the_headers() -> None:
    app = app_with_tools()
    spec = app.openapi()
    validate(spec)  # still a valid OpenAPI document
    asks = operation(spec, "/items/{item_id}", "delete")
    answer = asks["responses"]["428"]
    assert "MRTR-Request-State" in answer["description"]
    schema = answer["content"]["application/json"]["schema"]
    headers = {p["name"]: p for p in asks["parameters"] if p["in"] == "header"}
    assert set(headers) == {"MRTR-Request-State", "MRTR-Input-Responses"}
    assert not any(p["required"] for p in headers.values())
    assert [p["name"] for p in asks["parameters"] if p["in"] == "path"] == ["item_id"]  # its own stay
    plain = operation(spec, "/items/{item_id}", "get")  # never asks: nothing added
    assert "428" not in plain["responses"] and all(p["in"] != "header" for p in plain["parameters"])

    # What is documented is what the route answers, and the documented headers carry the retry.
    with TestClient(app) as http:
        first = http.delete("/items/7")
        assert first.status_code == 428
        jsonschema.validate(first.json(), schema)
        retry = http.delete(
            "/items/7",
            headers={
                "MRTR-Request-State": first.json()["requestState"],
                "MRTR-Input-Responses": json.dumps({"confirm": {"action": "accept", "content": {"value": True}}}),
            },
        )
        assert retry.status_code == 200 and retry.json() == {"deleted": 7}


def test_documented_once_however_often_built() -> None:
    app = app_with_tools()
    route = next(r for r in app.routes if isinstance(r, APIRoute) and r.endpoint.__name__ == "delete_item")
    for _ in range(3):  # a tool is built again when its route changes
        document_rest_answers(route)
    asks = operation(app.openapi(), "/items/{item_id}", "delete")
    assert [p["name"] for p in asks["parameters"]].count("MRTR-Request-State") == 1


def test_an_included_routers_route_too() -> None:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(request_state_key=b"k" * 32))
    router = APIRouter(prefix="/r")

    @mcp.tool()
    @router.post("/ask")
    async def ask(ctx: Context) -> dict[str, bool]:
        answer = await ctx.elicit("Go on?", bool, key="go")
        return {"go": bool(answer.content)}

    app.include_router(router)
    app.mount("/mcp", mcp)
    with TestClient(app) as http:  # the tool is resolved against the included route on first use
        listed = http.post("/mcp", json=rpc_body("tools/list"), headers=rpc_headers("tools/list"))
        assert [t["name"] for t in listed.json()["result"]["tools"]] == ["ask"]
    asks = operation(app.openapi(), "/r/ask", "post")
    assert "428" in asks["responses"]
    assert [p["name"] for p in asks["parameters"]] == ["MRTR-Request-State", "MRTR-Input-Responses"]
