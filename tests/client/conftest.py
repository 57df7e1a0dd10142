"""Fixtures for the client tests: the SDK peer on real uvicorn, in-process, and a wire recorder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, HERE):  # the package from this checkout, and sdk_server next to us
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import hostile_server  # noqa: E402
import sdk_server  # noqa: E402
from client_helpers import Wire  # noqa: E402

from tests.support import running_server  # noqa: E402


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture(scope="session")
def sdk_url() -> Iterator[str]:
    """The SDK peer on real uvicorn."""
    with running_server(sdk_server.build_app()) as base:
        yield f"{base}/mcp"


@pytest.fixture(scope="session")
def hostile_url() -> Iterator[str]:
    """The hostile peer (``hostile_server.py``) on real uvicorn; append ``/<scenario>``."""
    # "critical": uvicorn logs an error for each stream the peer cuts on purpose.
    with running_server(hostile_server.app, log_level="critical") as base:
        yield base
