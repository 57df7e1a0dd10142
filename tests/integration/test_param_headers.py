"""``x-mcp-header`` tool arguments and their ``Mcp-Param-*`` headers (SEP-2243), and ``input_schema=``."""

from __future__ import annotations

import base64
from typing import Annotated, Any

import pytest
from fastapi import Body, FastAPI, Query
from pydantic import BaseModel

from fastapi_mrtr.integration.param_headers import param_headers
from tests.mcp_helpers import connect, make_server, rpc_error

pytestmark = pytest.mark.anyio

HEADER_MISMATCH = -32020


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def _app() -> FastAPI:
    app, mcp = make_server()

    @mcp.tool()
    @app.get("/route")
    async def route(
        region: Annotated[str, Query(json_schema_extra={"x-mcp-header": "Region"})],
        priority: Annotated[int, Query(json_schema_extra={"x-mcp-header": "Priority"})] = 0,
        urgent: Annotated[bool | None, Query(json_schema_extra={"x-mcp-header": "Urgent", "type": "boolean"})] = None,
    ) -> dict[str, Any]:
        """Route a job."""
        return {"region": region, "priority": priority, "urgent": urgent}

    return app


async def _call(app: FastAPI, arguments: dict[str, Any], headers: dict[str, str], request_id: int = 1) -> Any:
    async with connect(app) as client:
        return await client.post(
            "tools/call", {"name": "route", "arguments": arguments}, headers=headers, request_id=request_id
        )


async def test_the_annotation_reaches_the_input_schema() -> None:
    async with connect(_app()) as client:
        tool = await client.tool("route")
    properties = tool["inputSchema"]["properties"]
    assert properties["region"]["x-mcp-header"] == "Region"
    assert properties["priority"]["x-mcp-header"] == "Priority"


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"region": "eu-west"}, {"Mcp-Param-Region": "eu-west"}),
        ({"region": "eu-west"}, {"mcp-param-region": "  eu-west  "}),  # names ignore case, values trim OWS
        ({"region": "Zürich"}, {"Mcp-Param-Region": _b64("Zürich")}),
        ({"region": "SGVsbG8="}, {"Mcp-Param-Region": "SGVsbG8="}),  # no wrapper: literal
        ({"region": "=?base64?SGVsbG8="}, {"Mcp-Param-Region": "=?base64?SGVsbG8="}),  # half a wrapper: literal
        ({"region": "x", "priority": 42}, {"Mcp-Param-Region": "x", "Mcp-Param-Priority": "042"}),  # numerically
        ({"region": "x", "urgent": True}, {"Mcp-Param-Region": "x", "Mcp-Param-Urgent": "true"}),
    ],
)
async def test_matching_headers_are_accepted(arguments: dict[str, Any], headers: dict[str, str]) -> None:
    response = await _call(_app(), arguments, headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["region"] == arguments["region"]


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"region": "eu"}, {}),  # missing header
        ({"region": "eu"}, {"Mcp-Param-Region": "us"}),
        ({"region": "eu"}, {"Mcp-Param-Region": "EU"}),  # values are case-sensitive
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG8?="}),  # bad padding
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}),  # not the alphabet
        ({"region": "x", "priority": 42}, {"Mcp-Param-Region": "x", "Mcp-Param-Priority": "41"}),
        ({"region": "x", "urgent": False}, {"Mcp-Param-Region": "x", "Mcp-Param-Urgent": "true"}),
        ({"region": "x"}, {"Mcp-Param-Region": "x", "Mcp-Param-Priority": "1"}),  # header without argument
    ],
)
async def test_mismatches_are_rejected(arguments: dict[str, Any], headers: dict[str, str]) -> None:
    response = await _call(_app(), arguments, headers, request_id=9)
    error = rpc_error(response, 400, HEADER_MISMATCH, 9)
    assert error["data"]["header"].startswith("Mcp-Param-")


def test_invalid_annotations_are_refused() -> None:
    def schema(prop: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"type": "object", "properties": {"a": prop, **more}}

    for bad in ("", "Two Words", "Région", "Tab\tName", 7):
        with pytest.raises(ValueError, match="HTTP token"):
            param_headers("t", schema({"type": "string", "x-mcp-header": bad}))
    with pytest.raises(ValueError, match="string, integer or boolean"):
        param_headers("t", schema({"type": "number", "x-mcp-header": "N"}))
    with pytest.raises(ValueError, match="ignoring case"):
        param_headers("t", schema({"type": "string", "x-mcp-header": "Id"}, b={"type": "string", "x-mcp-header": "ID"}))
    nested = schema({"type": "object", "properties": {"deep": {"type": "integer", "x-mcp-header": "Deep"}}})
    (binding,) = param_headers("t", nested)
    assert (binding.name, binding.path, binding.type) == ("Deep", ("a", "deep"), "integer")
    # under anything but "properties" (here: items) an annotation is not a binding
    assert param_headers("t", schema({"type": "array", "items": {"type": "string", "x-mcp-header": "X"}})) == ()


def test_invalid_annotations_fail_at_registration() -> None:
    app, mcp = make_server()
    with pytest.raises(ValueError, match="HTTP token"):

        @mcp.tool()
        @app.get("/bad")
        async def bad(q: Annotated[str, Query(json_schema_extra={"x-mcp-header": "bad name"})]) -> str:
            return q


class Point(BaseModel):
    x: int
    y: int


SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
    "additionalProperties": False,
    "if": {"properties": {"x": {"const": 0}}},
    "then": {"properties": {"y": {"minimum": 1}}},
}


async def test_input_schema_override_is_advertised_and_arguments_still_flow() -> None:
    app, mcp = make_server()

    @mcp.tool(input_schema=SCHEMA)
    @app.post("/points")
    async def add_point(point: Annotated[Point, Body()]) -> dict[str, int]:
        """Add a point."""
        return {"sum": point.x + point.y}

    async with connect(app) as client:
        tool = await client.tool("add_point")
        ok = await client.call("add_point", {"x": 2, "y": 3})
        invalid = await client.call("add_point", {"x": "two", "y": 3})
    assert tool["inputSchema"] == SCHEMA
    assert ok["structuredContent"] == {"sum": 5}
    assert invalid["isError"] is True  # FastAPI still validates the arguments (422)


def test_input_schema_must_be_an_object_schema() -> None:
    app, mcp = make_server()
    with pytest.raises(ValueError, match="type"):

        @mcp.tool(input_schema={"type": "array"})
        @app.post("/nope")
        async def nope() -> None:
            return None
