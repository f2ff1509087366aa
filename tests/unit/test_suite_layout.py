"""The test suite itself: every test module can be collected next to every other."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_base_name() -> None:
    # The test folders are not packages, so pytest names modules by base name alone: a second
    # module with the same name is an "import file mismatch" error when both are collected.
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
