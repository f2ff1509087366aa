"""``charts`` in an ImageUpdater's applicationRefs: validation, settings and selection."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.config.imageupdater import (
    MSG_IMAGES_REQUIRED,
    ImageUpdaterError,
    parse_image_updater,
)
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.update_config import UpdateSettings

CHART = "oci://registry.example.com/org/charts/web:^1"


def cr(*refs: dict[str, Any], **spec: Any) -> Any:
    return parse_image_updater(
        {
            "metadata": {"name": "iu", "namespace": "argocd"},
            "spec": {"applicationRefs": list(refs), **spec},
        }
    )


def app(name: str, source_type: str = "Helm") -> Application:
    return Application.from_object(
        {
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {
                "source": {
                    "repoURL": "registry.example.com/org/charts",
                    "chart": "web",
                    "targetRevision": "1.0.0",
                }
            },
            "status": {"sourceType": source_type},
        }
    )


def test_a_ref_may_hold_only_charts() -> None:
    parsed = cr({"namePattern": "web-*", "charts": [{"alias": "web", "chart": CHART}]})
    (ref,) = parsed.spec.application_refs
    assert ref.charts is not None and ref.charts[0].chart == CHART


def test_a_ref_needs_images_or_charts_or_annotations() -> None:
    with pytest.raises(ImageUpdaterError) as err:
        cr({"namePattern": "web-*", "charts": []})
    assert MSG_IMAGES_REQUIRED in str(err.value)
    assert "images or charts" in MSG_IMAGES_REQUIRED


@pytest.mark.parametrize(
    ("ref", "field"),
    [
        (
            {
                "images": [{"alias": "web", "imageName": "nginx"}],
                "charts": [{"alias": "web", "chart": CHART}],
            },
            "charts[0].alias",
        ),
        ({"charts": [{"alias": "a/b", "chart": CHART}]}, "charts[0].alias"),
        ({"charts": [{"alias": "web", "chart": ""}]}, "charts[0].chart"),
        ({"charts": [{"alias": "web"}]}, "charts[0].chart"),
    ],
)
def test_bad_chart_entries_name_their_field(ref: dict[str, Any], field: str) -> None:
    with pytest.raises(ImageUpdaterError) as err:
        cr({"namePattern": "web", **ref})
    assert f"spec.applicationRefs[0].{field}" in str(err.value)


def test_chart_settings_merge_over_the_refs_and_remember_their_field() -> None:
    parsed = cr(
        {
            "namePattern": "web-*",
            "commonUpdateSettings": {"updateStrategy": "newest-build", "ignoreTags": ["*-rc"]},
            "charts": [
                {
                    "alias": "web",
                    "chart": CHART,
                    "commonUpdateSettings": {"allowTags": "regexp:^1\\."},
                }
            ],
        },
        commonUpdateSettings={"pullSecret": "pullsecret:argocd/creds"},
    )
    result = select_applications(parsed, [app("web-1"), app("other")])
    (config,) = result.configs
    assert config.images == ()
    (chart,) = config.charts
    assert chart == ChartSpec(
        "web",
        CHART,
        UpdateSettings(
            strategy="newest-build",
            allow_tags="regexp:^1\\.",
            ignore_tags=("*-rc",),
            pull_secret="pullsecret:argocd/creds",
        ),
    )
    assert chart.settings.where("allow_tags") == (
        "ImageUpdater argocd/iu field spec.applicationRefs[0].charts[0].commonUpdateSettings"
        ".allowTags"
    )
    assert chart.origin == "ImageUpdater argocd/iu field spec.applicationRefs[0].charts[0]"


def test_an_app_of_an_unsupported_source_type_is_kept_for_its_charts() -> None:
    parsed = cr(
        {
            "namePattern": "*",
            "images": [{"alias": "img", "imageName": "nginx"}],
            "charts": [{"alias": "web", "chart": CHART}],
        }
    )
    result = select_applications(parsed, [app("native-oci", source_type="Directory")])
    (config,) = result.configs
    assert config.images == () and len(config.charts) == 1
    assert result.skipped == []
