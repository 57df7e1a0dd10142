"""FastAPI's and Starlette's internals are used only in ``integration/fastapi_compat.py``.

ruff's banned-import rule (TID251, the banned-api table in pyproject.toml) refuses them in every
other module of the package; these tests check that the rule is configured so, by asking ruff
about the same source as another module and as the compat module.

A route's ``Dependant`` is reached by attribute, which no import rule sees, so a source check
covers it: outside ``integration/`` no module reads ``.dependant`` (the auth layer asks
``fastapi_compat.declared_scopes``), and the scope fields, renamed between FastAPI versions, are
named only in the compat module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fastapi_mrtr"
COMPAT = "fastapi_mrtr/integration/fastapi_compat.py"
# The Dependant fields that hold a route's OAuth scopes: their names differ by FastAPI version.
SCOPE_FIELDS = frozenset({"own_oauth_scopes", "parent_oauth_scopes", "security_scopes"})

INTERNALS = [
    "from fastapi._compat import ModelField",
    "from fastapi.dependencies.utils import request_params_to_args",
    "from fastapi.routing import serialize_response",
    "from starlette._exception_handler import _lookup_exception_handler",
    "from starlette.middleware.exceptions import ExceptionMiddleware",
    "from starlette.routing import Match",
    "from fastapi import routing\n\nrouting.iter_route_contexts",
]
PUBLIC = "\n".join(
    [
        "from fastapi import FastAPI, Request",
        "from fastapi.routing import APIRoute",
        "from starlette.routing import Mount",
    ]
)


def banned_in(source: str, as_file: str) -> list[str]:
    """The TID251 findings ruff reports for ``source`` checked as the file ``as_file``."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--select",
            "TID251",
            "--output-format",
            "concise",
            "--stdin-filename",
            as_file,
            "-",
        ],
        input=source + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    return [line for line in done.stdout.splitlines() if "TID251" in line]


@pytest.mark.slow  # a ruff subprocess per case
@pytest.mark.parametrize("source", INTERNALS)
def test_an_internal_is_refused_outside_the_compat_module(source: str) -> None:
    assert banned_in(source, "fastapi_mrtr/integration/tool_call.py")
    assert banned_in(source, "fastapi_mrtr/engine/context.py")
    assert banned_in(source, "fastapi_mrtr/auth/scopes.py")


@pytest.mark.slow
@pytest.mark.parametrize("source", INTERNALS)
def test_the_compat_module_may_use_them(source: str) -> None:
    assert banned_in(source, COMPAT) == []


@pytest.mark.slow
def test_public_names_are_allowed_everywhere() -> None:
    assert banned_in(PUBLIC, "fastapi_mrtr/integration/tool_call.py") == []
    assert banned_in(PUBLIC, "fastapi_mrtr/auth/scopes.py") == []


def dependant_reads(source: str, where: str) -> list[str]:
    """Where ``source`` reads a route's ``Dependant``: ``.dependant`` outside ``integration/``,
    a scope field (by attribute or by name in a string, as ``getattr`` takes it) outside compat."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = node.attr if isinstance(node, ast.Attribute) else None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if (
            name == "dependant"
            and isinstance(node, ast.Attribute)
            and not where.startswith("fastapi_mrtr/integration/")
        ):
            found.append(f"{where}:{node.lineno}: .dependant")
        if name in SCOPE_FIELDS and where != COMPAT:
            found.append(f"{where}:{node.lineno}: {name}")
    return found


def test_only_the_compat_module_reads_a_routes_scopes_and_only_integration_its_dependant() -> None:
    found = [
        issue
        for path in sorted(PACKAGE.rglob("*.py"))
        for issue in dependant_reads(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_the_dependant_check_can_fail() -> None:
    walk = "stack = [route.dependant]\nfor field in ('own_oauth_scopes', 'security_scopes'):\n    pass\n"
    assert dependant_reads(walk, "fastapi_mrtr/auth/scopes.py") == [
        "fastapi_mrtr/auth/scopes.py:1: .dependant",
        "fastapi_mrtr/auth/scopes.py:2: own_oauth_scopes",
        "fastapi_mrtr/auth/scopes.py:2: security_scopes",
    ]
    assert dependant_reads("route.dependant.dependencies\n", "fastapi_mrtr/integration/direct_call.py") == []
    assert dependant_reads(walk, COMPAT) == []
