"""The client's ``InputRequiredConfig``: its fields, its defaults, and the values it refuses."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from fastapi_mrtr import InputRequiredConfig as ServerInputRequiredConfig
from fastapi_mrtr.client import ClientOptions, InputRequiredConfig


def test_the_client_config_has_only_client_fields_and_these_defaults() -> None:
    assert dataclasses.asdict(InputRequiredConfig()) == {
        "auto_fulfill": True,
        "max_rounds": 10,
        "round_timeout": 600.0,
        "max_total_timeout": 0.0,
    }


def test_the_client_config_is_frozen_and_keyword_only() -> None:
    config = InputRequiredConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.auto_fulfill = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        InputRequiredConfig(False)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_rounds", 0),
        ("max_rounds", -3),
        ("max_rounds", 1.5),
        ("max_rounds", False),
        ("round_timeout", -1),
        ("round_timeout", math.nan),
        ("round_timeout", math.inf),
        ("max_total_timeout", -0.1),
        ("max_total_timeout", math.inf),
        ("max_total_timeout", None),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be"):
        InputRequiredConfig(**{field: value})


def test_zero_timeouts_mean_no_limit_and_are_accepted() -> None:
    config = InputRequiredConfig(round_timeout=0, max_total_timeout=0, max_rounds=1)
    assert (config.round_timeout, config.max_total_timeout, config.max_rounds) == (0, 0, 1)


def test_the_client_refuses_the_servers_config() -> None:
    with pytest.raises(TypeError, match="input_required_config must be the client's"):
        ClientOptions(input_required_config=ServerInputRequiredConfig())  # type: ignore[arg-type]
