"""A refusal is raised, and answered in one place: a check of the transport's source.

Every refusal of either era is a :class:`~fastapi_mrtr.wire.errors.RequestRejectedError` (or a
subclass), raised where the problem is found and answered by ``RpcEndpoint.__call__`` alone, with
``transport.http.send_refusal``, for POST, GET and DELETE. So the transport writes no error object
by hand, sends no non-200 JSON body outside the modern endpoint's answers, and has exactly one
``except RequestRejectedError`` that does not raise again. The checks run on a snippet that breaks
each rule too (they can fail).
"""

from __future__ import annotations

import ast
import pathlib

import fastapi_mrtr.transport as transport

TRANSPORT = pathlib.Path(transport.__file__).resolve().parent
ANSWERING_PLACE = "endpoint.py"  # RpcEndpoint.__call__


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def violations(source: str, where: str) -> list[str]:
    """What in ``source`` writes or answers a refusal outside the one place (``where``: its path)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(
            isinstance(key, ast.Constant) and key.value == "code" for key in node.keys
        ):
            found.append(f"{where}:{node.lineno}: an error object written by hand")
        if isinstance(node, ast.Call) and _name(node.func) == "send_refusal" and where != ANSWERING_PLACE:
            found.append(f"{where}:{node.lineno}: a refusal answered outside {ANSWERING_PLACE}")
        if isinstance(node, ast.Call) and _name(node.func) == "send_json" and where.startswith("legacy/"):
            status = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(status, ast.Constant) and status.value == 200):
                found.append(f"{where}:{node.lineno}: a legacy JSON body sent with a status other than 200")
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            reraises = any(isinstance(statement, ast.Raise) for statement in node.body)
            if any(_name(c) == "RequestRejectedError" for c in caught) and not reraises and where != ANSWERING_PLACE:
                found.append(f"{where}:{node.lineno}: a refusal caught and not raised again")
    return found


def _sources() -> dict[str, str]:
    return {str(path.relative_to(TRANSPORT)): path.read_text() for path in sorted(TRANSPORT.rglob("*.py"))}


def test_the_transport_raises_its_refusals_and_answers_them_in_one_place() -> None:
    found = [issue for where, source in _sources().items() for issue in violations(source, where)]
    assert found == []


def test_the_one_place_answers_every_refusal_it_catches() -> None:
    tree = ast.parse((TRANSPORT / ANSWERING_PLACE).read_text())
    handlers = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ExceptHandler) and node.type is not None and _name(node.type) == "RequestRejectedError"
    ]
    assert len(handlers) == 1
    calls = [n for n in ast.walk(handlers[0]) if isinstance(n, ast.Call)]
    assert [_name(call.func) for call in calls] == ["send_refusal"]
    every_send_refusal = [
        where
        for where, source in _sources().items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and _name(node.func) == "send_refusal"
    ]
    assert every_send_refusal == [ANSWERING_PLACE]


def test_the_checks_find_a_refusal_written_inline() -> None:
    inline = """
async def refuse(send, request_id):
    error = {"code": -32600, "message": "Invalid request"}
    await send_json(send, 400, encode({"jsonrpc": "2.0", "id": request_id, "error": error}))

async def answer(send, exc):
    try:
        pass
    except RequestRejectedError as refusal:
        await send_refusal(send, refusal)
"""
    found = violations(inline, "legacy/requests.py")
    assert len(found) == 4, found
    assert violations(inline.replace("400", "200"), "legacy/requests.py") != found  # the status is read
