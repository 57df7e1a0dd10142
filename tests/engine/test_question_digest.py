"""The form-ask digest built from parts is the digest of the question as it travels.

``ctx.elicit(message, schema)`` digests its question from the message and the schema's canonical
JSON (made once per schema) instead of encoding the whole question on every ask. Answers are
matched to questions by this digest, also across releases (it is sealed in ``requestState``), so
it must equal ``input_request_digest`` of the wire params exactly.
"""

import enum
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from fastapi_mrtr.engine.input_requests import elicit_wire, form_input_request_digest
from fastapi_mrtr.engine.ledger import input_request_digest
from fastapi_mrtr.wire.mrtr import ELICITATION_CREATE


class Size(enum.Enum):
    small = "small"
    large = "large"


class Order(BaseModel):
    quantity: int = Field(ge=1, description="how many")
    size: Size = Size.small
    gift: bool | None = None
    note: str = "ünïcode ✓"


SCHEMAS = [bool, str, int, float, Size, Literal["a", "b"], Order]


@settings(max_examples=200, deadline=None)
@given(message=st.text(), schema=st.sampled_from(SCHEMAS))
def test_the_form_digest_equals_the_digest_of_the_wire_question(message: str, schema: object) -> None:
    wire = elicit_wire(message, schema)
    assert form_input_request_digest(message, schema) == input_request_digest(ELICITATION_CREATE, wire)


@pytest.mark.parametrize("message", ["", 'quote " and \\ backslash', "emoji 🎉 and \u2028", "\x00 nul"])
def test_awkward_messages_digest_alike(message: str) -> None:
    wire = elicit_wire(message, Order)
    assert form_input_request_digest(message, Order) == input_request_digest(ELICITATION_CREATE, wire)


def test_a_different_message_or_schema_is_a_different_question() -> None:
    assert form_input_request_digest("Confirm?", bool) != form_input_request_digest("Confirm!", bool)
    assert form_input_request_digest("Confirm?", bool) != form_input_request_digest("Confirm?", str)
