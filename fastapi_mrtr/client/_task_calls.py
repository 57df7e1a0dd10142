"""The :class:`~fastapi_mrtr.client.MrtrClient` methods that start a task or find one (SEP-2663).

A mixin of ``MrtrClient``: it uses the client's own MRTR flow and request path, declared below
for the type checker. ``call_tool`` (in ``_session``) is ``start_tool_call`` plus
:meth:`~fastapi_mrtr.client.ToolTask.wait`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi_mrtr.client._handlers import InputAnswer, InputHandlers
from fastapi_mrtr.client._task_wire import TaskInfo, ToolCallReply, tool_call_parser
from fastapi_mrtr.client._tasks import ToolTask
from fastapi_mrtr.client._types import ProgressCallback
from fastapi_mrtr.wire.mrtr import InputRequiredResult
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject

if TYPE_CHECKING:
    from fastapi_mrtr.client._era import EraTransport
    from fastapi_mrtr.client._lifecycle import Lifecycle
    from fastapi_mrtr.client._tool_catalogue import ToolCatalogue
    from fastapi_mrtr.client.options import ClientOptions

T = TypeVar("T")


class TaskCalls:
    """``start_tool_call`` and ``task``: a call that may become a task, and a task by its id."""

    if TYPE_CHECKING:  # what MrtrClient provides
        options: ClientOptions
        validate_structured_content: bool
        _lifecycle: Lifecycle
        _tools: ToolCatalogue
        _handlers: InputHandlers

        async def _era_transport(self) -> EraTransport: ...

        async def _flow(
            self,
            method: str,
            params: JSONObject,
            parse: Callable[[JSONObject], T | InputRequiredResult],
            input_responses: Mapping[str, InputAnswer] | None,
            request_state: str | None,
            progress_callback: ProgressCallback | None,
            meta: Mapping[str, Any] | None,
        ) -> T | InputRequiredResult: ...

        async def _request(
            self,
            method: str,
            params: JSONObject,
            progress_callback: ProgressCallback | None,
            meta: Mapping[str, Any] | None,
        ) -> JSONObject: ...

    async def start_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: Mapping[str, InputAnswer] | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult | ToolTask:
        """``tools/call`` up to the point where the server answers or makes a task: like
        :meth:`call_tool` (MRTR rounds included), but a task comes back as a
        :class:`~fastapi_mrtr.client.ToolTask` handle instead of being waited for."""
        self._lifecycle.check_usable()
        self._tools.check_callable(name)
        params: JSONObject = {"name": name, "arguments": dict(arguments or {})}
        declared = self.options.tasks.enabled and (await self._era_transport()).era == "2026-07-28"
        result: ToolCallReply = await self._flow(
            "tools/call",
            params,
            tool_call_parser(declared),
            input_responses,
            request_state,
            progress_callback,
            meta,
        )
        if isinstance(result, TaskInfo):
            return self._tool_task(result, name)
        if isinstance(result, CallToolResult) and self.validate_structured_content:
            await self._tools.check_structured_content(name, result)
        return result

    async def task(self, task_id: str, tool: str | None = None) -> ToolTask:
        """A handle on a task you know the id of (one started earlier, or by another process of
        yours: a task belongs to the caller that started it), as it is now (one ``tasks/get``).
        ``tool`` names its tool, for the ``outputSchema`` check of its result."""
        if (await self._era_transport()).era != "2026-07-28":
            raise ValueError("tasks exist only on the 2026-07-28 wire, not in a 2025-era session")
        placeholder = TaskInfo(task_id=task_id, status="working")
        handle = self._tool_task(placeholder, tool)
        await handle.get()
        return handle

    def _tool_task(self, info: TaskInfo, tool: str | None) -> ToolTask:
        async def send(method: str, params: JSONObject) -> JSONObject:
            return await self._request(method, params, None, None)

        async def check(result: CallToolResult) -> None:
            if tool is not None and self.validate_structured_content:
                await self._tools.check_structured_content(tool, result)

        return ToolTask(info, send, self._handlers, self.options.tasks, self.options.input_required_config, check)
