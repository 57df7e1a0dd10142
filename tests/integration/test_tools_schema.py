"""Tools from FastAPI path functions: names, descriptions, annotations, input and output schemas, tools/list."""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Body, Cookie, Depends, FastAPI, Header, Query
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi.security import (
    APIKeyCookie,
    APIKeyHeader,
    HTTPAuthorizationCredentials,
    HTTPBearer,
    OAuth2PasswordBearer,
)
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from mcp import Client
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, ToolAnnotations
from tests.mcp_helpers import connect, make_server, rpc_error
from tests.support import running_server

pytestmark = pytest.mark.anyio

ServerFactory = Callable[..., tuple[FastAPI, MCP]]
JSON = dict[str, Any]


class Tag(BaseModel):
    name: str


class Item(BaseModel):
    title: str = Field(max_length=20, description="Shown in the catalogue")
    price: float = Field(ge=0)
    tags: list[Tag] = []


class WithId(BaseModel):
    id: int
    name: str


class Node(BaseModel):
    value: int
    children: list[Node] = []


oauth2 = OAuth2PasswordBearer(tokenUrl="token", auto_error=False)
bearer = HTTPBearer(auto_error=False)
api_key = APIKeyHeader(name="x-api-key", auto_error=False)
cookie_key = APIKeyCookie(name="session", auto_error=False)


def paging(page: int = 1, x_trace: Annotated[str | None, Header()] = None) -> int:
    return page


def needs_id(id: int = 0) -> int:
    return id


def assert_valid_schema(schema: JSON) -> None:
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"


def conforms(schema: JSON, value: Any) -> bool:
    return bool(Draft202012Validator(schema).is_valid(value))


# --- names, titles, descriptions -----------------------------------------------------------------


async def test_name_defaults_to_function_name(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/ping")
    async def say_hello() -> dict[str, str]:
        return {"hello": "world"}

    async with connect(app) as client:
        tool = await client.tool("say_hello")
    assert tool["name"] == "say_hello"
    assert "title" not in tool
    assert "description" not in tool
    assert tool["inputSchema"] == {"type": "object", "properties": {}}


async def test_name_title_description_options(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool("books.find-v2", title="Find books", description="Search the catalogue.")
    @app.get("/search")
    async def search(q: str) -> list[str]:
        """Ignored: description= wins."""
        return [q]

    async with connect(app) as client:
        tools = await client.list_tools()
    assert [t["name"] for t in tools] == ["books.find-v2"]
    assert tools[0]["title"] == "Find books"
    assert tools[0]["description"] == "Search the catalogue."


async def test_description_from_docstring(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/doc")
    async def documented() -> int:
        """First line.

        More details, dedented.
        """
        return 1

    async with connect(app) as client:
        tool = await client.tool("documented")
    assert tool["description"] == "First line.\n\nMore details, dedented."


async def test_description_falls_back_to_route_description(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/described", description="From the route.")
    async def described() -> int:
        return 1

    async with connect(app) as client:
        tool = await client.tool("described")
    assert tool["description"] == "From the route."


@pytest.mark.parametrize("name", ["has space", "slash/name", "caf\u00e9", "a" * 65, "semi;colon"])
def test_invalid_names_fail_at_registration(server_factory: ServerFactory, name: str) -> None:
    app, mcp = server_factory()

    async def endpoint() -> int:
        return 1

    app.get("/x")(endpoint)
    with pytest.raises(ValueError, match="tool name"):
        mcp.tool(name)(endpoint)


def test_invalid_function_name_fails_at_registration(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    async def endpoint() -> int:
        return 1

    endpoint.__name__ = "not valid"
    app.get("/x")(endpoint)
    with pytest.raises(ValueError, match="tool name"):
        mcp.tool()(endpoint)


async def test_longest_name_is_accepted(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    name = "n" * 64

    @mcp.tool(name)
    @app.get("/long")
    async def long_name() -> int:
        return 1

    async with connect(app) as client:
        assert (await client.call(name))["structuredContent"] == {"result": 1}


def test_duplicate_names_fail(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool("same")
    @app.get("/a")
    async def first() -> int:
        return 1

    async def second() -> int:
        return 2

    app.get("/b")(second)
    with pytest.raises(ValueError, match="already registered"):
        mcp.tool("same")(second)


def test_duplicate_function_names_fail(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    router = APIRouter()

    @mcp.tool()
    @app.get("/a")
    async def twin() -> int:
        return 1

    with pytest.raises(ValueError, match="twin"):

        @mcp.tool()
        @router.get("/b")
        async def twin() -> int:
            return 2


# --- annotations ------------------------------------------------------------------------------------


async def test_annotations_default_from_http_method(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/r")
    async def read_it() -> int:
        return 1

    @mcp.tool()
    @app.post("/r")
    async def create_it() -> int:
        return 1

    @mcp.tool()
    @app.put("/r")
    async def replace_it() -> int:
        return 1

    @mcp.tool()
    @app.patch("/r")
    async def patch_it() -> int:
        return 1

    @mcp.tool()
    @app.delete("/r")
    async def delete_it() -> int:
        return 1

    async with connect(app) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["read_it"]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert "annotations" not in tools["create_it"]
    assert tools["replace_it"]["annotations"] == {"idempotentHint": True}
    assert "annotations" not in tools["patch_it"]
    assert tools["delete_it"]["annotations"] == {"destructiveHint": True}


async def test_annotations_override_defaults(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool(annotations={"readOnlyHint": False, "openWorldHint": True})
    @app.get("/fetch")
    async def fetch_url() -> int:
        return 1

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True, title="Remove"))
    @app.delete("/soft")
    async def soft_delete() -> int:
        return 1

    async with connect(app) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["fetch_url"]["annotations"] == {"readOnlyHint": False, "idempotentHint": True, "openWorldHint": True}
    assert tools["soft_delete"]["annotations"]["destructiveHint"] is False
    assert tools["soft_delete"]["annotations"]["idempotentHint"] is True
    assert tools["soft_delete"]["title"] == "Remove"


# --- inputSchema ------------------------------------------------------------------------------------


async def test_path_query_and_flattened_body(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/shops/{shop}/items")
    async def add_item(
        shop: str, item: Item, notify: bool = False, limit: Annotated[int, Query(ge=1, le=5)] = 3
    ) -> Item:
        return item

    async with connect(app) as client:
        schema = (await client.tool("add_item"))["inputSchema"]
        result = await client.call(
            "add_item", {"shop": "s1", "title": "Dune", "price": 9.5, "tags": [{"name": "sf"}], "limit": 2}
        )
    assert_valid_schema(schema)
    assert list(schema["properties"]) == ["shop", "notify", "limit", "title", "price", "tags"]
    assert schema["required"] == ["shop", "title", "price"]
    props = schema["properties"]
    assert props["shop"]["type"] == "string"
    assert props["notify"] == {"type": "boolean", "title": "Notify", "default": False}
    assert props["limit"]["minimum"] == 1 and props["limit"]["maximum"] == 5
    assert props["title"]["maxLength"] == 20
    assert props["title"]["description"] == "Shown in the catalogue"
    assert props["price"]["minimum"] == 0
    assert props["tags"]["items"] == {"$ref": "#/$defs/Tag"}
    assert schema["$defs"]["Tag"]["properties"]["name"]["type"] == "string"
    assert "item" not in props
    assert conforms(schema, {"shop": "s", "title": "t", "price": 1})
    assert not conforms(schema, {"shop": "s", "title": "t"})
    assert result["isError"] is False
    assert result["structuredContent"] == {"title": "Dune", "price": 9.5, "tags": [{"name": "sf"}]}


async def test_several_bodies_are_embedded(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/pair")
    async def pair(item: Item, tag: Tag) -> dict[str, str]:
        return {"title": item.title, "tag": tag.name}

    async with connect(app) as client:
        schema = (await client.tool("pair"))["inputSchema"]
        result = await client.call("pair", {"item": {"title": "A", "price": 1}, "tag": {"name": "x"}})
    assert_valid_schema(schema)
    assert schema["properties"]["item"]["$ref"] == "#/$defs/Item"
    assert schema["properties"]["tag"]["$ref"] == "#/$defs/Tag"
    assert schema["required"] == ["item", "tag"]
    assert set(schema["$defs"]) == {"Item", "Tag"}
    assert result["structuredContent"] == {"title": "A", "tag": "x"}


async def test_embed_true_keeps_the_model_under_its_name(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/embedded")
    async def embedded(item: Annotated[Item, Body(embed=True)]) -> dict[str, str]:
        return {"title": item.title}

    async with connect(app) as client:
        schema = (await client.tool("embedded"))["inputSchema"]
        result = await client.call("embedded", {"item": {"title": "B", "price": 2}})
    assert_valid_schema(schema)
    assert list(schema["properties"]) == ["item"]
    assert schema["properties"]["item"]["$ref"] == "#/$defs/Item"
    assert result["structuredContent"] == {"title": "B"}


async def test_non_model_body(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/sum")
    async def total(values: list[int]) -> int:
        return sum(values)

    @mcp.tool()
    @app.post("/echo")
    async def echo(text: Annotated[str, Body()]) -> str:
        return text

    async with connect(app) as client:
        total_schema = (await client.tool("total"))["inputSchema"]
        echo_schema = (await client.tool("echo"))["inputSchema"]
        total_result = await client.call("total", {"values": [1, 2, 3]})
        echo_result = await client.call("echo", {"text": "hi"})
    assert total_schema["properties"] == {"values": {"type": "array", "items": {"type": "integer"}, "title": "Values"}}
    assert total_schema["required"] == ["values"]
    assert echo_schema["properties"]["text"]["type"] == "string"
    assert total_result["structuredContent"] == {"result": 6}
    assert echo_result["structuredContent"] == {"result": "hi"}


async def test_embedded_scalar_body_and_list_query(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/rate")
    async def rate(
        stars: Annotated[int, Body(embed=True, ge=1, le=5)],
        tags: Annotated[list[str], Query()] = [],  # noqa: B006
    ) -> dict[str, Any]:
        return {"stars": stars, "tags": tags}

    async with connect(app) as client:
        schema = (await client.tool("rate"))["inputSchema"]
        result = await client.call("rate", {"stars": 4, "tags": ["a", "b c"]})
        invalid = await client.call("rate", {"stars": 9})
    assert_valid_schema(schema)
    assert schema["properties"]["stars"]["maximum"] == 5
    assert schema["properties"]["tags"]["items"] == {"type": "string"}
    assert schema["required"] == ["stars"]
    assert result["structuredContent"] == {"stars": 4, "tags": ["a", "b c"]}
    assert invalid["isError"] is True


async def test_recursive_model(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/tree")
    async def tree_size(node: Node) -> Node:
        return node

    tree = {"value": 1, "children": [{"value": 2, "children": [{"value": 3, "children": []}]}]}
    async with connect(app) as client:
        tool = await client.tool("tree_size")
        result = await client.call("tree_size", tree)
    assert_valid_schema(tool["inputSchema"])
    assert_valid_schema(tool["outputSchema"])
    assert tool["inputSchema"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert conforms(tool["inputSchema"], tree)
    assert not conforms(tool["inputSchema"], {"value": 1, "children": [{"value": "x"}]})
    assert result["isError"] is False
    assert result["structuredContent"] == tree
    assert conforms(tool["outputSchema"], result["structuredContent"])


async def test_header_cookie_and_security_params_stay_out(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/secure/{thing}")
    async def secure(
        thing: str,
        page: Annotated[int, Depends(paging)],
        token: Annotated[str | None, Depends(oauth2)],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        key: Annotated[str | None, Depends(api_key)],
        cookie: Annotated[str | None, Depends(cookie_key)],
        q: str = "",
        user_agent: Annotated[str | None, Header()] = None,
        session_id: Annotated[str | None, Cookie()] = None,
    ) -> dict[str, Any]:
        return {"thing": thing, "page": page}

    async with connect(app) as client:
        schema = (await client.tool("secure"))["inputSchema"]
        result = await client.call("secure", {"thing": "t", "page": 4})
    assert_valid_schema(schema)
    # A dependency's query parameter is an argument; headers, cookies and credentials never are.
    assert sorted(schema["properties"]) == ["page", "q", "thing"]
    assert schema["required"] == ["thing"]
    assert result["structuredContent"] == {"thing": "t", "page": 4}


@pytest.mark.parametrize("where", ["path-body", "query-body", "dependency-query"])
def test_colliding_argument_names_fail_at_registration(server_factory: ServerFactory, where: str) -> None:
    app, mcp = server_factory()

    if where == "path-body":

        async def endpoint(id: int, body: WithId) -> int:
            return id

        app.put("/things/{id}")(endpoint)
    elif where == "query-body":

        async def endpoint(id: int, body: WithId) -> int:
            return id

        app.post("/things")(endpoint)
    else:

        async def endpoint(body: WithId, dep: Annotated[int, Depends(needs_id)]) -> int:  # type: ignore[misc]
            return dep

        app.post("/things")(endpoint)
    with pytest.raises(ValueError, match=r"'id'|\bid\b") as raised:
        mcp.tool()(endpoint)
    assert "endpoint" in str(raised.value)


# --- outputSchema and results -----------------------------------------------------------------------


async def test_output_schema_from_response_model_and_annotation(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/by-model", response_model=Tag)
    async def by_model() -> Any:
        return {"name": "x", "dropped": True}

    @mcp.tool()
    @app.get("/by-annotation")
    async def by_annotation() -> Tag:
        return Tag(name="y")

    @mcp.tool()
    @app.get("/untyped", response_model=None)
    async def untyped() -> dict[str, str]:
        return {"free": "form"}

    async with connect(app) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        model_result = await client.call("by_model")
        annotation_result = await client.call("by_annotation")
        untyped_result = await client.call("untyped")
    for name in ("by_model", "by_annotation"):
        schema = tools[name]["outputSchema"]
        assert_valid_schema(schema)
        assert schema["properties"]["name"]["type"] == "string"
        assert schema["required"] == ["name"]
    assert "outputSchema" not in tools["untyped"]
    assert model_result["structuredContent"] == {"name": "x"}
    assert annotation_result["structuredContent"] == {"name": "y"}
    assert untyped_result["structuredContent"] == {"free": "form"}
    assert conforms(tools["by_model"]["outputSchema"], model_result["structuredContent"])


@pytest.mark.parametrize(
    ("annotation", "value", "inner_type"),
    [(list[int], [1, 2], "array"), (int, 7, "integer"), (str, "s", "string"), (bool, True, "boolean")],
)
async def test_non_object_output_is_wrapped(
    server_factory: ServerFactory, annotation: Any, value: Any, inner_type: str
) -> None:
    app, mcp = server_factory()

    async def scalar() -> Any:
        return value

    app.get("/scalar", response_model=annotation)(scalar)
    mcp.tool()(scalar)
    async with connect(app) as client:
        tool = await client.tool("scalar")
        result = await client.call("scalar")
    schema = tool["outputSchema"]
    assert_valid_schema(schema)
    assert schema["required"] == ["result"]
    assert schema["properties"]["result"]["type"] == inner_type
    assert result["structuredContent"] == {"result": value}
    assert conforms(schema, result["structuredContent"])


async def test_wrapped_output_keeps_defs(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/tags")
    async def list_tags() -> list[Tag]:
        return [Tag(name="a"), Tag(name="b")]

    async with connect(app) as client:
        tool = await client.tool("list_tags")
        result = await client.call("list_tags")
    schema = tool["outputSchema"]
    assert_valid_schema(schema)
    assert schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Tag"}
    assert "Tag" in schema["$defs"]
    assert result["structuredContent"] == {"result": [{"name": "a"}, {"name": "b"}]}
    assert conforms(schema, result["structuredContent"])


async def test_structured_content_with_json_text_block(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/item")
    async def one_item() -> Item:
        return Item(title="T\u00e9", price=3)

    async with connect(app) as client:
        result = await client.call("one_item")
    import json

    assert result["resultType"] == "complete"
    assert result["isError"] is False
    [block] = result["content"]
    assert block["type"] == "text"
    assert json.loads(block["text"]) == result["structuredContent"] == {"title": "T\u00e9", "price": 3.0, "tags": []}


# --- the output rule: every outputSchema is kept by every answer ------------------------------------


class Color(str, enum.Enum):
    red = "red"
    blue = "blue"


class Maybe(BaseModel):
    n: int
    note: str | None


class Aliased(BaseModel):
    full_name: str = Field(alias="fullName")


class PngResponse(Response):
    media_type = "image/png"


class VendorJson(JSONResponse):
    media_type = "application/vnd.shop+json"


PNG = b"\x89PNG\r\n\x1a\n"


ABSENT = object()  # no structuredContent in the result


@dataclass(frozen=True)
class OutputCase:
    """One route shape: whether it publishes an outputSchema and what its result structures."""

    name: str
    route: dict[str, Any]  # keyword arguments of app.get
    endpoint: Callable[[], Any]  # one function per case: a tool finds its route by its function
    structured: Any = ABSENT
    schema: bool = True
    error: bool = False


def _tag() -> Tag:
    return Tag(name="x")


async def _text() -> str:
    return "just text"


def _maybe_int() -> int | None:
    return None


OUTPUT_CASES = [
    # JSON response classes: the body is the response model's JSON.
    OutputCase("json_model", {}, _tag, {"name": "x"}),
    OutputCase("json_response_model", {"response_model": Tag}, lambda: {"name": "y", "dropped": 1}, {"name": "y"}),
    OutputCase("json_dict", {"response_model": dict[str, int]}, lambda: {"a": 1}, {"a": 1}),
    OutputCase("json_str", {"response_model": str}, lambda: "s", {"result": "s"}),
    OutputCase("json_int", {"response_model": int}, lambda: 7, {"result": 7}),
    OutputCase("json_list", {"response_model": list[Tag]}, lambda: [Tag(name="a")], {"result": [{"name": "a"}]}),
    OutputCase("json_optional_none", {}, _maybe_int, {"result": None}),
    OutputCase(
        "json_union",
        {"response_model": Tag | WithId},
        lambda: WithId(id=1, name="n"),
        {"result": {"id": 1, "name": "n"}},
    ),
    OutputCase(
        "json_class", {"response_class": JSONResponse, "response_model": Tag}, lambda: Tag(name="x"), {"name": "x"}
    ),
    OutputCase(
        "json_vendor_class", {"response_class": VendorJson, "response_model": Tag}, lambda: _tag(), {"name": "x"}
    ),
    OutputCase(
        "json_exclude_none",
        {"response_model": Maybe, "response_model_exclude_none": True},
        lambda: Maybe(n=1, note=None),
        {"n": 1},
    ),
    OutputCase(
        "json_by_field_name",
        {"response_model": Aliased, "response_model_by_alias": False},
        lambda: Aliased(fullName="A"),
        {"full_name": "A"},
    ),
    OutputCase(
        "json_returns_json_response",
        {"response_model": Tag},
        lambda: JSONResponse({"name": "direct"}),
        {"name": "direct"},
    ),
    # Text response classes: the body is the string itself.
    OutputCase("plain_str", {"response_class": PlainTextResponse}, _text, {"result": "just text"}),
    OutputCase(
        "plain_empty_str", {"response_class": PlainTextResponse, "response_model": str}, lambda: "", {"result": ""}
    ),
    OutputCase(
        "html_str",
        {"response_class": HTMLResponse, "response_model": str},
        lambda: "<b>hi</b>",
        {"result": "<b>hi</b>"},
    ),
    OutputCase("response_str", {"response_class": Response, "response_model": str}, lambda: "bare", {"result": "bare"}),
    OutputCase(
        "plain_enum",
        {"response_class": PlainTextResponse, "response_model": Color},
        lambda: Color.blue,
        {"result": "blue"},
    ),
    OutputCase(
        "plain_constrained",
        {"response_class": PlainTextResponse, "response_model": Annotated[str, Field(max_length=3)]},
        lambda: "abc",
        {"result": "abc"},
    ),
    # Shapes that cannot be structured publish no outputSchema.
    OutputCase(
        "plain_optional_str",
        {"response_class": PlainTextResponse, "response_model": str | None},
        lambda: "maybe",
        schema=False,
    ),
    OutputCase("bytes_body", {"response_class": Response, "response_model": bytes}, lambda: b"raw", schema=False),
    OutputCase(
        "image_class",
        {"response_class": PngResponse, "response_model": bytes},
        lambda: Response(PNG, media_type="image/png"),
        schema=False,
    ),
    OutputCase(
        "streaming_class",
        {"response_class": StreamingResponse, "response_model": str},
        lambda: StreamingResponse(iter(["chunk"])),
        schema=False,
    ),
    OutputCase(
        "exclude_fields",
        {"response_model": WithId, "response_model_exclude": {"name"}},
        lambda: WithId(id=1, name="n"),
        {"id": 1},
        schema=False,
    ),
    OutputCase(
        "include_fields",
        {"response_model": WithId, "response_model_include": {"id"}},
        lambda: WithId(id=1, name="n"),
        {"id": 1},
        schema=False,
    ),
    OutputCase("untyped", {"response_model": None}, lambda: {"free": 1}, {"free": 1}, schema=False),
    OutputCase("any", {"response_model": Any}, lambda: [1], schema=False),
    OutputCase("returns_response", {}, lambda: PlainTextResponse("raw text"), schema=False),
    # A route answering, itself, a Response its outputSchema does not describe: an error result.
    OutputCase("model_returns_text", {"response_model": Tag}, lambda: PlainTextResponse("oops"), error=True),
    OutputCase("model_returns_empty", {"response_model": Tag}, lambda: Response(status_code=200), error=True),
    OutputCase("model_returns_list", {"response_model": Tag}, lambda: JSONResponse([1]), error=True),
    OutputCase(
        "text_returns_image",
        {"response_class": PlainTextResponse, "response_model": str},
        lambda: Response(PNG, media_type="image/png"),
        error=True,
    ),
    # Error statuses are isError results, which need no structuredContent.
    OutputCase(
        "model_answers_409",
        {"response_model": Tag},
        lambda: JSONResponse({"detail": "busy"}, status_code=409),
        error=True,
    ),
]


def output_cases_app() -> FastAPI:
    """One tool per entry of OUTPUT_CASES, at ``/out/<name>``."""
    app, mcp = make_server()
    for case in OUTPUT_CASES:
        app.get(f"/out/{case.name}", **case.route)(case.endpoint)
        mcp.tool(name=case.name)(case.endpoint)
    return app


def check_output_rule(case: OutputCase, tool: JSON, result: JSON) -> None:
    assert ("outputSchema" in tool) is case.schema, (case.name, tool)
    assert result["isError"] is case.error, (case.name, result)
    if case.schema:
        assert_valid_schema(tool["outputSchema"])
    if case.structured is ABSENT:
        assert "structuredContent" not in result, (case.name, result)
        return
    assert result["structuredContent"] == case.structured, (case.name, result)
    if case.schema:
        assert conforms(tool["outputSchema"], result["structuredContent"]), (case.name, tool, result)


async def test_every_output_schema_is_kept_by_its_results() -> None:
    app = output_cases_app()
    async with connect(app) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        for case in OUTPUT_CASES:
            check_output_rule(case, tools[case.name], await client.call(case.name))


async def test_text_results_keep_their_text_block() -> None:
    async with connect(output_cases_app()) as client:
        plain = await client.call("plain_str")
        image = await client.call("image_class")
        raw = await client.call("bytes_body")
        refused = await client.call("model_returns_text")
    assert plain["content"] == [{"type": "text", "text": "just text"}]
    assert image["content"] == [{"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}]
    assert raw["content"] == [{"type": "text", "text": "raw"}]
    assert "model_returns_text" in refused["content"][0]["text"] and "outputSchema" in refused["content"][0]["text"]


async def test_official_client_accepts_every_result() -> None:
    """mcp 2.3.0 checks structuredContent against outputSchema itself: no case may trip it."""
    with running_server(output_cases_app()) as base:
        async with Client(f"{base}/mcp", mode="2026-07-28") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            for case in OUTPUT_CASES:
                result = await client.call_tool(case.name, {})
                assert result.is_error is case.error, (case.name, result)
                assert (listed[case.name].output_schema is not None) is case.schema, case.name
                if case.structured is not ABSENT:
                    assert result.structured_content == case.structured, case.name


# --- routes registered later ------------------------------------------------------------------------


async def test_routes_added_after_mcp_and_via_router(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    router = APIRouter()

    @mcp.tool()
    @router.get("/{book_id}")
    async def router_book(book_id: int, q: str = "") -> dict[str, Any]:
        """From a router."""
        return {"id": book_id, "q": q}

    app.include_router(router, prefix="/library/books")

    @mcp.tool()
    @app.get("/late")
    async def late() -> int:
        return 1

    async with connect(app) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        result = await client.call("router_book", {"book_id": 5, "q": "z"})
        rest = await client.http.get("/library/books/5", params={"q": "z"})
    assert set(tools) == {"router_book", "late"}
    assert tools["router_book"]["description"] == "From a router."
    assert sorted(tools["router_book"]["inputSchema"]["properties"]) == ["book_id", "q"]
    assert result["structuredContent"] == {"id": 5, "q": "z"}
    assert rest.status_code == 200 and rest.json() == {"id": 5, "q": "z"}


async def test_nested_routers_with_router_dependencies(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    seen: list[str] = []

    def tenant_scope(tenant: str = "main") -> None:
        seen.append(tenant)

    outer = APIRouter()
    inner = APIRouter()

    @mcp.tool()
    @inner.post("/{order_id}/cancel")
    async def cancel_order(order_id: int) -> dict[str, int]:
        return {"cancelled": order_id}

    outer.include_router(inner, prefix="/orders")
    app.include_router(outer, prefix="/api", dependencies=[Depends(tenant_scope)])
    async with connect(app) as client:
        tool = await client.tool("cancel_order")
        result = await client.call("cancel_order", {"order_id": 9, "tenant": "acme"})
    assert sorted(tool["inputSchema"]["properties"]) == ["order_id", "tenant"]
    assert "annotations" not in tool  # POST
    assert result["structuredContent"] == {"cancelled": 9}
    assert seen == ["acme"]


async def test_tools_keep_working_as_rest_routes(bookshop: Callable[..., FastAPI]) -> None:
    async with connect(bookshop()) as client:
        found = await client.http.get("/books/3", params={"verbose": "true"})
        missing = await client.http.get("/books/0")
        deleted = await client.http.delete("/books/3")
        mcp_result = await client.call("get_book", {"book_id": 3, "verbose": True})
    assert found.status_code == 200
    assert found.json() == {"id": 3, "title": "Dune (1965)"} == mcp_result["structuredContent"]
    assert missing.status_code == 404 and missing.json() == {"detail": "no such book"}
    assert deleted.json() == {"deleted": 3}


# --- tools/list ---------------------------------------------------------------------------------------


def _many_tools(count: int, **options: Any) -> FastAPI:
    app, mcp = make_server(**options)
    for index in range(count):

        async def endpoint(n: int = index) -> int:
            return n

        endpoint.__name__ = f"tool_{index:02d}"
        app.get(f"/t{index}")(endpoint)
        mcp.tool()(endpoint)
    return app


async def test_list_is_deterministic_and_cacheable() -> None:
    app = _many_tools(5, cache_ttl_ms=5000, cache_scope="private")
    async with connect(app) as client:
        first = await client.result("tools/list", request_id="l1")
        second = await client.result("tools/list", request_id="l2")
    assert [t["name"] for t in first["tools"]] == [f"tool_{i:02d}" for i in range(5)]
    assert first["tools"] == second["tools"]
    assert first["resultType"] == "complete"
    assert first["ttlMs"] == 5000
    assert first["cacheScope"] == "private"
    assert "nextCursor" not in first
    for tool in first["tools"]:
        assert_valid_schema(tool["inputSchema"])


async def test_list_pagination() -> None:
    app = _many_tools(5, page_size=2)
    pages: list[list[str]] = []
    async with connect(app) as client:
        cursor: str | None = None
        while True:
            result = await client.result("tools/list", {"cursor": cursor} if cursor else {})
            assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
            pages.append([t["name"] for t in result["tools"]])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
            assert isinstance(cursor, str) and cursor
    assert pages == [["tool_00", "tool_01"], ["tool_02", "tool_03"], ["tool_04"]]


async def test_list_exact_page_has_no_next_cursor() -> None:
    app = _many_tools(4, page_size=2)
    async with connect(app) as client:
        first = await client.result("tools/list")
        second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    assert len(second["tools"]) == 2
    assert "nextCursor" not in second


@pytest.mark.parametrize("cursor", ["not-a-cursor", "%%%", 12, ["x"], "b2Zmc2V0Ojk5", ""])
async def test_bad_cursor(cursor: Any) -> None:
    app = _many_tools(3, page_size=2)
    async with connect(app) as client:
        response = await client.post("tools/list", {"cursor": cursor}, request_id="bad-cursor")
    rpc_error(response, 400, -32602, "bad-cursor")
