"""``python -m fastapi_mrtr.stdio module:app``: serve an app's MCP endpoint over stdin/stdout.

For MCP clients that launch local servers as subprocesses (Claude Desktop, Claude Code, VS Code,
Cursor): see docs/stdio.md for their configuration, identity (``MRTR_STDIO_AUTHORIZATION``) and
limits. The app is imported after stdout is set aside, so nothing it prints reaches the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from typing import Any

from fastapi_mrtr.stdio.lifespan import LifespanError
from fastapi_mrtr.stdio.serve import EOF_GRACE, protocol_stdout, serve_stdio_async


def load_app(reference: str) -> Any:
    """The object ``module:attribute`` names (the attribute may be dotted), with a clear error otherwise."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"fastapi_mrtr.stdio: expected module:app (e.g. example_app.main:app), got {reference!r}")
    try:
        found: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise SystemExit(
                f"fastapi_mrtr.stdio: no module {module_name!r} (run from the project's folder, or set PYTHONPATH)"
            ) from None
        raise
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise SystemExit(f"fastapi_mrtr.stdio: module {module_name!r} has no attribute {attribute!r}") from None
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fastapi_mrtr.stdio",
        description="Serve a FastAPI app's MCP endpoint over stdin/stdout (JSON-RPC, one message per line).",
    )
    parser.add_argument("app", help="the FastAPI app (or its MCP) as module:attribute, e.g. example_app.main:app")
    parser.add_argument("--path", help="the MCP endpoint's mount path, when the app mounts several")
    parser.add_argument("--max-line-bytes", type=int, help="the longest message read (default: max_body_bytes)")
    parser.add_argument(
        "--grace", type=float, default=EOF_GRACE, help="seconds for running requests after stdin closes"
    )
    parser.add_argument("--log-level", default="WARNING", help="of the log on stderr (default WARNING)")
    args = parser.parse_args(argv)
    with protocol_stdout() as (stdin_fd, stdout_fd):
        app = load_app(args.app)
        logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)  # no-op when the app set up logging
        logging.getLogger("fastapi_mrtr.stdio").setLevel(args.log_level.upper())
        try:
            asyncio.run(
                serve_stdio_async(
                    app,
                    stdin_fd=stdin_fd,
                    stdout_fd=stdout_fd,
                    path=args.path,
                    max_line_bytes=args.max_line_bytes,
                    grace=args.grace,
                )
            )
        except (LookupError, TypeError, LifespanError) as exc:
            print(f"fastapi_mrtr.stdio: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
