"""The public API: everything users import comes from ``fastapi_mrtr``, listed once in a sorted ``__all__``."""

import fastapi_mrtr
import fastapi_mrtr.client

CORE = {
    "MCP",
    "ServerOptions",
    "InputRequiredConfig",
    "Context",
    "ToolContext",
    "ElicitResult",
    "ElicitRequestParams",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "CallToolResult",
    "McpError",
    "mint_request_state",
    "verify_request_state",
    "make_input_request_for_elicitation",
    "make_input_request_for_sampling",
    "make_input_request_for_roots",
    "make_input_response_from_elicit_result",
    "make_input_response_from_create_message_result",
    "make_input_response_from_list_roots_result",
    "is_input_required_result",
    "extract_input_requests",
}


def isort_key(name: str) -> tuple[int, str]:
    # Constants and acronyms (ALL CAPS) first, then classes, then functions: ruff's RUF022 order.
    if name.isupper() or name.replace("_", "").isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_unique() -> None:
    names = list(fastapi_mrtr.__all__)
    assert names == sorted(names, key=isort_key)
    assert len(names) == len(set(names))


def test_every_exported_name_exists() -> None:
    for name in fastapi_mrtr.__all__:
        assert hasattr(fastapi_mrtr, name), name


def test_core_names_are_exported() -> None:
    assert set(fastapi_mrtr.__all__) >= CORE


def test_client_package_exports_are_sorted_and_exist() -> None:
    names = list(fastapi_mrtr.client.__all__)
    assert names == sorted(names, key=isort_key)
    for name in names:
        assert hasattr(fastapi_mrtr.client, name), name
