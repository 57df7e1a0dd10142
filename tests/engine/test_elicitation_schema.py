"""Every property of a form's ``requestedSchema`` is one a client can render.

``requested_schema_for`` turns a Pydantic model or a shorthand into a flat form. Each property it
makes must be a 2026-07-28 ``PrimitiveSchemaDefinition`` as the official SDK's wire models read it
(``mcp_types``), with no key those models lack, no ``"default": null`` (``Optional[X] = None``) and
no string format other than the four the spec names (clients refuse the whole request otherwise).
"""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Annotated, Any, Literal, Optional

import mcp_types._v2026_07_28 as wire
import pytest
from pydantic import AnyUrl, BaseModel, Field, SecretStr, TypeAdapter

from fastapi_mrtr.engine.elicitation_schema import requested_schema_for
from tests.interop.wire import property_issues

PRIMITIVE = TypeAdapter[Any](wire.PrimitiveSchemaDefinition)
SPEC_FORMATS = {"email", "uri", "date", "date-time"}
Email = Annotated[str, Field(json_schema_extra={"format": "email"})]  # EmailStr needs email-validator


class Colour(str, enum.Enum):
    red = "red"
    green = "green"


class Optionals(BaseModel):
    nickname: Optional[str] = None  # noqa: UP045 (the spelling under test)
    age: Optional[int] = None  # noqa: UP045
    height: float | None = None
    subscribed: bool | None = None
    colour: Colour | None = None
    side: Literal["left", "right"] | None = None
    note: str | None = Field(default=None, max_length=200, title="Note")


class Formats(BaseModel):
    email: Email
    website: AnyUrl
    birthday: datetime.date
    meeting: datetime.datetime
    lunch: datetime.time  # "time": not a spec format
    ticket: uuid.UUID  # "uuid": not a spec format
    secret: SecretStr  # "password": not a spec format
    backup_email: Email | None = None
    next_meeting: datetime.datetime | None = None
    reference: uuid.UUID | None = None


class Choices(BaseModel):
    colour: Colour = Colour.green
    side: Literal["left", "right"] = "right"
    tags: list[Literal["sci-fi", "fantasy"]] = Field(default_factory=list)
    genres: list[Literal["poetry", "drama"]] = ["drama"]
    colours: list[Colour] = []
    any_colour: Colour


class Bounds(BaseModel):
    name: str = Field(min_length=2, max_length=40)
    age: int = Field(ge=0, le=150, default=30)
    ratio: float = Field(ge=0, le=1, default=0.5)  # gt/lt on a float: refused (test_question_types)
    count: int = Field(default=1, ge=1)
    picks: list[Literal["a", "b", "c"]] = Field(default=["a"], min_length=1, max_length=2)


SHAPES: dict[str, Any] = {
    "Optionals": Optionals,
    "Formats": Formats,
    "Choices": Choices,
    "Bounds": Bounds,
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "Colour": Colour,
    "Literal": Literal["yes", "no"],
    "date": datetime.date,
    "UUID": uuid.UUID,
    "Optional[str]": Optional[str],  # noqa: UP045
    "Optional[Colour]": Optional[Colour],  # noqa: UP045
    "list[Literal]": list[Literal["a", "b"]],
    "list[Colour]": list[Colour],
}


def _properties() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (label, name, prop)
        for label, shape in SHAPES.items()
        for name, prop in requested_schema_for(shape)["properties"].items()
    ]


PROPERTIES = _properties()


@pytest.mark.parametrize(("shape", "name", "prop"), PROPERTIES, ids=[f"{s}.{n}" for s, n, _ in PROPERTIES])
def test_every_property_is_a_primitive_schema_definition(shape: str, name: str, prop: dict[str, Any]) -> None:
    PRIMITIVE.validate_python(prop, by_name=False)
    assert property_issues(prop, f"{shape}.{name}") == []  # no unknown key, a default among the choices
    assert "default" not in prop or prop["default"] is not None
    assert prop.get("format", "email") in SPEC_FORMATS


def test_an_optional_field_defaulting_to_none_has_no_default() -> None:
    properties = requested_schema_for(Optionals)["properties"]
    assert properties["nickname"] == {"type": "string", "title": "Nickname"}
    assert properties["age"] == {"type": "integer", "title": "Age"}
    assert properties["note"] == {"type": "string", "maxLength": 200, "title": "Note"}
    assert all("default" not in prop for prop in properties.values())
    assert "required" not in requested_schema_for(Optionals)  # Optional means "may be left empty"


def test_string_formats_outside_the_spec_are_left_out() -> None:
    properties = requested_schema_for(Formats)["properties"]
    kept = {name: prop.get("format") for name, prop in properties.items()}
    assert kept == {
        "email": "email",
        "website": "uri",
        "birthday": "date",
        "meeting": "date-time",
        "lunch": None,
        "ticket": None,
        "secret": None,
        "backup_email": "email",
        "next_meeting": "date-time",
        "reference": None,
    }
    assert all(prop["type"] == "string" for prop in properties.values())


def test_choices_are_string_enums_and_multi_selects() -> None:
    properties = requested_schema_for(Choices)["properties"]
    assert properties["colour"]["enum"] == ["red", "green"] and properties["colour"]["default"] == "green"
    assert properties["side"]["enum"] == ["left", "right"] and properties["side"]["default"] == "right"
    assert properties["tags"]["items"] == {"type": "string", "enum": ["sci-fi", "fantasy"]}
    assert properties["genres"]["default"] == ["drama"]
    assert properties["colours"]["items"] == {"type": "string", "enum": ["red", "green"]}  # no title in items
    assert requested_schema_for(Choices)["required"] == ["any_colour"]


def test_bounds_are_kept() -> None:
    properties = requested_schema_for(Bounds)["properties"]
    assert (properties["name"]["minLength"], properties["name"]["maxLength"]) == (2, 40)
    assert (properties["age"]["minimum"], properties["age"]["maximum"]) == (0, 150)
    assert properties["count"]["minimum"] == 1
    assert (properties["picks"]["minItems"], properties["picks"]["maxItems"]) == (1, 2)


@pytest.mark.parametrize(
    ("shorthand", "expected"),
    [
        (Optional[Colour], {"type": "string", "enum": ["red", "green"], "title": "Colour"}),  # noqa: UP045
        (list[Colour], {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}}),
        (uuid.UUID, {"type": "string"}),
    ],
)
def test_a_shorthand_resolves_its_definitions(shorthand: Any, expected: dict[str, Any]) -> None:
    """A shorthand's enum lives in ``$defs`` when it sits inside Optional or a list."""
    form = {"type": "object", "properties": {"value": expected}, "required": ["value"]}
    assert requested_schema_for(shorthand) == form
