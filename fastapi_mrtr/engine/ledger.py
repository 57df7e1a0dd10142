"""The replay ledger: what earlier rounds answered, what this run asks, what goes into the next state.

A handler is re-run from the top on every round. Each ask has a key and a digest of the question
(``q``); an answer is used only when both match, so a client can neither pre-answer a question it
was never shown nor reuse an answer for a question that has changed. The sealed state carries:

``asked``  key -> q for the questions of the round just sent (only these may be answered next);
``el``     the keys of those that are elicitations (their answers must carry an ``action``);
``ans``    key -> {"q", "r"}: answers recorded in earlier rounds and reached again by the handler;
``once``   step -> small JSON result of ``ctx.once(step, fn)``;
``s``      the handler's own plaintext state (manual mode).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from fastapi_mrtr.wire.mrtr import ELICITATION_CREATE
from fastapi_mrtr.wire.protocol import JSONObject

# Built once: json.dumps would construct an encoder on every call (every ask of every round).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def input_request_digest(method: str, params: JSONObject | None) -> str:
    return digest_of_canonical(canonical_json({"method": method, "params": params or {}}))


def canonical_json(value: Any) -> str:
    """The JSON a question digest is taken over: sorted keys, no spaces, ASCII only."""
    return _CANONICAL.encode(value)


def digest_of_canonical(canonical: str) -> str:
    """The question digest of an already canonical JSON text (see :func:`input_request_digest`)."""
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).decode()[:16]


@dataclass
class KeyedInputRequest:
    """An input request this run sends: its key, what it asks, and the digest that pins its answer."""

    key: str
    method: str
    params: JSONObject
    q: str


@dataclass
class ReplayLedger:
    """Answers available to this run, and everything the run records for the next one."""

    answers: dict[str, JSONObject] = field(default_factory=dict)  # key -> {"q": str | None, "r": answer}
    once_results: dict[str, Any] = field(default_factory=dict)
    handler_state: str | None = None
    # This round's inputResponses for the keys the previous round asked (manual mode), as received.
    this_round: JSONObject = field(default_factory=dict)
    # Filled while the handler runs:
    keys_seen: set[str] = field(default_factory=set)
    used: dict[str, JSONObject] = field(default_factory=dict)
    once_used: dict[str, Any] = field(default_factory=dict)
    input_requests: list[KeyedInputRequest] = field(default_factory=list)  # this run's, unanswered
    refused: dict[str, str] = field(default_factory=dict)  # key -> why its answer was refused this run
    auto_keys: int = 0

    @classmethod
    def from_sealed(cls, data: JSONObject, input_responses: JSONObject) -> ReplayLedger:
        """Earlier answers plus this round's, for keys the previous round asked (stored ones win)."""
        asked = data.get("asked") or {}
        answers: dict[str, JSONObject] = dict(data.get("ans") or {})
        this_round = {k: v for k, v in input_responses.items() if k in asked}
        for key, response in this_round.items():
            answers.setdefault(key, {"q": asked[key], "r": response})
        return cls(
            answers=answers,
            once_results=dict(data.get("once") or {}),
            handler_state=data.get("s"),
            this_round=this_round,
        )

    @classmethod
    def first_round(cls, input_responses: JSONObject, accept_unsolicited: bool) -> ReplayLedger:
        """No state yet: answers are taken only when the server allows unsolicited ones.

        Nothing was asked, so by default nothing was answered: neither the asks nor a manual-mode
        handler reading ``ctx.input_responses`` may see what the client sent unprompted.
        """
        if not accept_unsolicited:
            return cls()
        answers = {k: {"q": None, "r": v} for k, v in input_responses.items()}
        return cls(answers=answers, this_round=dict(input_responses))

    def claim_key(self, key: str | None, prefix: str = "input") -> str:
        if key is None:
            key = f"{prefix}-{self.auto_keys}"
            self.auto_keys += 1
        if key in self.keys_seen:
            raise ValueError(f"input key {key!r} is used twice in one run of the handler; keys must be unique")
        self.keys_seen.add(key)
        return key

    def look_up(self, key: str | None, method: str, params: JSONObject, q: str | None) -> tuple[str, str, Any, bool]:
        """(key, digest, recorded answer or None, diverged) for one input request of this run.

        Claims the key (an unnamed request gets the next ``input-N``), takes the request's digest
        when ``q`` is None, and finds the answer recorded for that key and digest.
        """
        key = self.claim_key(key)
        if q is None:
            q = input_request_digest(method, params)
        answer, diverged = self.recorded(key, q)
        return key, q, answer, diverged

    def add_input_request(self, key: str, method: str, params: JSONObject, q: str) -> None:
        """Record an input request this run sends: the round answers ``input_required`` with it."""
        self.input_requests.append(KeyedInputRequest(key, method, params, q))

    def recorded(self, key: str, q: str) -> tuple[Any, bool]:
        """(answer, diverged): the recorded answer for ``key`` if it was given for this question."""
        entry = self.answers.get(key)
        if entry is None:
            return None, False
        if entry.get("q") not in (None, q):
            return None, True
        return entry.get("r"), False

    def forget(self, key: str) -> None:
        self.answers.pop(key, None)

    def use(self, key: str, q: str, answer: Any) -> None:
        self.used[key] = {"q": q, "r": answer}

    def next_state(self, handler_state: str | None = None) -> JSONObject:
        data: JSONObject = {"asked": {a.key: a.q for a in self.input_requests}}
        forms = [a.key for a in self.input_requests if a.method == ELICITATION_CREATE]
        if forms:  # their answers must carry an action: checked before the next run (see answers)
            data["el"] = forms
        if self.used:
            data["ans"] = self.used
        if self.once_used:
            data["once"] = self.once_used
        if handler_state is not None:
            data["s"] = handler_state
        return data
