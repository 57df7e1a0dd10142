#!/usr/bin/env bash
# Installs the 2025-era TypeScript SDK client that tests/legacy_clients drives
# (@modelcontextprotocol/sdk, pinned exactly in tests/legacy_clients/js/package-lock.json) into
# tests/legacy_clients/js/node_modules. Idempotent: a second run with the same lock file does
# nothing. Needs Node >= 20 and npm (the machine's Node 20 is enough).
set -euo pipefail
cd "$(dirname "$0")/../tests/legacy_clients/js"
SDK_VERSION="1.32.2"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install-js-client: $tool not found (Node >= 20 with npm is needed)" >&2; exit 1; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "install-js-client: Node $(node --version) is too old (>= 20 is needed)" >&2
  exit 1
fi
# The lock file is what gets installed; a stamp of it in node_modules says it already was.
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.installed-lock-sha256"
installed="node_modules/@modelcontextprotocol/sdk/package.json"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ] || [ ! -f "$installed" ]; then
  # npm ci installs exactly the lock file (and never rewrites it); .npmrc beside it keeps npm
  # from writing registry URLs into a lock file, should someone regenerate it.
  npm ci --silent --no-audit --no-fund >/dev/null
  echo "$lock_sum" > "$stamp"
fi
if ! grep -q "\"version\": \"${SDK_VERSION}\"" "$installed"; then
  echo "install-js-client: expected @modelcontextprotocol/sdk ${SDK_VERSION} in $PWD/node_modules" >&2
  exit 1
fi
echo "node $(node --version); @modelcontextprotocol/sdk ${SDK_VERSION} in tests/legacy_clients/js/node_modules"
