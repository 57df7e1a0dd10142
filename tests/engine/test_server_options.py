"""The server's ``InputRequiredConfig``: its fields, its defaults, and the values it refuses."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from fastapi_mrtr import InputRequiredConfig, ServerOptions
from fastapi_mrtr.client import InputRequiredConfig as ClientInputRequiredConfig


def test_the_server_config_has_only_server_fields_and_these_defaults() -> None:
    config = InputRequiredConfig()
    assert dataclasses.asdict(config) == {
        "max_rounds": 10,
        "round_timeout": 300.0,
        "flow_timeout": 1800.0,
        "legacy_shim": True,
        "accept_unsolicited_answers": False,
    }


def test_the_server_config_is_frozen_and_keyword_only() -> None:
    config = InputRequiredConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_rounds = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        InputRequiredConfig(3)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_rounds", 0),
        ("max_rounds", -1),
        ("max_rounds", 2.5),
        ("max_rounds", True),
        ("max_rounds", "3"),
        ("round_timeout", -1),
        ("round_timeout", math.nan),
        ("round_timeout", math.inf),
        ("round_timeout", "60"),
        ("flow_timeout", -0.5),
        ("flow_timeout", math.nan),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be"):
        InputRequiredConfig(**{field: value})


def test_zero_timeouts_mean_no_limit_and_are_accepted() -> None:
    config = InputRequiredConfig(round_timeout=0, flow_timeout=0, max_rounds=1)
    assert (config.round_timeout, config.flow_timeout, config.max_rounds) == (0, 0, 1)


def test_round_timeout_is_the_only_state_expiry_setting() -> None:
    # request_state_ttl was a second, shorter expiry that silently capped round_timeout.
    assert "request_state_ttl" not in {f.name for f in dataclasses.fields(ServerOptions)}
    with pytest.raises(TypeError):
        ServerOptions(request_state_ttl=60)  # type: ignore[call-arg]


def test_the_server_refuses_the_clients_config() -> None:
    with pytest.raises(TypeError, match="input_required_config must be the server's"):
        ServerOptions(input_required_config=ClientInputRequiredConfig())  # type: ignore[arg-type]
