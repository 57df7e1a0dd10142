"""The servers the interop harness drives, and what they list (read over the wire, in-process).

The listing is read when the tests are collected, so each tool, prompt and resource becomes its
own test: a tool added to one of these apps is driven and checked without touching the harness.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.types import ASGIApp

from tests.interop import question_app
from tests.interop.answers import arguments_for
from tests.interop.recorder import WireRecorder, describe, exchange_issues
from tests.support import rpc_body, rpc_headers, running_server

ADMIN_TOKEN = "alice-token"  # the example app's admin (example_app/auth.py): every tool is open to it


def _everything() -> ASGIApp:
    from tests.conformance.everything_server import create_app

    return create_app()


def _bookshop() -> ASGIApp:
    from example_app.main import app

    return app


APPS: dict[str, Callable[[], ASGIApp]] = {
    "everything": _everything,
    "bookshop": _bookshop,
    "questions": question_app.create_app,
}
CLIENT_HEADERS: dict[str, dict[str, str]] = {"bookshop": {"Authorization": f"Bearer {ADMIN_TOKEN}"}}

# Arguments a generated value cannot stand for (a 2020-12 schema with if/then; a book to delete
# that no other flow reads); every other tool gets its required parameters from its inputSchema.
ARGUMENTS: dict[tuple[str, str], dict[str, Any]] = {
    ("everything", "json_schema_2020_12_tool"): {"name": "Ada", "contactMethod": "email", "email": "ada@example.com"},
    ("bookshop", "delete_book"): {"book_id": 4},
}


@dataclass(frozen=True)
class Listing:
    """What a server declares (``server/discover``'s capabilities) and lists: tools, prompts (by
    name), resources and templates (by URI)."""

    capabilities: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)


@functools.cache
def listing(server: str) -> Listing:
    """The listing of ``server``, read in-process from a fresh instance of its app."""
    with _scratch_database():
        return asyncio.run(_read_listing(APPS[server]()))


async def _read_listing(app: ASGIApp) -> Listing:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:

        async def items(method: str, key: str, by: str) -> dict[str, dict[str, Any]]:
            found: dict[str, dict[str, Any]] = {}
            cursor: str | None = None
            while True:
                params = {"cursor": cursor} if cursor else {}
                reply = (await http.post("/mcp", json=rpc_body(method, params), headers=rpc_headers(method))).json()
                if "error" in reply:  # the feature is not served by this app
                    return found
                found.update({item[by]: item for item in reply["result"][key]})
                cursor = reply["result"].get("nextCursor")
                if not cursor:
                    return found

        discovered = await http.post("/mcp", json=rpc_body("server/discover"), headers=rpc_headers("server/discover"))
        return Listing(
            capabilities=discovered.json()["result"]["capabilities"],
            tools=await items("tools/list", "tools", "name"),
            prompts=await items("prompts/list", "prompts", "name"),
            resources=await items("resources/list", "resources", "uri"),
            templates=await items("resources/templates/list", "resourceTemplates", "uriTemplate"),
        )


@contextlib.contextmanager
def _scratch_database() -> Iterator[str]:
    """The example app's SQLite file in a fresh directory for as long as the block runs."""
    previous = os.environ.get("BOOKSHOP_DB")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "shop.db")
        os.environ["BOOKSHOP_DB"] = path
        try:
            yield path
        finally:
            if previous is None:
                os.environ.pop("BOOKSHOP_DB", None)
            else:
                os.environ["BOOKSHOP_DB"] = previous


def cases(kind: str, servers: tuple[str, ...] = tuple(APPS)) -> list[tuple[str, str]]:
    """``(server, name)`` for every listed item of ``kind`` ("tools", "prompts", ...)."""
    return [(server, name) for server in servers for name in getattr(listing(server), kind)]


def tool_arguments(server: str, tool: str) -> dict[str, Any]:
    """The arguments the harness calls ``tool`` of ``server`` with."""
    override = ARGUMENTS.get((server, tool))
    return override if override is not None else arguments_for(listing(server).tools[tool]["inputSchema"])


@dataclass
class Served:
    """A server on real uvicorn behind a wire recorder."""

    name: str
    url: str
    recorder: WireRecorder
    headers: dict[str, str]

    @property
    def listing(self) -> Listing:
        return listing(self.name)

    def assert_wire_conforms(self) -> int:
        """Check every exchange since the last check; returns how many there were."""
        exchanges = self.recorder.take()
        problems = []
        for exchange in exchanges:
            issues = exchange_issues(exchange, self.recorder.output_schemas)
            if issues:
                problems.append(describe(exchange) + "".join(f"\n  ! {issue}" for issue in issues))
        assert not problems, f"{len(problems)} message(s) the SDK's wire models refuse:\n" + "\n".join(problems)
        return len(exchanges)


@contextlib.contextmanager
def serve(server: str) -> Iterator[Served]:
    """``server`` on uvicorn at 127.0.0.1, recorded, with its tools' output schemas known."""
    with _scratch_database():
        recorder = WireRecorder(APPS[server]())
        recorder.output_schemas = {name: tool.get("outputSchema") for name, tool in listing(server).tools.items()}
        with running_server(recorder) as base:
            yield Served(server, f"{base}/mcp", recorder, CLIENT_HEADERS.get(server, {}))
