"""The 2025-era TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2) on real uvicorn.

That client speaks only the 2025 era: ``initialize``, an ``Mcp-Session-Id`` on every request, a
GET stream, server requests on the call's SSE stream and answers POSTed back. js/flows.mjs runs
the flows with it and prints a summary of results, questions, HTTP exchanges and SSE events; the
tests here check that summary. ``bash scripts/install-js-client.sh`` installs the client.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.legacy_clients.conftest import ADMIN_TOKEN, Shop
from tests.legacy_clients.traffic import Exchange, Traffic, legacy_era_issues

pytestmark = pytest.mark.slow  # a Node process and several sessions: a few seconds each

JS = Path(__file__).with_name("js")
SDK_VERSION = "1.32.2"
GREETING = "Hello from the client model,"  # what flows.mjs's sampling handler answers


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary, with the pinned SDK installed beside flows.mjs (or a failure saying how)."""
    found = shutil.which("node")
    installed = JS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if found is None or not installed.is_file():
        missing = f"node: {found}, {installed.relative_to(JS.parent)}: {installed.is_file()}"
        pytest.fail(f"the JS client is not installed ({missing}): run bash scripts/install-js-client.sh")
    version = json.loads(installed.read_text())["version"]
    assert version == SDK_VERSION, f"{installed} is {version}: run bash scripts/install-js-client.sh"
    return found


def run_flows(node: str, url: str, suite: str, flows: list[str], token: str | None = None) -> dict[str, Any]:
    """Run ``flows`` of js/flows.mjs's ``suite`` against ``url``; its summary, per flow."""
    command = [node, str(JS / "flows.mjs"), url, suite, ",".join(flows)]
    environment = {**os.environ, **({"MCP_TOKEN": token} if token else {})}
    done = subprocess.run(command, cwd=JS, env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"flows.mjs exited {done.returncode}:\n{done.stderr}"
    summary: dict[str, Any] = json.loads(done.stdout)
    assert summary["sdkVersion"] == SDK_VERSION and summary["suite"] == suite
    ran: dict[str, Any] = summary["flows"]
    assert list(ran) == flows
    return ran


def as_traffic(flow: dict[str, Any]) -> Traffic:
    """The flow's exchanges in traffic.py's terms (flows.mjs keeps only what the checks read)."""
    traffic = Traffic()
    for sent in flow["traffic"]:
        body: Any = None
        if sent["rpc"] == "response":
            body = {"jsonrpc": "2.0", "id": sent["id"], "result": {}}
        elif sent["rpc"] is not None:
            body = {"jsonrpc": "2.0", "id": sent["id"], "method": sent["rpc"], "params": sent.get("params") or {}}
        exchange = Exchange(sent["http"], body, sent["session"], sent["protocolVersion"])
        exchange.status = sent["status"]
        exchange.minted_session = sent["mintedSession"]
        exchange.content_type = sent["contentType"] or ""
        traffic.exchanges.append(exchange)
    return traffic


def check_session(flow: dict[str, Any], questions: list[str], version: str = "2025-11-25") -> list[dict[str, Any]]:
    """One clean 2025-11-25 session that was asked ``questions`` (in order: an elicitation by its
    text, others by method) by server requests and ended with DELETE; returns the SSE streams the
    client read (POST and GET answers)."""
    assert flow.get("error") is None, flow["error"]
    assert flow["errors"] == []  # nothing the SDK found wrong while the flow ran
    assert flow["protocolVersion"] == version
    assert legacy_era_issues(as_traffic(flow), questions=len(questions), version=version) == []
    assert flow["sessionId"] == flow["traffic"][0]["mintedSession"]
    asked = [
        entry["message"] if entry["method"] == "elicitation/create" else entry["method"] for entry in flow["asked"]
    ]
    assert asked == questions
    ids = [entry["id"] for entry in flow["asked"]]
    assert len(set(ids)) == len(ids) == len(questions)
    primed = version >= "2025-11-25"  # SEP-1699 (priming, resumption) and the mode field came then
    for entry in flow["asked"]:
        if entry["method"] == "elicitation/create":
            assert entry["mode"] == ("form" if primed else None)
    [delete] = [sent for sent in flow["traffic"] if sent["http"] == "DELETE"]
    assert delete["status"] == 200 and flow["terminated"] is True
    streams = [sent for sent in flow["traffic"] if sent["contentType"] == "text/event-stream"]
    for stream in streams:
        if primed:
            # SEP-1699 priming: an id to resume from and a retry interval, with no message
            first = stream["events"][0]
            assert "id" in first and first.get("retry") and not first.get("data"), stream["events"]
        else:
            assert all(event.get("data") for event in stream["events"]), stream["events"]
        assert all("id" in event for event in stream["events"])  # every event can be resumed from
    # the standalone GET stream the SDK opens after notifications/initialized
    assert [sent["status"] for sent in flow["traffic"] if sent["http"] == "GET" and not sent["lastEventId"]] == [200]
    return streams


def call_stream(flow: dict[str, Any]) -> dict[str, Any]:
    """The tools/call exchange that ran the flow's tool (the first one)."""
    call: dict[str, Any] = next(sent for sent in flow["traffic"] if sent["rpc"] == "tools/call")
    assert call["status"] == 200 and call["contentType"] == "text/event-stream"
    return call


def messages(stream: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON-RPC messages a stream carried (id, method if a request, result: bool, error)."""
    return [event["message"] for event in stream["events"] if "message" in event]


def test_bookshop_flows(node: str, bookshop: Shop) -> None:
    flows = run_flows(node, bookshop.url, "bookshop", ["place_order", "review_book", "delete_book"], ADMIN_TOKEN)

    order = flows["place_order"]
    check_session(order, ["Place this order for 2 x 'Dune', 25.00 EUR?", "Shipping speed?"])
    assert order["result"]["isError"] is False
    assert order["result"]["structuredContent"] == {
        "status": "placed",
        "order_id": 1,
        "total_cents": 2500,
        "shipping": "express",
    }
    assert order["outputSchema"] is not None  # so the SDK validated structuredContent against it
    assert [entry["properties"] for entry in order["asked"]] == [["confirmed"], ["speed", "gift_note"]]
    call = call_stream(order)
    # both questions and then the result, on the call's own stream
    assert [(m.get("method"), m["result"]) for m in messages(call)] == [
        ("elicitation/create", False),
        ("elicitation/create", False),
        (None, True),
    ]
    assert messages(call)[-1]["id"] == call["id"]
    assert bookshop.rows("SELECT book_id, quantity, shipping, customer, gift_note FROM orders") == [
        (1, 2, "express", "alice", "Happy reading")
    ]

    review = flows["review_book"]
    check_session(
        review,
        [
            "How many stars for 'Neuromancer'?",
            "Sorry to hear that. What did you not like?",
            "Publish your 2-star review?",
        ],
    )
    assert review["result"]["structuredContent"] == {"status": "saved", "review_id": 1, "rating": 2}
    assert len(messages(call_stream(review))) == 4
    assert bookshop.rows("SELECT book_id, rating, comment FROM reviews") == [(3, 2, "The ending")]

    deletion = flows["delete_book"]
    check_session(deletion, ["Really delete 'Kindred'? This cannot be undone."])
    assert deletion["result"]["isError"] is False
    assert deletion["result"]["structuredContent"] == {
        "id": 4,
        "title": "Kindred",
        "author": "Octavia E. Butler",
        "price_cents": 1050,
    }
    assert deletion["booksAfter"] == [1, 2, 3]
    assert bookshop.rows("SELECT id FROM books ORDER BY id") == [(1,), (2,), (3,)]
    assert bookshop.rows("SELECT id, title FROM deleted_books") == [(4, "Kindred")]


def test_bookshop_order_in_a_2025_06_18_session(node: str, bookshop: Shop) -> None:
    """A 1.x client released before 2025-11-25 (initialize asks for 2025-06-18): the same flow,
    with questions as that version has them (no mode field) and streams without priming events."""
    flows = run_flows(node, bookshop.url, "bookshop", ["place_order_2025_06_18"], ADMIN_TOKEN)
    order = flows["place_order_2025_06_18"]
    questions = ["Place this order for 1 x 'The Left Hand of Darkness', 11.00 EUR?", "Shipping speed?"]
    check_session(order, questions, version="2025-06-18")
    assert order["traffic"][0]["params"]["protocolVersion"] == "2025-06-18"
    assert order["result"]["structuredContent"] == {
        "status": "placed",
        "order_id": 1,
        "total_cents": 1100,
        "shipping": "express",
    }
    assert [m.get("method") for m in messages(call_stream(order))] == ["elicitation/create", "elicitation/create", None]
    assert bookshop.rows("SELECT book_id, quantity, shipping, customer FROM orders") == [(2, 1, "express", "alice")]


def test_conformance_fixture_flows(node: str, everything: str) -> None:
    flows = run_flows(node, everything, "everything", ["multi_round", "multiple_inputs"])

    multi = flows["multi_round"]
    check_session(multi, ["What is your name?", "What is your favorite color?"])
    assert multi["result"]["content"] == [{"type": "text", "text": "Ada likes teal."}]
    assert multi["result"]["isError"] is False

    several = flows["multiple_inputs"]
    check_session(several, ["What is your name?", "sampling/createMessage", "roots/list"])
    sampled = next(entry for entry in several["asked"] if entry["method"] == "sampling/createMessage")
    assert sampled["message"] == "Generate a greeting" and sampled["maxTokens"] == 50
    assert several["result"]["content"] == [{"type": "text", "text": f"{GREETING} Ada (2 roots)"}]
    # one round: all three requests went out before the result, on the call's stream
    assert [m.get("method") for m in messages(call_stream(several))] == [
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
        None,
    ]


def test_call_stream_closed_by_the_server_is_resumed(node: str, everything: str) -> None:
    """The fixture closes a call's stream after 0.5 s; the first answer comes after 1.2 s. The SDK
    resumes with GET + Last-Event-ID (after the priming event's retry) and gets the rest there."""
    flows = run_flows(node, everything, "everything", ["multi_round_resumed"])
    resumed = flows["multi_round_resumed"]
    check_session(resumed, ["What is your name?", "What is your favorite color?"])
    assert resumed["result"]["content"] == [{"type": "text", "text": "Ada likes teal."}]
    call = call_stream(resumed)
    assert all(not m["result"] for m in messages(call))  # the stream closed before the result
    resumes = [sent for sent in resumed["traffic"] if sent["http"] == "GET" and sent["lastEventId"]]
    assert resumes, "the client never resumed the call's stream"
    assert resumes[0]["lastEventId"] == call["events"][-1]["id"]
    assert all(sent["status"] == 200 for sent in resumes)
    # nothing lost, nothing twice: the call's stream and its resumptions carried both questions, then the result
    carried = messages(call) + [message for sent in resumes for message in messages(sent)]
    assert [m.get("method") for m in carried] == ["elicitation/create", "elicitation/create", None]
    assert carried[-1]["id"] == call["id"] and carried[-1]["result"] is True
