"""The client program the MCP conformance suite runs: ``python -m tests.client.conformance_client SERVER_URL``.

The suite starts a mock server per scenario, sets ``MCP_CONFORMANCE_SCENARIO`` (and maybe
``MCP_CONFORMANCE_CONTEXT``, JSON) and appends the server URL to the command line. Each scenario
below drives :class:`fastapi_mrtr.client.MrtrClient` the way the mock expects to be exercised;
the suite then grades what it saw on the wire. Exit status 0 = the client finished its script.

``auth/*`` scenarios put a mock authorization server in front of the mock MCP server: the client
gets an :class:`~fastapi_mrtr.client.auth.OAuthClientAuth`, whose authorization step follows the
authorization URL over HTTP (the mock approves at once and redirects with the code).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi_mrtr.client import (
    CreateMessageRequestParams,
    ElicitRequestParams,
    MrtrClient,
)
from fastapi_mrtr.client.auth import (
    ClientMetadata,
    OAuthClientAuth,
    OAuthClientInfo,
    follow_authorization_redirect,
)

Scenario = Callable[[MrtrClient, dict[str, Any]], Awaitable[None]]


def sample_value(prop: Any) -> Any:
    """A plausible value for one schema property (defaults first)."""
    if not isinstance(prop, dict):
        return "test"
    if "default" in prop:
        return prop["default"]
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    kind = prop.get("type")
    return {"boolean": True, "integer": 1, "number": 1, "array": [], "object": {}}.get(str(kind), "test")


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    return {key: sample_value(prop) for key, prop in props.items()}


def accept_elicitation(params: ElicitRequestParams) -> dict[str, Any]:
    if params.mode == "url":
        return {"action": "accept"}
    schema = params.requested_schema or {}
    return {"action": "accept", "content": sample_arguments(schema)}


def sample(params: CreateMessageRequestParams) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "conformance-client"}


def roots() -> dict[str, Any]:
    return {"roots": [{"uri": "file:///tmp/conformance", "name": "conformance"}]}


async def call_every_tool(client: MrtrClient, context: dict[str, Any]) -> None:
    for tool in await client.list_all_tools():
        await client.call_tool(tool.name, sample_arguments(tool.input_schema))


async def tools_call(client: MrtrClient, context: dict[str, Any]) -> None:
    tools = {tool.name for tool in await client.list_all_tools()}
    if "add_numbers" in tools:
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def request_metadata(client: MrtrClient, context: dict[str, Any]) -> None:
    await client.discover()
    await client.list_tools()


async def request_state(client: MrtrClient, context: dict[str, Any]) -> None:
    await client.list_all_tools()
    # The unrelated call runs while the echo flow is between rounds: it must carry no MRTR fields.
    await asyncio.gather(client.call_tool("test_mrtr_echo_state"), client.call_tool("test_mrtr_unrelated"))
    await client.call_tool("test_mrtr_no_state")
    await client.call_tool("test_mrtr_no_result_type")


async def standard_headers(client: MrtrClient, context: dict[str, Any]) -> None:
    await call_every_tool(client, context)
    for resource in (await client.list_resources()).resources:
        await client.read_resource(resource.uri)
    for prompt in (await client.list_prompts()).prompts:
        await client.get_prompt(prompt.name, {})


async def custom_headers(client: MrtrClient, context: dict[str, Any]) -> None:
    await client.list_all_tools()  # learns the x-mcp-header annotations
    for call in context.get("toolCalls", []):
        await client.call_tool(call["name"], call.get("arguments") or {})


async def schema_echo(client: MrtrClient, context: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_all_tools()}
    focal = tools["json_schema_2020_12_tool"]
    await client.call_tool("json_schema_echo", {"schema": focal.input_schema})  # verbatim, as listed


async def list_only(client: MrtrClient, context: dict[str, Any]) -> None:
    await client.list_all_tools()


async def initialize(client: MrtrClient, context: dict[str, Any]) -> None:
    await client.connect()  # the probe, then (a 2025-era mock) initialize and initialized
    await client.list_tools()


SCENARIOS: dict[str, Scenario] = {
    "tools_call": tools_call,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": call_every_tool,  # list_tools already dropped the invalid ones
    "json-schema-ref-no-deref": list_only,
    "initialize": initialize,  # 2025-11-25 only, like the two below
    # "elicitation-sep1034-client-defaults" and "sse-retry": call every tool (the default)
    "json-schema-2020-12-preservation": schema_echo,
}


# The client ID metadata document URL the suite's CIMD scenarios expect (never fetched by them).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"  # never contacted: the code is read off the redirect


def oauth(scenario: str, context: dict[str, Any]) -> OAuthClientAuth | None:
    """The auth for an ``auth/*`` scenario, configured from its context; ``None`` for the others."""
    if not scenario.startswith("auth/"):
        return None
    client_info = None
    if "client_id" in context:
        client_info = OAuthClientInfo(
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            private_key_pem=context.get("private_key_pem"),
            signing_alg=context.get("signing_algorithm"),
            issuer=context.get("issuer"),
        )
    if scenario.startswith("auth/client-credentials"):
        return OAuthClientAuth(grant="client_credentials", client_info=client_info)
    if "valid_jwt" in context:  # workload identity: the platform's JWT is the grant
        return OAuthClientAuth(grant="jwt_bearer", assertion=context["valid_jwt"], client_info=client_info)
    return OAuthClientAuth(
        authorization_handler=follow_authorization_redirect(),
        client_metadata=ClientMetadata(redirect_uris=[REDIRECT_URI], client_name="fastapi-mrtr conformance client"),
        client_info=client_info,
        client_metadata_url=CIMD_URL,
    )


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    async with MrtrClient(url, auth=oauth(scenario, context)) as client:
        client.set_elicitation_handler(accept_elicitation)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # sampling and roots still answer
            client.set_sampling_handler(sample)
            client.set_roots_handler(roots)
        await SCENARIOS.get(scenario, call_every_tool)(client, context)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv[-1])))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
