#!/usr/bin/env bash
# Installs everything the test suite needs and runs all of it: lint, types, unit, end-to-end,
# scale-out (nginx, gunicorn, Redis) and the official MCP conformance suite.
# Works on a fresh Debian machine with Python, pip, Node 20 and apt (root, or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Real services the tests start on loopback (none is started by installing it).
if ! command -v nginx >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nginx-light redis-server >/dev/null
fi

python -m pip install -q --disable-pip-version-check -e ".[dev]"
bash scripts/install-conformance.sh
bash scripts/install-js-client.sh  # @modelcontextprotocol/sdk 1.32.2 for tests/legacy_clients
bash scripts/install-oidc-provider.sh  # oidc-provider 9.13.3: the authorization server of tests/auth
bash scripts/install-browser.sh  # playwright + Debian's chromium for tests/playground

# Every check runs even when an earlier one fails; any failure fails the run.
status=0
bash scripts/check.sh || status=1  # ruff check, ruff format --check, mypy
echo "== pytest"; python -m pytest -q -p no:cacheprovider "$@" || status=1
exit $status
