"""ctx.elicit replay: suspension, answers across rounds, keys, validation, batches, once, manual mode."""

from typing import Any

import httpx
import pytest
from fastapi import Depends, FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions
from fastapi_mrtr.wire import InputRequest, make_input_request_for_elicitation
from tests.support import rpc_body, rpc_headers

pytestmark = pytest.mark.anyio
KEY = "replay-tests-key-0123456789abcdef0123"


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Harness:
    """One app per test; ``call`` sends a tools/call round and returns the JSON-RPC body."""

    def __init__(self, **options: Any) -> None:
        self.app = FastAPI()
        self.mcp = MCP(self.app, options=ServerOptions(name="t", request_state_key=KEY, **options))
        self.events: list[str] = []
        self.ids = 0

    def mount(self) -> None:
        self.app.mount("/mcp", self.mcp)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        state: str | None = None,
        answers: dict[str, Any] | None = None,
        meta: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
        if state is not None:
            params["requestState"] = state
        if answers is not None:
            params["inputResponses"] = answers
        self.ids += 1
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            response = await http.post(
                "/mcp",
                json=rpc_body("tools/call", params, request_id=self.ids, meta=meta),
                headers={**rpc_headers("tools/call", tool), **(headers or {})},
            )
        return response.status_code, response.json()


def result_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "result" in body, body
    return body["result"]


def accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def two_questions(h: Harness) -> None:
    @h.mcp.tool()
    @h.app.post("/greet")
    async def greet(ctx: Context) -> dict[str, str]:
        h.events.append("run")
        name = await ctx.elicit("Your name?", Name, key="name")
        h.events.append(f"got {name.action}")
        if name.content is None:
            return {"greeting": f"no name ({name.action})"}
        color = await ctx.elicit(f"Favourite colour, {name.content.name}?", Color, key="color")
        assert color.content is not None
        return {"greeting": f"{name.content.name} likes {color.content.color}"}

    h.mount()


async def test_two_rounds_then_complete_replays_from_the_top() -> None:
    h = Harness()
    two_questions(h)
    status, body = await h.call("greet")
    first = result_of(body)
    assert status == 200 and first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["name"]
    assert first["inputRequests"]["name"]["method"] == "elicitation/create"
    assert first["inputRequests"]["name"]["params"]["requestedSchema"]["required"] == ["name"]
    assert "ttlMs" not in first and "cacheScope" not in first
    _, body = await h.call("greet", state=first["requestState"], answers={"name": accept({"name": "Ada"})})
    second = result_of(body)
    assert list(second["inputRequests"]) == ["color"]
    assert second["inputRequests"]["color"]["params"]["message"] == "Favourite colour, Ada?"
    assert second["requestState"] != first["requestState"]
    # Only this round's answer is sent: the earlier one travels in the state.
    _, body = await h.call("greet", state=second["requestState"], answers={"color": accept({"color": "teal"})})
    done = result_of(body)
    assert done["resultType"] == "complete"
    assert done["structuredContent"] == {"greeting": "Ada likes teal"}
    assert h.events == ["run", "run", "got accept", "run", "got accept"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_are_answers_not_missing(action: str) -> None:
    h = Harness()
    two_questions(h)
    _, body = await h.call("greet")
    state = result_of(body)["requestState"]
    _, body = await h.call("greet", state=state, answers={"name": {"action": action}})
    assert result_of(body)["structuredContent"] == {"greeting": f"no name ({action})"}


@pytest.mark.parametrize(
    ("bad_answer", "reason"),
    [
        pytest.param(
            {"action": "accept", "content": {"name": 5}}, "name: Input should be a valid string", id="wrong-type"
        ),
        pytest.param({"action": "accept"}, "the answer was accepted without content", id="no-content"),
    ],
)
async def test_an_answer_that_does_not_fit_is_asked_again_with_the_reason(bad_answer: Any, reason: str) -> None:
    h = Harness()
    two_questions(h)
    _, body = await h.call("greet")
    state = result_of(body)["requestState"]
    first = result_of(body)["inputRequests"]["name"]
    _, body = await h.call("greet", state=state, answers={"name": bad_answer})
    again = result_of(body)
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["name"]
    params = again["inputRequests"]["name"]["params"]
    assert params["_meta"] == {"fastapi-mrtr/refused-answer": {"reason": reason}}
    assert {k: v for k, v in params.items() if k != "_meta"} == first["params"]  # the same question
    _, body = await h.call("greet", state=again["requestState"], answers={"name": accept({"name": "Bo"})})
    assert list(result_of(body)["inputRequests"]) == ["color"]


@pytest.mark.parametrize(
    ("bad_answer", "why"),
    [
        pytest.param(12345, "it is a number, not an object", id="not-an-object"),
        pytest.param(None, "it is null, not an object", id="null"),
        pytest.param({"content": {"name": "Bo"}}, "it has no action", id="no-action"),
        pytest.param({"action": "maybe"}, "its action 'maybe' is not accept", id="unknown-action"),
        pytest.param({"action": "accept", "content": "Bo"}, "its content is a string", id="content-not-object"),
    ],
)
async def test_a_malformed_answer_is_refused_with_invalid_params(bad_answer: Any, why: str) -> None:
    """No result at all is a malformed message: -32602 naming the key, and the state still works."""
    h = Harness()
    two_questions(h)
    _, body = await h.call("greet")
    state = result_of(body)["requestState"]
    status, body = await h.call("greet", state=state, answers={"name": bad_answer})
    assert status == 400
    assert body["error"]["code"] == -32602
    assert "inputResponses['name']" in body["error"]["message"] and why in body["error"]["message"]
    assert body["error"]["data"] == {"reason": "malformed_input_response", "key": "name"}
    _, body = await h.call("greet", state=state, answers={"name": accept({"name": "Bo"})})
    assert list(result_of(body)["inputRequests"]) == ["color"]


async def test_answers_count_only_for_keys_asked_last_round() -> None:
    h = Harness()
    two_questions(h)
    _, body = await h.call("greet")
    state = result_of(body)["requestState"]
    # A pre-answer for "color" (not yet asked) is ignored, as are unknown keys.
    _, body = await h.call(
        "greet",
        state=state,
        answers={"name": accept({"name": "Cy"}), "color": accept({"color": "red"}), "zzz": accept({})},
    )
    assert list(result_of(body)["inputRequests"]) == ["color"]


async def test_without_state_answers_are_not_taken_by_default() -> None:
    h = Harness()
    two_questions(h)
    _, body = await h.call("greet", answers={"name": accept({"name": "Di"})})
    assert list(result_of(body)["inputRequests"]) == ["name"]


async def test_unsolicited_answers_can_be_allowed() -> None:
    h = Harness(input_required_config=InputRequiredConfig(accept_unsolicited_answers=True))
    two_questions(h)
    answers = {"name": accept({"name": "Di"}), "color": accept({"color": "blue"}), "extra": {"x": 1}}
    _, body = await h.call("greet", answers=answers)
    assert result_of(body)["structuredContent"] == {"greeting": "Di likes blue"}


async def test_input_responses_must_be_an_object() -> None:
    h = Harness()
    two_questions(h)
    status, body = await h.call("greet", answers=["nope"])  # type: ignore[arg-type]
    assert status == 400 and body["error"]["code"] == -32602


async def test_batch_asks_every_independent_question_in_one_round() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/profile")
    async def profile(ctx: Context) -> dict[str, str]:
        name, color = await ctx.gather(ctx.elicit("Name?", Name), ctx.elicit("Colour?", Color))
        assert name.content is not None and color.content is not None
        return {"profile": f"{name.content.name}/{color.content.color}"}

    h.mount()
    _, body = await h.call("profile")
    first = result_of(body)
    assert list(first["inputRequests"]) == ["input-0", "input-1"]  # deterministic keys by call order
    answers = {"input-0": accept({"name": "Ed"}), "input-1": accept({"color": "green"})}
    _, body = await h.call("profile", state=first["requestState"], answers=answers)
    assert result_of(body)["structuredContent"] == {"profile": "Ed/green"}


async def test_a_partly_answered_batch_asks_only_what_is_missing() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/profile")
    async def profile(ctx: Context) -> dict[str, str]:
        name, color = await ctx.gather(ctx.elicit("Name?", Name, key="n"), ctx.elicit("Colour?", Color, key="c"))
        assert name.content is not None and color.content is not None
        return {"profile": f"{name.content.name}/{color.content.color}"}

    h.mount()
    _, body = await h.call("profile")
    _, body = await h.call("profile", state=result_of(body)["requestState"], answers={"n": accept({"name": "Fa"})})
    second = result_of(body)
    assert list(second["inputRequests"]) == ["c"]
    _, body = await h.call("profile", state=second["requestState"], answers={"c": accept({"color": "red"})})
    assert result_of(body)["structuredContent"] == {"profile": "Fa/red"}


async def test_duplicate_keys_are_an_error() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/dup")
    async def dup(ctx: Context) -> dict[str, str]:
        await ctx.gather(ctx.elicit("A?", Name, key="same"), ctx.elicit("B?", Name, key="same"))
        return {}

    h.mount()
    _, body = await h.call("dup")
    result = result_of(body)
    assert result["isError"] is True and "internal error" in result["content"][0]["text"]


def drifting_question(h: Harness) -> list[int]:
    counter = [0]

    @h.mcp.tool()
    @h.app.post("/drift")
    async def drift(ctx: Context) -> dict[str, str]:
        counter[0] += 1
        answer = await ctx.elicit(f"Question version {counter[0]}?", Name, key="q")
        assert answer.content is not None
        return {"name": answer.content.name}

    h.mount()
    return counter


async def test_a_changed_question_is_asked_again_by_default() -> None:
    h = Harness()
    drifting_question(h)
    _, body = await h.call("drift")
    _, body = await h.call("drift", state=result_of(body)["requestState"], answers={"q": accept({"name": "Gil"})})
    again = result_of(body)
    assert again["resultType"] == "input_required"
    assert again["inputRequests"]["q"]["params"]["message"] == "Question version 2?"


async def test_strict_replay_reports_divergence() -> None:
    h = Harness(strict_replay=True)
    drifting_question(h)
    _, body = await h.call("drift")
    state = result_of(body)["requestState"]
    # The answer was given for version 1 of the question; the replay asks version 2.
    _, body = await h.call("drift", state=state, answers={"q": accept({"name": "Gil"})})
    result = result_of(body)
    assert result["isError"] is True
    assert "replay diverged at input key 'q'" in result["content"][0]["text"]


async def test_primitive_enum_and_literal_shorthands() -> None:
    from enum import Enum
    from typing import Literal

    class Size(Enum):
        S = "s"
        L = "l"

    h = Harness()

    @h.mcp.tool()
    @h.app.post("/shapes")
    async def shapes(ctx: Context) -> dict[str, Any]:
        ok, n, size, mode = await ctx.gather(
            ctx.elicit("OK?", bool, key="ok"),
            ctx.elicit("How many?", int, key="n"),
            ctx.elicit("Size?", Size, key="size"),
            ctx.elicit("Mode?", Literal["fast", "slow"], key="mode"),  # type: ignore[arg-type]
        )
        return {"ok": ok.content, "n": n.content, "size": size.content.value, "mode": mode.content}

    h.mount()
    _, body = await h.call("shapes")
    first = result_of(body)
    schemas = {k: v["params"]["requestedSchema"]["properties"]["value"] for k, v in first["inputRequests"].items()}
    assert schemas["ok"]["type"] == "boolean" and schemas["n"]["type"] == "integer"
    assert schemas["size"]["enum"] == ["s", "l"] and schemas["mode"]["enum"] == ["fast", "slow"]
    answers = {
        "ok": accept({"value": True}),
        "n": accept({"value": 3}),
        "size": accept({"value": "l"}),
        "mode": accept({"value": "slow"}),
    }
    _, body = await h.call("shapes", state=first["requestState"], answers=answers)
    assert result_of(body)["structuredContent"] == {"ok": True, "n": 3, "size": "l", "mode": "slow"}


async def test_once_runs_a_side_effect_exactly_once_and_idempotency_keys_are_stable() -> None:
    h = Harness()
    effects: list[str] = []
    keys: list[str] = []

    @h.mcp.tool()
    @h.app.post("/charge")
    async def charge(ctx: Context) -> dict[str, Any]:
        keys.append(ctx.idempotency_key("charge"))
        receipt = await ctx.once("charge", lambda: effects.append("charged") or f"receipt-{len(effects)}")
        first = await ctx.elicit("Name for the receipt?", Name, key="a")
        second = await ctx.elicit("Colour of the envelope?", Color, key="b")
        assert first.content and second.content
        return {"receipt": receipt, "to": first.content.name}

    h.mount()
    _, body = await h.call("charge")
    _, body = await h.call("charge", state=result_of(body)["requestState"], answers={"a": accept({"name": "Hu"})})
    _, body = await h.call("charge", state=result_of(body)["requestState"], answers={"b": accept({"color": "x"})})
    assert result_of(body)["structuredContent"] == {"receipt": "receipt-1", "to": "Hu"}
    assert effects == ["charged"]
    assert len(set(keys)) == 1 and len(keys) == 3
    _, body = await h.call("charge")  # a new flow gets a new key
    assert keys[-1] != keys[0]


async def test_suspension_unwinds_dependencies_and_cannot_be_swallowed() -> None:
    h = Harness()

    async def resource() -> Any:
        h.events.append("open")
        try:
            yield "db"
        finally:
            h.events.append("close")

    @h.mcp.tool()
    @h.app.post("/careful")
    async def careful(ctx: Context, db: str = Depends(resource)) -> dict[str, str]:
        try:
            answer = await ctx.elicit("Name?", Name, key="n")
        except Exception:  # user code that catches "everything" must not swallow the suspension
            h.events.append("swallowed")
            return {"name": "swallowed"}
        finally:
            h.events.append("finally")
        assert answer.content is not None
        return {"name": answer.content.name}

    h.mount()
    _, body = await h.call("careful")
    assert result_of(body)["resultType"] == "input_required"
    assert h.events == ["open", "finally", "close"]


async def test_even_a_bare_except_that_swallows_the_signal_still_answers_input_required() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/reckless")
    async def reckless(ctx: Context) -> dict[str, str]:
        try:  # noqa: SIM105 - the point is a hand-written bare swallow
            await ctx.elicit("Name?", Name, key="n")
        except BaseException:
            pass
        return {"oops": "continued"}

    h.mount()
    _, body = await h.call("reckless")
    assert list(result_of(body)["inputRequests"]) == ["n"]


async def test_manual_mode_round_trips_its_own_plaintext_state() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/manual")
    async def manual(ctx: Context) -> Any:
        answer = ctx.input_responses.get("who")
        if ctx.request_state == "step-1" and answer and answer.get("action") == "accept":
            return {"hello": answer["content"]["name"]}
        request = make_input_request_for_elicitation(
            "Who?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return ctx.input_required({"who": request}, request_state="step-1")

    h.mount()
    _, body = await h.call("manual")
    first = result_of(body)
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["who"]
    assert "step-1" not in first["requestState"]  # the plaintext is sealed
    _, body = await h.call("manual", state=first["requestState"], answers={"who": accept({"name": "Io"})})
    assert result_of(body)["structuredContent"] == {"hello": "Io"}


async def test_max_rounds_is_enforced_from_the_sealed_counter() -> None:
    h = Harness(input_required_config=InputRequiredConfig(max_rounds=2))

    @h.mcp.tool()
    @h.app.post("/endless")
    async def endless(ctx: Context) -> dict[str, str]:
        for i in range(10):
            await ctx.elicit(f"Question {i}?", Name, key=f"q{i}")
        return {}

    h.mount()
    _, body = await h.call("endless")
    state = result_of(body)["requestState"]
    _, body = await h.call("endless", state=state, answers={"q0": accept({"name": "a"})})
    state = result_of(body)["requestState"]
    status, body = await h.call("endless", state=state, answers={"q1": accept({"name": "b"})})
    assert status == 400
    assert body["error"]["code"] == -32602
    assert body["error"]["data"] == {"reason": "max_rounds_exceeded", "maxRounds": 2}


async def test_sampling_and_roots_requests() -> None:
    h = Harness()

    @h.mcp.tool()
    @h.app.post("/ask-model")
    async def ask_model(ctx: Context) -> dict[str, Any]:
        reply, roots = await ctx.gather(ctx.sample("Capital of France?", max_tokens=50), ctx.list_roots())
        text = reply.content.text if hasattr(reply.content, "text") else str(reply.content)
        return {"reply": text, "roots": [r.uri for r in roots.roots]}

    h.mount()
    _, body = await h.call("ask_model")
    first = result_of(body)
    methods = {k: v["method"] for k, v in first["inputRequests"].items()}
    assert methods == {"input-0": "sampling/createMessage", "input-1": "roots/list"}
    assert first["inputRequests"]["input-0"]["params"]["maxTokens"] == 50
    answers = {
        "input-0": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
        "input-1": {"roots": [{"uri": "file:///w", "name": "w"}]},
    }
    _, body = await h.call("ask_model", state=first["requestState"], answers=answers)
    assert result_of(body)["structuredContent"] == {"reply": "Paris", "roots": ["file:///w"]}


def capability_tools(h: Harness) -> None:
    @h.mcp.tool()
    @h.app.post("/form")
    async def form(ctx: Context) -> dict[str, str]:
        await ctx.elicit("Name?", Name)
        return {}

    @h.mcp.tool()
    @h.app.post("/link")
    async def link(ctx: Context) -> dict[str, str]:
        answer = await ctx.elicit_url("Sign in at the bank", "https://bank.example/consent")
        return {"action": answer.action}

    @h.mcp.tool()
    @h.app.post("/adaptive")
    async def adaptive(ctx: Context) -> dict[str, str]:
        if ctx.supports("elicitation"):
            await ctx.elicit("Name?", Name)
        else:
            await ctx.sample("Pick a name")
        return {}

    h.mount()


def meta_with(caps: dict[str, Any]) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps}


@pytest.mark.parametrize(
    ("tool", "caps", "required"),
    [
        pytest.param("form", {"sampling": {}}, {"elicitation": {}}, id="form-without-elicitation"),
        pytest.param("link", {"elicitation": {}}, {"elicitation": {"url": {}}}, id="url-needs-url-mode"),
    ],
)
async def test_an_undeclared_capability_is_32021(tool: str, caps: dict[str, Any], required: dict[str, Any]) -> None:
    h = Harness()
    capability_tools(h)
    status, body = await h.call(tool, meta=meta_with(caps))
    assert status == 400
    assert body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": required}


async def test_only_declared_input_kinds_are_sent() -> None:
    h = Harness()
    capability_tools(h)
    _, body = await h.call("adaptive", meta=meta_with({"sampling": {}}))
    methods = [r["method"] for r in result_of(body)["inputRequests"].values()]
    assert methods == ["sampling/createMessage"]
    _, body = await h.call("link", meta=meta_with({"elicitation": {"url": {}}}))
    params = next(iter(result_of(body)["inputRequests"].values()))["params"]
    assert params == {"mode": "url", "message": "Sign in at the bank", "url": "https://bank.example/consent"}


async def test_url_mode_accept_returns_action() -> None:
    h = Harness()
    capability_tools(h)
    meta = meta_with({"elicitation": {"url": {}}})
    _, body = await h.call("link", meta=meta)
    state = result_of(body)["requestState"]
    _, body = await h.call("link", state=state, answers={"input-0": {"action": "accept"}}, meta=meta)
    assert result_of(body)["structuredContent"] == {"action": "accept"}


async def test_input_request_helpers_build_bare_wire_shapes() -> None:
    request = make_input_request_for_elicitation("Hi?", requested_schema={"type": "object", "properties": {}})
    assert isinstance(request, InputRequest)
    assert request.model_dump(by_alias=True, exclude_none=True) == {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Hi?", "requestedSchema": {"type": "object", "properties": {}}},
    }
