"""Property tests: any JSON object survives sealing; any one-character change or other binding fails."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastapi_mrtr.state import (
    InvalidRequestStateError,
    RequestStateSealer,
    StateBinding,
    StateKeyRing,
    arguments_digest,
)

# Module-level values, not fixtures: hypothesis refuses function-scoped fixtures.
SEALER = RequestStateSealer(StateKeyRing("property-test-secret-0123456789-abcdefghijklmnop"), ttl=600)
NOW = 1_800_000_000
BINDING = StateBinding("tools/call", "tool", arguments_digest({"q": 1}), "server", "user")
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
SETTINGS = settings(max_examples=200, deadline=None, database=None)
pytestmark = pytest.mark.slow  # 200 examples a property: seconds each

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=6)


def seal(data: dict[str, Any]) -> str:
    return SEALER.seal(data, BINDING, now=NOW)


def open_(token: str, binding: StateBinding = BINDING) -> dict[str, Any]:
    return SEALER.open(token, binding, now=NOW).data


@SETTINGS
@given(json_objects)
def test_seal_then_open_returns_the_data(data: dict[str, Any]) -> None:
    assert open_(seal(data)) == data


@SETTINGS
@given(json_objects, st.data())
def test_changing_any_single_body_character_is_refused(data: dict[str, Any], draw: st.DataObject) -> None:
    token = seal(data)
    index = draw.draw(st.integers(min_value=3, max_value=len(token) - 1), label="index")
    # Mostly alphabet characters (these reach the GCM check), sometimes anything at all.
    char = draw.draw(st.sampled_from(ALPHABET) | st.characters(), label="char")
    if char == token[index]:
        char = "A" if char != "A" else "B"
    with pytest.raises(InvalidRequestStateError):
        open_(token[:index] + char + token[index + 1 :])


binding_changes = st.one_of(
    st.text().filter(lambda v: v != BINDING.method).map(lambda v: {"method": v}),
    st.text().filter(lambda v: v != BINDING.target).map(lambda v: {"target": v}),
    json_objects.map(arguments_digest)
    .filter(lambda v: v != BINDING.arguments_digest)
    .map(lambda v: {"arguments_digest": v}),
    st.text().filter(lambda v: v != BINDING.audience).map(lambda v: {"audience": v}),
    (st.none() | st.text().filter(lambda v: v != BINDING.principal)).map(lambda v: {"principal": v}),
)


@SETTINGS
@given(json_objects, binding_changes)
def test_any_binding_change_is_refused(data: dict[str, Any], change: dict[str, Any]) -> None:
    other = replace(BINDING, **change)
    with pytest.raises(InvalidRequestStateError):
        open_(seal(data), binding=other)
