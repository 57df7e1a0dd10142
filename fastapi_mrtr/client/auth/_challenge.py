"""``WWW-Authenticate`` parsing (RFC 9110 section 11.6.1) and the Bearer challenge (RFC 6750).

The MCP server's 401 names its protected resource metadata (``resource_metadata``, RFC 9728
section 5.1) and may name the scope it wants; its 403 ``insufficient_scope`` names the scope a
step-up must add.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SPACE = " \t"


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme (lower case) and its auth-params (names lower case)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BearerChallenge:
    """The Bearer challenge of a 401 or 403 response (every field optional)."""

    error: str | None = None
    error_description: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None

    @property
    def scopes(self) -> list[str]:
        return self.scope.split() if self.scope else []


def _skip(value: str, pos: int, chars: str) -> int:
    while pos < len(value) and value[pos] in chars:
        pos += 1
    return pos


def _quoted(value: str, pos: int) -> tuple[str, int]:
    """The quoted-string starting at ``value[pos] == '"'``, unescaped, and the position after it."""
    out: list[str] = []
    pos += 1
    while pos < len(value):
        char = value[pos]
        if char == "\\" and pos + 1 < len(value):
            out.append(value[pos + 1])
            pos += 2
            continue
        if char == '"':
            return "".join(out), pos + 1
        out.append(char)
        pos += 1
    return "".join(out), pos  # unterminated: take the rest


def parse_www_authenticate(values: Iterable[str]) -> list[Challenge]:
    """Every challenge in the given header values, in order. Malformed bits are skipped."""
    challenges: list[Challenge] = []
    for value in values:
        pos = 0
        current: Challenge | None = None
        while pos < len(value):
            pos = _skip(value, pos, _SPACE + ",")
            match = _TOKEN.match(value, pos)
            if match is None:
                pos += 1
                continue
            name, pos = match.group(0), match.end()
            after = _skip(value, pos, _SPACE)
            if current is not None and after < len(value) and value[after] == "=":
                pos = _skip(value, after + 1, _SPACE)
                if pos < len(value) and value[pos] == '"':
                    text, pos = _quoted(value, pos)
                else:
                    end = pos
                    while end < len(value) and value[end] not in _SPACE + ",":
                        end += 1
                    text, pos = value[pos:end], end
                current.params.setdefault(name.lower(), text)
                continue
            current = Challenge(name.lower())
            challenges.append(current)
            pos = after
    return challenges


def bearer_challenge(headers: httpx.Headers) -> BearerChallenge:
    """The Bearer challenge of a response; empty when there is none."""
    for challenge in parse_www_authenticate(headers.get_list("www-authenticate")):
        if challenge.scheme == "bearer":
            params = challenge.params
            return BearerChallenge(
                error=params.get("error"),
                error_description=params.get("error_description"),
                scope=params.get("scope"),
                resource_metadata=params.get("resource_metadata"),
            )
    return BearerChallenge()
