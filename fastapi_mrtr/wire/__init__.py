"""The MCP 2026-07-28 wire vocabulary shared by the server and the client: no FastAPI, no I/O.

For whoever works at the level of messages: a manual-mode tool building its own
``inputRequests``, a client answering them by hand, a test reading results. Models have
snake_case attributes and camelCase wire names; ``dump(model)`` gives the JSON object as it
travels. MRTR (SEP-2322) shapes: ``InputRequest`` (one entry of ``inputRequests``),
``InputRequests``/``InputResponses`` (the two maps), ``InputRequiredResult``, and the embedded
elicitation, sampling and roots requests and results. Helpers build an input request
(``make_input_request_for_*``) and the bare answer a client puts in ``inputResponses``
(``make_input_response_from_*``: no ``resultType``, no ``_meta``).
"""

from fastapi_mrtr.wire.errors import McpError
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
    Implementation,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    dump,
)

__all__ = [
    "PROTOCOL_VERSION",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "InputResponses",
    "ListRootsResult",
    "McpError",
    "PromptMessage",
    "ReadResourceResult",
    "ResourceLink",
    "Root",
    "SamplingMessage",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "dump",
    "make_input_request_for_elicitation",
    "make_input_request_for_roots",
    "make_input_request_for_sampling",
    "make_input_response_from_create_message_result",
    "make_input_response_from_elicit_result",
    "make_input_response_from_list_roots_result",
]
