"""A stdio MCP server as the client's wire: the server launched as a subprocess, JSON-RPC lines
on its stdin and stdout (``MrtrClient(stdio=...)``).

- ``server``: :class:`StdioServer`, what to launch and the timeouts;
- ``process``: the process, its pipes, its stderr and its shutdown;
- ``messages``: lines read as JSON-RPC;
- ``connection``: requests matched to answers, notifications and the server's requests routed;
- ``legacy``: a 2025-era session on the pipe (the modern era sends through the connection as is).
"""

from fastapi_mrtr.client._stdio.connection import StdioConnection
from fastapi_mrtr.client._stdio.legacy import StdioLegacySession
from fastapi_mrtr.client._stdio.server import StdioServer, as_stdio_server

__all__ = ["StdioConnection", "StdioLegacySession", "StdioServer", "as_stdio_server"]
