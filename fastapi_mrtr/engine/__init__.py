"""The replay engine: how a handler that awaits ``ctx.elicit(...)`` runs over several rounds.

An MCP 2026-07-28 server cannot send the client a request. When a handler needs the user, the
server answers ``input_required`` and the client retries the original call with the answers. The
engine turns that into a plain ``await ctx.elicit(...)``; docs/replay.md tells the same rules to
app authors.

**A round** is one ``tools/call`` (or ``prompts/get``, ``resources/read``, a REST call) and its
answer. It opens the sealed ``requestState`` the client sent back (none on the first round),
runs the handler once, and answers either its result or ``input_required`` with the questions
still open and a new sealed state. Nothing stays in memory between rounds: the state carries
everything, so the next round may run on another replica (:mod:`~fastapi_mrtr.engine.rounds`).

**What re-runs: everything, every round.** The handler runs from its first line, with its
dependencies (``yield`` ones included: their cleanup runs when a round suspends), middleware and
security. An ask answered in an earlier round returns its answer at once; the first unanswered
ask records itself as pending and suspends the run by raising a private ``BaseException``
(:class:`~fastapi_mrtr.engine.call.SuspendSignal`; ``ctx.gather`` collects every pending ask of
a batch before raising it once). The suspension is written into the
:class:`~fastapi_mrtr.engine.call.CallRecord` *before* the signal is raised, so a layer that
swallows or rewraps the signal cannot hide it, and every layer that runs a handler catches it in
one place, :func:`~fastapi_mrtr.engine.call.catch_suspension`.

**What must be deterministic.** Everything before the last ask runs again on every round, so it
must be repeatable: reads are fine, but a question must be derived only from the arguments,
earlier answers and ``ctx.once`` results (not the time, a random number, a live price), and side
effects wait until after the last ask or go through ``ctx.once``.

**How answers meet their questions** (:mod:`~fastapi_mrtr.engine.ledger`). Each ask has a key:
its ``key=``, or ``input-0``, ``input-1``, ... in the call order of unnamed asks (so a
conditional ask should be named); one key per ask in a run. The key is pinned to a digest of
the question, its method and params as canonical JSON (:mod:`~fastapi_mrtr.engine.input_requests`).
An answer is used only when key **and** digest match, and only for keys the previous round
asked (a client cannot pre-answer a question it was never shown). An answer that does not
validate against the ask's schema is refused: the question is asked again, with the reason in
``_meta["fastapi-mrtr/refused-answer"]`` (:mod:`~fastapi_mrtr.engine.input_responses`); an answer that is
no result at all (not an object, no ``action``) is refused with -32602 before the handler runs
(:mod:`~fastapi_mrtr.engine.flow`); only what it means is recorded (the action and, on a
form's accept, the fields the form asked for), so every replay validates what was recorded. A
question that changed since it was answered is asked again, or raises ``ReplayDivergedError``
with ``strict_replay``. Answers of earlier rounds travel in the sealed state; the client sends
only the latest round's.

**ctx.once(step, fn)** runs ``fn`` on one round and seals its small JSON result into the state,
so later rounds get the result without running ``fn``. A retried round (the same
``requestState`` sent again) runs it again: an effect that must happen once keys on
``ctx.idempotency_key(step)`` where duplicates are refused (docs/side-effects.md).

The modules: :mod:`~fastapi_mrtr.engine.context` (``ToolContext``, the handler's ``ctx``),
:mod:`~fastapi_mrtr.engine.call` (the per-call record and the suspension signal),
:mod:`~fastapi_mrtr.engine.ledger` (keys, digests, recorded answers and ``once`` results),
:mod:`~fastapi_mrtr.engine.input_requests` and :mod:`~fastapi_mrtr.engine.input_responses` (building a
question, reading an answer), :mod:`~fastapi_mrtr.engine.elicitation_schema` (a form's
``requestedSchema`` from a model or shorthand), :mod:`~fastapi_mrtr.engine.flow` (every check on
the incoming state, sealing the next), :mod:`~fastapi_mrtr.engine.rounds` (one round) and
:mod:`~fastapi_mrtr.engine.options` (``ServerOptions``). Which transport or route a call came
through is not the engine's business: the transport and the FastAPI integration sit above it.
"""
