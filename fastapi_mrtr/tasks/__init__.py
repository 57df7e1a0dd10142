"""Tasks (SEP-2663, ``io.modelcontextprotocol/tasks``): a ``tools/call`` that outlives its request.

A tool declared with ``@mcp.tool(task="optional" | "required")`` runs as usual; when it has not
finished within its promotion deadline, and the client declared the extension on that request,
the call answers a ``CreateTaskResult`` and the handler goes on running. After that, an unanswered
``ctx.elicit`` parks the task in ``input_required``; ``tasks/update`` resumes it by replaying the
handler with the task's ledger, the same replay engine as MRTR (docs/tasks.md).

Public here: the store protocol and its record, for a store of your own (``TaskStore``,
``TaskRecord``), the in-process store (``InMemoryTaskStore``), the store replicas share
(``RedisTaskStore``; needs the ``redis`` extra once built) and ``TaskConfig``. Modules: the record
and its wire views (``record``), the store protocol (``store``), the stores (``memory_store``,
``redis_store``), the ``tools/call`` that may promote (``tool_calls``), the legs run here
(``legs``), their leases and take-over after a replica died (``leases``) and
``tasks/get|update|cancel`` (``methods``).
"""

from fastapi_mrtr.engine.task_config import TaskConfig
from fastapi_mrtr.tasks.memory_store import InMemoryTaskStore
from fastapi_mrtr.tasks.record import TaskRecord
from fastapi_mrtr.tasks.redis_store import RedisTaskStore
from fastapi_mrtr.tasks.store import TaskStore

__all__ = ["InMemoryTaskStore", "RedisTaskStore", "TaskConfig", "TaskRecord", "TaskStore"]
