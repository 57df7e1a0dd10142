#!/usr/bin/env bash
# The benchmark command: prepare what it needs, then run `python -m bench` (see docs/performance.md).
#
#   bench/run.sh [--secs 8] [--flows 1000,10000,100000] [--skip rig,ts,legacy,memory,tokens]
#
# Needs the shared rig beside the repository (../shared/bench) and, to install wrk, apt (as root
# or with sudo). The venv .bench-venv gets the peers (mcp 2.3.0, FastMCP 4.1.6), uvicorn[standard],
# FastAPI and this project (editable, so it measures the working tree).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [ ! -f ../shared/bench/rig.py ]; then
  echo "bench: the shared rig is missing (expected $(dirname "$root")/shared/bench/rig.py)" >&2
  exit 1
fi

if ! command -v wrk >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq wrk
fi
command -v taskset >/dev/null || { echo "bench: taskset (util-linux) is needed" >&2; exit 1; }

venv="$root/.bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" - <<'PY' 2>/dev/null; then
from importlib.metadata import version
assert version("mcp") == "2.3.0" and version("fastmcp") == "4.1.6"
import fastapi, uvicorn, uvloop, httptools, redis, fastapi_mrtr  # noqa: F401
PY
  "$venv/bin/pip" install -q "mcp==2.3.0" "fastmcp==4.1.6" "uvicorn[standard]" fastapi redis
  "$venv/bin/pip" install -q -e "$root"
fi

# The TypeScript SDK peer, when Node is here: its packages in .bench-ts, never in a test folder.
if command -v node >/dev/null && command -v npm >/dev/null; then
  bash "$root/bench/ts_peer.sh" >/dev/null || echo "bench: the TypeScript peer could not be installed" >&2
fi

exec "$venv/bin/python" -m bench --python "$venv/bin/python" "$@"
