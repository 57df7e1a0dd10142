"""Lines from a stdio server read as JSON-RPC: a message per line, a response's result or error."""

from __future__ import annotations

from fastapi_mrtr.client._errors import InvalidServerResponseError, McpServerError, MrtrClientError, StdioServerError
from fastapi_mrtr.client._transport import decode_json
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

SHOWN = 200  # characters of a broken line quoted in the error


def decode_line(line: bytes) -> JSONObject:
    """One line as a JSON-RPC message; :class:`StdioServerError` for anything else (the pipe is
    then unusable: not an answer to take for an era, as a probe would an HTTP reply)."""
    try:
        decoded = decode_json(line)
    except InvalidServerResponseError:
        decoded = None
    if not isinstance(decoded, dict) or decoded.get("jsonrpc") != "2.0":
        shown = line.decode("utf-8", "replace")
        raise StdioServerError(
            "the stdio server wrote a line that is no JSON-RPC message (its stdout must carry JSON-RPC "
            f"only): {shown[:SHOWN]!r}"
        )
    return decoded


def reply_result(message: JSONObject, request_id: RequestId) -> JSONObject:
    """The response's ``result``; :class:`McpServerError` for an error reply."""
    error = message.get("error")
    if error is not None:
        if not (isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)):
            raise InvalidServerResponseError("malformed JSON-RPC error", message)
        raise McpServerError(error["code"], error["message"], error.get("data"), request_id=request_id)
    result = message.get("result")
    if not isinstance(result, dict):
        raise InvalidServerResponseError("JSON-RPC result is not an object", message)
    return result


def still_failed(failure: MrtrClientError) -> MrtrClientError:
    """The error for a request after the connection failed: the same kind, saying so."""
    prefix = "the stdio server can no longer be used: "
    if isinstance(failure, StdioServerError):
        return StdioServerError(prefix + failure.reason, returncode=failure.returncode, stderr=failure.stderr)
    return StdioServerError(prefix + str(failure))
