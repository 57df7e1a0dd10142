"""Sign-in for a program at a terminal: open the browser, catch the redirect on loopback (RFC 8252).

:class:`LoopbackSignIn` is an :data:`~fastapi_mrtr.client.auth.AuthorizationHandler`. It listens
on ``127.0.0.1`` (never a wildcard address: nothing but this machine may hand it a code), says the
authorization URL (and opens it in the user's browser when asked to), and waits for the
authorization server to send the browser back to ``http://127.0.0.1:PORT/callback``. It answers
the browser with a short page and hands the flow the redirect URL, whose ``state`` and ``iss``
the flow then checks. The port is bound before anything is registered, so the redirect URI is
known (``redirect_uri``) when the client registers.
"""

from __future__ import annotations

import contextlib
import webbrowser
from collections.abc import Callable
from urllib.parse import urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream

from fastapi_mrtr.client.auth._errors import OAuthAuthorizationError

CALLBACK_PATH = "/callback"
_MAX_HEAD = 16 * 1024  # a redirect's request line and headers; more is not a browser coming back
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>{title}</title>"
    "<p>{text}</p><p>You can close this tab and go back to the terminal.</p>"
)


def _answer(status: str, title: str, text: str) -> bytes:
    body = _PAGE.format(title=title, text=text).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
        "cache-control: no-store\r\nreferrer-policy: no-referrer\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class LoopbackSignIn:
    """An authorization handler that catches the redirect on a loopback port of its own.

    ``async with await LoopbackSignIn.bind(...) as sign_in:`` binds the port (``port=0``: any
    free one); ``sign_in.redirect_uri`` goes into the client metadata. ``say`` shows the
    authorization URL to the user; ``open_browser`` opens it with :mod:`webbrowser` (which honours
    ``$BROWSER``). ``timeout`` is how long one sign-in may take, in seconds.
    """

    def __init__(
        self,
        listener: SocketListener,
        say: Callable[[str], None],
        *,
        open_browser: bool = True,
        timeout: float = 300.0,
    ) -> None:
        self._listener = listener
        self._say = say
        self._open_browser = open_browser
        self._timeout = timeout
        port = listener.extra(SocketAttribute.local_port)
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"

    @classmethod
    async def bind(
        cls, say: Callable[[str], None], *, port: int = 0, open_browser: bool = True, timeout: float = 300.0
    ) -> LoopbackSignIn:
        bound = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        listener = bound.listeners[0]  # one address given: one listener
        if not isinstance(listener, SocketListener):  # pragma: no cover - anyio's TCP listeners are
            raise TypeError(f"unexpected listener {listener!r}")
        return cls(listener, say, open_browser=open_browser, timeout=timeout)

    async def __aenter__(self) -> LoopbackSignIn:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._listener.aclose()

    async def __call__(self, authorization_url: str) -> str:
        self._say(f"Sign in to continue: {authorization_url}")
        self._say(f"Waiting for the sign-in to come back to {self.redirect_uri} ...")
        async with anyio.create_task_group() as tasks:
            if self._open_browser:
                tasks.start_soon(self._open, authorization_url)
            found = await self._callback()
            tasks.cancel_scope.cancel()  # a browser command still running is left to itself
        if found is None:
            raise OAuthAuthorizationError(f"no sign-in came back within {self._timeout:g} s")
        return found

    async def _open(self, authorization_url: str) -> None:
        # webbrowser may wait for the browser command to return: in a thread, while the loop
        # listens for the redirect.
        opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url, abandon_on_cancel=True)
        if not opened:
            self._say("(no browser could be opened: open the URL above yourself)")

    async def _callback(self) -> str | None:
        """The redirect URL the browser brings back; None when none came within the timeout."""
        with anyio.move_on_after(self._timeout):
            while True:
                stream = await self._listener.accept()
                async with stream:
                    found = await self._serve(stream)
                if found is not None:
                    return found
        return None

    async def _serve(self, stream: SocketStream) -> str | None:
        """Answer one browser request; the redirect URL when it is the callback, else None."""
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
                head += await stream.receive(4096)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = request_line.partition(" ")
        target = rest.rpartition(" ")[0] or rest
        parts = urlsplit(target)
        if method != "GET" or parts.path != CALLBACK_PATH or not parts.query:
            await _send(stream, _answer("404 Not Found", "Not found", "This is not the sign-in callback."))
            return None
        if "error=" in parts.query and "code=" not in parts.query:
            await _send(stream, _answer("200 OK", "Sign-in refused", "The sign-in did not succeed."))
        else:
            await _send(stream, _answer("200 OK", "Signed in", "Signed in."))
        return f"{self.redirect_uri}?{parts.query}"


async def _send(stream: SocketStream, data: bytes) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(data)  # a browser that went away: the redirect it brought still counts
