"""Read a request body ahead of the endpoint, then hand the endpoint the same messages again."""

from __future__ import annotations

from starlette.types import Message, Receive


class BufferedBody:
    """The body's messages up to ``limit`` bytes; past it, the rest stays unread for the endpoint
    (which refuses a body that large with its own 413)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._messages: list[Message] = []
        self.complete = False

    async def read(self, limit: int) -> bytes:
        size = 0
        while size <= limit:
            message = await self._receive()
            self._messages.append(message)
            if message["type"] != "http.request":
                break  # a disconnect: the endpoint sees it too
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                self.complete = True
                break
        return b"".join(m.get("body", b"") for m in self._messages if m["type"] == "http.request")

    async def replay(self) -> Message:
        """The messages read so far, in order, then the client's own."""
        if self._messages:
            return self._messages.pop(0)
        return await self._receive()
