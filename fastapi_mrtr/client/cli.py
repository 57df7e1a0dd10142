"""``python -m fastapi_mrtr.client URL [TOOL [key=value ...]] [--json '{...}']``

Without a tool: lists the server's tools. With one: calls it, asks you at the terminal for every
elicitation the server needs (the MRTR loop retries with your answers) and prints the result.
A sampling request asks you to type the model's reply; ``--root URI`` (repeatable) declares the
roots a server may ask for. It talks to servers of either era (``--era``, ``auto`` by default) and
says on stderr which one it found. Prompts and progress go to stderr, the result to stdout.
Exit status: 0 ok, 1 the tool reported an error (``isError``), 2 the call failed (a result that
breaks the tool's ``outputSchema`` too, unless ``--no-validate``), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from types import FrameType
from typing import Any, TextIO, get_args

import anyio
import httpx

from fastapi_mrtr.client._errors import InvalidStructuredContentError, MrtrClientError
from fastapi_mrtr.client._forms import TerminalElicitor, format_json
from fastapi_mrtr.client._session import MrtrClient
from fastapi_mrtr.client._text import printable
from fastapi_mrtr.client._types import ProgressNotification
from fastapi_mrtr.client.options import ClientMode, ClientOptions, InputRequiredConfig
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import CreateMessageRequestParams, CreateMessageResult, ListRootsResult, Root
from fastapi_mrtr.wire.protocol import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fastapi_mrtr.client",
        description="Call MCP tools (2026-07-28 or 2025-era servers) from a terminal, answering their questions.",
    )
    parser.add_argument("url", help="the MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("tool", nargs="?", help="the tool to call (omit to list the tools)")
    parser.add_argument(
        "arguments", nargs="*", metavar="key=value", help="tool arguments; values are parsed as JSON when they parse"
    )
    parser.add_argument("--json", dest="json_arguments", metavar="OBJECT", help="tool arguments as one JSON object")
    parser.add_argument(
        "-H", "--header", action="append", default=[], metavar="'Name: value'", help="extra HTTP header (repeatable)"
    )
    parser.add_argument("--max-rounds", type=int, default=10, help="MRTR retries before giving up (default 10)")
    parser.add_argument(
        "--era",
        choices=get_args(ClientMode),
        default="auto",
        help="the protocol era: auto (probe, the default), legacy (a 2025-era session) or 2026-07-28",
    )
    parser.add_argument(
        "--root", action="append", default=[], metavar="URI", help="a root to offer when the server asks (repeatable)"
    )
    parser.add_argument(
        "--no-validate",
        dest="validate",
        action="store_false",
        help="print the result even if its structuredContent breaks the tool's outputSchema",
    )
    return parser


def parse_value(text: str) -> Any:
    """JSON if it parses (``3``, ``true``, ``[1,2]``, ``"x"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_arguments(pairs: Sequence[str], json_arguments: str | None) -> dict[str, Any]:
    """``--json`` first, then ``key=value`` pairs on top. Raises ``ValueError`` with a reason."""
    arguments: dict[str, Any] = {}
    if json_arguments:
        decoded = json.loads(json_arguments)
        if not isinstance(decoded, dict):
            raise ValueError("--json must be a JSON object")
        arguments.update(decoded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value, got {pair!r}")
        arguments[key] = parse_value(value)
    return arguments


def parse_headers(lines: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"expected 'Name: value', got {line!r}")
        headers[name.strip()] = value.strip()
    return headers


def _argument_hint(key: str, prop: Any, required: bool) -> str:
    kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
    return f"{key}=<{kind}>" + ("" if required else "?")


def _schema_fields(tool: Tool) -> tuple[dict[str, Any], set[str]]:
    """A tool's argument properties and required names. Raises ``ValueError`` for a schema whose
    ``properties`` is no object or whose ``required`` is no list of names: the server's fault."""
    props = tool.input_schema.get("properties") or {}
    required = tool.input_schema.get("required") or []
    if not isinstance(props, dict):
        raise ValueError(f"tool {tool.name!r} has a malformed inputSchema: properties is not an object")
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise ValueError(f"tool {tool.name!r} has a malformed inputSchema: required is not a list of names")
    return props, set(required)


def render_tools(tools: Sequence[Tool]) -> str:
    if not tools:
        return "(no tools)"
    lines = []
    for tool in tools:
        props, required = _schema_fields(tool)
        args = " ".join(_argument_hint(k, v, k in required) for k, v in props.items())
        lines.append(f"{tool.name} {args}".rstrip())
        if tool.description:
            lines.append(f"    {tool.description}")
    return "\n".join(lines)


def render_result(result: CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, (ImageContent, AudioContent)):
            parts.append(f"[{block.type} {block.mime_type}, {len(block.data)} base64 chars]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.uri}] {block.name}")
        elif isinstance(block, EmbeddedResource):
            text = getattr(block.resource, "text", None)
            parts.append(text if text is not None else f"[resource {block.resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(format_json(result.structured_content))
    return "\n".join(parts)


class Terminal:
    """Prompts on ``err``, answers from ``inp``; end of input raises ``EOFError``."""

    def __init__(self, inp: TextIO, err: TextIO) -> None:
        self.inp = inp
        self.err = err

    def ask(self, prompt: str) -> str:
        self.err.write(printable(prompt))  # prompts carry server text: escaped, as everything shown
        self.err.flush()
        line = self.inp.readline()
        if not line:
            self.err.write("\n")
            raise EOFError
        return line.rstrip("\r\n")

    def say(self, text: str) -> None:
        self.err.write(printable(text) + "\n")
        self.err.flush()


USER_REJECTED = -1  # the code the MCP spec gives a sampling request the user turned down


class TerminalSampler:
    """A sampling handler for a person: shows what the server asks the model, reads the reply."""

    def __init__(self, terminal: Terminal) -> None:
        self._terminal = terminal

    # Registered as interactive: it takes turns with the form handler (one conversation at a time).
    def __call__(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        self._terminal.say("\nThe server asks for a model reply:")
        if params.system_prompt:
            self._terminal.say(f"  system: {params.system_prompt}")
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            for block in blocks:
                text = block.text if isinstance(block, TextContent) else f"[{block.type}]"
                self._terminal.say(f"  {message.role}: {text}")
        try:
            reply = self._terminal.ask("reply> ")
        except EOFError:
            raise McpError(USER_REJECTED, "the user gave no reply (end of input)") from None
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=reply), model="human-at-a-terminal"
        )


async def run(args: argparse.Namespace, inp: TextIO, out: TextIO, err: TextIO) -> int:
    terminal = Terminal(inp, err)

    def on_progress(note: ProgressNotification) -> None:
        total = f"/{note.total:g}" if note.total is not None else ""
        terminal.say(f"progress {note.progress:g}{total}" + (f" {note.message}" if note.message else ""))

    options = ClientOptions(input_required_config=InputRequiredConfig(max_rounds=args.max_rounds), mode=args.era)
    headers = parse_headers(args.header)
    async with MrtrClient(
        args.url, options=options, headers=headers, on_progress=on_progress, validate_structured_content=args.validate
    ) as client:
        # One terminal holds one conversation: every handler that asks the person is interactive,
        # so they take turns in the order the server listed the requests.
        client.set_elicitation_handler(TerminalElicitor(terminal.ask, terminal.say), interactive=True)
        with warnings.catch_warnings():  # deprecated in 2026-07-28, still asked by many servers
            warnings.simplefilter("ignore", DeprecationWarning)
            client.set_sampling_handler(TerminalSampler(terminal), interactive=True)
            if args.root:
                roots = ListRootsResult(roots=[Root(uri=uri) for uri in args.root])
                client.set_roots_handler(lambda: roots)
        era = await client.connect()
        # Listing first: a pinned era connects lazily, so only a reply proves there is a server.
        # The tools' x-mcp-header annotations also decide the Mcp-Param-* headers of the call.
        tools = await client.list_all_tools()
        if era == "legacy":
            name = client.server_info.name if client.server_info is not None else "the server"
            terminal.say(f"(connected to {name}: a 2025-era session, protocol {client.protocol_version})")
        else:
            terminal.say(f"(connected: protocol {client.protocol_version}, stateless)")
        if args.tool is None:
            out.write(printable(render_tools(tools)) + "\n")
            return 0
        arguments = parse_arguments(args.arguments, args.json_arguments)
        result = await client.call_tool(args.tool, arguments)
        assert isinstance(result, CallToolResult)  # auto_fulfill is on
        out.write(printable(render_result(result)) + "\n")
        return 1 if result.is_error else 0


def exit_at_once_on_interrupt() -> None:
    """One Ctrl-C ends the command at once with status 130, sending nothing more.

    A prompt waits in a worker thread (so the round timeout can fire), and Python ends only once
    that thread returns: after Ctrl-C the process hung until Enter, and Enter then answered the
    pending question. For a person who pressed Ctrl-C nothing may be sent on their behalf, so the
    process ends right here; the server forgets the flow (its state was never retried).
    """

    def interrupted(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.write("\ninterrupted\n")
            sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)


def main(
    argv: Sequence[str] | None = None,
    *,
    inp: TextIO | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Entry point; returns the exit status."""
    inp, out, err = inp or sys.stdin, out or sys.stdout, err or sys.stderr
    # Intermixed: key=value pairs may also follow options (`TOOL --json '{...}' k=v`).
    args = build_parser().parse_intermixed_args(argv)
    try:
        return anyio.run(run, args, inp, out, err)
    except ValueError as exc:
        err.write(printable(f"error: {exc}") + "\n")
        return 2
    except McpError as exc:
        detail = f" {format_json(exc.data)}" if exc.data is not None else ""
        err.write(printable(f"error {exc.code}: {exc.message}{detail}") + "\n")
        return 2
    except InvalidStructuredContentError as exc:
        # The tool ran (whatever it did is done); only its answer is unusable as declared.
        err.write(
            printable(f"error: {exc}")
            + "\n  (the server broke its own outputSchema; --no-validate prints the result anyway)\n"
        )
        return 2
    except (MrtrClientError, httpx.HTTPError) as exc:
        err.write(printable(f"error: {exc}") + "\n")
        return 2
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130
