"""The app's MCP endpoint over stdio, for clients that launch local servers as subprocesses.

    python -m fastapi_mrtr.stdio example_app.main:app

or, from the app's own entry point::

    from fastapi_mrtr.stdio import serve_stdio

    if __name__ == "__main__":
        serve_stdio(app)

Each JSON-RPC line becomes an in-process HTTP request to the mounted endpoint, through the whole
app (middleware, dependencies, security, the lifespan), so stdio clients get what HTTP clients
get: MRTR in the 2026-07-28 era, a 2025-era session after ``initialize`` (server requests on the
pipe). The identity of the process comes from the environment: ``MRTR_STDIO_AUTHORIZATION`` is
sent as the ``Authorization`` header of every request. docs/stdio.md has the details.
"""

from fastapi_mrtr.stdio.serve import serve_stdio, serve_stdio_async
from fastapi_mrtr.stdio.target import AUTHORIZATION_ENV

__all__ = ["AUTHORIZATION_ENV", "serve_stdio", "serve_stdio_async"]
