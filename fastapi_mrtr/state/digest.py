"""The digest of a call's arguments that a ``requestState`` token is bound to.

Its bytes are what a flow is bound to, so they must not change between releases: the canonical
JSON comes from the stdlib json module, never from the faster codec the wire uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from json.encoder import encode_basestring_ascii as _ascii_json
from typing import Any

from fastapi_mrtr.state.b64url import b64url_encode

__all__ = ["arguments_digest"]

# Built once (json.dumps builds an encoder per call).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def arguments_digest(arguments: Mapping[str, Any] | None) -> str:
    """Digest of canonical JSON arguments. Numbers keep their JSON form: ``1`` and ``1.0`` differ.

    Raises TypeError / ValueError for values JSON cannot represent (including NaN and infinities).
    """
    canonical = _flat_canonical_json(arguments) if arguments else "{}"
    if canonical is None:
        canonical = _CANONICAL_JSON.encode(dict(arguments or {}))
    return b64url_encode(hashlib.sha256(canonical.encode("ascii")).digest())[:22]


def _flat_canonical_json(arguments: Mapping[str, Any]) -> str | None:
    """``_CANONICAL_JSON.encode`` of an object of strings and integers (most tool arguments),
    assembled from the json module's own string escaper; ``None`` for anything else."""
    parts = []
    for name, value in sorted(arguments.items()):
        kind = type(value)
        if type(name) is not str or (kind is not str and kind is not int):
            return None  # bool, None, floats, containers, subclasses: the encoder decides
        parts.append(f"{_ascii_json(name)}:{_ascii_json(value) if kind is str else int.__repr__(value)}")
    return "{" + ",".join(parts) + "}"
