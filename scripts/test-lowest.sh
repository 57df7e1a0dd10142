#!/usr/bin/env bash
# The test suite on the lowest FastAPI, Starlette and pydantic this project supports (the floors
# in pyproject.toml), in a virtual environment of its own. scripts/test.sh
# runs everything on the newest FastAPI the range allows; this run is what exercises the
# branches of fastapi_mrtr/integration/fastapi_compat.py written for older FastAPI.
# Works on a fresh Debian machine with Python, pip and apt (root, or sudo); .ci/run calls it
# after scripts/test.sh. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# The floors of pyproject.toml's ranges (tests/integration/test_fastapi_compat.py checks they agree).
LOWEST_FASTAPI="0.117.1"
LOWEST_STARLETTE="0.46.2"
LOWEST_PYDANTIC="2.13.0"
venv="${MRTR_LOWEST_VENV:-${TMPDIR:-/tmp}/fastapi-mrtr-lowest}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x "$venv/bin/python" ]; then
  if ! python -m venv "$venv" 2>/dev/null; then  # Debian's Python keeps venv in a package of its own
    version="$(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "python$version-venv" >/dev/null
    rm -rf "$venv"
    python -m venv "$venv"
  fi
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[dev]" \
  "fastapi==$LOWEST_FASTAPI" "starlette==$LOWEST_STARLETTE" "pydantic==$LOWEST_PYDANTIC"
"$venv/bin/python" - <<'PY'
import fastapi, pydantic, starlette
print(f"== pytest on FastAPI {fastapi.__version__}, Starlette {starlette.__version__}, pydantic {pydantic.VERSION}")
PY

# Left out here, run on the newest FastAPI by scripts/test.sh:
# - tests/conformance and tests/scaleout: the official conformance suite and the nginx/gunicorn/
#   Redis topology drive the same in-process code paths as tests/engine, tests/integration and
#   tests/transport (which run here in full) and add several minutes, nothing specific to a
#   FastAPI version.
# - tests/client, tests/stdio, tests/legacy_clients and tests/playground: the clients (ours, the
#   terminal client, Node's, the playground page in Chromium) and the stdio pipe sit above the
#   server; the server paths they reach run here through tests/integration, tests/legacy,
#   tests/tasks and tests/auth. They are most of the slow tests (subprocesses, a browser): about
#   thirteen minutes (18 -> 4½) that would test no FastAPI-specific branch.
# - three tests of features older FastAPI does not have: FastAPI's telemetry (0.150 has it),
#   a FastAPI(max_body_size=...) router middleware, and an included router's own route in the
#   scope (newer FastAPI keeps it; older FastAPI copies the route with its prefix, and the plugin
#   then sets that copy, as REST does: tests/integration/test_fastapi_compat.py checks it on every version).
# Starlette's TestClient of this age names anyio.abc.BlockingPortal, which newer anyio deprecates.
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  -W "ignore:The anyio.abc.BlockingPortal alias is deprecated:DeprecationWarning" \
  --ignore=tests/conformance --ignore=tests/scaleout \
  --ignore=tests/client --ignore=tests/stdio --ignore=tests/legacy_clients --ignore=tests/playground \
  --deselect tests/integration/test_direct_call.py::test_fastapi_telemetry_keeps_its_spans_by_taking_the_route \
  --deselect tests/integration/test_tool_route_isolation.py::test_a_router_with_its_own_middleware_keeps_the_guard \
  --deselect tests/integration/test_tool_route_isolation.py::test_an_included_routers_tool_runs_only_its_route \
  "$@"
