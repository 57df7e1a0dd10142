"""A plain path function called directly answers exactly as its route would.

``DirectCall`` runs a plain async path function without an in-process HTTP request. Its promise is
that the caller cannot tell: every case here is run twice, once with direct calls and once with
them switched off (every call through the route's ASGI app), and the two tool results must be
equal. The cases cover validation and coercion (where invalid arguments must reach the route and
its own 422), response models and options, returned ``Response`` objects, status codes, exception
handlers, ``ctx.request`` and an MRTR flow. Further tests pin which routes are called directly and
that dependency overrides and FastAPI telemetry keep the route.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any, Literal

import pytest
from fastapi import APIRouter, Body, Depends, FastAPI, Form, Header, HTTPException, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context
from fastapi_mrtr.integration.call_runner import CallPath
from fastapi_mrtr.integration.dependency import get_context
from fastapi_mrtr.integration.direct_call import DirectCall
from tests.mcp_helpers import connect, make_meta, make_server

pytestmark = pytest.mark.anyio

ELICIT = make_meta({"elicitation": {"form": {}}})


class Color(str, enum.Enum):
    red = "red"
    blue = "blue"


class Item(BaseModel):
    name: str
    tags: list[str] = []
    price: float | None = None


class Confirm(BaseModel):
    ok: bool


class Loose(BaseModel):
    bag: list[Any]


class OutOfStock(Exception):
    pass


JSON = dict[str, Any]


def build_app() -> tuple[FastAPI, MCP]:  # noqa: C901 (its nested routes count: one app, many small tools)
    """One app with a tool per shape; built afresh for each run so nothing is cached across them."""
    app, mcp = make_server()

    @app.exception_handler(OutOfStock)
    async def out_of_stock(request: Request, exc: OutOfStock) -> JSONResponse:
        return JSONResponse({"detail": f"out of stock at {request.url.path}"}, status_code=409)

    @app.exception_handler(418)
    async def teapot(request: Request, exc: HTTPException) -> PlainTextResponse:
        return PlainTextResponse(f"short and stout: {exc.detail}", status_code=418)

    @mcp.tool()
    @app.get("/echo")
    async def echo(text: str) -> str:
        return text

    @mcp.tool()
    @app.get("/num")
    async def num(n: int, scale: float = 1.0, flag: bool = False, color: Color = Color.red) -> dict[str, Any]:
        return {"n": n, "scaled": n * scale, "flag": flag, "color": color}

    @mcp.tool()
    @app.get("/tags")
    async def tags(tag: Annotated[list[str], Query()] = [], limit: Annotated[int, Query(ge=1, le=5)] = 2) -> list[str]:  # noqa: B006
        return tag[:limit]

    @mcp.tool()
    @app.get("/shade/{name}")
    async def shade(name: Literal["light", "dark"], depth: int = 1) -> str:
        return f"{name} x{depth}"

    @mcp.tool()
    @app.get("/files/{file_id}")
    async def file(file_id: Annotated[str, Path(min_length=2)]) -> str:
        return f"file {file_id}"

    @mcp.tool()
    @app.post("/items", status_code=201, response_model=Item, response_model_exclude_none=True)
    async def create(item: Item) -> Any:
        return item

    @mcp.tool()
    @app.post("/pair")
    async def pair(first: Item, second: Item) -> dict[str, str]:
        return {"names": f"{first.name}+{second.name}"}

    @mcp.tool()
    @app.post("/total")
    async def total(numbers: list[int]) -> int:
        return sum(numbers)

    @mcp.tool()
    @app.post("/note")
    async def note(text: Annotated[str, Body(embed=True)]) -> dict[str, int]:
        return {"length": len(text)}

    @mcp.tool()
    @app.get("/plain")
    async def plain() -> PlainTextResponse:
        return PlainTextResponse("just text", headers={"x-kind": "plain"})

    @mcp.tool()
    @app.get("/accepted")
    async def accepted() -> JSONResponse:
        return JSONResponse({"queued": True}, status_code=202)

    @mcp.tool()
    @app.delete("/gone", status_code=204)
    async def gone() -> None:
        return None

    @mcp.tool()
    @app.get("/missing/{key}")
    async def missing(key: str) -> str:
        raise HTTPException(404, f"no {key} here")

    @mcp.tool()
    @app.get("/stock")
    async def stock(item: str) -> str:
        raise OutOfStock(item)

    @mcp.tool()
    @app.get("/brew")
    async def brew() -> str:
        raise HTTPException(418, "a teapot")

    @mcp.tool()
    @app.get("/crash")
    async def crash() -> str:
        raise ValueError("a bug")

    @mcp.tool()
    @app.get("/lies", response_model=int)
    async def lies() -> Any:
        return "not a number"

    @mcp.tool()
    @app.get("/where/{place}")
    async def where(place: str, ctx: Context, q: str = "") -> dict[str, Any]:
        request = ctx.request
        return {
            "path": request.url.path,
            "query": str(request.query_params),
            "place": request.path_params.get("place"),
            "route": request.scope["route"].path,
            "auth": request.headers.get("authorization"),
            "mcp": ctx.is_mcp,
        }

    @mcp.tool()
    @app.get("/anything/{key}")
    async def anything(key: Any, value: Any = None, many: Annotated[list[Any], Query()] = []) -> str:  # noqa: B006
        return f"{key} {value} {many}"

    @mcp.tool()
    @app.post("/sign")
    async def sign(name: Annotated[str, Form()]) -> dict[str, str]:  # a lone Form() field
        return {"name": name}

    @mcp.tool()
    @app.post("/stamp")
    async def stamp(name: str = Form(...)) -> dict[str, str]:
        return {"name": name}

    @mcp.tool()
    @app.post("/label")
    async def label(
        name: Annotated[str, Form()],
        marks: Annotated[list[str], Form()] = [],  # noqa: B006
        note: Annotated[str | None, Form()] = None,
    ) -> JSON:
        return {"name": name, "marks": marks, "note": note}

    @mcp.tool()
    @app.post("/confirm")
    async def confirm(item: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Confirm {item}?", Confirm)
        return f"{'done' if answer.accepted and answer.content and answer.content.ok else 'kept'} {item}"

    return app, mcp


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (tool, arguments, whether the direct call answers it; False: it hands over to the route)
    ("echo", {"text": "hi"}, True),
    ("echo", {"text": 5}, True),  # the route sees the query string "5"
    ("echo", {"text": "ünïcode & = ?"}, True),
    ("echo", {}, False),  # missing: the route's own 422
    ("echo", {"text": None}, False),
    ("num", {"n": 3}, True),
    ("num", {"n": "3", "scale": 0.5, "flag": True, "color": "blue"}, True),
    ("num", {"n": 3.5}, False),
    ("num", {"n": 1, "color": "green"}, False),
    ("num", {"n": 1, "flag": "maybe"}, False),
    ("tags", {"tag": ["a", "b", "c"]}, True),
    ("tags", {"tag": "solo"}, True),
    ("tags", {}, True),
    ("tags", {"limit": 9}, False),
    ("shade", {"name": "dark", "depth": 2}, True),
    ("shade", {"name": "pale"}, False),
    ("shade", {"name": "a/b"}, False),  # not one segment: the route's 422, on every path
    ("shade", {}, False),
    ("file", {"file_id": "x"}, False),
    ("file", {"file_id": "ab"}, True),
    ("create", {"name": "pen", "tags": ["blue"]}, True),
    ("create", {"tags": ["blue"]}, False),
    ("create", {"name": "pen", "price": "cheap"}, False),
    ("pair", {"first": {"name": "a"}, "second": {"name": "b"}}, True),
    ("pair", {"first": {"name": "a"}}, False),
    ("total", {"numbers": [1, 2, 3]}, True),
    ("total", {"numbers": [1, "x"]}, False),
    ("note", {"text": "hello"}, True),
    ("plain", {}, True),
    ("accepted", {}, True),
    ("gone", {}, True),
    ("missing", {"key": "k"}, True),
    ("stock", {"item": "gold"}, True),
    ("brew", {}, True),
    ("crash", {}, True),
    ("lies", {}, True),
    ("where", {"place": "home", "q": "a b"}, True),
    # A value of a JSON kind no URL carries is refused with the route's 422, not stringified.
    ("echo", {"text": ["a", "b"]}, False),
    ("echo", {"text": {"x": 1}}, False),
    ("echo", {"text": []}, False),
    ("num", {"n": [3]}, False),
    ("num", {"n": 3, "flag": {"on": True}}, False),
    ("tags", {"tag": {"a": "b"}}, False),
    ("tags", {"tag": ["a", ["b"]]}, False),
    ("tags", {"tag": [{"a": 1}]}, False),
    ("tags", {"tag": ["a", 1, 2.5, True], "limit": 5}, True),  # single values: each the URL text it would be
    ("tags", {"tag": ["a"], "limit": [1, 5]}, False),
    ("shade", {"name": ["dark"]}, False),
    ("file", {"file_id": {"id": "ab"}}, False),
    ("where", {"place": "home", "q": ["a"]}, False),
    ("anything", {"key": "k", "value": 1, "many": ["a", 2]}, True),
    ("anything", {"key": ["k"]}, False),
    ("anything", {"key": "k", "value": {"x": 1}}, False),
    ("anything", {"key": "k", "many": [["a"]]}, False),
    # Form bodies (never called directly): one field as well as several.
    ("sign", {"name": "ada"}, False),
    ("sign", {}, False),
    ("sign", {"name": ["ada"]}, False),
    ("stamp", {"name": "ada"}, False),
    ("label", {"name": "ada", "marks": ["x", "y"]}, False),
    ("label", {"name": {"first": "ada"}}, False),
]


class Spy:
    """Counts the calls the direct path answered itself."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answered = 0
        original_call = DirectCall.call
        spy = self

        async def call(self: DirectCall, *args: Any, **kwargs: Any) -> Any:
            try:
                response = await original_call(self, *args, **kwargs)
            except Exception:
                spy.answered += 1  # it ran the handler, which raised, as the route would have
                raise
            spy.answered += response is not None
            return response

        monkeypatch.setattr(DirectCall, "call", call)


async def results_of(
    cases: list[tuple[str, dict[str, Any], bool]], headers: dict[str, str], fastest: CallPath = CallPath.DIRECT
) -> list[Any]:
    app, mcp = build_app()
    mcp.call_runner.fastest = fastest  # CallPath.ROUTE: every call through the route's ASGI app
    async with connect(app) as client:
        return [await client.call(tool, arguments, headers=headers) for tool, arguments, _ in cases]


@pytest.mark.parametrize("case", CASES, ids=[f"{tool}-{i}" for i, (tool, _, _) in enumerate(CASES)])
async def test_a_direct_call_answers_exactly_as_the_route(
    monkeypatch: pytest.MonkeyPatch, case: tuple[str, dict[str, Any], bool]
) -> None:
    headers = {"authorization": "Bearer abc"}
    direct = Spy(monkeypatch)
    expected = await results_of([case], headers, fastest=CallPath.ROUTE)
    assert direct.answered == 0
    got = await results_of([case], headers)
    assert got == expected
    assert direct.answered == int(case[2]), "the direct path answered" if direct.answered else "the route answered"


async def test_the_cases_cover_success_and_every_kind_of_error() -> None:
    results = await results_of(CASES, {})
    by_case = {f"{tool}-{i}": result for i, ((tool, _, _), result) in enumerate(zip(CASES, results, strict=True))}
    assert by_case["echo-1"]["structuredContent"] == {"result": "5"}
    assert by_case["num-6"]["structuredContent"] == {"n": 3, "scaled": 1.5, "flag": True, "color": "blue"}
    assert by_case["tags-11"]["structuredContent"] == {"result": ["solo"]}
    assert by_case["create-20"]["structuredContent"] == {"name": "pen", "tags": ["blue"]}  # price: None left out
    assert by_case["gone-30"]["content"] == [] and by_case["gone-30"]["isError"] is False
    assert by_case["plain-28"]["content"] == [{"type": "text", "text": "just text"}]
    assert '"status": 422' in by_case["echo-3"]["content"][0]["text"]
    assert json.loads(by_case["shade-16"]["content"][0]["text"])["detail"][0]["loc"] == ["path", "name"]
    assert "no k here" in by_case["missing-31"]["content"][0]["text"]
    assert "out of stock at /stock" in by_case["stock-32"]["content"][0]["text"]
    assert "short and stout: a teapot" in by_case["brew-33"]["content"][0]["text"]
    assert "internal error" in by_case["crash-34"]["content"][0]["text"]
    assert "internal error" in by_case["lies-35"]["content"][0]["text"]
    where = by_case["where-36"]["structuredContent"]
    assert where == {
        "path": "/where/home",
        "query": "q=a+b",
        "place": "home",
        "route": "/where/{place}",
        "auth": None,
        "mcp": True,
    }


async def test_a_value_no_url_carries_is_refused_as_the_route_refuses_an_invalid_one() -> None:
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("echo", {"text": ["a", "b"]}, False),
        ("tags", {"tag": ["a", ["b"]]}, False),
        ("shade", {"name": ["dark"]}, False),
        ("anything", {"key": "k", "value": {"x": 1}}, False),
        ("label", {"name": {"first": "ada"}}, False),
        ("tags", {"tag": ["a", 1, 2.5, True], "limit": 5}, True),
        ("echo", {"text": 5}, True),
    ]
    results = await results_of(cases, {})
    details = [json.loads(result["content"][0]["text"]) for result in results[:5]]
    assert all(result["isError"] for result in results[:5])
    assert details[0] == {
        "status": 422,
        "detail": [
            {
                "type": "string_type",
                "loc": ["query", "text"],
                "msg": "Input should be a valid string",
                "input": ["a", "b"],
            }
        ],
    }
    assert [error["loc"] for detail in details for error in detail["detail"]] == [
        ["query", "text"],
        ["query", "tag", 1],
        ["path", "name"],
        ["query", "value"],
        ["body", "name"],
    ]
    assert details[3]["detail"][0]["msg"] == "Input should be a single value, not a list or an object"  # ``Any``
    assert results[5]["structuredContent"] == {"result": ["a", "1", "2.5", "true"]}
    assert results[6]["structuredContent"] == {"result": "5"}


async def test_form_bodies_of_one_or_several_fields_are_sent_as_rest_sends_them() -> None:
    app, _ = build_app()
    async with connect(app) as client:
        for tool, path in [("sign", "/sign"), ("stamp", "/stamp")]:
            result = await client.call(tool, {"name": "ada"})
            rest = await client.http.post(path, data={"name": "ada"})
            assert result["isError"] is False, result
            assert result["structuredContent"] == rest.json() == {"name": "ada"}
        result = await client.call("label", {"name": "ada", "marks": ["x", "y"], "note": None})
        rest = await client.http.post("/label", data={"name": "ada", "marks": ["x", "y"]})
        assert result["structuredContent"] == rest.json() == {"name": "ada", "marks": ["x", "y"], "note": None}


async def test_ctx_request_carries_the_forwarded_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = Spy(monkeypatch)
    [result] = await results_of([("where", {"place": "x"}, True)], {"authorization": "Bearer abc"})
    assert result["structuredContent"]["auth"] == "Bearer abc"
    assert direct.answered == 1


async def test_an_mrtr_flow_suspends_and_replays_through_the_direct_call(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = Spy(monkeypatch)
    app, _ = build_app()
    async with connect(app) as client:
        first = await client.call("confirm", {"item": "book"}, meta=ELICIT)
        assert first["resultType"] == "input_required"
        [key] = first["inputRequests"]
        params = {
            "name": "confirm",
            "arguments": {"item": "book"},
            "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            "requestState": first["requestState"],
        }
        done = await client.result("tools/call", params, meta=ELICIT)
    assert done["structuredContent"] == {"result": "done book"}
    assert direct.answered == 2


async def test_a_handler_that_changes_its_arguments_does_not_change_what_the_state_is_bound_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    direct = Spy(monkeypatch)
    app, mcp = make_server()

    @mcp.tool()
    @app.post("/pack")
    async def pack(item: Item, ctx: Context) -> list[str]:
        item.tags.append("packed")  # a handler may change what it was given
        await ctx.elicit("Pack it?", Confirm)
        return item.tags

    @mcp.tool()
    @app.post("/loose")
    async def loose(body: Loose, ctx: Context) -> int:
        body.bag[0].append("changed")  # nested values of ``Any`` are the caller's own objects
        await ctx.elicit("Keep it?", Confirm)
        return len(body.bag[0])

    async with connect(app) as client:
        for tool, arguments in [("pack", {"name": "box", "tags": ["red"]}), ("loose", {"bag": [["a"]]})]:
            first = await client.call(tool, arguments, meta=ELICIT)
            [key] = first["inputRequests"]
            params = {
                "name": tool,
                "arguments": arguments,
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                "requestState": first["requestState"],
            }
            done = await client.result("tools/call", params, meta=ELICIT)
            assert done["isError"] is False, done
    assert direct.answered == 4


def direct_call_of(declare: Any, router: APIRouter | None = None) -> DirectCall | None:
    """The direct call of the one tool declared by ``declare`` (on ``router`` if given, included)."""
    app, mcp = make_server()
    target = router if router is not None else app
    declare(target)
    if router is not None:
        app.include_router(router)
    [endpoint] = [r.endpoint for r in target.routes if isinstance(r, APIRoute)]
    mcp.tool()(endpoint)
    tool = mcp.registry.resolved()[endpoint.__name__]
    return DirectCall.for_route(tool.route, tool.plan)


async def dependency() -> str:
    return "dep"


class CustomRoute(APIRoute):
    pass


@pytest.mark.parametrize(
    "declare",
    [
        lambda app: app.get("/t")(with_dependency),
        lambda app: app.get("/t", dependencies=[Depends(dependency)])(plain_tool),
        lambda app: app.get("/t")(with_header),
        lambda app: app.get("/t")(with_request),
        lambda app: app.get("/t")(sync_tool),
        lambda app: app.get("/t", response_class=HTMLResponse)(plain_tool),
        lambda app: app.get("/t")(streaming_tool),
        lambda app: app.get("/t/{n:int}")(int_path),
    ],
    ids=["dependency", "route-dependency", "header", "request", "sync", "response-class", "generator", "convertor"],
)
def test_routes_that_only_fastapi_can_run_faithfully_keep_the_route(declare: Any) -> None:
    assert direct_call_of(declare) is None


def test_a_custom_route_class_keeps_the_route() -> None:
    assert direct_call_of(lambda r: r.get("/t")(plain_tool), APIRouter(route_class=CustomRoute)) is None


def test_plain_tools_and_included_routers_are_called_directly() -> None:
    assert direct_call_of(lambda app: app.get("/t")(plain_tool)) is not None
    assert direct_call_of(lambda r: r.get("/t")(plain_tool), APIRouter(prefix="/v1")) is not None
    guarded = APIRouter(prefix="/v1", dependencies=[Depends(dependency)])
    assert direct_call_of(lambda r: r.get("/t")(plain_tool), guarded) is None  # the include's dependency


async def plain_tool(text: str = "") -> str:
    return text


async def with_dependency(value: Annotated[str, Depends(dependency)]) -> str:
    return value


async def with_header(x_token: Annotated[str, Header()]) -> str:
    return x_token


async def with_request(request: Request) -> str:
    return request.url.path


def sync_tool() -> str:
    return "sync"


async def streaming_tool() -> Any:
    yield "chunk"


async def int_path(n: int) -> int:
    return n


async def test_dependency_overrides_are_honoured_by_taking_the_route(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = Spy(monkeypatch)
    app, mcp = make_server()

    @mcp.tool()
    @app.get("/who")
    async def who(ctx: Context) -> str:
        return str(ctx.is_mcp)

    class FakeContext:
        is_mcp = "overridden"

    async with connect(app) as client:
        assert (await client.call("who", {}))["structuredContent"] == {"result": "True"}
        app.dependency_overrides[get_context] = FakeContext
        assert (await client.call("who", {}))["structuredContent"] == {"result": "overridden"}
    assert direct.answered == 1


async def test_fastapi_telemetry_keeps_its_spans_by_taking_the_route(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = Spy(monkeypatch)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app, mcp = make_server(FastAPI(telemetry={"tracer_provider": provider}))

    @mcp.tool()
    @app.get("/echo")
    async def echo(text: str) -> str:
        return text

    async with connect(app) as client:
        result = await client.call("echo", {"text": "traced"})
    assert result["structuredContent"] == {"result": "traced"}
    assert direct.answered == 0
    assert {"fastapi.dependencies", "fastapi.endpoint", "fastapi.serialization"} <= {
        span.name for span in exporter.get_finished_spans()
    }
