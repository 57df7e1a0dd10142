#!/usr/bin/env bash
# Installs oidc-provider (the certified OpenID provider for Node, pinned exactly in
# tests/auth/oidc/package-lock.json) into tests/auth/oidc/node_modules, for the OAuth tests that
# start it on loopback (tests/auth/oidc/provider.mjs). Idempotent: a second run with the same lock
# file does nothing. Needs Node >= 20 and npm.
set -euo pipefail
cd "$(dirname "$0")/../tests/auth/oidc"
PROVIDER_VERSION="9.13.3"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install-oidc-provider: $tool not found (Node >= 20 with npm is needed)" >&2; exit 1; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "install-oidc-provider: Node $(node --version) is too old (>= 20 is needed)" >&2
  exit 1
fi
# The lock file is what gets installed; a stamp of it in node_modules says it already was.
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.installed-lock-sha256"
installed="node_modules/oidc-provider/package.json"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ] || [ ! -f "$installed" ]; then
  # npm ci installs exactly the lock file and never rewrites it; .npmrc beside it keeps registry
  # URLs out of a regenerated lock file.
  npm ci --silent --no-audit --no-fund >/dev/null
  echo "$lock_sum" > "$stamp"
fi
if ! grep -q "\"version\": \"${PROVIDER_VERSION}\"" "$installed"; then
  echo "install-oidc-provider: expected oidc-provider ${PROVIDER_VERSION} in $PWD/node_modules" >&2
  exit 1
fi
echo "node $(node --version); oidc-provider ${PROVIDER_VERSION} in tests/auth/oidc/node_modules"
