#!/usr/bin/env bash
# Install the TypeScript SDK v2 peer (the shared rig's servers/peer_ts.mjs) into a bench-only folder,
# .bench-ts at the repository root, never into the test clients' node_modules. Prints the folder,
# which the rig reads as MCP_TS_DIR. Needs Node 20 or newer and npm.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.bench-ts"
server="@modelcontextprotocol/server@2.4.0"
node_pkg="@modelcontextprotocol/node@2.1.2"
if ! node -e "process.exit(Number(process.versions.node.split('.')[0]) < 20 ? 1 : 0)"; then
  echo "bench: the TypeScript peer needs Node 20 or newer" >&2
  exit 1
fi
if [ ! -f "$dir/node_modules/@modelcontextprotocol/server/package.json" ] \
   || [ ! -f "$dir/node_modules/@modelcontextprotocol/node/package.json" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  npm install --silent --no-audit --no-fund --prefix "$dir" "$server" "$node_pkg" >&2
fi
echo "$dir"
