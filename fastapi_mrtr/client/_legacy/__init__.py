"""A 2025-era MCP session (2025-11-25 and earlier) over Streamable HTTP, for servers without MRTR.

The handshake era keeps state on the server: ``initialize`` negotiates a version and the
capabilities, the server names the session in ``Mcp-Session-Id``, and every later request
carries that header. A tool that needs the user does not answer ``input_required``: it sends
its own requests on the call's SSE stream, and the client answers each with a new POST.

One module per job:

- ``session``: ``initialize``, requests in the session (re-initialising once after a 404), the
  DELETE that ends it, ``notifications/cancelled`` for an abandoned call;
- ``http``: the session's headers, POSTs and GET streams (:class:`SessionGoneError` for a 404);
- ``call_stream``: one call's SSE stream to its response, resumed with ``Last-Event-ID``;
- ``listener``: the session's GET stream, read in the background;
- ``server_requests``: the server's requests, answered by the client's handlers, at most
  ``MAX_OPEN_SERVER_REQUESTS`` at once per stream.
"""

from fastapi_mrtr.client._legacy.http import SessionGoneError
from fastapi_mrtr.client._legacy.server_requests import MAX_OPEN_SERVER_REQUESTS
from fastapi_mrtr.client._legacy.session import LegacySession

__all__ = ["MAX_OPEN_SERVER_REQUESTS", "LegacySession", "SessionGoneError"]
