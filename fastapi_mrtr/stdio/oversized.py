"""What a reply needs of a line too long to read: its top-level fields, without holding the line.

A request over the size limit still deserves an error that names its ``id``, or its client waits
for an answer that never comes. The ``id`` may come last (the TypeScript SDK writes ``method``,
``params``, then ``jsonrpc`` and ``id``), after megabytes of ``params``. :class:`TopLevelSkeleton`
reads the line as it streams by and keeps only the top level of the object, each nested value
replaced by ``0`` and each long string by ``""``, so ``{"method":"tools/call","params":{...huge...},
"id":7}`` leaves ``{"method":"tools/call","params":0,"id":7}``: a few bytes, whatever the line's
size. The scan jumps from one structural character to the next, so it costs little per byte.
"""

from __future__ import annotations

import json
import re
from typing import Any

_STRUCTURE = re.compile(rb'["{}\[\]]')
_IN_STRING = re.compile(rb'["\\]')
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class TopLevelSkeleton:
    """Fed a JSON text in pieces; :meth:`fields` gives its top-level object with nested values elided."""

    def __init__(self, keep_bytes: int = 4096, long_string: int = 256) -> None:
        self._kept = bytearray()
        self._keep_bytes = keep_bytes
        self._long_string = long_string
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._string = bytearray()
        self._string_too_long = False

    def feed(self, data: bytes) -> None:
        at = 0
        while at < len(data):
            if self._in_string:
                at = self._feed_string(data, at)
                continue
            found = _STRUCTURE.search(data, at)
            end = len(data) if found is None else found.start()
            if self._depth <= 1:
                self._keep(data[at:end])
            if found is None:
                return
            self._structure(data[end])
            at = end + 1

    def fields(self) -> dict[str, Any] | None:
        """The top-level object as kept, or None when the text was no object (or its top level was too big)."""
        try:
            value = json.loads(self._kept)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _feed_string(self, data: bytes, at: int) -> int:
        if self._escaped:  # the byte after a backslash never ends the string
            self._escaped = False
            self._string_bytes(data[at : at + 1])
            return at + 1
        found = _IN_STRING.search(data, at)
        if found is None:
            self._string_bytes(data[at:])
            return len(data)
        end = found.start()
        self._string_bytes(data[at:end])
        if data[end] == _BACKSLASH:
            self._string_bytes(b"\\")
            self._escaped = True
        else:
            self._in_string = False
            if self._depth <= 1:
                self._keep(b'"' + (b"" if self._string_too_long else bytes(self._string)) + b'"')
        return end + 1

    def _structure(self, char: int) -> None:
        if char == _QUOTE:
            self._in_string = True
            self._string.clear()
            self._string_too_long = False
        elif char in b"{[":
            self._depth += 1
            if self._depth == 1:
                self._keep(bytes([char]))
            elif self._depth == 2:
                self._keep(b"0")  # a nested value: its place is kept, not its content
        else:
            if self._depth == 1:
                self._keep(bytes([char]))
            self._depth = max(self._depth - 1, 0)

    def _string_bytes(self, data: bytes) -> None:
        if self._depth > 1 or self._string_too_long:
            return
        if len(self._string) + len(data) > self._long_string:
            self._string_too_long = True
            self._string.clear()
        else:
            self._string += data

    def _keep(self, data: bytes) -> None:
        if len(self._kept) + len(data) <= self._keep_bytes:
            self._kept += data
        else:
            self._kept = bytearray(b"!")  # past the bound: no top level worth reading; fields() gives None
            self._keep_bytes = 0
