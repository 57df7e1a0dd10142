"""Fixtures of the interop harness: each app on real uvicorn, once per module, behind a recorder.

``served`` (parametrized indirectly by server name) hands a test its server with the recorder
emptied; on teardown every exchange the test left unchecked is checked against the SDK's models.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.servers import Served, serve


@pytest.fixture(scope="module")
def everything_server() -> Iterator[Served]:
    """tests/conformance/everything_server.py."""
    with serve("everything") as server:
        yield server


@pytest.fixture(scope="module")
def bookshop_server() -> Iterator[Served]:
    """example_app/main.py, on a fresh database."""
    with serve("bookshop") as server:
        yield server


@pytest.fixture(scope="module")
def questions_server() -> Iterator[Served]:
    """tests/interop/question_app.py."""
    with serve("questions") as server:
        yield server


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The server named by the test's ``served`` parameter, its recording started afresh."""
    server: Served = request.getfixturevalue(f"{request.param}_server")
    server.recorder.take()
    yield server
    server.assert_wire_conforms()
