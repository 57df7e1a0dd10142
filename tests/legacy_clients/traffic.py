"""What a client sent and what the server answered, per HTTP exchange, and the era that shows.

The era is read off the wire, not off the client's own account: a 2025-era client opens a session
with ``initialize`` (the server mints an ``Mcp-Session-Id``), names that session on every later
request, and answers the server's questions by POSTing JSON-RPC responses (each answered 202).
A 2026-07-28 client never does any of that: it probes ``server/discover`` (or nothing at all) and
retries its call with ``inputResponses``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Exchange:
    """One HTTP request of the client and the head of the server's answer."""

    http_method: str
    body: Any  # the JSON-RPC message(s) POSTed, or None for GET and DELETE
    session: str | None  # the Mcp-Session-Id the request named
    protocol_version: str | None  # its MCP-Protocol-Version header
    status: int | None = None
    minted_session: str | None = None  # the Mcp-Session-Id the answer carried
    content_type: str = ""

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC method POSTed; "response" for a client's answer to a server request."""
        if not isinstance(self.body, dict):
            return None
        if "method" in self.body:
            return str(self.body["method"])
        return "response" if "id" in self.body and ("result" in self.body or "error" in self.body) else None


@dataclass
class Traffic:
    """A recorder for any HTTP client that calls back with (method, url, headers, body) and status."""

    exchanges: list[Exchange] = field(default_factory=list)

    def sent(self, http_method: str, headers: dict[str, str], content: bytes) -> Exchange:
        body = json.loads(content) if content else None
        exchange = Exchange(http_method, body, headers.get("mcp-session-id"), headers.get("mcp-protocol-version"))
        self.exchanges.append(exchange)
        return exchange

    def posted(self, rpc_method: str) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if exchange.rpc_method == rpc_method]

    def minted_sessions(self) -> list[str]:
        return [exchange.minted_session for exchange in self.exchanges if exchange.minted_session]


def legacy_era_issues(traffic: Traffic, questions: int, version: str = "2025-11-25") -> list[str]:
    """Why this traffic is not one 2025-era session that answered ``questions`` server requests."""
    issues: list[str] = []
    exchanges = traffic.exchanges
    if not exchanges or exchanges[0].rpc_method != "initialize":
        return [f"the first request was not initialize: {[e.rpc_method for e in exchanges]}"]
    opening = exchanges[0]
    if opening.body["params"].get("protocolVersion") != version:
        issues.append(f"initialize asked for {opening.body['params'].get('protocolVersion')}, not {version}")
    if (
        "_meta" in opening.body["params"]
        and "io.modelcontextprotocol/protocolVersion" in opening.body["params"]["_meta"]
    ):
        issues.append("initialize carried modern _meta")
    session = opening.minted_session
    if opening.status != 200 or not session:
        return [*issues, f"initialize got {opening.status} and session {session!r}"]
    if traffic.minted_sessions() != [session]:
        issues.append(f"sessions minted: {traffic.minted_sessions()}")
    for exchange in exchanges[1:]:
        if exchange.session != session:
            issues.append(f"{exchange.http_method} {exchange.rpc_method} named session {exchange.session!r}")
        if exchange.protocol_version != version:
            issues.append(f"{exchange.http_method} {exchange.rpc_method} sent version {exchange.protocol_version!r}")
    initialized = traffic.posted("notifications/initialized")
    if [exchange.status for exchange in initialized] != [202]:
        issues.append(f"notifications/initialized answered {[e.status for e in initialized]}")
    answers = traffic.posted("response")
    if len(answers) != questions or any(exchange.status != 202 for exchange in answers):
        issues.append(f"{questions} server request(s) expected, answers POSTed: {[e.status for e in answers]}")
    if traffic.posted("server/discover"):
        issues.append("server/discover was sent")
    return issues


def modern_era_issues(traffic: Traffic) -> list[str]:
    """Why this traffic is not 2026-07-28 traffic (no session, no server-to-client requests)."""
    issues: list[str] = []
    if traffic.posted("initialize"):
        issues.append("initialize was sent")
    if traffic.minted_sessions():
        issues.append(f"sessions minted: {traffic.minted_sessions()}")
    if traffic.posted("response"):
        issues.append("the client answered server requests")
    for exchange in traffic.exchanges:
        if exchange.http_method != "POST":
            issues.append(f"{exchange.http_method} sent (the modern era has no GET or DELETE)")
        elif exchange.protocol_version != "2026-07-28":
            issues.append(f"{exchange.rpc_method} sent version {exchange.protocol_version!r}")
    return issues
