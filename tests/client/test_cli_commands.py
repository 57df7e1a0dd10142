"""The terminal client's commands beyond calling a tool (issue 34 item 2), as a subprocess.

Peers, on real uvicorn: the conformance fixture server (prompts, resources, a template, an MRTR
prompt, logging tools), the example bookshop (tools only), and a small notes app below whose
prompt, resources and tool log at every level and carry terminal escape sequences. Every command
runs in both eras (``()`` finds the 2026-07-28 wire; ``--era legacy`` opens a 2025-era session),
read as a person reads it and as a script reads ``--json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions, ToolContext
from tests.support import running_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ERAS = pytest.mark.parametrize("era", [(), ("--era", "legacy")], ids=["2026-07-28", "legacy"])
FIXTURE_LINES = {
    (): "(connected: protocol 2026-07-28, stateless)",
    ("--era", "legacy"): "(connected to fastapi-mrtr-everything-server: a 2025-era session, protocol 2025-11-25)",
}
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
C1_CSI = "\x9b2J"


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m fastapi_mrtr.client ARGS`` with ``stdin`` piped in; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def stdout_json(done: subprocess.CompletedProcess[str]) -> Any:
    """``--json``: stdout is exactly one JSON document (json.loads refuses anything beside it)."""
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def no_controls(text: str) -> str:
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert bad == [], text
    return text


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


@pytest.fixture
def shop_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example bookshop on real uvicorn, with a fresh database."""
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    from example_app.main import app

    with running_server(app) as base:
        yield f"{base}/mcp"


# --- --help ---------------------------------------------------------------------------------


def test_help_lists_every_command() -> None:
    done = run_cli("--help")
    assert done.returncode == 0, done.stderr
    commands = [line.strip().split("  ")[0] for line in done.stdout.split("commands:\n", 1)[1].splitlines()]
    for command in (
        "URL TOOL [key=value ...]",
        "URL call TOOL [key=value ...]",
        "URL tools list",
        "URL prompts list",
        "URL prompts get NAME [key=value ...]",
        "URL resources list",
        "URL resources templates",
        "URL resources read URI",
    ):
        assert command in commands, done.stdout
    assert "--json" in done.stdout and "--log-level" in done.stdout


# --- prompts ----------------------------------------------------------------------------------


@ERAS
def test_prompts_list(fixture_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(fixture_url, "prompts", "list", *era)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == FIXTURE_LINES[era]
    lines = done.stdout.splitlines()
    assert "test_prompt_with_arguments arg1=<string> arg2=<string>" in lines
    assert lines[lines.index("test_simple_prompt") + 1] == "    A simple prompt without arguments."

    listed = stdout_json(run_cli(fixture_url, "prompts", "list", "--json", *era))
    by_name = {prompt["name"]: prompt for prompt in listed["prompts"]}
    assert [a["name"] for a in by_name["test_prompt_with_arguments"]["arguments"]] == ["arg1", "arg2"]
    assert "test_input_required_result_prompt" in by_name


@ERAS
def test_prompts_get_with_arguments(fixture_url: str, era: tuple[str, ...]) -> None:
    # Prompt arguments are strings: 3 is sent as "3", not as a number the server would refuse.
    done = run_cli(fixture_url, "prompts", "get", "test_prompt_with_arguments", "arg1=Paris", "arg2=3", *era)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "user: Prompt with arguments: arg1='Paris', arg2='3'\n"

    got = stdout_json(
        run_cli(
            fixture_url,
            "prompts",
            "get",
            "test_prompt_with_arguments",
            "arg2=b",
            "--arguments",
            '{"arg1": "a"}',
            "--json",
            *era,
        )
    )
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='a', arg2='b'"}}
    ]


@ERAS
def test_prompt_content_other_than_text_is_summarised(fixture_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(fixture_url, "prompts", "get", "test_prompt_with_image", *era)
    assert done.returncode == 0, done.stderr
    image, text = done.stdout.splitlines()
    assert image.startswith("user: [image image/png, ") and image.endswith(" base64 chars]")
    assert text == "user: Please analyze the image above."


@ERAS
def test_prompts_get_asks_its_question_on_the_terminal(fixture_url: str, era: tuple[str, ...]) -> None:
    # The MRTR round of prompts/get (a 2025-era session: the server's request on the stream),
    # answered like a tool's: accept, then the one field.
    done = run_cli(fixture_url, "prompts", "get", "test_input_required_result_prompt", *era, stdin="a\nbirds\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "user: Use this context: birds\n"
    assert "The server asks: What context should the prompt use?" in done.stderr

    got = stdout_json(
        run_cli(fixture_url, "prompts", "get", "test_input_required_result_prompt", "--json", *era, stdin="a\nfish\n")
    )
    assert got["messages"][0]["content"]["text"] == "Use this context: fish"


# --- resources --------------------------------------------------------------------------------


@ERAS
def test_resources_list(fixture_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(fixture_url, "resources", "list", *era)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["test://static-text static-text (text/plain)", "    A static text resource."]
    assert "test://static-binary static-binary (image/png)" in lines

    listed = stdout_json(run_cli(fixture_url, "resources", "--json", *era))  # the bare word lists
    uris = [resource["uri"] for resource in listed["resources"]]
    assert uris == ["test://static-text", "test://static-binary", "test://watched-resource"]


@ERAS
def test_resource_templates_and_reading_one(fixture_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(fixture_url, "resources", "templates", *era)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "test://template/{id}/data template-data (application/json)",
        "    Data for an id, from a resource template.",
    ]
    templates = stdout_json(run_cli(fixture_url, "resources", "templates", "--json", *era))
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["test://template/{id}/data"]

    done = run_cli(fixture_url, "resources", "read", "test://template/42/data", *era)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"id": "42", "templateTest": True, "data": "Data for ID: 42"}
    read = stdout_json(run_cli(fixture_url, "resources", "read", "test://template/42/data", "--json", *era))
    assert read["contents"][0]["uri"] == "test://template/42/data"
    assert read["contents"][0]["mimeType"] == "application/json"


@ERAS
def test_binary_resource_is_summarised_and_whole_in_json(fixture_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(fixture_url, "resources", "read", "test://static-binary", *era)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[test://static-binary: image/png, ") and done.stdout.endswith(" base64 chars]\n")
    read = stdout_json(run_cli(fixture_url, "resources", "read", "test://static-binary", "--json", *era))
    assert read["contents"][0]["blob"].startswith("iVBORw0KGgo")  # the PNG itself, base64


# --- errors -----------------------------------------------------------------------------------


@ERAS
@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("prompts", "get", "no_such_prompt"), "error -32602: Unknown prompt: no_such_prompt"),
        (("resources", "read", "test://no/such"), "Resource not found"),
        (("prompts", "get", "test_prompt_with_arguments", "arg1=a"), "Invalid arguments for prompt"),
    ],
    ids=["unknown-prompt", "unknown-resource", "missing-argument"],
)
def test_server_refusals_are_one_clear_error(
    fixture_url: str, era: tuple[str, ...], command: tuple[str, ...], message: str
) -> None:
    for output in ((), ("--json",)):
        done = run_cli(fixture_url, *command, *era, *output)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""  # a script reads nothing rather than half a document
        assert message in done.stderr.splitlines()[1], done.stderr


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("prompts", "take"), "error: prompts takes list or get, not 'take' (to call a tool named 'prompts': "),
        (("resources", "uri=x"), "error: resources takes list or templates or read, not 'uri=x'"),
        (("prompts", "get"), "error: prompts get needs a prompt name"),
        (("resources", "read"), "error: resources read takes one URI"),
        (("resources", "read", "a", "b"), "error: resources read takes one URI"),
        (("call",), "error: call needs a tool name"),
        (("prompts", "get", "p", "n=1", "--arguments", '{"m": 2}'), "error: prompt arguments are strings; not so: m"),
    ],
)
def test_bad_commands_are_explained_before_any_request(command: tuple[str, ...], message: str) -> None:
    done = run_cli("http://127.0.0.1:9/mcp", *command)  # nothing listens there: no request was made
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(message), done.stderr


@pytest.mark.parametrize("era", [(), ("--era", "legacy")], ids=["auto", "legacy"])
@pytest.mark.parametrize("command", [("prompts", "list"), ("resources", "templates")], ids=["prompts", "templates"])
def test_a_server_without_prompts_or_resources_says_so(
    shop_url: str, era: tuple[str, ...], command: tuple[str, ...]
) -> None:
    done = run_cli(shop_url, *command, *era)
    assert done.returncode == 2
    assert done.stdout == ""
    what = command[0]
    assert done.stderr.splitlines()[-1].startswith(f"error: the server offers no {what} (Method not found")


# --- tools: the new forms, and --json, against the bookshop ------------------------------------


@ERAS
def test_tools_list_and_call_with_json_output(shop_url: str, era: tuple[str, ...]) -> None:
    listed = stdout_json(run_cli(shop_url, "tools", "list", "--json", *era))
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["get_book"]["inputSchema"]["required"] == ["book_id"]
    assert run_cli(shop_url, "tools", *era).stdout == run_cli(shop_url, *era).stdout  # same listing

    result = stdout_json(run_cli(shop_url, "call", "get_book", "book_id=1", "--json", *era))
    assert result["structuredContent"]["title"] == "Dune"
    assert result["isError"] is False
    if era:
        assert "resultType" not in result  # a 2025-era result as the server sent it


@ERAS
def test_json_output_of_a_call_that_asks_and_of_a_tool_error(shop_url: str, era: tuple[str, ...]) -> None:
    headers = ("-H", "Authorization: Bearer alice-token")
    done = run_cli(shop_url, *headers, "delete_book", "book_id=3", "--json", *era, stdin="a\ny\n")
    assert stdout_json(done)["structuredContent"]["title"] == "Neuromancer"
    assert "Really delete" in done.stderr  # the question is on stderr, stdout is the document only

    done = run_cli(shop_url, "get_book", "book_id=999", "--json", *era)
    assert done.returncode == 1  # the tool's own error: a result, printed whole, exit 1
    assert json.loads(done.stdout)["isError"] is True


@ERAS
def test_the_older_json_arguments_spelling_still_works(shop_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(shop_url, "get_book", "--json", '{"book_id": 2}', *era)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "The Left Hand of Darkness"
    # ...and with --json output as well: the object is the arguments, the flag the output.
    result = stdout_json(run_cli(shop_url, "get_book", "--json", '{"book_id": 2}', "--json", *era))
    assert result["structuredContent"]["id"] == 2


def command_words_app() -> FastAPI:
    """Tools named like the command words: ``call NAME`` reaches them."""
    app = FastAPI()
    mcp = MCP(app)

    @mcp.tool(name="prompts")
    @app.post("/prompts", response_class=PlainTextResponse)
    async def prompts_tool(a: int = 0) -> str:
        return f"the prompts tool, a={a}"

    @mcp.tool(name="call")
    @app.post("/call", response_class=PlainTextResponse)
    async def call_tool() -> str:
        return "the call tool"

    app.mount("/mcp", mcp)
    return app


@ERAS
def test_a_tool_named_like_a_command_is_called_with_call(era: tuple[str, ...]) -> None:
    with running_server(command_words_app()) as base:
        url = f"{base}/mcp"
        done = run_cli(url, "call", "prompts", "a=2", *era)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "the prompts tool, a=2\n"
        assert run_cli(url, "call", "call", *era).stdout == "the call tool\n"
        # Without `call`, the word is the command: the server's (absent) prompts, not the tool.
        done = run_cli(url, "prompts", *era)
        assert done.returncode == 2
        assert "error: the server offers no prompts" in done.stderr


# --- log messages and escapes: the notes app ------------------------------------------------


class Confirm(BaseModel):
    ok: bool


def notes_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="notes", version="1", request_state_key="k" * 32))

    async def log_each_level(ctx: Any, what: str) -> None:
        for level in ("debug", "info", "notice", "warning", "error"):
            await ctx.log(level, f"{what} at {level}", logger_name="notes")

    @mcp.tool()
    @app.post("/chatty", response_class=PlainTextResponse)
    async def chatty(ctx: Context) -> str:
        """Logs at every level from debug to error, then a hostile line and a structured one."""
        await log_each_level(ctx, "tool")
        await ctx.log("warning", f"look{CLEAR}{TITLE}{C1_CSI} here", logger_name=f"notes{CLEAR}")
        await ctx.log("error", {"disk": "full", "free": 0})
        return "chatted"

    @mcp.prompt(description=f"Greets{TITLE} someone")
    async def greet(name: str, ctx: ToolContext) -> str:
        await log_each_level(ctx, "prompt")
        return f"Hello {name}{CLEAR}!"

    @mcp.resource("note://hostile", name="hostile", description=f"Escapes{CLEAR} inside", mime_type="text/plain")
    async def hostile(ctx: ToolContext) -> str:
        await log_each_level(ctx, "resource")
        return f"clear{CLEAR} title{TITLE} csi{C1_CSI}"

    @mcp.resource("note://secret", name="secret", mime_type="text/plain")
    async def secret(ctx: ToolContext) -> str:
        answer = await ctx.elicit("Show the secret note?", Confirm, key="show")
        return "the secret note" if answer.content and answer.content.ok else "(kept secret)"

    @mcp.resource("note://items/{item_id}", name="item", mime_type="text/plain")
    def item(item_id: str) -> str:
        return f"item {item_id}"

    app.mount("/mcp", mcp)
    return app


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    with running_server(notes_app()) as base:
        yield f"{base}/mcp"


def log_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("[")]


@ERAS
def test_log_messages_at_the_default_level_warning_and_above(notes_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(notes_url, "chatty", *era)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "chatted\n"
    assert log_lines(done) == [
        "[warning notes] tool at warning",
        "[error notes] tool at error",
        "[warning notes\\u001b[2J] look\\u001b[2J\\u001b]0;pwned\\u0007\\u009b2J here",
        '[error] {"disk": "full", "free": 0}',
    ]
    no_controls(done.stderr)


@ERAS
@pytest.mark.parametrize(
    ("command", "what"),
    [
        (("chatty",), "tool"),
        (("prompts", "get", "greet", "name=Ada"), "prompt"),
        (("resources", "read", "note://hostile"), "resource"),
    ],
    ids=["tool", "prompt", "resource"],
)
def test_log_level_shows_that_level_and_above_only(
    notes_url: str, era: tuple[str, ...], command: tuple[str, ...], what: str
) -> None:
    level = "notice"  # below it debug and info, which must not show; at and above it three levels
    done = run_cli(notes_url, *command, "--log-level", level, *era)
    assert done.returncode == 0, done.stderr
    levels = ("debug", "info", "notice", "warning", "error")
    expected = [f"[{shown} notes] {what} at {shown}" for shown in levels[levels.index(level) :]]
    assert [line for line in log_lines(done) if f"] {what} at " in line] == expected


@ERAS
def test_log_level_off_shows_none_and_json_keeps_logs_off_stdout(notes_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(notes_url, "chatty", "--log-level", "off", *era)
    assert done.returncode == 0, done.stderr
    assert log_lines(done) == []

    done = run_cli(notes_url, "chatty", "--json", "--log-level", "debug", *era)
    assert stdout_json(done)["content"] == [{"type": "text", "text": "chatted"}]
    assert "[debug notes] tool at debug" in log_lines(done)


@ERAS
def test_server_text_of_prompts_and_resources_is_shown_escaped(notes_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(notes_url, "prompts", "get", "greet", "name=Ada", *era)
    assert done.returncode == 0, done.stderr
    assert no_controls(done.stdout) == "user: Hello Ada\\u001b[2J!\n"

    done = run_cli(notes_url, "prompts", "list", *era)
    assert "    Greets\\u001b]0;pwned\\u0007 someone" in no_controls(done.stdout).splitlines()

    done = run_cli(notes_url, "resources", "read", "note://hostile", *era)
    assert no_controls(done.stdout) == "clear\\u001b[2J title\\u001b]0;pwned\\u0007 csi\\u009b2J\n"

    done = run_cli(notes_url, "resources", "list", "--json", *era)
    # In a JSON document the escape means the very same character: the data stays equal.
    listed = json.loads(no_controls(done.stdout))
    assert {r["uri"]: r.get("description") for r in listed["resources"]}["note://hostile"] == f"Escapes{CLEAR} inside"

    done = run_cli(notes_url, "resources", "read", "note://hostile", "--json", *era)
    assert json.loads(no_controls(done.stdout))["contents"][0]["text"] == f"clear{CLEAR} title{TITLE} csi{C1_CSI}"


@ERAS
@pytest.mark.parametrize(("answer", "text"), [("a\ny\n", "the secret note"), ("a\nn\n", "(kept secret)")])
def test_resources_read_asks_its_question_on_the_terminal(
    notes_url: str, era: tuple[str, ...], answer: str, text: str
) -> None:
    done = run_cli(notes_url, "resources", "read", "note://secret", *era, stdin=answer)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{text}\n"
    assert "The server asks: Show the secret note?" in done.stderr


@ERAS
def test_a_template_of_the_notes_app_reads_through_its_uri(notes_url: str, era: tuple[str, ...]) -> None:
    templates = stdout_json(run_cli(notes_url, "resources", "templates", "--json", *era))
    assert templates["resourceTemplates"][0]["uriTemplate"] == "note://items/{item_id}"
    assert run_cli(notes_url, "resources", "read", "note://items/7", *era).stdout == "item 7\n"


def test_pinned_2026_era_proves_the_server_before_saying_connected(fixture_url: str) -> None:
    done = run_cli(fixture_url, "prompts", "list", "--era", "2026-07-28")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == FIXTURE_LINES[()]
    # Nothing listens here: the error is all there is, no claim of a connection before it.
    done = run_cli("http://127.0.0.1:9/mcp", "prompts", "list", "--era", "2026-07-28")
    assert done.returncode == 2
    assert "(connected" not in done.stderr and done.stderr.startswith("error:")
