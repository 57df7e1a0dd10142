"""The CLI's OAuth sign-in: on a server's 401 it signs the user in, on a 403 it steps up.

The user's browser opens at the authorization server (``--no-browser``: the URL is only printed);
the redirect comes back to a loopback port the CLI listens on for the run
(:class:`~fastapi_mrtr.client.auth.LoopbackSignIn`). Tokens and the client registration are kept
in memory for the run: nothing is written to disk. An ``Authorization`` header given with ``-H``
turns it off, as do ``--no-sign-in`` and ``--stdio``.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

from fastapi_mrtr.client.auth import ClientMetadata, LoopbackSignIn, OAuthClientAuth


def add_sign_in_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-sign-in",
        dest="sign_in",
        action="store_false",
        help="do not sign in when the server asks for it (HTTP 401/403 with a Bearer challenge)",
    )
    parser.add_argument(
        "--no-browser",
        dest="open_browser",
        action="store_false",
        help="print the sign-in URL instead of opening the browser ($BROWSER names the browser to open)",
    )
    parser.add_argument(
        "--sign-in-port",
        type=int,
        default=0,
        metavar="PORT",
        help="the loopback port the sign-in comes back to (default: any free one)",
    )


@asynccontextmanager
async def signing_in(
    args: argparse.Namespace, headers: Mapping[str, str], say: Callable[[str], None]
) -> AsyncIterator[OAuthClientAuth | None]:
    """The auth for the run (None when sign-in is off); its loopback port is closed at the end."""
    # A stdio server takes its identity from the environment: there is nothing to sign in to.
    if not args.sign_in or args.stdio is not None or any(name.lower() == "authorization" for name in headers):
        yield None
        return
    async with await LoopbackSignIn.bind(say, port=args.sign_in_port, open_browser=args.open_browser) as listener:
        metadata = ClientMetadata(redirect_uris=[listener.redirect_uri], client_name="fastapi-mrtr CLI")
        yield OAuthClientAuth(authorization_handler=listener, client_metadata=metadata)
