"""Which types a question may use: each the spec allows becomes a form, each it does not fails at the ask.

Every form sent is checked with the official SDK's 2026-07-28 models (``ElicitRequest`` and each
property as a ``PrimitiveSchemaDefinition``). A type no form can carry, or a constraint no
primitive schema can say, raises ``TypeError`` at the ``ctx.elicit(...)`` line itself (before
any ``await``), naming the type and what a form allows; before, it was sent anyway and every
answer was refused until ``max_rounds``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal

import httpx
import mcp_types._v2026_07_28 as wire
import pytest
from fastapi import FastAPI
from pydantic import AnyUrl, BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.context import ToolContext
from fastapi_mrtr.engine.elicitation_schema import requested_schema_for
from fastapi_mrtr.engine.ledger import ReplayLedger
from tests.support import rpc_body, rpc_headers

KEY = "question-types-key-0123456789abcdef0123"
PRIMITIVE = TypeAdapter[Any](wire.PrimitiveSchemaDefinition)
Email = Annotated[str, Field(json_schema_extra={"format": "email"})]
Titled = Annotated[
    str, Field(json_schema_extra={"oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]})
]


class Size(str, enum.Enum):
    small = "small"
    large = "large"


class Level(enum.IntEnum):
    low = 1
    high = 2


class Every(BaseModel):
    """One field of each kind the spec allows, with every constraint it can carry."""

    name: str = Field(min_length=2, max_length=40, title="Name", description="Your name")
    email: Email
    site: AnyUrl
    day: datetime.date
    when: datetime.datetime
    count: int = Field(gt=0, lt=10, default=1)
    age: int = Field(ge=18, le=120)
    ratio: float = Field(ge=0, le=1, default=0.5)
    ok: bool = True
    size: Size = Size.small
    side: Literal["left", "right"]
    titled: Titled = "s"
    tags: list[Literal["a", "b", "c"]] = Field(default=["a"], min_length=1, max_length=2)
    sizes: set[Size] = set()
    note: str | None = None


@dataclasses.dataclass
class Expense:
    amount: int
    reason: str


class Approval(TypedDict):
    approved: bool


def test_every_allowed_kind_and_constraint_is_sent() -> None:
    schema = requested_schema_for(Every)
    params = wire.ElicitRequestFormParams.model_validate({"message": "?", "mode": "form", "requestedSchema": schema})
    wire.ElicitRequest.model_validate({"method": "elicitation/create", "params": params.model_dump(by_alias=True)})
    props = schema["properties"]
    for prop in props.values():
        PRIMITIVE.validate_python(prop, by_name=False)
    assert props["name"] == {
        "type": "string",
        "title": "Name",
        "description": "Your name",
        "minLength": 2,
        "maxLength": 40,
    }
    assert props["email"]["format"] == "email" and props["site"]["format"] == "uri"
    assert props["day"]["format"] == "date" and props["when"]["format"] == "date-time"
    assert (props["count"]["minimum"], props["count"]["maximum"], props["count"]["default"]) == (1, 9, 1)
    assert (props["age"]["minimum"], props["age"]["maximum"]) == (18, 120)
    assert (props["ratio"]["minimum"], props["ratio"]["maximum"]) == (0, 1)
    assert props["ok"] == {"type": "boolean", "title": "Ok", "default": True}
    assert props["size"]["enum"] == ["small", "large"] and props["side"]["enum"] == ["left", "right"]
    assert props["titled"]["oneOf"] == [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]
    assert props["tags"] == {
        "type": "array",
        "title": "Tags",
        "items": {"type": "string", "enum": ["a", "b", "c"]},
        "default": ["a"],
        "minItems": 1,
        "maxItems": 2,
    }
    assert props["sizes"]["items"] == {"type": "string", "enum": ["small", "large"]}
    assert props["note"] == {"type": "string", "title": "Note"}
    assert "note" not in schema["required"] and "age" in schema["required"]


@pytest.mark.parametrize(
    ("shape", "value"),
    [
        pytest.param(str, {"type": "string"}, id="str"),
        pytest.param(int, {"type": "integer"}, id="int"),
        pytest.param(float, {"type": "number"}, id="float"),
        pytest.param(bool, {"type": "boolean"}, id="bool"),
        pytest.param(datetime.date, {"type": "string", "format": "date"}, id="date"),
        pytest.param(datetime.datetime, {"type": "string", "format": "date-time"}, id="datetime"),
        pytest.param(int | None, {"type": "integer"}, id="int-or-None"),
        pytest.param(Annotated[int, Field(gt=0)], {"type": "integer", "minimum": 1}, id="positive-int"),
        pytest.param(Literal["y", "n"], {"type": "string", "enum": ["y", "n"]}, id="Literal"),
        pytest.param(
            list[Size], {"type": "array", "items": {"type": "string", "enum": ["small", "large"]}}, id="multi"
        ),
    ],
)
def test_a_shorthand_is_one_field_named_value(shape: Any, value: dict[str, Any]) -> None:
    schema = requested_schema_for(shape)
    wire.ElicitRequestFormParams.model_validate({"message": "?", "requestedSchema": schema})
    assert schema == {"type": "object", "properties": {"value": value}, "required": ["value"]}


def test_a_dataclass_and_a_typed_dict_are_forms_of_their_fields() -> None:
    assert requested_schema_for(Expense)["properties"] == {
        "amount": {"type": "integer", "title": "Amount"},
        "reason": {"type": "string", "title": "Reason"},
    }
    assert requested_schema_for(Approval)["properties"] == {"approved": {"type": "boolean", "title": "Approved"}}


class Nested(BaseModel):
    expense: Every


class Strs(BaseModel):
    names: list[str]


class Pattern(BaseModel):
    code: str = Field(pattern=r"^[A-Z]{3}$")


class Multiple(BaseModel):
    step: int = Field(multiple_of=5)


class FloatGt(BaseModel):
    price: float = Field(gt=0)


class FloatLt(BaseModel):
    share: float = Field(lt=1)


class Union(BaseModel):
    either: int | str


class Levels(BaseModel):
    level: Level


@pytest.mark.parametrize(
    ("shape", "named", "why"),
    [
        pytest.param(list[str], "list[str]", "a list of free values", id="list-str"),
        pytest.param(Strs, "Strs", "field 'names' is a list of free values", id="model-list-str"),
        pytest.param(Nested, "Nested", "field 'expense' is a nested object", id="nested-model"),
        pytest.param(dict[str, str], "dict[str, str]", "nested object", id="dict"),
        pytest.param(Pattern, "Pattern", "field 'code': a regex pattern cannot be carried", id="pattern"),
        pytest.param(Multiple, "Multiple", "multiple_of cannot be carried", id="multiple-of"),
        pytest.param(FloatGt, "FloatGt", "an exclusive bound (gt) on a float", id="float-gt"),
        pytest.param(FloatLt, "FloatLt", "an exclusive bound (lt) on a float", id="float-lt"),
        pytest.param(Union, "Union", "field 'either' is a union", id="union"),
        pytest.param(Levels, "Levels", "the choices of a form are strings", id="int-enum"),
        pytest.param(Literal[1, 2], "Literal[1, 2]", "the choices of a form are strings", id="int-literal"),
        pytest.param(tuple[str, str], "tuple[str, str]", "a tuple is not a multi-select", id="tuple"),
        pytest.param(object, "object", "accepts any value", id="object"),
        pytest.param(type, "type", "Pydantic cannot describe it", id="type"),
    ],
)
def test_a_type_no_form_can_carry_is_a_type_error(shape: Any, named: str, why: str) -> None:
    with pytest.raises(TypeError) as raised:
        requested_schema_for(shape)
    message = str(raised.value)
    assert f"ctx.elicit: {named} cannot be asked as a form" in message, message
    assert why in message, message
    assert "a flat object" in message and "email, uri, date, date-time" in message  # what is allowed


def test_the_type_error_is_raised_at_the_ask_line_before_any_await() -> None:
    record = CallRecord(method="tools/call", target="t", arguments={}, client_capabilities={}, ledger=ReplayLedger())
    ctx = ToolContext(record, lambda: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match=r"list\[str\] cannot be asked as a form"):
        ctx.elicit("Which names?", list[str])  # not awaited: the line itself fails
    with pytest.raises(TypeError, match=r"FloatGt cannot be asked as a form"):
        ctx.elicit("Price?", FloatGt)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("shape", "answer", "expected"),
    [
        pytest.param(datetime.date, "2026-07-28", "2026-07-28", id="date"),
        pytest.param(int | None, 7, "7", id="int-or-None"),
        pytest.param(Expense, {"amount": 12, "reason": "taxi"}, "Expense(amount=12, reason='taxi')", id="dataclass"),
    ],
)
async def test_types_that_were_refused_forever_now_take_their_answer(shape: Any, answer: Any, expected: str) -> None:
    """Before, ``date``, ``int | None`` and a dataclass were sent as forms whose answers were never accepted."""
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="t", request_state_key=KEY))

    @mcp.tool()
    @app.post("/ask")
    async def ask(ctx: Context) -> dict[str, str]:
        got = await ctx.elicit("?", shape, key="q")
        return {"got": str(got.content)}

    app.mount("/mcp", mcp)
    content = answer if dataclasses.is_dataclass(shape) else {"value": answer}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        first = await http.post(
            "/mcp", json=rpc_body("tools/call", {"name": "ask"}), headers=rpc_headers("tools/call", "ask")
        )
        state = first.json()["result"]["requestState"]
        params = {
            "name": "ask",
            "requestState": state,
            "inputResponses": {"q": {"action": "accept", "content": content}},
        }
        second = await http.post(
            "/mcp", json=rpc_body("tools/call", params, request_id=2), headers=rpc_headers("tools/call", "ask")
        )
    result = second.json()["result"]
    assert result["resultType"] == "complete", result
    assert result["structuredContent"] == {"got": expected}
