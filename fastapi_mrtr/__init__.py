"""fastapi-mrtr: FastAPI path functions as MCP tools that can ``await ctx.elicit()``.

MCP 2026-07-28 multi round-trip requests (MRTR, SEP-2322) on stateless Streamable HTTP.
"""

from fastapi_mrtr.app import MCP
from fastapi_mrtr.config import InputRequiredConfig
from fastapi_mrtr.engine.context import ReplayDivergedError, ToolContext
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.features.completions import Completion
from fastapi_mrtr.features.resources import ResourceNotFoundError
from fastapi_mrtr.integration.dependency import Context, get_context
from fastapi_mrtr.state.replay_store import InMemoryReplayStore, ReplayStore
from fastapi_mrtr.state.sealing import (
    InvalidRequestState,
    StateBinding,
    StateClaims,
    StateKeyRing,
    mint_request_state,
    verify_request_state,
)
from fastapi_mrtr.wire.mrtr import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    InputRequests,
    InputRequiredResult,
    InputResponses,
    ListRootsResult,
    Root,
    SamplingMessage,
    extract_input_requests,
    is_input_required_result,
    make_input_request_for_elicitation,
    make_input_request_for_roots,
    make_input_request_for_sampling,
    make_input_response_from_create_message_result,
    make_input_response_from_elicit_result,
    make_input_response_from_list_roots_result,
)
from fastapi_mrtr.wire.protocol import (
    PROTOCOL_VERSION,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    McpError,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

__version__ = "0.1.0"

__all__ = [
    "MCP",
    "PROTOCOL_VERSION",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "Completion",
    "Context",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "InMemoryReplayStore",
    "InputRequest",
    "InputRequests",
    "InputRequiredConfig",
    "InputRequiredResult",
    "InputResponses",
    "InvalidRequestState",
    "ListRootsResult",
    "McpError",
    "PromptMessage",
    "ReadResourceResult",
    "ReplayDivergedError",
    "ReplayStore",
    "ResourceLink",
    "ResourceNotFoundError",
    "Root",
    "SamplingMessage",
    "ServerOptions",
    "StateBinding",
    "StateClaims",
    "StateKeyRing",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "ToolContext",
    "__version__",
    "extract_input_requests",
    "get_context",
    "is_input_required_result",
    "make_input_request_for_elicitation",
    "make_input_request_for_roots",
    "make_input_request_for_sampling",
    "make_input_response_from_create_message_result",
    "make_input_response_from_elicit_result",
    "make_input_response_from_list_roots_result",
    "mint_request_state",
    "verify_request_state",
]
