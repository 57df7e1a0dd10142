"""``json_codec`` gives the json module's answers, with pydantic-core doing the work where it can.

Every reading is checked against the strict json-module reader (``_stdlib_decode``) and every
writing against ``json.dumps``: same value or both refusing, same bytes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastapi_mrtr.wire.json_codec import _may_overflow, _stdlib_decode, decode, decode_finite, decode_lenient, encode

MESSAGE = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"note": "é ✓ 🎉"}}
TEXT = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"note":"é ✓ 🎉"}}'


def stdlib_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


MAX_DEPTH = 200  # pydantic-core's nesting limit, which decode applies to every reading


def depth(value: Any) -> int:
    """Levels of containers that hold a value (an empty one adds none), as pydantic-core counts."""
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    return 1 + max(depth(child) for child in children) if children else 0


def has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    return isinstance(value, list) and any(has_lone_surrogate(v) for v in value)


def strict_reading(raw: bytes) -> Any:
    """The reading decode must give: the json module's strict one, refusing what no reply can carry."""
    value = _stdlib_decode(raw)
    if has_lone_surrogate(value) or depth(value) > MAX_DEPTH:
        raise ValueError("not a value decode may return")
    return value


def same_reading(raw: bytes) -> None:
    """``decode`` gives the strict reading of ``raw``: the same value, or both raise ValueError."""
    try:
        expected = strict_reading(raw)
    except ValueError:
        with pytest.raises(ValueError):
            decode(raw)
        return
    got = decode(raw)
    # Compared as canonical text: it tells 1 from 1.0 and -0.0 from 0.0, which == does not.
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_body_in_any_detectable_encoding_decodes_to_the_same_message(encoding: str) -> None:
    assert decode(TEXT.encode(encoding)) == MESSAGE


def test_text_and_arrays_decode_too() -> None:
    assert decode(TEXT) == MESSAGE
    assert decode(b"[1, 2]") == [1, 2]


@pytest.mark.parametrize(
    "body",
    [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}', b'{"a": 1e400}', b"[-1E+309]", b"1" * 400 + b".0",
     b"{", b"\xff\xfe{", b"", b"[1,]", b'{"a":1} x', b"01", b'"\x01"', b"\x0c[]", b'"\\x"'],
)  # fmt: skip
def test_non_json_numbers_and_broken_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        decode(body)


EDGE_CASES = [
    b"1e308", b"-1e308", b"1.7976931348623157e308", b"1.7976931348623159e308", b"4.9e-324", b"1e-400",
    b"0.1000000000000000055511151231257827021181583404541015625", b"123456789012345678901234567890",
    b"-9223372036854775809", b"18446744073709551616", b"1" * 250, b"-0", b"-0.0", b"1.0", b"1E5", b"1e+05",
    b'"\\ud800"', b'"\\udc00\\ud800"', b'"\\ud83d\\ude00"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xe9"',
    b'{"a":1,"b":2,"a":3}', b" \t\r\n[ 1 , 2 ]\n", b"\xef\xbb\xbf{}", b'{"\\u0000":"\\/"}',
    b"[" * 199 + b"]" * 199, b"[" * 201 + b"]" * 201, b"[" * 3000 + b"]" * 3000, b"1.", b".5", b"+1",
    b"0x10", b"tru", b"null", b"true", b'"\\u00e9\\u2028"', b'"\x7f"',
]  # fmt: skip


@pytest.mark.parametrize("raw", EDGE_CASES)
def test_edge_cases_read_as_the_json_module_reads_them(raw: bytes) -> None:
    same_reading(raw)


@pytest.mark.parametrize(
    "raw",
    [b'"\\ud800"', b'{"\\udfff":1}', b'["ok","\\ude00\\ud83d"]', b'"\xed\xa0\x80"',
     '"\\ud800"'.encode("utf-16"), b'{"e":"0e000","s":"\\ud800"}'],
)  # fmt: skip
def test_lone_surrogates_are_refused_on_every_path(raw: bytes) -> None:
    # Escaped or as raw bytes, in keys or values, in UTF-16, and where the overflow scan sends
    # the text to the json module ("0e000"): no UTF-8 reply could quote them.
    with pytest.raises(ValueError):
        decode(raw)
    with pytest.raises(ValueError):
        decode(raw.decode("utf-8", "surrogatepass") if raw.isascii() else raw)


def test_surrogate_pairs_are_text() -> None:
    assert decode(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert decode(b'{"0e000":"\\ud83d\\ude00"}') == {"0e000": "\U0001f600"}


@pytest.mark.parametrize("overflow_shape", [b"", b',"0e000"'])
def test_nesting_past_the_limit_is_a_value_error_on_every_path(overflow_shape: bytes) -> None:
    def nested(levels: int) -> bytes:
        return b"[" * levels + b"1" + overflow_shape + b"]" * levels

    assert depth(decode(nested(MAX_DEPTH))) == MAX_DEPTH
    for levels in (MAX_DEPTH + 1, 990, 3000, 200_000):  # never RecursionError, whatever the depth
        with pytest.raises(ValueError):
            decode(nested(levels))
    with pytest.raises(ValueError):
        decode(b"\xef\xbb\xbf" + nested(MAX_DEPTH + 1))  # a BOM: read by the json module


def test_numbers_too_large_for_a_double_are_seen_whatever_their_spelling() -> None:
    for text in ["1e309", "1E+309", "0.5e310", "9" * 310, "1" * 300 + "e10", "-" + "9" * 400 + ".5"]:
        assert math.isinf(float(text)) and _may_overflow(text.encode()), text


@pytest.mark.slow  # a property over 400 examples
@settings(max_examples=400)
@given(st.text("0123456789", min_size=1, max_size=260), st.integers(0, 260), st.integers(-400, 400))
@example(digits="17976931348623159", point=1, exponent=308)
def test_every_overflowing_number_is_handed_to_the_json_module(digits: str, point: int, exponent: int) -> None:
    mantissa = digits.lstrip("0") or "0"
    point = min(point, len(mantissa))
    text = f"{mantissa[:point] or '0'}.{mantissa[point:] or '0'}e{exponent}"
    if math.isinf(float(text)):
        assert _may_overflow(text.encode())
    same_reading(text.encode())


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@pytest.mark.slow  # a property over 400 examples
@settings(max_examples=400)
@given(JSON_VALUES)
def test_any_json_value_is_written_as_the_json_module_writes_it_and_read_back(value: Any) -> None:
    try:
        expected = stdlib_bytes(value)
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text can hold it
        with pytest.raises(UnicodeEncodeError):
            encode(value)
        return
    written = encode(value)
    # Floats may differ in spelling only (2e-07 or 2e-7); everything else is byte for byte.
    assert written == expected or (_holds_float(value) and json.loads(written) == json.loads(expected))
    assert encode(value, finite=True) == written
    assert json.dumps(decode_finite(written), sort_keys=True) == json.dumps(value, sort_keys=True)
    same_reading(written)
    same_reading(expected)
    same_reading(json.dumps(value, indent=1).encode())  # ensure_ascii: escapes, surrogate pairs


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float(v) for v in value.values())
    return isinstance(value, list) and any(_holds_float(v) for v in value)


FRAGMENTS = st.sampled_from(
    ["{", "}", "[", "]", ",", ":", " ", "\t", "\n", "\x0c", '"a"', '"é"', '"\\ud800"', '"\\ude00"', '"\x01"',
     '"\\u00"', "0", "01", "-", "-0", "1.", ".5", "1e400", "1e-400", "1E+308", "2.5", "true", "nul", "NaN",
     "Infinity", "99999999999999999999", "\xff", "\xed\xa0\x80"]
)  # fmt: skip


@pytest.mark.slow  # a property over 600 examples
@settings(max_examples=600)
@given(st.lists(FRAGMENTS, max_size=12))
def test_any_text_of_json_fragments_reads_as_the_json_module_reads_it(fragments: list[str]) -> None:
    same_reading(_raw(fragments))


def _raw(fragments: list[str]) -> bytes:
    # "\xff" and the encoded surrogate stand for bytes that are not UTF-8 text.
    return b"".join(f.encode("latin-1") if f in ("\xff", "\xed\xa0\x80") else f.encode() for f in fragments)


def test_values_json_cannot_hold_as_utf8_fail_as_they_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        encode({"text": "\ud800"})
    assert encode({1: [2.5, None]}) == b'{"1":[2.5,null]}'
    assert encode([float("nan"), float("inf")]) == b"[NaN,Infinity]"
    assert encode({"big": 2**100}) == stdlib_bytes({"big": 2**100})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), {"d": [1, {"x": float("nan")}]}])
def test_finite_writing_refuses_what_json_cannot_hold(value: Any) -> None:
    with pytest.raises(ValueError):
        encode(value, finite=True)


def test_finite_writing_keeps_the_words_inside_strings() -> None:
    value = {"NaN": "Infinity", "note": "-Infinity and NaN"}
    assert encode(value, finite=True) == stdlib_bytes(value)


def test_finite_writing_spells_floats_as_plain_writing_does_when_the_words_are_in_strings() -> None:
    """Found by the property above: a key "Infinity" sent the float to the json module's spelling."""
    value = {"Infinity": 1e-05, "note": "NaN", "x": [2.5e-7]}
    assert encode(value, finite=True) == encode(value)
    assert decode(encode(value, finite=True)) == value
    with pytest.raises(ValueError):
        encode({"Infinity": float("inf")}, finite=True)


def lenient_matches_json_loads(raw: bytes) -> None:
    """``decode_lenient`` gives ``json.loads``'s value (NaN included), or raises what it raises
    (ValueError, or RecursionError for a text nested past the json module's stack)."""
    try:
        expected = json.loads(raw)
    except (ValueError, RecursionError) as refusal:
        with pytest.raises(type(refusal)):
            decode_lenient(raw)
        return
    # Canonical text tells 1 from 1.0 and -0.0 from 0.0; NaN is spelled NaN on both sides.
    assert json.dumps(decode_lenient(raw), sort_keys=True) == json.dumps(expected, sort_keys=True)


LENIENT_CASES = [
    b'{"a": NaN}', b'{"a": Infinity}', b"[-Infinity]", b"1e400", b"-1E+309", b"1" * 400 + b".0",
    b"1" * 1000, b"1" * 5000, b"\xef\xbb\xbf{}", '{"a":"é"}'.encode("utf-16"), b'"hello"', b"",
    b'{"a":1} x', b"01", b'"\x01"',
]  # fmt: skip


@pytest.mark.parametrize("raw", EDGE_CASES + LENIENT_CASES)
def test_lenient_reading_is_the_json_modules(raw: bytes) -> None:
    lenient_matches_json_loads(raw)


@pytest.mark.slow  # a property over 400 examples
@settings(max_examples=400)
@given(st.lists(FRAGMENTS, max_size=12))
def test_any_text_of_json_fragments_reads_leniently_as_json_loads_reads_it(fragments: list[str]) -> None:
    lenient_matches_json_loads(_raw(fragments))
