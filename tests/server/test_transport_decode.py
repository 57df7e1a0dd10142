"""``transport.decode`` reads a JSON body in any encoding RFC 8259 detection allows, strictly."""

import pytest

from fastapi_mrtr.server.transport import decode

MESSAGE = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"note": "é ✓ 🎉"}}
TEXT = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"note":"é ✓ 🎉"}}'


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_body_in_any_detectable_encoding_decodes_to_the_same_message(encoding: str) -> None:
    assert decode(TEXT.encode(encoding)) == MESSAGE


def test_text_and_arrays_decode_too() -> None:
    assert decode(TEXT) == MESSAGE
    assert decode(b"[1, 2]") == [1, 2]


@pytest.mark.parametrize("body", [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": 1e400}', b"{", b"\xff\xfe{"])
def test_non_json_numbers_and_broken_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        decode(body)
