"""A selection with memory hands out last cycle's configuration for an unchanged Application
and selects a changed one afresh, with the same results as a selection without memory."""

from __future__ import annotations

from test_selection import app, make_cr, ref

from argocd_image_updater.config.selection import (
    AppIndex,
    SelectionMemory,
    select_applications,
)


def test_unchanged_apps_get_the_same_configuration_objects() -> None:
    cr = make_cr(ref("shop-*"), ref("shop-broken", labelSelectors={"matchLabels": {"a": "b"}}))
    apps = [app("shop-a"), app("shop-b", source_type="Directory"), app("other")]
    memory = SelectionMemory()
    first = select_applications(cr, AppIndex(apps), memory)
    second = select_applications(cr, AppIndex(apps), memory)
    plain = select_applications(cr, AppIndex(apps))
    assert [c.app.name for c in first.configs] == ["shop-a"]
    assert all(a is b for a, b in zip(first.configs, second.configs, strict=True))
    for result in (second, plain):
        assert (result.configs, result.skipped, result.warnings) == (
            first.configs,
            first.skipped,
            first.warnings,
        )
    assert second.skipped and second.warnings  # shop-b is not of a supported type


def test_a_changed_app_is_selected_again_and_gone_apps_are_forgotten() -> None:
    cr = make_cr(ref("shop-*"))
    memory = SelectionMemory()
    first = select_applications(cr, [app("shop-a"), app("shop-b")], memory)
    labelled = app("shop-a", labels={"team": "x"})  # a new view: the object changed
    second = select_applications(cr, [labelled], memory)
    [config] = second.configs
    assert config.app is labelled and config is not first.configs[0]
    assert len(memory._kept) == 1
