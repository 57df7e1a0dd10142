"""Fixtures for the client tests: the SDK peer on real uvicorn, in-process, and a wire recorder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client import hostile_server, sdk_server
from tests.client.client_helpers import Wire
from tests.support import running_server


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
