"""Resources and templates: ``@mcp.resource(uri)`` served as list, templates/list and read (with MRTR)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pydantic import BaseModel

from fastapi_mrtr import MCP, BlobResourceContents, ResourceNotFoundError, TextResourceContents, ToolContext
from fastapi_mrtr.features.resources import UriTemplate
from fastapi_mrtr.wire import ReadResourceResult
from tests.mcp_helpers import connect, make_meta, make_server, rpc_error

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
ELICIT = make_meta({"elicitation": {}})
USERS = {1: "ada", 2: "grace"}


class Consent(BaseModel):
    ok: bool


def _with_resources(**options: Any) -> tuple[Any, MCP]:
    app, mcp = make_server(**options)

    @mcp.resource("test://readme", mime_type="text/markdown", title="Read me")
    def readme() -> str:
        """The project's readme."""
        return "# Hello"

    @mcp.resource("test://logo")
    def logo() -> bytes:
        return b"\x89PNG"

    @mcp.resource("test://config", ttl_ms=0, cache_scope="private")
    def config() -> dict[str, Any]:
        return {"debug": False, "level": 3}

    @mcp.resource("users://{user_id}/name", name="user-name", description="A user's name")
    def user_name(user_id: int) -> str:
        if user_id not in USERS:
            raise ResourceNotFoundError(f"users://{user_id}/name")
        return USERS[user_id]

    @mcp.resource("files://{+path}", mime_type="text/plain")
    def file(path: str) -> TextResourceContents:
        return TextResourceContents(uri=f"files://{path}", mime_type="text/x-path", text=path)

    @mcp.resource("secret://{name}")
    async def secret(name: str, ctx: ToolContext) -> str:
        answer = await ctx.elicit(f"Reveal {name}?", Consent, key="consent")
        return f"{name}=42" if answer.content and answer.content.ok else "withheld"

    return app, mcp


async def test_list_resources_and_templates() -> None:
    app, _ = _with_resources(cache_ttl_ms=10, cache_scope="public")
    async with connect(app) as client:
        resources = await client.result("resources/list")
        templates = await client.result("resources/templates/list")
    assert resources["resources"] == [
        {
            "uri": "test://readme",
            "name": "readme",
            "title": "Read me",
            "description": "The project's readme.",
            "mimeType": "text/markdown",
        },
        {"uri": "test://logo", "name": "logo"},
        {"uri": "test://config", "name": "config"},
    ]
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "users://{user_id}/name",
        "files://{+path}",
        "secret://{name}",
    ]
    assert templates["resourceTemplates"][0] == {
        "uriTemplate": "users://{user_id}/name",
        "name": "user-name",
        "description": "A user's name",
    }
    for result in (resources, templates):
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 10 and result["cacheScope"] == "public"


async def test_read_text_binary_and_json() -> None:
    app, _ = _with_resources(cache_ttl_ms=7, cache_scope="public")
    async with connect(app) as client:
        text = await client.result("resources/read", {"uri": "test://readme"})
        blob = await client.result("resources/read", {"uri": "test://logo"})
        data = await client.result("resources/read", {"uri": "test://config"})
    assert text["contents"] == [{"uri": "test://readme", "mimeType": "text/markdown", "text": "# Hello"}]
    assert (text["ttlMs"], text["cacheScope"], text["resultType"]) == (7, "public", "complete")
    assert blob["contents"] == [
        {"uri": "test://logo", "mimeType": "application/octet-stream", "blob": base64.b64encode(b"\x89PNG").decode()}
    ]
    assert data["contents"][0]["mimeType"] == "application/json"
    assert json.loads(data["contents"][0]["text"]) == {"debug": False, "level": 3}
    assert (data["ttlMs"], data["cacheScope"]) == (0, "private")  # the resource's own hints


async def test_read_through_templates() -> None:
    app, _ = _with_resources()
    async with connect(app) as client:
        user = await client.result("resources/read", {"uri": "users://2/name"})
        nested = await client.result("resources/read", {"uri": "files://a/b%20c.txt"})
    assert user["contents"] == [{"uri": "users://2/name", "mimeType": "text/plain", "text": "grace"}]
    assert nested["contents"] == [{"uri": "files://a/b c.txt", "mimeType": "text/x-path", "text": "a/b c.txt"}]


async def test_resource_not_found_is_invalid_params_with_the_uri() -> None:
    app, _ = _with_resources()
    async with connect(app) as client:
        unknown = await client.post("resources/read", {"uri": "test://nothing"}, request_id=1)
        no_user = await client.post("resources/read", {"uri": "users://9/name"}, request_id=2)
        bad_id = await client.post("resources/read", {"uri": "users://abc/name"}, request_id=3)
        two_segments = await client.post("resources/read", {"uri": "users://1/x/name"}, request_id=4)
        no_uri = await client.post("resources/read", {}, request_id=5)
    assert rpc_error(unknown, 400, INVALID_PARAMS, 1)["data"] == {"uri": "test://nothing"}
    assert rpc_error(no_user, 400, INVALID_PARAMS, 2)["data"] == {"uri": "users://9/name"}
    assert rpc_error(bad_id, 400, INVALID_PARAMS, 3)["data"]["errors"][0]["field"] == "user_id"
    assert rpc_error(two_segments, 400, INVALID_PARAMS, 4)["data"] == {"uri": "users://1/x/name"}
    rpc_error(no_uri, 400, INVALID_PARAMS, 5)


async def test_empty_contents_count_as_not_found() -> None:
    app, mcp = make_server()

    @mcp.resource("test://empty")
    def empty() -> list[TextResourceContents]:
        return []

    @mcp.resource("test://none")
    async def none() -> None:
        return None

    async with connect(app) as client:
        response = await client.post("resources/read", {"uri": "test://empty"}, request_id=8)
        nothing = await client.post("resources/read", {"uri": "test://none"}, request_id=9)
    assert rpc_error(response, 400, INVALID_PARAMS, 8)["data"] == {"uri": "test://empty"}
    assert rpc_error(nothing, 400, INVALID_PARAMS, 9)["data"] == {"uri": "test://none"}


async def test_read_resource_result_and_content_lists() -> None:
    app, mcp = make_server(cache_ttl_ms=99)

    @mcp.resource("test://pair")
    def pair() -> list[TextResourceContents | BlobResourceContents]:
        return [
            TextResourceContents(uri="test://pair#a", text="a"),
            BlobResourceContents(uri="test://pair#b", mime_type="image/png", blob="AA=="),
        ]

    @mcp.resource("test://whole")
    def whole() -> ReadResourceResult:
        return ReadResourceResult(contents=[TextResourceContents(uri="test://whole", text="w")], ttl_ms=5)

    async with connect(app) as client:
        pair_result = await client.result("resources/read", {"uri": "test://pair"})
        whole_result = await client.result("resources/read", {"uri": "test://whole"})
    assert [c["uri"] for c in pair_result["contents"]] == ["test://pair#a", "test://pair#b"]
    assert whole_result["ttlMs"] == 5  # set by the function
    assert whole_result["cacheScope"] == "public"  # not set: the server's default


async def test_resource_read_asks_for_input() -> None:
    app, _ = _with_resources()
    async with connect(app) as client:
        first = await client.result("resources/read", {"uri": "secret://door"}, meta=ELICIT)
        assert first["resultType"] == "input_required"
        assert "ttlMs" not in first and "cacheScope" not in first  # interim results are not cacheable
        assert first["inputRequests"]["consent"]["params"]["message"] == "Reveal door?"
        answer = {"consent": {"action": "accept", "content": {"ok": True}}}
        done = await client.result(
            "resources/read",
            {"uri": "secret://door", "requestState": first["requestState"], "inputResponses": answer},
            meta=ELICIT,
        )
        other_uri = await client.post(
            "resources/read",
            {"uri": "secret://window", "requestState": first["requestState"], "inputResponses": answer},
            meta=ELICIT,
            request_id=4,
        )
    assert done["contents"][0]["text"] == "door=42"
    assert done["resultType"] == "complete" and "ttlMs" in done
    rpc_error(other_uri, 400, INVALID_PARAMS, 4)  # the state is bound to the URI it was sealed for


async def test_resources_capability_only_when_resources_exist() -> None:
    app, mcp = make_server()
    async with connect(app) as client:
        before = await client.result("server/discover")
        missing = await client.post("resources/read", {"uri": "test://x"}, request_id=3)
        rpc_error(missing, 404, METHOD_NOT_FOUND, 3)

        @mcp.resource("test://x")
        def x() -> str:
            return "x"

        after = await client.result("server/discover")
    assert "resources" not in before["capabilities"]
    assert after["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}


def test_uri_template_matching() -> None:
    template = UriTemplate("repo://{owner}/{name}/file/{+path}")
    assert template.variables == ("owner", "name", "path")
    assert template.match("repo://me/proj/file/src/main.py") == {"owner": "me", "name": "proj", "path": "src/main.py"}
    assert template.match("repo://me/proj/file/") is None
    assert template.match("repo://me/proj/other/x") is None
    assert UriTemplate("a.b://{x}").match("aXb://1") is None  # literal parts are not patterns
    for bad in ("x://{a-b}", "x://{?q}", "x://{a}/{a}", "x://{a", "x://a}"):
        with pytest.raises(ValueError):
            UriTemplate(bad)


def test_registration_errors() -> None:
    _, mcp = make_server()

    def takes_id(id: str) -> str:
        return id

    def takes_nothing() -> str:
        return ""

    with pytest.raises(TypeError, match="no parameter for template variable"):
        mcp.resource("x://{other}")(takes_id)
    with pytest.raises(TypeError, match="not variables of the URI"):
        mcp.resource("x://static")(takes_id)
    with pytest.raises(TypeError, match="no parameter for template variable"):
        mcp.resource("x://{id}/{more}")(takes_id)
    mcp.resource("x://one")(takes_nothing)
    with pytest.raises(ValueError, match="already registered"):
        mcp.resource("x://one")(takes_nothing)
    with pytest.raises(ValueError, match="ttl_ms"):
        mcp.resource("x://two", ttl_ms=-1)(takes_nothing)


async def test_a_resource_that_returns_no_json_is_an_internal_error_with_http_500() -> None:
    # The server's own fault travels as -32603 with HTTP 500, as every internal error does (the
    # status follows from the code in one table, wire.errors.http_status_of); it was HTTP 400.
    app, mcp = make_server()

    @mcp.resource("test://broken")
    def broken() -> Any:
        return {"when": object()}

    async with connect(app) as client:
        response = await client.post("resources/read", {"uri": "test://broken"}, request_id=7)
    assert "not JSON-able" in rpc_error(response, 500, -32603, 7)["message"]
