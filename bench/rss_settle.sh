#!/usr/bin/env bash
# RSS of one server after 1 s, 10 s and 40 s of the rig's echo load (8 connections), to compare how
# the resident set settles for this project and for the rig's stateless floors:
#
#   bench/rss_settle.sh limit_asgi:app      # the raw ASGI floor (../shared/bench/servers)
#   bench/rss_settle.sh limit_fastapi:app   # the FastAPI-route floor
#   bench/rss_settle.sh bench.app:app       # this project
#
# Run bench/run.sh once first: it creates .bench-venv and installs wrk.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
servers="$root/../shared/bench/servers"
port="${PORT:-18790}"
cd "$servers"
PYTHONPATH="$root" taskset -c 0 "$root/.bench-venv/bin/python" -m uvicorn "$1" --host 127.0.0.1 \
  --port "$port" --log-level warning --no-access-log &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
rss=()
for secs in 1 9 30; do  # cumulative: 1 s, 10 s, 40 s
  taskset -c 1 wrk -t 1 -c 8 -d "${secs}s" -s ../echo.lua "http://127.0.0.1:$port/mcp" > /dev/null
  rss+=("$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")")
done
echo "$1: RSS after 1 s, 10 s, 40 s of echo load: ${rss[*]} KiB"
