#!/usr/bin/env bash
# Lint and types: ruff check, ruff format --check, mypy (strict, configured in pyproject.toml).
# Every check runs even when an earlier one fails; any failure fails the run. Takes a few seconds
# after the first mypy run (its cache is .mypy_cache/). scripts/test.sh runs this before pytest.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
echo "== ruff check";  python -m ruff check . || status=1
echo "== ruff format"; python -m ruff format --check . || status=1
echo "== mypy";        python -m mypy || status=1
exit $status
