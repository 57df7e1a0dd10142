"""The one ``=?base64?`` codec (wire.headers): the client encodes with it, the server decodes
``Mcp-Name`` and ``Mcp-Param-*`` with it, so a value always reads back as it was sent."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st

from fastapi_mrtr.wire.errors import HEADER_MISMATCH
from fastapi_mrtr.wire.headers import decode_header_value, encode_header_value, is_token, looks_wrapped
from tests.mcp_helpers import connect, rpc_error

BookshopFactory = Callable[..., FastAPI]


def wrapped(text: str | bytes) -> str:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return "=?base64?" + base64.b64encode(raw).decode("ascii") + "?="


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("us-west1", True),
        ("us west 1", True),  # inner spaces are visible ASCII
        ("", True),
        ("=?base64?=", True),  # too short to be a wrapper: literal text either way
        (" padded ", False),
        ("\tindented", False),
        ("line1\nline2", False),
        ("Hello, 世界", False),
        ("=?base64?aGk=?=", False),  # wrapper-shaped text must not be read as encoded
        ("=?BASE64?aGk=?=", False),  # the reader ignores the prefix's case, so the writer must too
        ("=?base64??=", False),
    ],
)
def test_a_value_is_sent_plain_only_when_that_is_safe(value: str, plain: bool) -> None:
    encoded = encode_header_value(value)
    assert (encoded == value) is plain
    assert decode_header_value(encoded) == value


@given(st.text())
def test_every_value_round_trips_through_a_header(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(" " <= ch <= "~" for ch in encoded)
    assert encoded == encoded.strip()
    assert decode_header_value(encoded) == value
    assert decode_header_value(f" \t{encoded}\t ") == value  # the OWS a proxy may add is not the value


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (" plain ", "plain"),
        (wrapped(" spaced "), " spaced "),
        ("=?BASE64?aGk=?=", "hi"),
        ("=?Base64?aGk=?=", "hi"),
        ("\t=?base64?aGk=?= ", "hi"),
        (wrapped(""), ""),
        ("=?base64?=", "=?base64?="),  # prefix and suffix overlap: literal
        ("=?base64?aGk=", "=?base64?aGk="),  # no suffix: literal
        (wrapped("=?base64?aGk=?="), "=?base64?aGk=?="),  # the sentinel itself, wrapped once
    ],
)
def test_decoding(raw: str, decoded: str) -> None:
    assert decode_header_value(raw) == decoded


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?not base64!?=",
        "=?base64?aGk?=",  # padding missing
        "=?base64?aG k=?=",  # a space inside
        wrapped(b"\xff"),  # not UTF-8
        wrapped(b"caf\xe9"),  # Latin-1, not UTF-8
    ],
)
def test_a_broken_wrapper_decodes_to_nothing(raw: str) -> None:
    assert looks_wrapped(raw.strip())
    assert decode_header_value(raw) is None


def test_header_names_are_tokens() -> None:
    assert is_token("Region") and is_token("X-Tenant_1")
    assert not is_token("") and not is_token("Region\n") and not is_token("two words") and not is_token(3)


# --- the server reads Mcp-Name by the same rule as Mcp-Param-* ----------------------------------

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("header", ["=?BASE64?" + base64.b64encode(b"get_book").decode() + "?=", "\tget_book "])
async def test_mcp_name_is_decoded_like_a_param_header(bookshop: BookshopFactory, header: str) -> None:
    async with connect(bookshop()) as client:
        result = await client.call("get_book", {"book_id": 1}, name=header)
    assert result["isError"] is False


async def test_mcp_name_with_a_broken_wrapper_is_a_mismatch(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/call", {"name": "get_book", "arguments": {"book_id": 1}}, request_id=5, name="=?base64?***?="
        )
    rpc_error(response, 400, HEADER_MISMATCH, 5)
