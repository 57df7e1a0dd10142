"""``python -m fastapi_mrtr.client URL [COMMAND ...] [options]``, or ``--stdio "CMD"`` for a URL

``--stdio "python -m fastapi_mrtr.stdio example_app.main:app"`` launches a local stdio server
and talks to it over its stdin and stdout instead (every command and option works the same).

Lists and calls tools, lists and gets prompts, lists and reads resources and resource templates
(the commands: :mod:`fastapi_mrtr.client._cli_commands`, or ``--help``). A call the server runs
as a task shows the task's status while it runs and asks its questions the same way; Ctrl-C
cancels it (``tasks/cancel``). It asks you at the
terminal for every elicitation the server needs (the MRTR loop retries with your answers, on
prompts and resources as on tools); a sampling request asks you to type the model's reply;
``--root URI`` (repeatable) declares the roots a server may ask for. It talks to servers of either
era (``--era``, ``auto`` by default) and says on stderr which one it found. The server's log
messages at ``--log-level`` (default ``warning``) and above go to stderr, as do questions and
progress; the result goes to stdout, readable or (``--json``) as one JSON document.
Exit status: 0 ok, 1 the tool reported an error (``isError``), 2 the command failed (a result
that breaks the tool's ``outputSchema`` too, unless ``--no-validate``), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from types import FrameType
from typing import TextIO, get_args

import anyio
import httpx

from fastapi_mrtr.client._cli_commands import PreparedCommand, commands_help, execute, split_json_flag
from fastapi_mrtr.client._cli_commands import parse_arguments as parse_arguments
from fastapi_mrtr.client._cli_output import json_document, log_line
from fastapi_mrtr.client._cli_output import render_result as render_result
from fastapi_mrtr.client._cli_sign_in import add_sign_in_options, signing_in
from fastapi_mrtr.client._cli_tasks import CURRENT, TaskWatcher, cancel_running_task
from fastapi_mrtr.client._errors import InvalidStructuredContentError, MrtrClientError
from fastapi_mrtr.client._forms import TerminalElicitor, format_json
from fastapi_mrtr.client._session import MrtrClient
from fastapi_mrtr.client._stdio.server import DEFAULT_STARTUP_TIMEOUT, StdioServer
from fastapi_mrtr.client._text import printable
from fastapi_mrtr.client._types import ProgressNotification
from fastapi_mrtr.client.options import ClientMode, ClientOptions, InputRequiredConfig
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import CreateMessageRequestParams, CreateMessageResult, ListRootsResult, Root
from fastapi_mrtr.wire.protocol import LOG_LEVELS, JSONRPCNotification, TextContent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fastapi_mrtr.client",
        usage="%(prog)s (URL | --stdio CMD) [COMMAND ...] [options]",
        description="Use an MCP server (2026-07-28 or 2025-era) from a terminal or a script, answering its questions.",
        epilog=commands_help()
        + "\n\n--json prints one JSON document on stdout for scripts; questions, progress, log messages"
        "\nand errors go to stderr. Exit status: 0 ok, 1 the tool reported an error, 2 failure.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("url", nargs="?", help="the MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument(
        "--stdio",
        metavar="CMD",
        help="instead of a URL: launch this stdio server and talk to it over its stdin/stdout, "
        "e.g. --stdio 'python -m fastapi_mrtr.stdio example_app.main:app'",
    )
    parser.add_argument(
        "--stdio-timeout",
        type=float,
        default=DEFAULT_STARTUP_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds the stdio server may take to answer first (default {DEFAULT_STARTUP_TIMEOUT:g})",
    )
    parser.add_argument("words", nargs="*", metavar="COMMAND", help="a command (listed below); none lists the tools")
    parser.add_argument(
        "--json",
        dest="json_output",
        action="store_true",
        help="print the result as one JSON document (followed by a '{...}' object, it is --arguments instead)",
    )
    parser.add_argument(
        "--arguments", dest="json_arguments", metavar="OBJECT", help="tool or prompt arguments as one JSON object"
    )
    parser.add_argument(
        "--log-level",
        choices=(*LOG_LEVELS, "off"),
        default="warning",
        help="show the server's log messages at this level and above on stderr (default warning)",
    )
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
    add_sign_in_options(parser)
    return parser


def parse_headers(lines: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"expected 'Name: value', got {line!r}")
        headers[name.strip()] = value.strip()
    return headers


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
    prepared = PreparedCommand.parse(args.words, args.json_arguments)  # bad input fails before any request

    def on_progress(note: ProgressNotification) -> None:
        total = f"/{note.total:g}" if note.total is not None else ""
        terminal.say(f"progress {note.progress:g}{total}" + (f" {note.message}" if note.message else ""))

    def on_notification(note: JSONRPCNotification) -> None:
        if note.method == "notifications/message" and args.log_level != "off":
            line = log_line(note.params or {}, args.log_level)
            if line is not None:
                terminal.say(line)

    options = ClientOptions(input_required_config=InputRequiredConfig(max_rounds=args.max_rounds), mode=args.era)
    headers = parse_headers(args.header)
    stdio = StdioServer(args.stdio, startup_timeout=args.stdio_timeout) if args.stdio is not None else None
    async with (
        signing_in(args, headers, terminal.say) as auth,  # on a 401/403: sign in (_cli_sign_in)
        MrtrClient(
            args.url if stdio is None else None,
            stdio=stdio,
            options=options,
            headers=headers,
            auth=auth,
            on_progress=on_progress,
            on_notification=on_notification,
            validate_structured_content=args.validate,
        ) as client,
    ):
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
        try:
            await client.set_log_level(None if args.log_level == "off" else args.log_level)
        except McpError as exc:  # a 2025-era server that declares logging yet refuses the level
            terminal.say(f"(the server did not take log level {args.log_level}: {exc.message})")
        # Only a reply proves there is a server: a pinned era connects lazily. A tool command lists
        # the tools first anyway (their x-mcp-header annotations decide a call's Mcp-Param-*
        # headers); a pinned 2026-07-28 era that has sent nothing yet asks server/discover.
        tools = await client.list_all_tools() if prepared.command.needs_tools else None
        if tools is None and args.era == "2026-07-28":
            await client.discover()
        if era == "legacy":
            name = client.server_info.name if client.server_info is not None else "the server"
            terminal.say(f"(connected to {name}: a 2025-era session, protocol {client.protocol_version})")
        else:
            terminal.say(f"(connected: protocol {client.protocol_version}, stateless)")
        watcher = TaskWatcher(terminal.say, args.url, headers, options, auth=auth)
        watcher.protocol_version = client.protocol_version
        CURRENT[:] = [watcher]
        try:
            outcome = await execute(client, prepared, tools, watcher)
        finally:
            CURRENT.clear()
        out.write(printable(json_document(outcome.document) if args.json_output else outcome.text) + "\n")
        return outcome.status


def choose_server(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A URL or ``--stdio CMD``, exactly one (a usage error, status 2, otherwise). With
    ``--stdio`` there is no URL, so the first word is the command's."""
    if args.stdio is None:
        if args.url is None:
            parser.error("give the server: a URL (http://.../mcp) or --stdio 'CMD'")
        return
    if args.url is not None and "://" in args.url:
        parser.error("give either a URL or --stdio 'CMD', not both")
    if args.header:
        parser.error("-H/--header is for HTTP servers; a stdio server has no headers")
    if args.url is not None:
        args.words, args.url = [args.url, *args.words], None


def exit_at_once_on_interrupt() -> None:
    """One Ctrl-C ends the command at once with status 130, sending nothing more.

    A prompt waits in a worker thread (so the round timeout can fire), and Python ends only once
    that thread returns: after Ctrl-C the process hung until Enter, and Enter then answered the
    pending question. For a person who pressed Ctrl-C nothing may be sent on their behalf, so the
    process ends right here; the server forgets the flow (its state was never retried). The one
    request sent first is the ``tasks/cancel`` of a task still running (``_cli_tasks``): left
    alone, it would run on for nobody.
    """

    def interrupted(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.write("\ninterrupted\n")
            sys.stderr.flush()
            cancel_running_task()
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
    parser = build_parser()
    args = parser.parse_intermixed_args(split_json_flag(sys.argv[1:] if argv is None else argv))
    choose_server(parser, args)
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
