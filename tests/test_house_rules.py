"""The house rules CONTRIBUTING.md states that no linter checks: module sizes and its table of test folders."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fastapi_mrtr"
LIMIT = 450
TRANSPORT_LIMIT = 300


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(paths: list[Path], limit: int) -> list[str]:
    return [f"{path.relative_to(ROOT)}: {lines_of(path)}" for path in paths if lines_of(path) > limit]


def test_no_module_is_over_450_lines_and_none_in_transport_over_300() -> None:
    assert oversized(sorted(PACKAGE.rglob("*.py")), LIMIT) == []
    assert oversized(sorted((PACKAGE / "transport").rglob("*.py")), TRANSPORT_LIMIT) == []


def test_the_size_check_can_fail() -> None:
    assert oversized([PACKAGE / "app.py"], 10) == [f"fastapi_mrtr/app.py: {lines_of(PACKAGE / 'app.py')}"]


def test_contributing_lists_every_test_folder() -> None:
    listed = set(re.findall(r"^\| `tests/([a-z_]+)/` \|", (ROOT / "CONTRIBUTING.md").read_text(), re.MULTILINE))
    folders = {
        path.name
        for path in (ROOT / "tests").iterdir()
        if path.is_dir() and not path.name.startswith((".", "__")) and any(path.iterdir())
    }
    assert folders - listed == set(), "CONTRIBUTING.md's table of test folders misses these"
    assert listed - folders == set(), "CONTRIBUTING.md's table lists folders that are gone"
