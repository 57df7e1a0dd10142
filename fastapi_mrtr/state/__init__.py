"""The server's state between MRTR rounds, with no FastAPI inside: sealed ``requestState`` and
single-use replay stores.

For whoever seals state of their own, writes a ``request_state_verifier`` or deploys a shared
replay store::

    from fastapi_mrtr.state import RequestStateSealer, StateBinding, StateKeyRing, arguments_digest

    sealer = RequestStateSealer(StateKeyRing([new_secret, old_secret]), ttl=300)
    token = sealer.seal({"step": 2}, binding)
    data = sealer.open(token, binding).data  # or InvalidRequestStateError

The token format is in the docstring of ``fastapi_mrtr.state.sealing``; ``docs/security.md`` and
``docs/deployment.md`` tell how to use them. ``RedisReplayStore`` and ``RedisRelay`` (2025-era
sessions across replicas) need the ``redis`` extra only once one is built.
"""

from fastapi_mrtr.state.redis_relay import RedisRelay
from fastapi_mrtr.state.redis_store import RedisReplayStore
from fastapi_mrtr.state.replay_store import InMemoryReplayStore, ReplayStore
from fastapi_mrtr.state.sealing import (
    InvalidRequestStateError,
    RequestStateSealer,
    RequestStateTooLargeError,
    StateBinding,
    StateClaims,
    StateKeyRing,
    arguments_digest,
)

__all__ = [
    "InMemoryReplayStore",
    "InvalidRequestStateError",
    "RedisRelay",
    "RedisReplayStore",
    "ReplayStore",
    "RequestStateSealer",
    "RequestStateTooLargeError",
    "StateBinding",
    "StateClaims",
    "StateKeyRing",
    "arguments_digest",
]
