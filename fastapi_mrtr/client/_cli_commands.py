"""The terminal client's commands: their grammar, and running one against a server.

After the URL come the command's words. ``tools``, ``prompts``, ``resources`` and ``call`` are
command words; anything else is a tool's name (the original ``URL TOOL key=value`` form), so a
tool that happens to be named like a command word is called with ``call NAME``. A command word
followed by a word it does not know is an error that says so, never a tool call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from fastapi_mrtr.client._cli_output import (
    as_sent,
    render_contents,
    render_prompt,
    render_prompts,
    render_resources,
    render_result,
    render_templates,
    render_tools,
)
from fastapi_mrtr.client._session import MrtrClient
from fastapi_mrtr.client._tasks import TaskStatusCallback
from fastapi_mrtr.wire.errors import METHOD_NOT_FOUND, McpError
from fastapi_mrtr.wire.protocol import (
    CallToolResult,
    GetPromptResult,
    ReadResourceResult,
    Tool,
)

Kind = Literal[
    "tools list", "call", "prompts list", "prompts get", "resources list", "resources templates", "resources read"
]

# (words, what they do) in the order --help lists them.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("", "list the tools (same as: tools list)"),
    ("TOOL [key=value ...]", "call a tool; values are parsed as JSON when they parse"),
    ("call TOOL [key=value ...]", "call a tool, also one named tools, prompts, resources or call"),
    ("tools list", "list the tools"),
    ("prompts list", "list the prompts"),
    ("prompts get NAME [key=value ...]", "get a prompt; its arguments are strings, taken as typed"),
    ("resources list", "list the resources"),
    ("resources templates", "list the resource templates"),
    ("resources read URI", "read a resource (a template's URI filled in, e.g. test://items/42)"),
)
# The subcommands of each command word; the first is what the bare word means.
_GROUPS: dict[str, tuple[str, ...]] = {
    "tools": ("list",),
    "prompts": ("list", "get"),
    "resources": ("list", "templates", "read"),
}
_MAX_PAGES = 100  # a server that keeps handing out cursors must not loop us forever


def commands_help() -> str:
    """The command list of ``--help``."""
    width = max(len(words) for words, _ in COMMANDS) + 2
    lines = [f"  URL {words:<{width}}{what}" for words, what in COMMANDS]
    return "commands:\n" + "\n".join(lines)


@dataclass(frozen=True)
class Command:
    kind: Kind
    target: str | None = None  # the tool, prompt or URI
    pairs: tuple[str, ...] = field(default=())  # key=value words

    @property
    def needs_tools(self) -> bool:
        """Whether the tools are listed first (a call needs their x-mcp-header declarations)."""
        return self.kind in ("tools list", "call")


def parse_command(words: Sequence[str]) -> Command:
    """The command the words after the URL name. Raises ``ValueError`` with a reason."""
    if not words:
        return Command("tools list")
    head, rest = words[0], list(words[1:])
    if head == "call":
        if not rest:
            raise ValueError("call needs a tool name: URL call TOOL [key=value ...]")
        return Command("call", rest[0], tuple(rest[1:]))
    subcommands = _GROUPS.get(head)
    if subcommands is None:
        return Command("call", head, tuple(rest))
    sub = rest.pop(0) if rest else subcommands[0]
    if sub not in subcommands:
        raise ValueError(
            f"{head} takes {' or '.join(subcommands)}, not {sub!r} "
            f"(to call a tool named {head!r}: URL call {head} [key=value ...])"
        )
    kind: Kind = f"{head} {sub}"  # type: ignore[assignment]  # every (group, sub) pair is a Kind
    if sub == "get":
        if not rest:
            raise ValueError("prompts get needs a prompt name: URL prompts get NAME [key=value ...]")
        return Command(kind, rest[0], tuple(rest[1:]))
    if sub == "read":
        if len(rest) != 1:
            raise ValueError("resources read takes one URI: URL resources read URI")
        return Command(kind, rest[0])
    if rest:
        raise ValueError(f"{head} {sub} takes no more words, got {' '.join(rest)!r}")
    return Command(kind)


def split_json_flag(argv: Sequence[str]) -> list[str]:
    """``--json`` is the output switch, except when a JSON object follows it: then it is the
    older spelling of ``--arguments OBJECT`` and keeps working as it always did. An object
    always starts with ``{``, which no command word, name, URI or key=value pair does."""
    out: list[str] = []
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":  # everything after it is positional
            out += words[index:]
            break
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "--json" and following.lstrip().startswith("{"):
            out += ["--arguments", following]
            index += 2
            continue
        if word.startswith("--json=") and word[len("--json=") :].lstrip().startswith("{"):
            out.append("--arguments=" + word[len("--json=") :])
        else:
            out.append(word)
        index += 1
    return out


def parse_value(text: str) -> Any:
    """JSON if it parses (``3``, ``true``, ``[1,2]``, ``"x"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pairs(pairs: Sequence[str], parse: Callable[[str], Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value, got {pair!r}")
        arguments[key] = parse(value)
    return arguments


def _object(json_arguments: str | None) -> dict[str, Any]:
    if not json_arguments:
        return {}
    decoded = json.loads(json_arguments)
    if not isinstance(decoded, dict):
        raise ValueError("--arguments (or --json) must be a JSON object")
    return decoded


def parse_arguments(pairs: Sequence[str], json_arguments: str | None) -> dict[str, Any]:
    """A tool's arguments: the JSON object first, then ``key=value`` pairs on top."""
    return {**_object(json_arguments), **_pairs(pairs, parse_value)}


def parse_prompt_arguments(pairs: Sequence[str], json_arguments: str | None) -> dict[str, str]:
    """A prompt's arguments, which the spec makes strings: ``n=3`` sends ``"3"``."""
    arguments = {**_object(json_arguments), **_pairs(pairs, str)}
    wrong = sorted(key for key, value in arguments.items() if not isinstance(value, str))
    if wrong:
        raise ValueError(f"prompt arguments are strings; not so: {', '.join(wrong)}")
    return arguments


@dataclass(frozen=True)
class Outcome:
    """What one command produced: the ``--json`` document, the readable text, the exit status."""

    document: Any
    text: str
    status: int = 0


@dataclass(frozen=True)
class PreparedCommand:
    """A command with its arguments parsed, before any request: bad input fails without a server."""

    command: Command
    arguments: dict[str, Any]

    @classmethod
    def parse(cls, words: Sequence[str], json_arguments: str | None) -> PreparedCommand:
        command = parse_command(words)
        if command.kind == "call":
            return cls(command, parse_arguments(command.pairs, json_arguments))
        if command.kind == "prompts get":
            return cls(command, parse_prompt_arguments(command.pairs, json_arguments))
        if json_arguments:
            raise ValueError(f"{command.kind} takes no arguments object")
        return cls(command, {})


P = TypeVar("P")
T = TypeVar("T")


async def _every_page(fetch: Callable[[str | None], Awaitable[P]], items: Callable[[P], list[T]]) -> list[T]:
    collected: list[T] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await fetch(cursor)
        collected += items(page)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return collected


async def execute(
    client: MrtrClient,
    prepared: PreparedCommand,
    tools: list[Tool] | None,
    on_task_status: TaskStatusCallback | None = None,
) -> Outcome:
    """Run the command; ``tools`` is the listing already made for it (``Command.needs_tools``);
    ``on_task_status`` sees a task's states when the server runs a call as one."""
    try:
        return await _execute(client, prepared, tools, on_task_status)
    except McpError as exc:
        # A server without prompts (or resources) does not know their methods: say it plainly.
        if exc.code != METHOD_NOT_FOUND or prepared.command.kind == "call":
            raise
        what = prepared.command.kind.split()[0]
        raise ValueError(f"the server offers no {what} ({exc.message})") from None


async def _execute(
    client: MrtrClient, prepared: PreparedCommand, tools: list[Tool] | None, on_task_status: TaskStatusCallback | None
) -> Outcome:
    command, arguments = prepared.command, prepared.arguments
    if command.kind == "tools list":
        listed = tools if tools is not None else await client.list_all_tools()
        return Outcome({"tools": [as_sent(tool) for tool in listed]}, render_tools(listed))
    if command.kind == "call":
        assert command.target is not None
        result = await client.call_tool(command.target, arguments, task_status_callback=on_task_status)
        assert isinstance(result, CallToolResult)  # auto_fulfill is on
        return Outcome(as_sent(result), render_result(result), 1 if result.is_error else 0)
    if command.kind == "prompts list":
        prompts = await _every_page(client.list_prompts, lambda page: page.prompts)
        return Outcome({"prompts": [as_sent(prompt) for prompt in prompts]}, render_prompts(prompts))
    if command.kind == "prompts get":
        assert command.target is not None
        prompt = await client.get_prompt(command.target, arguments)
        assert isinstance(prompt, GetPromptResult)
        return Outcome(as_sent(prompt), render_prompt(prompt))
    if command.kind == "resources list":
        resources = await _every_page(client.list_resources, lambda page: page.resources)
        return Outcome({"resources": [as_sent(r) for r in resources]}, render_resources(resources))
    if command.kind == "resources templates":
        templates = await _every_page(client.list_resource_templates, lambda page: page.resource_templates)
        return Outcome({"resourceTemplates": [as_sent(t) for t in templates]}, render_templates(templates))
    assert command.kind == "resources read" and command.target is not None
    contents = await client.read_resource(command.target)
    assert isinstance(contents, ReadResourceResult)
    return Outcome(as_sent(contents), render_contents(contents))
