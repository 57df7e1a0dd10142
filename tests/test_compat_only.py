"""FastAPI's and Starlette's internals are used only in ``integration/fastapi_compat.py``.

ruff's banned-import rule (TID251, the banned-api table in pyproject.toml) refuses them in every
other module of the package; these tests check that the rule is configured so, by asking ruff
about the same source as another module and as the compat module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a ruff subprocess per case

ROOT = Path(__file__).resolve().parent.parent
COMPAT = "fastapi_mrtr/integration/fastapi_compat.py"

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


@pytest.mark.parametrize("source", INTERNALS)
def test_an_internal_is_refused_outside_the_compat_module(source: str) -> None:
    assert banned_in(source, "fastapi_mrtr/integration/tool_call.py")
    assert banned_in(source, "fastapi_mrtr/engine/context.py")


@pytest.mark.parametrize("source", INTERNALS)
def test_the_compat_module_may_use_them(source: str) -> None:
    assert banned_in(source, COMPAT) == []


def test_public_names_are_allowed_everywhere() -> None:
    assert banned_in(PUBLIC, "fastapi_mrtr/integration/tool_call.py") == []
