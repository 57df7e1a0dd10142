"""Server-sent events read from a response body as it arrives (the parts of the format MCP uses).

Fields ``data`` (joined by newlines when repeated), ``id`` and ``retry``; comments (keep-alives)
and other fields are skipped. Lines end with LF, CRLF or CR, as the format allows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SseEvent:
    data: str | None = None
    id: str | None = None
    retry_ms: int | None = None


class SseParser:
    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = SseEvent()

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by ``chunk``."""
        self._buffer += chunk
        events: list[SseEvent] = []
        while True:
            end = _line_end(self._buffer)
            if end is None:
                return events
            line, self._buffer = self._buffer[: end[0]], self._buffer[end[1] :]
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> SseEvent | None:
        if not line:  # a blank line ends the event
            event, self._event = self._event, SseEvent()
            if self._data:
                event.data = "\n".join(self._data)
            self._data = []
            return event if event.data is not None or event.id is not None or event.retry_ms is not None else None
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._event.id = value
        elif field == "retry" and value.isdigit():
            self._event.retry_ms = int(value)
        return None


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line of ``buffer`` ends and the next starts, or None when no line is complete.

    A CR at the very end may be the first half of a CRLF: it waits for the next chunk."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return None
    return (cr, cr + 2) if buffer[cr + 1 : cr + 2] == b"\n" else (cr, cr + 1)
