"""The MCP conformance suite's fixture server ("everything server"), built with fastapi-mrtr.

Written only with the package's public API, as a user would: tools are FastAPI path functions
under ``@mcp.tool()``, prompts and resources are plain functions, and every MRTR fixture asks its
questions with ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` (the replay API).

    python tests/conformance/everything_server.py --port 8000    # serves http://127.0.0.1:8000/mcp

The sealing key comes from ``MRTR_STATE_KEY`` when it is set (the library reads it itself).
Fixture names and texts follow the suite's scenario descriptions (docs/conformance.md).

One server serves both eras on one endpoint: the 2026-07-28 scenarios (MRTR: a question travels in
the result) and the 2025-11-25 ones (an ``initialize`` session: the same ``ctx.elicit`` goes out as
a request on the call's stream). No tool looks at the era; the tools only the 2025-11-25 scenarios
call are in ``_session_era_tools``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import struct
import wave
import zlib
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import Body, FastAPI, HTTPException, Query, Response
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field, WithJsonSchema

from fastapi_mrtr import (
    MCP,
    CallToolResult,
    Context,
    EmbeddedResource,
    ImageContent,
    InputRequiredConfig,
    JsonRpcError,
    PromptMessage,
    ServerOptions,
    TaskConfig,
    TextContent,
    TextResourceContents,
    ToolContext,
    __version__,
)

SERVER_NAME = "fastapi-mrtr-everything-server"
CITY_SUGGESTIONS = ("paris", "park", "party")


# --- media ----------------------------------------------------------------------------------------


def _png(width: int = 2, height: int = 2) -> bytes:
    """A tiny opaque red RGB PNG, built from its chunks."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _wav(samples: int = 800, rate: int = 8000) -> bytes:
    """A tenth of a second of 8-bit mono silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(b"\x80" * samples)
    return buffer.getvalue()


PNG = _png()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
WAV = _wav()


# --- elicitation forms ----------------------------------------------------------------------------


class NameForm(BaseModel):
    name: str


class ColorForm(BaseModel):
    color: str


class ConfirmForm(BaseModel):
    ok: bool


class DeleteForm(BaseModel):
    confirm: bool


class ContextForm(BaseModel):
    context: str


class Address(BaseModel):
    street: str | None = None
    city: str | None = None


class Contact(BaseModel):
    name: str | None = None
    address: Address | None = None
    contactMethod: str | None = None
    phone: str | None = None
    email: str | None = None


class UserInfoForm(BaseModel):
    """tools-call-elicitation's form: both fields required."""

    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class DefaultsForm(BaseModel):
    """elicitation-sep1034-defaults: one default of each primitive type (SEP-1034)."""

    name: str = Field("John Doe", description="User name")
    age: int = Field(30, description="User age")
    score: float = Field(95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field("active", description="User status")
    verified: bool = Field(True, description="Verification status")


def _titled(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


TITLED_SINGLE = (("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option"))
TITLED_MULTI = (("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice"))
LEGACY_NAMES = ["Option One", "Option Two", "Option Three"]


class EnumForm(BaseModel):
    """elicitation-sep1330-enums: the five enum forms of SEP-1330.

    Each field validates as a ``Literal`` (or a list of one); ``WithJsonSchema`` only changes how
    the titled and legacy forms are drawn (``oneOf`` / ``enumNames`` / ``items.anyOf``), which
    Pydantic does not produce from a ``Literal`` by itself.
    """

    untitledSingle: Literal["option1", "option2", "option3"] = Field(title="Untitled single-select")
    titledSingle: Annotated[
        Literal["value1", "value2", "value3"],
        WithJsonSchema({"type": "string", "oneOf": _titled(TITLED_SINGLE)}),
    ] = Field(title="Titled single-select")
    legacyEnum: Annotated[
        Literal["opt1", "opt2", "opt3"],
        WithJsonSchema({"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": LEGACY_NAMES}),
    ] = Field(title="Legacy titled enum")
    untitledMulti: list[Literal["option1", "option2", "option3"]] = Field(title="Untitled multi-select")
    titledMulti: Annotated[
        list[Literal["value1", "value2", "value3"]],
        WithJsonSchema({"type": "array", "items": {"anyOf": _titled(TITLED_MULTI)}}),
    ] = Field(title="Titled multi-select")


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def create_app() -> FastAPI:
    app = FastAPI(title=SERVER_NAME)
    mcp = MCP(
        app,
        options=ServerOptions(
            name=SERVER_NAME,
            version=__version__,
            # The suite sends some answers on a first round, without any requestState (the
            # "ignore-extra-params" and "missing-input-response" scenarios); take them.
            input_required_config=InputRequiredConfig(accept_unsolicited_answers=True),
            # SEP-1699 polling (server-sse-polling): a 2025-era call still running after half a
            # second has its stream closed, and the client resumes it with GET + Last-Event-ID.
            # test_reconnection runs longer than that; every other tool ends well before.
            legacy_sse_close_after=0.5,
        ),
    )
    _tools(app, mcp)
    _mrtr_tools(app, mcp)
    _session_era_tools(app, mcp)
    _task_tools(app, mcp)
    _prompts(mcp)
    _resources(mcp)
    app.mount("/mcp", mcp)
    return app


# --- tools ----------------------------------------------------------------------------------------


def _tools(app: FastAPI, mcp: MCP) -> None:  # noqa: C901 (its nested routes count: one app, many small tools)
    @mcp.tool()
    @app.get("/tools/simple-text", response_class=PlainTextResponse)
    async def test_simple_text() -> str:
        """Returns a simple text response."""
        return "This is a simple text response for testing."

    @mcp.tool()
    @app.get("/tools/image")
    async def test_image_content() -> Response:
        """Returns a small PNG image."""
        return Response(content=PNG, media_type="image/png")

    @mcp.tool()
    @app.get("/tools/audio")
    async def test_audio_content() -> Response:
        """Returns a short WAV clip."""
        return Response(content=WAV, media_type="audio/wav")

    @mcp.tool()
    @app.get("/tools/embedded-resource")
    async def test_embedded_resource() -> CallToolResult:
        """Returns an embedded text resource."""
        resource = TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return CallToolResult(content=[EmbeddedResource(resource=resource)])

    @mcp.tool()
    @app.get("/tools/mixed-content")
    async def test_multiple_content_types() -> CallToolResult:
        """Returns text, an image and an embedded resource together."""
        resource = TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
        )
        return CallToolResult(
            content=[
                TextContent(text="Multiple content types test:"),
                ImageContent(data=PNG_B64, mime_type="image/png"),
                EmbeddedResource(resource=resource),
            ]
        )

    @mcp.tool()
    @app.post("/tools/error")
    async def test_error_handling() -> None:
        """Always fails, to show a tool error."""
        raise HTTPException(status_code=500, detail="This tool intentionally returns an error for testing")

    @mcp.tool()
    @app.post("/tools/progress", response_class=PlainTextResponse)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100 (when the call carries a progressToken)."""
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100, message=f"{done}% done")
            if done < 100:
                await asyncio.sleep(0.05)
        return "Progress test completed"

    @mcp.tool()
    @app.post("/tools/logging", response_class=PlainTextResponse)
    async def test_logging_tool(ctx: Context) -> str:
        """Logs three info messages (sent only when the call's _meta sets a logLevel)."""
        for text in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.log("info", text, logger_name="everything-server")
        return "Logging test completed"

    @mcp.tool()
    @app.post("/tools/missing-capability", response_class=PlainTextResponse)
    async def test_missing_capability(ctx: Context) -> str:
        """Needs sampling: without the client capability the call is refused with -32021."""
        reply = await ctx.sample("Say hello.", max_tokens=20, key="hello")
        return f"The model said: {_text_of(reply.content)}"

    @mcp.tool()
    @app.post("/tools/streaming-elicitation", response_class=PlainTextResponse)
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Asks for a name; the question travels in the result (MRTR), never as a request on the stream."""
        answer = await ctx.elicit("What is your name?", NameForm, key="user_name")
        return f"Hello, {answer.content.name}!" if answer.content else "No name given."

    @mcp.tool()
    @app.post("/tools/trigger-tool-change", response_class=PlainTextResponse)
    async def test_trigger_tool_change() -> str:
        """Announces a tool list change to subscribed clients."""
        mcp.notify_tools_changed()
        return "Tool list change notified"

    @mcp.tool()
    @app.post("/tools/trigger-prompt-change", response_class=PlainTextResponse)
    async def test_trigger_prompt_change() -> str:
        """Announces a prompt list change to subscribed clients."""
        mcp.notify_prompts_changed()
        return "Prompt list change notified"

    @mcp.tool(input_schema=JSON_SCHEMA_2020_12)
    @app.post("/tools/json-schema-2020-12", response_class=PlainTextResponse)
    async def json_schema_2020_12_tool(contact: Annotated[Contact, Body()]) -> str:
        """Takes a contact described with JSON Schema 2020-12 keywords."""
        return f"Contact {contact.name or '(unnamed)'} recorded"

    @mcp.tool()
    @app.get("/tools/x-mcp-header", response_class=PlainTextResponse)
    async def test_x_mcp_header(
        region: Annotated[str, Query(description="Routing region", json_schema_extra={"x-mcp-header": "Region"})],
    ) -> str:
        """Echoes its region, which clients mirror into the Mcp-Param-Region header."""
        return f"Region: {region}"


def _mrtr_tools(app: FastAPI, mcp: MCP) -> None:
    @mcp.tool()
    @app.post("/mrtr/elicitation", response_class=PlainTextResponse)
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks the user for their name (elicitation)."""
        answer = await ctx.elicit("What is your name?", NameForm, key="user_name")
        if answer.content is None:
            return f"No name given ({answer.action})."
        return f"Hello, {answer.content.name}!"

    @mcp.tool()
    @app.post("/mrtr/sampling", response_class=PlainTextResponse)
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's model a question (sampling)."""
        reply = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
        return f"The model answered: {_text_of(reply.content)}"

    @mcp.tool()
    @app.post("/mrtr/list-roots", response_class=PlainTextResponse)
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Asks the client for its roots."""
        roots = await ctx.list_roots(key="client_roots")
        return "Roots: " + (", ".join(root.uri for root in roots.roots) or "(none)")

    @mcp.tool()
    @app.post("/mrtr/request-state", response_class=PlainTextResponse)
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Asks for a confirmation; the flow's state travels sealed in requestState."""
        answer = await ctx.elicit("Please confirm to continue.", ConfirmForm, key="confirm")
        confirmed = answer.content is not None and answer.content.ok
        return "state-ok: confirmed" if confirmed else "state-ok: not confirmed"

    @mcp.tool()
    @app.post("/mrtr/multiple-inputs", response_class=PlainTextResponse)
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Asks for a name, a model greeting and the roots in one round."""
        name, greeting, roots = await ctx.gather(
            ctx.elicit("What is your name?", NameForm, key="user_name"),
            ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
            ctx.list_roots(key="client_roots"),
        )
        who = name.content.name if name.content else "stranger"
        return f"{_text_of(greeting.content)} {who} ({len(roots.roots)} roots)"

    @mcp.tool()
    @app.post("/mrtr/multi-round", response_class=PlainTextResponse)
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Asks two questions in two rounds: a name, then a favourite colour."""
        name = await ctx.elicit("What is your name?", NameForm, key="step1")
        color = await ctx.elicit("What is your favorite color?", ColorForm, key="step2")
        who = name.content.name if name.content else "stranger"
        likes = color.content.color if color.content else "no colour"
        return f"{who} likes {likes}."

    @mcp.tool()
    @app.post("/mrtr/tampered-state", response_class=PlainTextResponse)
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Asks for a confirmation; a tampered requestState is refused with an error."""
        answer = await ctx.elicit("Please confirm to continue.", ConfirmForm, key="confirm")
        return "Confirmed." if answer.content is not None and answer.content.ok else "Not confirmed."

    @mcp.tool()
    @app.post("/mrtr/capabilities", response_class=PlainTextResponse)
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks the user when the client can elicit, and falls back to its model otherwise."""
        if ctx.supports("elicitation"):
            answer = await ctx.elicit("What is your name?", NameForm, key="user_name")
            return f"Hello, {answer.content.name}!" if answer.content else "No name given."
        reply = await ctx.sample("Suggest a name for a new user.", max_tokens=20, key="suggested_name")
        return f"Hello, {_text_of(reply.content)}!"


def _task_tools(app: FastAPI, mcp: MCP) -> None:
    """The tasks scenarios' tools (SEP-2663). A call still running after ``promote_after`` becomes a
    task for a client that declared the extension; ``promote_after=0`` makes every such call a task
    at once (the tools that must park in input_required, or end failed, inside a task)."""
    quick = TaskConfig(promote_after=0.2, ttl_ms=600_000, poll_interval_ms=200)
    eager = TaskConfig(promote_after=0, ttl_ms=600_000, poll_interval_ms=200)

    @mcp.tool()
    @app.post("/tasks/greet", response_class=PlainTextResponse)
    async def greet(name: Annotated[str, Body(embed=True)]) -> str:
        """Greets at once: never a task."""
        return f"Hello, {name}!"

    @mcp.tool(task=quick)
    @app.post("/tasks/slow-compute", response_class=PlainTextResponse)
    async def slow_compute(
        ctx: Context, seconds: Annotated[float, Body(ge=0, le=600)] = 1, label: Annotated[str, Body()] = "job"
    ) -> str:
        """Computes for ``seconds``, reporting progress; a task when it takes longer than 0.2 s."""
        elapsed = 0.0
        while elapsed < seconds:
            step = min(0.2, seconds - elapsed)
            await asyncio.sleep(step)  # a cancelled task stops here
            elapsed += step
            await ctx.report_progress(elapsed, seconds, f"{label}: {elapsed:.1f}/{seconds:g} s")
        return f"{label} computed in {seconds:g} s"

    @mcp.tool(task=TaskConfig(mode="required", promote_after=0.2, ttl_ms=600_000, poll_interval_ms=200))
    @app.post("/tasks/failing-job", response_class=PlainTextResponse)
    async def failing_job() -> str:
        """Fails after about a second with a tool error (the task ends completed, isError)."""
        await asyncio.sleep(1)
        raise HTTPException(status_code=500, detail="The job failed: the input could not be processed")

    @mcp.tool(task=eager)
    @app.post("/tasks/protocol-error-job", response_class=PlainTextResponse)
    async def protocol_error_job() -> str:
        """Fails with a JSON-RPC error (the task ends failed)."""
        await asyncio.sleep(0.2)
        raise JsonRpcError("The job hit an internal protocol error")

    @mcp.tool(task=eager)
    @app.post("/tasks/confirm-delete", response_class=PlainTextResponse)
    async def confirm_delete(ctx: Context, filename: Annotated[str, Body(embed=True)]) -> str:
        """Asks for a confirmation inside the task, then deletes (pretends to)."""
        answer = await ctx.elicit(f"Delete {filename}?", DeleteForm, key="confirm")
        if answer.content is not None and answer.content.confirm:
            return f"Deleted {filename}."
        return f"Kept {filename}."

    @mcp.tool(task=eager)
    @app.post("/tasks/multi-input", response_class=PlainTextResponse)
    async def multi_input(ctx: Context) -> str:
        """Asks two questions at once inside the task."""
        name, confirm = await ctx.gather(
            ctx.elicit("What is your name?", NameForm, key="name"),
            ctx.elicit("Confirm to go on?", DeleteForm, key="confirm"),
        )
        who = name.content.name if name.content else "stranger"
        sure = bool(confirm.content and confirm.content.confirm)
        return f"{who} {'confirmed' if sure else 'did not confirm'}."

    @mcp.tool(task=TaskConfig(mode="required", promote_after=0.3, ttl_ms=600_000, poll_interval_ms=200))
    @app.post("/tasks/with-task", response_class=PlainTextResponse)
    async def test_tool_with_task(ctx: Context) -> str:
        """Asks for a name before the task exists (MRTR), then works long enough to become a task."""
        answer = await ctx.elicit("What is your name?", NameForm, key="user_name")
        who = answer.content.name if answer.content else "stranger"
        await asyncio.sleep(1)
        return f"Hello, {who}! Your task is done."


def _session_era_tools(app: FastAPI, mcp: MCP) -> None:
    """The tools only the 2025-11-25 scenarios call; written like any other tool, era-blind."""

    @mcp.tool()
    @app.post("/session/logging", response_class=PlainTextResponse)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Logs three info messages, about 50 ms apart (sent at the level the client set)."""
        texts = ("Tool execution started", "Tool processing data", "Tool execution completed")
        for index, text in enumerate(texts):
            if index:
                await asyncio.sleep(0.05)
            await ctx.log("info", text, logger_name="everything-server")
        return "Logging test completed: 3 messages sent"

    @mcp.tool()
    @app.post("/session/sampling", response_class=PlainTextResponse)
    async def test_sampling(
        prompt: Annotated[str, Body(embed=True, description="The prompt to send to the LLM")], ctx: Context
    ) -> str:
        """Asks the client's model to answer the prompt (sampling/createMessage, maxTokens 100)."""
        reply = await ctx.sample(prompt, max_tokens=100, key="llm_reply")
        return f"LLM response: {_text_of(reply.content)}"

    @mcp.tool()
    @app.post("/session/elicitation", response_class=PlainTextResponse)
    async def test_elicitation(
        message: Annotated[str, Body(embed=True, description="The message to show the user")], ctx: Context
    ) -> str:
        """Asks the user for a username and an email address, with the given message."""
        answer = await ctx.elicit(message, UserInfoForm, key="user_info")
        return f"User response: {_answer_text(answer.action, answer.content)}"

    @mcp.tool()
    @app.post("/session/elicitation-defaults", response_class=PlainTextResponse)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks for a form whose every field has a default (string, integer, number, enum, boolean)."""
        message = "Please review and update the form fields with defaults"
        answer = await ctx.elicit(message, DefaultsForm, key="defaults")
        return f"Elicitation completed: {_answer_text(answer.action, answer.content)}"

    @mcp.tool()
    @app.post("/session/elicitation-enums", response_class=PlainTextResponse)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks for a form with the five enum forms: untitled, titled and legacy single, untitled and titled multi."""
        answer = await ctx.elicit("Please select options from the enum fields", EnumForm, key="enums")
        return f"Elicitation completed: {_answer_text(answer.action, answer.content)}"

    @mcp.tool()
    @app.post("/session/reconnection", response_class=PlainTextResponse)
    async def test_reconnection() -> str:
        """Runs past the server's legacy_sse_close_after, so a 2025-era client resumes its stream (SEP-1699)."""
        await asyncio.sleep(1.5)
        return "Reconnection test completed successfully"


def _answer_text(action: str, content: BaseModel | None) -> str:
    shown = json.dumps(content.model_dump(mode="json")) if content is not None else "{}"
    return f"action={action}, content={shown}"


def _text_of(content: Any) -> str:
    texts: list[str] = []
    for block in content if isinstance(content, list) else [content]:
        text = block.get("text") if isinstance(block, dict) else getattr(block, "text", None)
        if isinstance(text, str):
            texts.append(text)
    return " ".join(texts) or "(no text)"


# --- prompts --------------------------------------------------------------------------------------


def _prompts(mcp: MCP) -> None:
    @mcp.prompt()
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @mcp.prompt()
    def test_prompt_with_arguments(
        arg1: Annotated[str, Field(description="First test argument")],
        arg2: Annotated[str, Field(description="Second test argument")],
    ) -> str:
        """A prompt with two required arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @mcp.prompt()
    def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
    ) -> list[PromptMessage | str]:
        """A prompt that embeds a resource."""
        resource = TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            PromptMessage(role="user", content=EmbeddedResource(resource=resource)),
            "Please process the embedded resource above.",
        ]

    @mcp.prompt()
    def test_prompt_with_image() -> list[ImageContent | str]:
        """A prompt that shows an image."""
        return [ImageContent(data=PNG_B64, mime_type="image/png"), "Please analyze the image above."]

    @mcp.prompt()
    async def test_input_required_result_prompt(ctx: ToolContext) -> str:
        """A prompt that first asks the user for context (MRTR on prompts/get)."""
        answer = await ctx.elicit("What context should the prompt use?", ContextForm, key="user_context")
        context = answer.content.context if answer.content else "(none)"
        return f"Use this context: {context}"

    @mcp.completion(prompt="test_prompt_with_arguments", argument="arg1")
    def complete_arg1(value: str) -> list[str]:
        return [city for city in CITY_SUGGESTIONS if city.startswith(value)]


# --- resources ------------------------------------------------------------------------------------


def _resources(mcp: MCP) -> None:
    @mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """A static binary resource (a PNG image)."""
        return PNG

    @mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
    def watched_resource() -> str:
        """A resource clients subscribe to (resources/subscribe and resources/unsubscribe)."""
        return "This is a watched resource."

    @mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
    def template_data(id: str) -> dict[str, Any]:
        """Data for an id, from a resource template."""
        return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    uvicorn.run(create_app(), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
