"""``header_map``: lower-case names, latin-1 values, repeated headers joined as HTTP allows."""

from fastapi_mrtr.transport.http import header_map


def test_names_are_lower_cased_and_values_kept() -> None:
    scope = {"headers": [(b"Content-Type", b"application/json"), (b"MCP-Protocol-Version", b"2026-07-28")]}
    assert header_map(scope) == {"content-type": "application/json", "mcp-protocol-version": "2026-07-28"}


def test_repeated_headers_are_joined_in_order_whatever_their_case() -> None:
    scope = {
        "headers": [
            (b"accept", b"application/json"),
            (b"host", b"127.0.0.1"),
            (b"Accept", b"text/event-stream"),
            (b"x-note", b"caf\xe9"),
        ]
    }
    assert header_map(scope) == {
        "accept": "application/json, text/event-stream",
        "host": "127.0.0.1",
        "x-note": "café",
    }


def test_no_headers_is_an_empty_map() -> None:
    assert header_map({"headers": []}) == {}
