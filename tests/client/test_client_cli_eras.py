"""The terminal client as a subprocess against real servers of both MCP eras.

Peers, all on 127.0.0.1: the TypeScript SDK's 2025-era-only server (Node), this project's example
bookshop on uvicorn (serves both eras), and the official Python SDK's stateful app (both eras).
Answers are typed on the CLI's stdin exactly as a person would: for a form, first the action
(``a`` accept, ``d`` decline), then one line per field (``y``/``n`` for booleans, a choice's number
for enums, empty for a default or an optional field left out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client import sdk_server
from tests.legacy_clients.node_server import node_legacy_server
from tests.support import db_rows, running_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODERN_LINE = "(connected: protocol 2026-07-28, stateless)"
NODE_LINE = "(connected to legacy-node-server: a 2025-era session, protocol 2025-11-25)"
SHOP_LINE = "(connected to bookshop: a 2025-era session, protocol 2025-11-25)"
SDK_LINE = "(connected to peer-sdk: a 2025-era session, protocol 2025-11-25)"


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m fastapi_mrtr.client ARGS`` with ``stdin`` piped in; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fastapi_mrtr.client", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    # Whatever went wrong, the CLI explains it in a line of its own, not with a stack dump.
    assert "Traceback" not in done.stderr, done.stderr
    return done


def era_line(done: subprocess.CompletedProcess[str]) -> str:
    """The first stderr line: the era the CLI found (or was told to use)."""
    return done.stderr.splitlines()[0] if done.stderr else ""


def asked(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The questions the server asked, in order, as the terminal showed them."""
    prefix = "The server asks: "
    return [line.removeprefix(prefix) for line in done.stderr.splitlines() if line.startswith(prefix)]


# --- the Node server: 2025 era only -------------------------------------------------------


@pytest.fixture(scope="module")
def node_url() -> Iterator[str]:
    with node_legacy_server() as url:
        yield url


AUTO_OR_LEGACY = pytest.mark.parametrize("era", [(), ("--era", "legacy")], ids=["auto", "legacy"])


@AUTO_OR_LEGACY
def test_node_lists_its_tools_in_a_2025_session(node_url: str, era: tuple[str, ...]) -> None:
    done = run_cli(node_url, *era)
    assert done.returncode == 0, done.stderr
    assert era_line(done) == NODE_LINE
    names = [line.split()[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert names == ["echo", "place_order", "ask_model", "list_my_roots", "slow"]
    assert "place_order item=<string> quantity=<integer>" in done.stdout.splitlines()


@AUTO_OR_LEGACY
def test_node_place_order_answers_two_forms(node_url: str, era: tuple[str, ...]) -> None:
    # accept, confirmed=y; accept, speed=2 (express)
    done = run_cli(node_url, "place_order", "item=book", "quantity=2", *era, stdin="a\ny\na\n2\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "placed 2 x book, express\n"
    assert era_line(done) == NODE_LINE
    assert asked(done) == ["Place 2 x book?", "Shipping speed?"]
    assert "1) standard" in done.stderr and "2) express" in done.stderr


def test_node_place_order_declined_is_cancelled(node_url: str) -> None:
    done = run_cli(node_url, "place_order", "item=book", "quantity=2", stdin="d\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cancelled\n"
    assert asked(done) == ["Place 2 x book?"]  # no second question after a decline


def test_node_sampling_asks_the_person_for_the_reply(node_url: str) -> None:
    done = run_cli(node_url, "ask_model", "prompt=hi", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "model said: hello\n"
    assert era_line(done) == NODE_LINE
    assert "The server asks for a model reply:" in done.stderr
    assert "  user: hi" in done.stderr.splitlines()
    assert "reply> " in done.stderr


def test_node_sampling_without_a_reply_is_rejected(node_url: str) -> None:
    done = run_cli(node_url, "ask_model", "prompt=hi", stdin="")
    assert done.returncode == 1  # the server turned our refusal into a tool error
    assert "the user gave no reply" in done.stdout
    assert "model said" not in done.stdout


def test_node_roots_are_the_ones_declared(node_url: str) -> None:
    done = run_cli(node_url, "list_my_roots", "--root", "file:///a", "--root", "file:///b")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "file:///a,file:///b\n"
    assert era_line(done) == NODE_LINE


@pytest.mark.parametrize("call", [(), ("echo", "text=hi")], ids=["list", "call"])
def test_node_refuses_the_pinned_2026_era(node_url: str, call: tuple[str, ...]) -> None:
    done = run_cli(node_url, *call, "--era", "2026-07-28")
    assert done.returncode == 2
    assert done.stdout == ""
    # The server's own answer to a request without a session, shown as one error line.
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert errors == ["error -32000: Bad Request: No valid session ID provided"]
    assert "2025-era session" not in done.stderr


# --- the example bookshop: both eras ------------------------------------------------------


SHOP_ERAS = pytest.mark.parametrize(
    ("era", "line"), [(("--era", "legacy"), SHOP_LINE), ((), MODERN_LINE)], ids=["legacy", "auto"]
)


@SHOP_ERAS
def test_shop_place_order_two_rounds(shop: tuple[str, Path], era: tuple[str, ...], line: str) -> None:
    url, database = shop
    # accept, confirmed=y; accept, speed=2 (express), gift note left out
    done = run_cli(url, "place_order", "book_id=1", "quantity=2", *era, stdin="a\ny\na\n2\n\n")
    assert done.returncode == 0, done.stderr
    assert era_line(done) == line
    assert asked(done) == ["Place this order for 2 x 'Dune', 25.00 EUR?", "Shipping speed?"]
    receipt = json.loads(done.stdout)
    assert receipt["status"] == "placed" and receipt["shipping"] == "express" and receipt["total_cents"] == 2500
    assert db_rows(database, "SELECT book_id, quantity, shipping FROM orders") == [(1, 2, "express")]


@SHOP_ERAS
def test_shop_place_order_not_confirmed(shop: tuple[str, Path], era: tuple[str, ...], line: str) -> None:
    url, database = shop
    done = run_cli(url, "place_order", "book_id=1", "quantity=2", *era, stdin="a\nn\n")
    assert done.returncode == 0, done.stderr
    assert era_line(done) == line
    assert json.loads(done.stdout)["status"] == "cancelled"
    assert len(asked(done)) == 1
    assert db_rows(database, "SELECT * FROM orders") == []


@SHOP_ERAS
def test_shop_review_book_three_rounds(shop: tuple[str, Path], era: tuple[str, ...], line: str) -> None:
    url, database = shop
    # accept, stars=2; accept, comment; accept, publish=y
    done = run_cli(url, "review_book", "book_id=1", *era, stdin="a\n2\na\ntoo slow\na\ny\n")
    assert done.returncode == 0, done.stderr
    assert era_line(done) == line
    assert asked(done) == [
        "How many stars for 'Dune'?",
        "Sorry to hear that. What did you not like?",
        "Publish your 2-star review?",
    ]
    review = json.loads(done.stdout)
    assert review["status"] == "saved" and review["rating"] == 2
    assert db_rows(database, "SELECT book_id, rating, comment FROM reviews") == [(1, 2, "too slow")]


@SHOP_ERAS
def test_shop_delete_book_needs_the_admin_header(shop: tuple[str, Path], era: tuple[str, ...], line: str) -> None:
    url, database = shop
    refused = run_cli(url, "delete_book", "book_id=4", *era, stdin="a\ny\n")
    assert refused.returncode == 1  # the tool's error: not signed in
    assert era_line(refused) == line
    assert json.loads(refused.stdout)["status"] == 401
    assert asked(refused) == []

    admin = ("-H", "Authorization: Bearer alice-token")
    done = run_cli(url, "delete_book", "book_id=4", *era, *admin, stdin="a\ny\n")
    assert done.returncode == 0, done.stderr
    assert era_line(done) == line
    assert asked(done) == ["Really delete 'Kindred'? This cannot be undone."]
    assert json.loads(done.stdout)["title"] == "Kindred"
    assert db_rows(database, "SELECT id FROM books WHERE id = 4") == []


# --- the official Python SDK's stateful app: both eras --------------------------------------


@pytest.fixture(scope="module")
def sdk_stateful_url() -> Iterator[str]:
    with running_server(sdk_server.build_server().streamable_http_app()) as base:
        yield f"{base}/mcp"


SDK_ERAS = pytest.mark.parametrize(
    ("era", "line"),
    [(("--era", "legacy"), SDK_LINE), (("--era", "2026-07-28"), MODERN_LINE), ((), MODERN_LINE)],
    ids=["legacy", "2026-07-28", "auto"],
)


@SDK_ERAS
@pytest.mark.parametrize(("answer", "printed"), [("y", "deleted x"), ("n", "kept x")])
def test_sdk_delete_item(sdk_stateful_url: str, era: tuple[str, ...], line: str, answer: str, printed: str) -> None:
    done = run_cli(sdk_stateful_url, "delete_item", "item=x", *era, stdin=f"a\n{answer}\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed + "\n"
    assert era_line(done) == line
    assert asked(done) == ["Really delete x?"]


@SDK_ERAS
def test_sdk_signup_richer_form(sdk_stateful_url: str, era: tuple[str, ...], line: str) -> None:
    # accept; name; age default; colour: a bad choice, then 2; subscribe y
    done = run_cli(sdk_stateful_url, "signup", *era, stdin="a\nAda\n\nx\n2\ny\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "signed up name=Ada age=30 colour=green subscribe=True\n"
    assert era_line(done) == line
    assert "! choose one of: red, green, blue (or a number 1-3), not 'x'" in done.stderr
