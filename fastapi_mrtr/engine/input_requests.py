"""What a question is: the ``elicitation/create`` params an ask sends, and the digest that pins it.

An answer is replayed only for the key **and** the question digest it was given to (see
``fastapi_mrtr.engine``). The digest is taken over canonical JSON of the method and params, so
the same question digests the same on every round and every replica.
"""

from __future__ import annotations

import functools
from typing import Any

from fastapi_mrtr.engine.elicitation_schema import requested_schema_for, requested_schema_json
from fastapi_mrtr.engine.ledger import canonical_json, digest_of_canonical, input_request_digest
from fastapi_mrtr.wire.mrtr import ELICITATION_CREATE, ElicitRequestParams, InputRequest
from fastapi_mrtr.wire.protocol import JSONObject, dump

# On a question asked again because its answer was refused: {"reason": text the person may see}.
# It is added after the question's digest is taken, so it never changes which answer fits.
REFUSED_ANSWER_META = "fastapi-mrtr/refused-answer"


def wire_input_request_digest(request: InputRequest) -> str:
    return input_request_digest(request.method, request.params)


def form_input_request_digest(message: str, schema: Any) -> str:
    """``input_request_digest`` of the form ask ``elicit_wire(message, schema)``, without encoding the schema.

    Every round replays the same asks, so the digest is kept per (message, schema), in a bounded
    cache; an unhashable schema is digested each time.
    """
    try:
        return _cached_form_input_request_digest(message, schema)
    except TypeError:
        return _assembled_form_digest(message, schema)


@functools.lru_cache(maxsize=256)
def _cached_form_input_request_digest(message: str, schema: Any) -> str:
    return _assembled_form_digest(message, schema)


def _assembled_form_digest(message: str, schema: Any) -> str:
    # The digest is taken over canonical JSON (sorted keys), so the text is assembled from its
    # parts in that order, with the schema's canonical JSON made once per schema.
    return digest_of_canonical(
        f'{{"method":"{ELICITATION_CREATE}","params":{{"message":{canonical_json(message)},'
        f'"mode":"form","requestedSchema":{requested_schema_json(schema)}}}}}'
    )


def elicit_wire(message: str | ElicitRequestParams, schema: Any) -> JSONObject:
    """The ``elicitation/create`` params as they travel."""
    if isinstance(message, ElicitRequestParams):
        if message.mode == "url" or message.requested_schema is not None or schema is None:
            return dump(message)
        return dump(message.model_copy(update={"requested_schema": requested_schema_for(schema)}))
    if schema is None:
        raise TypeError("ctx.elicit(message, schema): a form needs a schema (a model or bool/str/int/...)")
    if isinstance(message, str):
        # The common case, built directly: what dump(ElicitRequestParams(...)) gives, without a
        # model round trip on every ask of every replay.
        return {"mode": "form", "message": message, "requestedSchema": requested_schema_for(schema)}
    return dump(ElicitRequestParams(message=message, requested_schema=requested_schema_for(schema)))


def elicitation_needed(url_mode: bool, caps: JSONObject) -> JSONObject:
    """The ``requiredCapabilities`` of an elicitation the client cannot take."""
    if url_mode:
        return {"elicitation": {"url": {}}}
    # A client without elicitation needs only ``{}`` (which means form); one that declared other
    # modes (URL only) must add ``form``.
    return {"elicitation": {"form": {}}} if isinstance(caps.get("elicitation"), dict) else {"elicitation": {}}
