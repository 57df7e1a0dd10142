"""The public API, pinned: each public module's ``__all__`` exactly, and the docs use nothing else.

Eight modules are public, one per audience: ``fastapi_mrtr`` (an app's author), ``fastapi_mrtr.auth``
(the endpoint as an OAuth resource server), ``fastapi_mrtr.wire``
(the wire vocabulary and MRTR helpers), ``fastapi_mrtr.state`` (sealing and replay stores),
``fastapi_mrtr.tasks`` (task stores, for one process or a store of your own),
``fastapi_mrtr.stdio`` (serving over stdin/stdout), ``fastapi_mrtr.client`` and
``fastapi_mrtr.client.auth``. Every other module is private: tests may
import it, the README, docs/ and the example app may not. Changing a list below is changing the
public API, on purpose.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent

EXPECTED: dict[str, list[str]] = {
    "fastapi_mrtr": [
        "MCP",
        "AudioContent",
        "BlobResourceContents",
        "CallToolResult",
        "Completion",
        "Context",
        "ElicitResult",
        "EmbeddedResource",
        "ImageContent",
        "InMemoryReplayStore",
        "InputRequiredConfig",
        "JsonRpcError",
        "PromptMessage",
        "ReplayDivergedError",
        "ReplayStore",
        "ResourceLink",
        "ResourceNotFoundError",
        "ServerOptions",
        "Telemetry",
        "TextContent",
        "TextResourceContents",
        "ToolAnnotations",
        "ToolContext",
        "__version__",
        "get_context",
    ],
    "fastapi_mrtr.auth": [
        "ASYMMETRIC_ALGORITHMS",
        "AccessToken",
        "IntrospectionVerifier",
        "InvalidTokenError",
        "JwtVerifier",
        "OAuthResourceServer",
        "TokenVerifier",
    ],
    "fastapi_mrtr.wire": [
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
    ],
    "fastapi_mrtr.state": [
        "InMemoryReplayStore",
        "InvalidRequestStateError",
        "RedisRelay",
        "RedisReplayStore",
        "ReplayStore",
        "RequestStateSealer",
        "RequestStateTooLargeError",
        "StateBinding",
        "StateClaims",
        "StateKeyRing",
        "arguments_digest",
    ],
    "fastapi_mrtr.tasks": ["InMemoryTaskStore", "RedisTaskStore", "TaskConfig", "TaskRecord", "TaskStore"],
    "fastapi_mrtr.stdio": ["AUTHORIZATION_ENV", "serve_stdio", "serve_stdio_async"],
    "fastapi_mrtr.client": [
        "ClientOptions",
        "CreateMessageRequestParams",
        "CreateMessageResult",
        "ElicitRequestParams",
        "ElicitResult",
        "ElicitationHandler",
        "FlowTimeoutError",
        "Implementation",
        "InputRequestInfo",
        "InputRequiredConfig",
        "InputRequiredResult",
        "InputRequiredTimeoutError",
        "InvalidServerResponseError",
        "InvalidStructuredContentError",
        "InvalidToolHeadersError",
        "ListRootsResult",
        "MaxRoundsExceededError",
        "McpError",
        "McpServerError",
        "MrtrClient",
        "MrtrClientError",
        "NotificationCallback",
        "ProgressCallback",
        "ProgressNotification",
        "Root",
        "RootsHandler",
        "RoundTimeoutError",
        "SamplingHandler",
        "StatusCodeError",
        "StdioServer",
        "StdioServerError",
        "StreamClosedError",
        "TaskCancelledError",
        "TaskFailedError",
        "TaskInfo",
        "TaskInputRequiredError",
        "TaskOptions",
        "TaskStatusCallback",
        "TaskTimeoutError",
        "ToolTask",
        "current_input_request",
    ],
    "fastapi_mrtr.client.auth": [
        "AssertionProvider",
        "AuthorizationHandler",
        "AuthorizationServerMetadata",
        "BearerChallenge",
        "ClientMetadata",
        "Discovery",
        "Grant",
        "InMemoryTokenStore",
        "LoopbackSignIn",
        "OAuthAuthorizationError",
        "OAuthClientAuth",
        "OAuthClientInfo",
        "OAuthDiscoveryError",
        "OAuthError",
        "OAuthRegistrationError",
        "OAuthToken",
        "OAuthTokenError",
        "ProtectedResourceMetadata",
        "TokenStore",
        "bearer_challenge",
        "follow_authorization_redirect",
    ],
}
PUBLIC = sorted(EXPECTED)

# Where users read: every Python block of these, and the example app's modules.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = sorted((ROOT / "example_app").glob("*.py"))
PYTHON_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?:python|py)\s*$")
IMPORT_LINE = re.compile(r"^\s*(from\s+\S+\s+)?import\s+[^()]+$")
SIGNATURE_MARKER = re.compile(r"^\s*<!--\s*snippet\s+signature:")
MODULE_PATH = re.compile(r"\bfastapi_mrtr(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def module(name: str) -> ModuleType:
    return importlib.import_module(name)


def isort_key(name: str) -> tuple[int, str]:
    # Constants and acronyms (ALL CAPS) first, then classes, then the rest: ruff's RUF022 order.
    if name.replace("_", "").isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_exactly_the_expected_names(name: str) -> None:
    assert list(module(name).__all__) == EXPECTED[name]


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_sorted_unique_and_every_name_exists(name: str) -> None:
    names = list(module(name).__all__)
    assert names == sorted(names, key=isort_key)
    assert len(names) == len(set(names))
    missing = [n for n in names if not hasattr(module(name), n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_the_facade_is_small() -> None:
    # An app's author reads this list; it grows only for something every app may need.
    assert len(EXPECTED["fastapi_mrtr"]) <= 25


def test_nonce_choosing_sealing_functions_are_not_public() -> None:
    # A nonce reused under one AES-GCM key breaks the seal: only the sealer chooses nonces.
    for name in PUBLIC:
        public = module(name).__all__
        assert not {"mint_request_state", "verify_request_state"} & set(public), name
    assert "nonce" not in module("fastapi_mrtr.state").RequestStateSealer.seal.__code__.co_varnames


def test_no_client_alias() -> None:
    assert not hasattr(module("fastapi_mrtr.client"), "Client")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the opening fence, source) of each Python block of a Markdown file, but signatures
    (a ``<!-- snippet signature: ... -->`` marker above the fence), which are not Python."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        opening = PYTHON_FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["indent"] + "```"
        end = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == fence)
        indent = len(opening["indent"])
        if not (i > 0 and SIGNATURE_MARKER.match(lines[i - 1])):
            blocks.append((i + 1, "\n".join(line[indent:] for line in lines[i + 1 : end])))
        i = end + 1
    return blocks


def user_code() -> list[tuple[str, int, str]]:
    """(file, line before the code, source) of every piece of Python that users read."""
    code = [(path.name, line, source) for path in DOCS for line, source in python_blocks(path)]
    code += [(f"example_app/{path.name}", 0, path.read_text(encoding="utf-8")) for path in EXAMPLES]
    return code


def parsed(source: str) -> ast.Module:
    """The block as Python; a block that is not (a call's signature, marked not-run) keeps its
    one-line import statements, which are what is checked."""
    try:
        return ast.parse(source)
    except SyntaxError:
        imports = [line.strip() for line in source.splitlines() if IMPORT_LINE.match(line)]
        return ast.parse("\n".join(imports))


def private_imports(file: str, source: str, offset: int = 0) -> list[str]:
    problems = []
    for node in ast.walk(parsed(source)):
        where = f"{file}:{offset + getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastapi_mrtr"):
            assert node.module is not None
            if node.module not in EXPECTED:
                problems.append(f"{where}: from {node.module} (a private module)")
                continue
            problems += [
                f"{where}: {a.name} is not in {node.module}.__all__"
                for a in node.names
                if a.name not in EXPECTED[node.module]
            ]
        elif isinstance(node, ast.Import):
            problems += [
                f"{where}: import {a.name} (a private module)"
                for a in node.names
                if a.name.startswith("fastapi_mrtr") and a.name not in EXPECTED
            ]
    return problems


def test_user_code_is_found() -> None:
    code = user_code()
    assert len(code) > 30 and any("example_app" in file for file, _, _ in code)


def test_docs_and_the_example_app_import_only_public_names() -> None:
    problems = [problem for file, line, source in user_code() for problem in private_imports(file, source, line)]
    assert not problems, "\n".join(problems)


def test_the_import_check_catches_private_names() -> None:
    source = "from fastapi_mrtr.engine.context import ToolContext\nfrom fastapi_mrtr import StateKeyRing\n"
    assert len(private_imports("x", source)) == 2
    assert private_imports("x", "from fastapi_mrtr.state import StateKeyRing\n") == []
    not_python = "MrtrClient(\n    url: str,\n)\nfrom fastapi_mrtr.wire.mrtr import Root\n"
    assert private_imports("x", not_python) == ["x:1: from fastapi_mrtr.wire.mrtr (a private module)"]


def is_public_path(dotted: str) -> bool:
    """A public module, or a public module's name followed by anything (``fastapi_mrtr.MCP.tool``)."""
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        if prefix in EXPECTED:
            return length == len(parts) or parts[length] in EXPECTED[prefix]
    return False


def dotted_paths_problem(text: str) -> list[str]:
    """Each ``fastapi_mrtr.x.y`` that is neither a public module nor a public name of one."""
    return [found for found in MODULE_PATH.findall(text) if not is_public_path(found)]


def test_docs_name_no_private_module() -> None:
    problems = [
        f"{path.name}: {found}"
        for path in [*DOCS, *EXAMPLES]
        for found in dotted_paths_problem(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)


def test_the_path_check_catches_private_modules() -> None:
    assert dotted_paths_problem("see fastapi_mrtr.engine.context and fastapi_mrtr.wire.protocol.dump") == [
        "fastapi_mrtr.engine.context",
        "fastapi_mrtr.wire.protocol.dump",
    ]
    assert dotted_paths_problem("python -m fastapi_mrtr.client; fastapi_mrtr.wire.dump(model)") == []
    assert dotted_paths_problem("@fastapi_mrtr.MCP.tool() and fastapi_mrtr.state.sealing") == [
        "fastapi_mrtr.state.sealing"
    ]
