"""A selection with memory hands out last cycle's configuration for an unchanged Application
and selects a changed one afresh, with the same results as a selection without memory."""

from __future__ import annotations

from test_selection import app, make_cr, ref

from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.selection import SelectionMemory, select_applications


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


def test_an_index_of_the_same_names_finds_the_candidates_where_they_were() -> None:
    cr = make_cr(ref("shop-a"), ref("web-*"))
    apps = [app("shop-a"), app("web-1"), app("other"), app("web-2")]
    memory = SelectionMemory()
    index = AppIndex(apps)
    first = select_applications(cr, index, memory)
    # Newer views of the same names: the positions are shared, the views are the new ones.
    newer = [app("shop-a"), app("web-1", labels={"x": "y"}), app("other"), app("web-2")]
    renewed = index.renewed(newer)
    assert renewed.positions_token is index.positions_token
    second = select_applications(cr, renewed, memory)
    assert [c.app for c in second.configs] == [newer[0], newer[1], newer[3]]
    assert second.configs[0] is not first.configs[0]  # made of the new view
    # Another set of names: a new index, whose candidates are found afresh.
    moved = [app("web-3"), app("shop-a"), app("web-1")]
    third = select_applications(cr, AppIndex(moved), memory)
    plain = select_applications(cr, AppIndex(moved))
    assert [c.app.name for c in third.configs] == [c.app.name for c in plain.configs]
    assert [c.app.name for c in third.configs] == ["web-3", "shop-a", "web-1"]


def test_a_pattern_error_is_found_once_and_reported_every_time() -> None:
    cr = make_cr(ref("shop-["))
    memory = SelectionMemory()
    first = select_applications(cr, AppIndex([app("shop-a")]), memory)
    again = select_applications(cr, AppIndex([app("shop-a")]), memory)
    assert first.error and again.error == first.error and not again.configs
