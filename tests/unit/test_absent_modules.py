from __future__ import annotations

import sys

import pytest

from argocd_image_updater.kits.absent_modules import mark_absent


def test_a_missing_module_fails_to_import_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "argocd_image_updater_no_such_module"
    monkeypatch.delitem(sys.modules, name, raising=False)
    mark_absent(name)
    assert name in sys.modules and sys.modules[name] is None
    with pytest.raises(ImportError):
        __import__(name)
    monkeypatch.delitem(sys.modules, name)


def test_an_installed_module_is_left_alone() -> None:
    before = sys.modules.get("json")
    mark_absent("json")
    import json

    assert sys.modules["json"] is json and (before is None or before is json)
