"""SEP-2243 header rules: value encoding and x-mcp-header validation."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastapi_mrtr.client import InvalidToolHeadersError
from fastapi_mrtr.client._headers import (
    ParamHeader,
    encode_header_value,
    param_headers,
    scan_param_headers,
    standard_headers,
)


def decode(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode("utf-8")
    return value


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("us-west1", True),
        ("us west 1", True),
        ("", True),
        (" padded ", False),
        ("\tindented", False),
        ("line1\nline2", False),
        ("Hello, 世界", False),
        ("=?base64?abc?=", False),  # sentinel-shaped text must not be read as encoded
    ],
)
def test_encode_header_value(value: str, plain: bool) -> None:
    encoded = encode_header_value(value)
    assert (encoded == value) is plain
    assert decode(encoded) == value


@given(st.text())
def test_encoded_values_are_header_safe_and_round_trip(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(0x20 <= ord(ch) <= 0x7E for ch in encoded)
    assert encoded == encoded.strip()
    assert decode(encoded) == value


def test_standard_headers() -> None:
    assert standard_headers("2026-07-28", "tools/list", {}) == {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
    }
    assert standard_headers("v", "resources/read", {"uri": "file:///a b"})["Mcp-Name"] == "file:///a b"
    assert standard_headers("v", "prompts/get", {"name": "my-prompt"})["Mcp-Name"] == "my-prompt"


def schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def test_scan_finds_nested_declarations() -> None:
    found = scan_param_headers(
        schema(
            region={"type": "string", "x-mcp-header": "Region"},
            opts={"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
            x={"type": "number"},
        )
    )
    assert found == (ParamHeader(("region",), "Region"), ParamHeader(("opts", "dry"), "Dry-Run"))


def test_a_property_named_like_the_keyword_is_just_a_property() -> None:
    assert scan_param_headers(schema(**{"x-mcp-header": {"type": "string"}})) == ()


@pytest.mark.parametrize(
    "bad",
    [
        schema(v={"type": "string", "x-mcp-header": ""}),
        schema(v={"type": "string", "x-mcp-header": "My Region"}),
        schema(v={"type": "string", "x-mcp-header": "Region:Primary"}),
        schema(v={"type": "string", "x-mcp-header": "Région"}),
        schema(v={"type": "string", "x-mcp-header": "Region\t1"}),
        schema(v={"type": "string", "x-mcp-header": 7}),
        schema(v={"type": "number", "x-mcp-header": "Score"}),
        schema(v={"type": "object", "x-mcp-header": "Data"}),
        schema(v={"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}),
        schema(v={"type": "null", "x-mcp-header": "Nil"}),
        schema(a={"type": "string", "x-mcp-header": "Region"}, b={"type": "string", "x-mcp-header": "region"}),
        schema(v={"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}),
        {"type": "object", "anyOf": [schema(v={"type": "string", "x-mcp-header": "V"})]},
        {"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}},
        {"type": "string", "x-mcp-header": "Root"},
    ],
)
def test_scan_rejects_invalid_declarations(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidToolHeadersError):
        scan_param_headers(bad)


def test_param_headers_encode_values_and_skip_null_or_absent() -> None:
    decls = (
        ParamHeader(("region",), "Region"),
        ParamHeader(("priority",), "Priority"),
        ParamHeader(("verbose",), "Verbose"),
        ParamHeader(("debug",), "Debug"),
        ParamHeader(("opts", "dry"), "Dry"),
    )
    headers = param_headers(decls, {"region": "世界", "priority": 42, "verbose": None, "debug": True, "opts": {}})
    assert headers == {"Mcp-Param-Region": "=?base64?5LiW55WM?=", "Mcp-Param-Priority": "42", "Mcp-Param-Debug": "true"}
    assert param_headers(decls, None) == {}
