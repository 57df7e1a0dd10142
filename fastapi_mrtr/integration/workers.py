"""Is this process one of several serving the same clients? Checked when the key is ephemeral.

An ephemeral request-state key lives in one process: a round served by another worker, another
replica or the same server after a restart is refused. What can be seen from inside the process:

- gunicorn (it sets ``SERVER_SOFTWARE`` in the environment before loading the app, also with
  ``--preload``): several workers, and workers are recycled (``max_requests``, timeouts);
- ``WEB_CONCURRENCY`` above 1 (the worker count uvicorn and gunicorn read by default);
- a worker spawned by ``multiprocessing`` (``uvicorn --workers N``), but not ``--reload``'s
  child, which is the only process serving;
- Kubernetes (``KUBERNETES_SERVICE_HOST``): a Deployment may have several replicas, and every
  rollout replaces the pods while flows are in flight.

What cannot be seen: replicas on other hosts or containers behind a load balancer (Compose
``--scale``, ECS, several VMs), and restarts. docs/deployment.md says to always set the key there.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Mapping, Sequence

__all__ = ["several_processes_hint"]


def several_processes_hint(
    environ: Mapping[str, str] | None = None,
    *,
    argv: Sequence[str] | None = None,
    spawned: bool | None = None,
) -> str | None:
    """Why this process may be one of several serving the same clients, or None when nothing says so.

    The arguments default to this process's environment, ``sys.argv`` and whether a
    ``multiprocessing`` parent started it; tests pass their own.
    """
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    spawned = multiprocessing.parent_process() is not None if spawned is None else spawned
    if environ.get("SERVER_SOFTWARE", "").startswith("gunicorn"):
        return "it runs under gunicorn (several workers, recycled over time)"
    concurrency = environ.get("WEB_CONCURRENCY", "").strip()
    if concurrency.isdigit() and int(concurrency) > 1:
        return f"WEB_CONCURRENCY={concurrency} asks for several workers"
    if spawned and "--reload" not in argv:
        return "it is a spawned worker process (uvicorn --workers or similar)"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "it runs in Kubernetes (a Deployment may run several replicas, and rollouts replace pods)"
    return None
