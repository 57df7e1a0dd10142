"""The playground: a page at ``{mount}/playground`` to try every tool, prompt and resource.

The page is three static files shipped in this package (``static/``): no CDN, no build step,
nothing fetched from anywhere but the endpoint itself. It talks to the endpoint as any 2026-07-28
client does, over ``fetch`` from the browser, so it needs nothing on the server beyond serving
these files. docs/playground.md says what it does; this module only serves it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from importlib import resources
from typing import Protocol
from urllib.parse import urlsplit

from starlette.types import Receive, Scope, Send

PAGE_PATH = "/playground"
ASSETS = {
    "playground.js": "text/javascript; charset=utf-8",
    "signin.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}

# Everything the page needs comes from its own origin; data: only for the images and audio a tool
# returns. No inline script or style is allowed, so a string a tool supplies cannot run even if a
# bug ever put it into markup.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; media-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
OTHER_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class SignInSource(Protocol):
    """What the page's "Sign in" needs of the endpoint's OAuth resource server (``OAuthResourceServer``)."""

    @property
    def metadata_url(self) -> str: ...
    @property
    def authorization_servers(self) -> Sequence[str]: ...
    @property
    def playground_client_id(self) -> str | None: ...


_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]+)?|\[[0-9A-Fa-f:.]+\](:[0-9]+)?")


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL; None for anything a CSP source could not hold."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not _HOST.fullmatch(parts.netloc):
        return None
    return f"{parts.scheme}://{parts.netloc}"


def sign_in_csp(oauth: SignInSource) -> str:
    """The CSP with the origins the sign-in talks to (the resource metadata, the authorization servers)."""
    found = {_origin(oauth.metadata_url), *(_origin(server) for server in oauth.authorization_servers)}
    origins = sorted(origin for origin in found if origin is not None)
    return CSP.replace("connect-src 'self'", " ".join(["connect-src 'self'", *origins]))


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static").joinpath(name).read_bytes()


def page_size() -> int:
    """Bytes of the page and its assets together, as the browser downloads them (uncompressed)."""
    return sum(len(_static(name)) for name in ("index.html", *ASSETS))


class Playground:
    """Answers ``GET``/``HEAD`` on ``{mount}/playground`` and its assets; nothing else."""

    def __init__(self, oauth: SignInSource | None = None) -> None:
        template = _static("index.html").decode("utf-8")
        # The "Sign in" button shows only where the page names the resource metadata.
        metadata = html.escape(oauth.metadata_url, quote=True) if oauth is not None else ""
        client = html.escape(oauth.playground_client_id or "", quote=True) if oauth is not None else ""
        self._template = template.replace("{{oauth_metadata}}", metadata).replace("{{oauth_client}}", client)
        self._assets = {name: (_static(name), kind) for name, kind in ASSETS.items()}
        csp = sign_in_csp(oauth) if oauth is not None else CSP
        self._headers = [(b"content-security-policy", csp.encode()), *OTHER_HEADERS]

    def serves(self, scope: Scope) -> bool:
        """Whether this request is for the page (any other path below the mount is the endpoint's)."""
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return False
        below = _below_mount(scope)
        return below in (PAGE_PATH, PAGE_PATH + "/") or below.removeprefix(PAGE_PATH + "/") in self._assets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        below = _below_mount(scope)
        asset = self._assets.get(below.removeprefix(PAGE_PATH + "/"))
        if asset is not None:
            body, kind = asset
        else:
            # Absolute asset and endpoint paths, so the page works with or without a trailing slash
            # and behind a root_path. Escaped: the root path comes from the request.
            base = html.escape(scope.get("root_path", ""), quote=True)
            body, kind = self._template.replace("{{base}}", base).encode("utf-8"), "text/html; charset=utf-8"
        headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()), *self._headers]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


def _below_mount(scope: Scope) -> str:
    """The path past the mount ("/playground"), as a Starlette ``Mount`` leaves it in the scope."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        return path[len(root_path) :]
    return path
