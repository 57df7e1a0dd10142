#!/usr/bin/env bash
# Installs what tests/playground drives: Playwright for Python (pip) and Debian's chromium (apt).
# Playwright never downloads a browser here: the tests launch the system chromium through
# executable_path (tests/playground/conftest.py). Idempotent: a second run installs nothing.
# Needs root or sudo for apt-get.
set -euo pipefail
PLAYWRIGHT_SPEC="playwright>=1.50,<2"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi
if ! python -c "import playwright.sync_api" >/dev/null 2>&1; then
  # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: the pip package itself never fetches one, but say so anyway.
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 python -m pip install -q --disable-pip-version-check "$PLAYWRIGHT_SPEC"
fi
echo "$(chromium --version 2>/dev/null | head -1) at $(command -v chromium);" \
  "playwright $(python -c 'from importlib.metadata import version; print(version("playwright"))')"
