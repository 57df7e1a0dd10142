"""The terminal client's view of a task: its status as it is polled, and ``tasks/cancel`` on Ctrl-C.

A call the server turns into a task shows its id once, then each change of status or
``statusMessage`` on stderr; its questions are asked by the same prompts as MRTR rounds (they go
through the same handlers). Ctrl-C ends the CLI at once (status 130) without sending anything on
the person's behalf, with one exception: a task still running would be left running for nobody,
so the interrupt first sends its ``tasks/cancel``, from a fresh client on a thread of its own (the
event loop may be stuck behind a prompt), bounded in time. A task belongs to the credentials that
created it, so the cancel carries the same ones: the ``-H`` headers and, after a sign-in, the
access token the run holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import anyio

from fastapi_mrtr.client._session import MrtrClient
from fastapi_mrtr.client._task_wire import TaskInfo
from fastapi_mrtr.client.auth import OAuthClientAuth
from fastapi_mrtr.client.auth._discovery import server_key
from fastapi_mrtr.client.options import ClientOptions

MESSAGE_EVERY = 1.0  # seconds between two lines that only change the status message
CANCEL_TIMEOUT = 5.0  # seconds Ctrl-C may wait for the tasks/cancel before exiting anyway


class TaskWatcher:
    """Says what a task does, and remembers the one still running for :func:`cancel_running_task`."""

    def __init__(
        self,
        say: Callable[[str], None],
        url: str | None,
        headers: Mapping[str, str],
        options: ClientOptions,
        auth: OAuthClientAuth | None = None,
    ) -> None:
        self._say = say
        self._url = url
        self._headers = dict(headers)
        self._auth = auth
        self._options = options
        self._shown: tuple[str, str, str | None] | None = None  # the task, status and message shown last
        self._shown_at = 0.0
        self.running: str | None = None  # the id of the task not yet ended, if any
        self.protocol_version = options.protocol_version

    def __call__(self, info: TaskInfo) -> None:
        """The ``task_status_callback``: a line when the status changes, and when the message does
        (at most one a second: a task reporting progress every 200 ms must not flood the terminal)."""
        # Known as running before anything is shown: a Ctrl-C right after the first line must cancel it.
        self.running = None if info.terminal else info.task_id
        if self._shown is None or self._shown[0] != info.task_id:
            self._say(f"(the server runs this call as task {info.task_id}; Ctrl-C cancels it)")
        shown = (info.task_id, info.status, info.status_message)
        now = time.monotonic()
        changed_status = self._shown is None or self._shown[:2] != shown[:2]
        if changed_status or (shown != self._shown and now - self._shown_at >= MESSAGE_EVERY):
            message = f": {info.status_message}" if info.status_message else ""
            self._say(f"task {info.status}{message}")
            self._shown, self._shown_at = shown, now

    def cancel_running_task(self) -> None:
        """``tasks/cancel`` for the running task, if any: synchronous, from a thread, bounded."""
        task_id = self.running
        # A stdio server (no URL) ends with this process: its tasks go with it, nothing to send.
        if task_id is None or self._url is None:
            return
        url = self._url
        self._say(f"cancelling task {task_id} ...")
        outcome: list[str] = []

        async def cancel() -> None:
            options = ClientOptions(mode="2026-07-28", protocol_version=self.protocol_version)
            async with MrtrClient(url, options=options, headers=await self._credentials(url)) as client:
                await (await client.task(task_id)).cancel()

        def run() -> None:
            try:
                anyio.run(cancel)
                outcome.append("task cancelled")
            except Exception as exc:  # the interrupt goes on: say why the cancel did not go out
                outcome.append(f"could not cancel the task: {exc}")

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(CANCEL_TIMEOUT)
        self._say(outcome[0] if outcome else f"could not cancel the task within {CANCEL_TIMEOUT:g} s")

    async def _credentials(self, url: str) -> dict[str, str]:
        """The headers that created the task: ``-H``, and the run's access token if it signed in.
        The token is read from the store, not sent through the auth: this is another event loop,
        and a cancel must not start a sign-in on the way out."""
        headers = dict(self._headers)
        token = await self._auth.store.get_tokens(server_key(url)) if self._auth is not None else None
        if token is not None:
            headers["Authorization"] = f"Bearer {token.access_token}"
        return headers


# The watcher of the command running in this process, for the Ctrl-C handler (cli.py).
CURRENT: list[TaskWatcher] = []


def cancel_running_task() -> None:
    for watcher in CURRENT:
        watcher.cancel_running_task()
