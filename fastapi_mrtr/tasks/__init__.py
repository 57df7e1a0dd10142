"""Tasks (SEP-2663, ``io.modelcontextprotocol/tasks``): a ``tools/call`` that outlives its request.

A tool declared with ``@mcp.tool(task="optional" | "required")`` runs as usual; when it has not
finished within its promotion deadline, and the client declared the extension on that request,
the call answers a ``CreateTaskResult`` and the handler goes on running. After that, an unanswered
``ctx.elicit`` parks the task in ``input_required``; ``tasks/update`` resumes it by replaying the
handler with the task's ledger, the same replay engine as MRTR (docs/tasks.md).

Modules: the record and its wire views (``record``), the store protocol (``store``) and the
in-process store (``memory_store``).
"""
