"""Asking a human at a terminal to answer an elicitation.

A form-mode ``requestedSchema`` is flat: each property becomes one prompt. Strings, numbers,
integers and booleans are typed in; single-select enums (``enum``, or ``oneOf``/``anyOf`` of
``{const, title}``) and multi-select arrays list numbered choices. A default is shown in brackets
and used on empty input; a required field without default (marked ``*``, explained once) is
asked again; an optional one is left out. Bad input is explained and asked again. End of input
means cancel.

A one-field form named ``value`` is the server's shorthand for ``ctx.elicit(message, bool)``
(``int``, ``Literal``, ``Enum``, ...): its prompt is the question itself, not the word "value".
When the server asks a question again after our answer, it did not accept that answer: the
terminal says so before asking again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi_mrtr.client._handlers import current_input_request
from fastapi_mrtr.wire.mrtr import ElicitRequestParams, ElicitResult
from fastapi_mrtr.wire.protocol import JSONObject

Ask = Callable[[str], str]  # shows a prompt, returns the line typed (EOFError at end of input)
Say = Callable[[str], None]

SHORTHAND_FIELD = "value"  # the one field of a primitive shorthand's form (see elicitation_schema)
REQUIRED_LEGEND = "  (* = required: an answer is needed)"


class InvalidAnswerError(ValueError):
    """The typed text does not fit the field; the message says why."""


@dataclass(frozen=True)
class Choice:
    value: Any
    label: str


def _choices(options: Any) -> list[Choice] | None:
    """Choices from a ``oneOf``/``anyOf`` of ``{const, title}`` entries."""
    if not isinstance(options, list) or not all(isinstance(o, dict) and "const" in o for o in options):
        return None
    return [Choice(o["const"], str(o.get("title", o["const"]))) for o in options]


def field_choices(prop: JSONObject) -> list[Choice] | None:
    """The choices of a single-select property, or ``None`` for a free-form one."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")  # legacy titled enum
        labels = names if isinstance(names, list) and len(names) == len(prop["enum"]) else prop["enum"]
        return [Choice(v, str(label)) for v, label in zip(prop["enum"], labels, strict=True)]
    return _choices(prop.get("oneOf")) or _choices(prop.get("anyOf"))


def item_choices(prop: JSONObject) -> list[Choice] | None:
    """The choices of a multi-select (array) property."""
    items = prop.get("items")
    return field_choices(items) if isinstance(items, dict) else None


def _pick(text: str, choices: list[Choice]) -> Any:
    """A choice by its number, its value or its label."""
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1].value
    for choice in choices:
        if text in (str(choice.value), choice.label):
            return choice.value
    labels = ", ".join(choice.label for choice in choices)
    raise InvalidAnswerError(f"choose one of: {labels} (or a number 1-{len(choices)}), not {text!r}")


def _describe_default(prop: JSONObject, default: Any) -> str:
    if isinstance(default, bool):
        return "y" if default else "n"
    if isinstance(default, list):
        return ", ".join(str(v) for v in default)
    return str(default)


def convert(prop: JSONObject, text: str) -> Any:
    """The typed value for one non-empty answer, or :class:`InvalidAnswerError`."""
    kind = prop.get("type")
    if kind == "array":
        options = item_choices(prop) or []
        values = [_pick(part.strip(), options) if options else part.strip() for part in text.split(",")]
        values = [v for v in values if v != ""]
        low, high = prop.get("minItems"), prop.get("maxItems")
        if isinstance(low, int) and len(values) < low:
            raise InvalidAnswerError(f"choose at least {low}")
        if isinstance(high, int) and len(values) > high:
            raise InvalidAnswerError(f"choose at most {high}")
        return values
    choices = field_choices(prop)
    if choices:
        return _pick(text, choices)
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise InvalidAnswerError(f"answer y (yes) or n (no), not {text!r}")
    if kind in ("integer", "number"):
        return _number(prop, text, integer=kind == "integer")
    return _string(prop, text)


def _number(prop: JSONObject, text: str, *, integer: bool) -> int | float:
    try:
        value: int | float = int(text) if integer else float(text)
    except ValueError:
        raise InvalidAnswerError(f"not a whole number: {text!r}" if integer else f"not a number: {text!r}") from None
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(low, (int, float)) and value < low:
        raise InvalidAnswerError(f"must be at least {low}")
    if isinstance(high, (int, float)) and value > high:
        raise InvalidAnswerError(f"must be at most {high}")
    return value


def _string(prop: JSONObject, text: str) -> str:
    low, high = prop.get("minLength"), prop.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        raise InvalidAnswerError(f"at least {low} characters")
    if isinstance(high, int) and len(text) > high:
        raise InvalidAnswerError(f"at most {high} characters")
    fmt = prop.get("format")
    try:
        if fmt == "date":
            dt.date.fromisoformat(text)
        elif fmt == "date-time":
            dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidAnswerError(f"enter a {fmt} in ISO 8601 form") from None
    if fmt == "email" and ("@" not in text or text.startswith("@") or text.endswith("@")):
        raise InvalidAnswerError("enter an email address")
    if fmt == "uri" and ":" not in text:
        raise InvalidAnswerError("enter a URI with a scheme, e.g. https://...")
    return text


def is_shorthand(schema: JSONObject) -> bool:
    """A form of one required field named ``value``: a primitive asked as the whole question."""
    properties = schema.get("properties")
    return (
        isinstance(properties, dict)
        and list(properties) == [SHORTHAND_FIELD]
        and schema.get("required") == [SHORTHAND_FIELD]
    )


def is_marked_required(prop: JSONObject, required: bool) -> bool:
    """Whether the prompt marks the field ``*``: required and without a default.

    The only field of a shorthand form (the question itself, e.g. a yes/no) is marked too: an
    empty answer is refused there like anywhere else, so the prompt says so.
    """
    return required and "default" not in prop


def prompt_line(key: str, prop: JSONObject, required: bool, question: str | None = None) -> str:
    """The prompt text for one field, with its choices, type hint and default.

    ``question`` replaces the field's key as its label (for a shorthand form, whose only field
    is the question); a title of the field's own still wins. A required field without a default
    is marked ``*``.
    """
    label = str(prop.get("title") or question or key)
    if prop.get("description"):
        label += f" ({prop['description']})"
    lines = []
    choices = item_choices(prop) if prop.get("type") == "array" else field_choices(prop)
    if choices:
        lines = [f"    {n}) {c.label}" for n, c in enumerate(choices, 1)]
        label += " - numbers separated by commas" if prop.get("type") == "array" else " - a number"
    elif prop.get("type") == "boolean":
        label += " (y/n)"
    elif prop.get("format"):
        label += f" [{prop['format']}]"
    if "default" in prop:
        label += f" [{_describe_default(prop, prop['default'])}]"
    elif is_marked_required(prop, required):
        label += " *"
    return "\n".join([*lines, f"  {label}: "]) if lines else f"  {label}: "


class TerminalElicitor:
    """An elicitation handler that asks a human, one elicitation at a time.

    What it passes to ``ask`` and ``say`` carries server text as is: the terminal that shows it
    escapes it once (``cli.Terminal`` does, through ``_text.printable``).
    """

    def __init__(self, ask: Ask, say: Say) -> None:
        self._ask = ask
        self._say = say
        # Handlers of one round run concurrently: register this one as interactive
        # (``set_elicitation_handler(..., interactive=True)``) so it takes turns with the others.
        self._legend_shown = False  # "*" is explained once, the first time a form uses it

    def __call__(self, params: ElicitRequestParams) -> ElicitResult[Any]:
        try:
            self._say_if_asked_again(params)
            if params.mode == "url":
                return self._url(params)
            return self._form(params)
        except EOFError:
            self._say("(end of input: cancelled)")
            return ElicitResult(action="cancel")

    def _say_if_asked_again(self, params: ElicitRequestParams) -> None:
        """Say why the same question is back: the server did not accept the last answer."""
        info = current_input_request()
        if info is None or not info.asked_again:
            return
        if params.mode == "url":
            self._say("\n! The server asks again: the step at this URL is not done yet.")
            return
        if info.rejected_answer is not None:
            answer = info.rejected_answer
            shown = json.dumps(answer.get("content", answer.get("action")), ensure_ascii=False)
            self._say(f"\n! The server did not accept that answer ({shown}); please answer again.")
        else:
            self._say("\n! The server did not accept the last answer; please answer again.")
        if info.refusal_reason:
            self._say(f"  your answer was not accepted: {info.refusal_reason}")

    def _url(self, params: ElicitRequestParams) -> ElicitResult[Any]:
        self._say(f"\nThe server asks you to open a URL:\n  {params.message}\n  {params.url}")
        while True:
            text = self._ask("Open it and continue? [y]es / [N]o (decline) / [c]ancel: ").strip().lower()
            if text in ("y", "yes"):
                return ElicitResult(action="accept")
            if text in ("", "n", "no", "d", "decline"):
                return ElicitResult(action="decline")
            if text in ("c", "cancel"):
                return ElicitResult(action="cancel")
            self._say("  ! answer y (open it), n (decline) or c (cancel)")

    def _form(self, params: ElicitRequestParams) -> ElicitResult[Any]:
        self._say(f"\nThe server asks: {params.message}")
        while True:
            text = self._ask("Answer? [A]ccept / [d]ecline / [c]ancel: ").strip().lower()
            if text in ("d", "decline"):
                return ElicitResult(action="decline")
            if text in ("c", "cancel"):
                return ElicitResult(action="cancel")
            if text in ("", "a", "accept"):
                break
            self._say("  ! answer a (accept), d (decline) or c (cancel)")
        schema = params.requested_schema or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        question = params.message if is_shorthand(schema) else None
        fields = {key: prop if isinstance(prop, dict) else {} for key, prop in properties.items()}
        marked = any(is_marked_required(prop, key in required) for key, prop in fields.items())
        if marked and not self._legend_shown:
            self._say(REQUIRED_LEGEND)
            self._legend_shown = True
        content = {}
        for key, prop in fields.items():
            value = self._field(prompt_line(key, prop, key in required, question), prop, key in required)
            if value is not _OMIT:
                content[key] = value
        return ElicitResult(action="accept", content=content)

    def _field(self, prompt: str, prop: JSONObject, required: bool) -> Any:
        while True:
            text = self._ask(prompt).strip()
            if not text:
                if "default" in prop:
                    return prop["default"]
                if not required:
                    return _OMIT
                self._say("  ! required: please enter a value")
                continue
            try:
                return convert(prop, text)
            except InvalidAnswerError as exc:
                self._say(f"  ! {exc}")


_OMIT: Any = object()


def format_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
