"""JSON for the wire and the sealed state: pydantic-core's speed, the json module's answers.

Every tool call is parsed once and answered once, and a flow's state is written and read back
each round, so JSON is a visible share of the server's time. pydantic-core (installed with
Pydantic) reads and writes JSON several times faster than the json module. It is used only where
it gives the json module's answer; everywhere else the json module decides, so what the server
accepts and writes is the same as with the json module alone, less the values no reply could
carry (below):

Reading (``decode``, strict: NaN, Infinity and numbers beyond a double are refused, and so is
what pydantic-core cannot hold: lone surrogates and nesting past about 200 levels):
- Lone surrogates (``"\\ud800"``) are not Unicode text: no UTF-8 answer can carry them back, so a
  message holding one would fail only when the reply (an error echoing its id, a question
  quoting an argument) is written. Deep nesting would overflow the stack of whatever walks the
  value next. Both are refused here, where the error is still a parse error.
- pydantic-core also refuses what the json module reads in its own way: a byte-order mark,
  UTF-16 or UTF-32 text. Such a text is read by the json module, and its value is then read
  again by pydantic-core from an ASCII spelling, so that exactly the same values pass both ways.
- pydantic-core reads a number too large for a double as infinity, where the strict reading
  refuses it. Such a number needs an exponent of three digits or a run of 200 digits, so a text
  holding either shape is read by the json module (``_may_overflow``). Base64 tokens hit the
  first shape about once in a hundred; that costs only speed.

Writing (``encode``, compact, UTF-8, non-ASCII as is; byte for byte the json module's text,
except that a float may be spelled differently with the same value, ``2e-7`` for ``2e-07``):
- pydantic-core refuses a lone surrogate; the json module then writes it and encoding the text
  fails, as before.
- NaN and Infinity are written as the json module writes them, or refused with ``finite``.
- pydantic-core also writes bytes, dates and dataclasses, which the json module refuses. The
  server only writes JSON values: its own messages, strictly read arguments and answers, and
  FastAPI's serialised results.

``tests/wire/test_json_codec.py`` holds both readers and both writers to the same answers.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core

# Built once: json.dumps would construct an encoder for every message.
_STDLIB_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_STDLIB_FINITE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode(message: Any, *, finite: bool = False) -> bytes:
    """Compact UTF-8 JSON of ``message``; ``finite`` refuses NaN and Infinity (ValueError)."""
    try:
        text = pydantic_core.to_json(message)
    except pydantic_core.PydanticSerializationError:
        pass  # the json module writes it or gives its own error
    else:
        # Outside strings these words are the only spelling of a non-finite float; inside a
        # string they are harmless. The json module, which tells the two apart, decides (it
        # raises ValueError for a non-finite float), but the text stays pydantic-core's, so that
        # ``finite`` changes which values are refused, never how a float is spelled.
        if finite and (b"NaN" in text or b"Infinity" in text):
            _STDLIB_FINITE.encode(message)
        return text
    return (_STDLIB_FINITE if finite else _STDLIB_COMPACT).encode(message).encode()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # e.g. 1e400: valid JSON syntax, but no float can carry it
        raise ValueError(f"{text} is out of range")
    return value


# JSON (RFC 8259) has no NaN or Infinity. Python's decoder accepts them by default, and such a
# value would then fail only when the answer is encoded, after the tool has already run.
_STDLIB_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)

# Digits become "0", exponent marks "e", everything else a space (signs are deleted), so that the
# shapes of an overflowing number are two substring searches over the translated text.
_NUMBER_SHAPES = bytes(48 if 48 <= b <= 57 else 101 if b in b"eE" else 32 for b in range(256))
_THREE_DIGIT_EXPONENT = b"0e000"
_LONG_DIGIT_RUN = b"0" * 200


def _may_overflow(raw: bytes) -> bool:
    """Whether ``raw`` may hold a number too large for a double (false positives are harmless).

    Without a three-digit exponent, a number is below 10**199 * 10**99 unless it has a run of 200
    digits, and the largest double is about 1.8 * 10**308.
    """
    shapes = raw.translate(_NUMBER_SHAPES, b"+-")
    return _THREE_DIGIT_EXPONENT in shapes or _LONG_DIGIT_RUN in shapes


def decode(raw: bytes | str) -> Any:
    """Parse a JSON document strictly (ValueError): no NaN, Infinity, out-of-range numbers, lone
    surrogates or nesting past pydantic-core's limit."""
    if isinstance(raw, str) or _may_overflow(raw):
        return _held_by_pydantic_core(_stdlib_decode(raw))
    return _decode_bytes(raw)


def decode_finite(raw: bytes) -> Any:
    """``decode`` for a text written by ``encode(..., finite=True)``, such as a sealed state.

    Its numbers are Python's own finite floats and integers, so none can overflow and the scan
    for one is skipped.
    """
    return _decode_bytes(raw)


def _decode_bytes(raw: bytes) -> Any:
    try:
        # Keys only: caching every short value would keep one entry per flow's random ids.
        return pydantic_core.from_json(raw, allow_inf_nan=False, cache_strings="keys")
    except ValueError:
        # The json module reads it or gives its own error; what it reads must still be a value
        # pydantic-core can hold (it may have refused the text for a surrogate or its depth).
        return _held_by_pydantic_core(_stdlib_decode(raw))


def decode_lenient(raw: bytes) -> Any:
    """``json.loads(raw)``, value for value and error for error, at pydantic-core's speed.

    For a body the server did not write and does not forward as a message: a route's JSON answer,
    read back into ``structuredContent``. The json module's reading is kept on purpose (NaN and
    Infinity, any detectable encoding), so the result does not depend on the reader. pydantic-core
    reads only what it reads the same way (a number too large for a double is infinity both ways);
    what it refuses (a byte-order mark, UTF-16, lone surrogates, deep nesting) and every broken
    text go to the json module, which gives its answer or its own error.
    """
    try:
        return pydantic_core.from_json(raw, allow_inf_nan=True, cache_strings="keys")
    except ValueError:
        return json.loads(raw)


_STDLIB_ASCII = json.JSONEncoder(separators=(",", ":"))  # escapes every non-ASCII character


def _held_by_pydantic_core(value: Any) -> Any:
    """``value``, if pydantic-core reads it back from its ASCII spelling; ValueError otherwise.

    The ASCII spelling turns a lone surrogate into the escape pydantic-core refuses, and its
    nesting is the value's own, so this applies the fast reading's limits to the slow one.
    """
    try:
        pydantic_core.from_json(_STDLIB_ASCII.encode(value), allow_inf_nan=False)
    except RecursionError:  # the json module's writer met the depth first
        raise ValueError("JSON nested too deeply") from None
    return value


def _stdlib_decode(raw: bytes | str) -> Any:
    """The strict json-module reading; bytes in any encoding RFC 8259 detection allows."""
    text = raw if isinstance(raw, str) else raw.decode(json.detect_encoding(raw), "surrogatepass")
    try:
        return _STDLIB_STRICT.decode(text)
    except RecursionError:  # its reader is recursive: a deep text exhausts the stack, not the syntax
        raise ValueError("JSON nested too deeply") from None
