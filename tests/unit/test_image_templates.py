"""Image fields written as templates, expanded per Application (config/image_templates.py), and
how the selection and the planner carry the images a template leaves out."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.config.image_templates import (
    AppContext,
    MissingKey,
    RefCharts,
    RefImages,
    expand_chart,
    expand_spec,
    is_template,
    parse_field,
    spec_has_template,
)
from argocd_image_updater.config.imageupdater import ImageUpdaterError, parse_image_updater
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.kits.gotemplate import TemplateError
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import (
    HelmTarget,
    ImageSpec,
    KustomizeTarget,
    ManifestTarget,
    PluginTarget,
    SkippedImage,
)
from argocd_image_updater.plan.jobs import ImageJob, cycle_scan_keys, plan_scans
from argocd_image_updater.plan.model import ImageReason, ImageResult, Outcome

WHERE = "ImageUpdater argocd/shop field spec.applicationRefs[0].images[0]"
COMPONENT = 'registry.example.com/shop/{{index .AppLabels "component"}}:~1'


def app(
    name: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    images: tuple[str, ...] = (),
) -> Application:
    return Application.from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "argocd",
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": {
                "source": {"repoURL": "https://git.example.com/shop", "path": name},
                "destination": {"namespace": name},
            },
            "status": {"sourceType": "Kustomize", "summary": {"images": list(images)}},
        }
    )


def spec(image: str, alias: str = "web", target: ManifestTarget | None = None) -> ImageSpec:
    return ImageSpec(alias=alias, image=image, target=target, origin=WHERE)


def cr(images: list[dict[str, Any]], pattern: str = "shop-*") -> dict[str, Any]:
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "spec": {"applicationRefs": [{"namePattern": pattern, "images": images}]},
    }


# --- pure expansion --------------------------------------------------------------------------


def test_variables_expand_from_the_application() -> None:
    ctx = AppContext(
        app("shop-cart", {"component": "cart"}, {"team": "payments"}),
    )
    text = "{{.AppNamespace}}/{{.AppName}}/{{index .AppLabels `component`}}"
    assert ctx.expand(text, "imageName") == "argocd/shop-cart/cart"
    assert ctx.expand('{{index .AppAnnotations "team"}}', "alias") == "payments"
    assert ctx.expand("{{.AppLabels.component}}", "alias") == "cart"


def test_text_without_an_action_is_no_template_and_is_returned_as_is() -> None:
    assert not is_template("nginx:~1.25")
    assert not is_template(None)
    assert is_template("x/{{.AppName}}")
    ctx = AppContext(app("a"))
    assert ctx.expand("nginx:~1.25", "imageName") == "nginx:~1.25"
    assert not spec_has_template(spec("nginx"))
    target = ManifestTarget(helm=HelmTarget(name="{{.AppName}}.image"))
    assert spec_has_template(spec("nginx", target=target))


@pytest.mark.parametrize(
    ("text", "kind", "key"),
    [
        ('{{index .AppLabels "component"}}', "label", "component"),
        ("{{.AppLabels.component}}", "label", "component"),
        ('{{index .AppAnnotations "team"}}', "annotation", "team"),
        ('{{if index .AppLabels "component"}}x{{end}}', "label", "component"),
    ],
)
def test_a_missing_label_or_annotation_is_reported_never_expanded_to_empty(
    text: str, kind: str, key: str
) -> None:
    ctx = AppContext(app("shop-1", {"other": "x"}, {"owner": "y"}))
    with pytest.raises(MissingKey) as caught:
        ctx.expand(text, "imageName")
    assert (caught.value.kind, caught.value.key, caught.value.field) == (kind, key, "imageName")
    assert str(caught.value) == f"missing {kind} {key}"


def test_a_present_but_empty_label_is_not_missing() -> None:
    ctx = AppContext(app("a", {"component": ""}))
    assert ctx.expand('x{{index .AppLabels "component"}}', "alias") == "x"


def test_each_template_is_parsed_once_however_many_apps_use_it() -> None:
    parse_field.cache_clear()
    images = RefImages([spec(COMPONENT)])
    for i in range(20):
        found, skipped = images.for_app(app(f"shop-{i}", {"component": f"c{i % 3}"}))
        assert [s.image for s in found] == [f"registry.example.com/shop/c{i % 3}:~1"]
        assert skipped == ()
    assert parse_field.cache_info().misses == 1
    first, _ = images.for_app(app("x", {"component": "c1"}))
    again, _ = images.for_app(app("y", {"component": "c1"}))
    assert first[0] is again[0]  # apps whose templates expand alike share one image value


@pytest.mark.parametrize(
    "text",
    [
        "r.example.com/{{.AppNamespace}}/{{.AppName}}:~1",
        '{{index .AppLabels "component"}}-{{index .AppAnnotations "team"}}',
        "{{ .AppLabels.component }}",
        "{{- .AppName -}} x",
        '{{index .AppLabels "component" | printf "%s-svc"}}',
        '{{if eq .AppName "shop-cart"}}cart{{else}}other{{end}}',
        "{{.AppName | len}}",
    ],
)
def test_the_fast_path_and_the_engine_expand_alike(text: str) -> None:
    application = app("shop-cart", {"component": "cart"}, {"team": "pay"})
    fast = AppContext(application).expand(text, "imageName")
    engine = parse_field(text, "imageName").render(AppContext(application).data)
    assert fast == engine


def test_images_without_templates_are_handed_back_as_they_are() -> None:
    plain = spec("nginx:~1.25")
    found, skipped = RefImages([plain]).for_app(app("a"))
    assert found == (plain,) and found[0] is plain and skipped == ()


def test_every_templatable_field_is_expanded() -> None:
    target = ManifestTarget(
        helm=HelmTarget(name="{{.AppName}}.repo", tag="{{.AppName}}.tag", spec=None)
    )
    found = expand_spec(
        spec("r.example.com/{{.AppName}}", alias="{{.AppName}}-img", target=target),
        AppContext(app("cart")),
    )
    assert isinstance(found, ImageSpec)
    assert (found.alias, found.image) == ("cart-img", "r.example.com/cart")
    assert found.target == ManifestTarget(helm=HelmTarget("cart.repo", "cart.tag", None))
    kustomize = ManifestTarget(kustomize=KustomizeTarget("{{.AppName}}"))
    plugin = ManifestTarget(plugin=PluginTarget(spec="{{.AppNamespace}}_IMAGE"))
    ctx = AppContext(app("cart"))
    k = expand_spec(spec("x", target=kustomize), ctx)
    p = expand_spec(spec("x", target=plugin), ctx)
    assert isinstance(k, ImageSpec) and k.target == ManifestTarget(
        kustomize=KustomizeTarget("cart")
    )
    assert isinstance(p, ImageSpec)
    assert p.target == ManifestTarget(plugin=PluginTarget(spec="argocd_IMAGE"))


def test_missing_key_skips_only_that_image_with_its_reason_and_field() -> None:
    target = ManifestTarget(helm=HelmTarget(name='{{index .AppAnnotations "team"}}'))
    images = RefImages(
        [
            spec(COMPONENT, alias="web"),
            spec("nginx:~1.25", alias="proxy"),
            spec("x", alias="helm", target=target),
        ]
    )
    found, skipped = images.for_app(app("shop-1", {"tier": "front"}))
    assert [s.alias for s in found] == ["proxy"]
    assert skipped == (
        SkippedImage(
            "web",
            COMPONENT,
            f"template: missing label component ({WHERE}.imageName)",
            detail="label component",
        ),
        SkippedImage(
            "helm",
            "x",
            f"template: missing annotation team ({WHERE}.manifestTargets.helm.name)",
            detail="annotation team",
        ),
    )


def test_an_execution_error_or_a_bad_alias_is_that_images_error() -> None:
    ctx = AppContext(app("ab", {"c": "a/b"}))
    failed = expand_spec(spec("{{slice .AppName 0 5}}"), ctx)
    assert isinstance(failed, SkippedImage) and failed.error
    assert failed.message.startswith(f"{WHERE}.imageName: template: imageName:")
    assert "out of range" in failed.message
    bad_alias = expand_spec(spec("x", alias='{{index .AppLabels "c"}}'), ctx)
    assert isinstance(bad_alias, SkippedImage) and bad_alias.error
    assert bad_alias.message.startswith(f"{WHERE}.alias: the template expands to 'a/b'")
    unknown = expand_spec(spec("{{.AppLabel}}"), ctx)
    assert isinstance(unknown, SkippedImage) and "can't evaluate field AppLabel" in unknown.message
    empty = expand_spec(spec('{{index .AppLabels "e"}}'), AppContext(app("x", {"e": ""})))
    assert isinstance(empty, SkippedImage) and "empty image name" in empty.message


def test_two_aliases_expanding_to_the_same_value_keep_the_first() -> None:
    images = RefImages([spec("a", alias="{{.AppName}}"), spec("b", alias="shop")])
    found, skipped = images.for_app(app("shop"))
    assert [s.image for s in found] == ["a"]
    assert len(skipped) == 1 and skipped[0].error and "another image" in skipped[0].message


# --- the ImageUpdater ------------------------------------------------------------------------


def test_template_syntax_errors_name_the_resource_and_the_field() -> None:
    bad = cr(
        [
            {"alias": "ok", "imageName": COMPONENT},
            {"alias": "web", "imageName": "r/{{.AppName"},
            {"alias": "{{nope}}", "imageName": "x"},
            {"alias": "k", "imageName": "y", "manifestTargets": {"kustomize": {"name": "{{"}}},
        ]
    )
    with pytest.raises(ImageUpdaterError) as caught:
        parse_image_updater(bad)
    message = str(caught.value)
    assert message.startswith("invalid ImageUpdater 'argocd/shop': ")
    assert [e.partition(": ")[0] for e in caught.value.errors] == [
        "spec.applicationRefs[0].images[1].imageName",
        "spec.applicationRefs[0].images[2].alias",
        "spec.applicationRefs[0].images[3].manifestTargets.kustomize.name",
    ]
    assert "template: imageName:1:3: unclosed action" in message
    assert 'function "nope" not defined' in message


def test_a_templated_alias_is_accepted_and_a_plain_one_still_checked() -> None:
    parse_image_updater(cr([{"alias": "{{.AppName}}", "imageName": "x"}]))
    with pytest.raises(ImageUpdaterError, match=r"images\[0\]\.alias: 'a/b' does not match"):
        parse_image_updater(cr([{"alias": "a/b", "imageName": "x"}]))


def endpoint_for(registry: str, name: str) -> RegistryEndpoint:
    host = registry or "registry.example.com"
    return RegistryEndpoint(prefix=host, name=host, api_url=f"https://{host}")


def test_one_cr_for_a_generated_fleet_shares_the_scans_and_reports_the_skips() -> None:
    updater = parse_image_updater(cr([{"alias": "web", "imageName": COMPONENT}]))
    fleet = [
        app(
            f"shop-{i}",
            {"component": f"c{i % 3}"},
            images=(f"registry.example.com/shop/c{i % 3}:1.0.0",),
        )
        for i in range(30)
    ]
    fleet.append(app("shop-unlabelled", images=("registry.example.com/shop/c0:1.0.0",)))
    result = select_applications(updater, fleet)
    assert result.error is None and result.skipped == []
    assert len(result.configs) == 31
    jobs = [plan_scans(config, endpoint_for) for config in result.configs]
    keys = cycle_scan_keys(jobs)
    assert sorted(k.repository for k in keys) == ["shop/c0", "shop/c1", "shop/c2"]
    for i, planned in enumerate(jobs[:30]):
        (job,) = planned.items
        assert isinstance(job, ImageJob)
        assert job.repository == f"shop/c{i % 3}"
    (unlabelled,) = jobs[30].items
    assert isinstance(unlabelled, ImageResult)
    assert unlabelled.outcome is Outcome.SKIPPED
    assert unlabelled.reason == ImageReason.TEMPLATE_MISSING_KEY
    assert unlabelled.message.startswith("template: missing label component (")
    assert unlabelled.detail == "label component"
    assert not unlabelled.considered


def test_an_execution_error_is_an_invalid_config_result() -> None:
    updater = parse_image_updater(cr([{"alias": "web", "imageName": "{{slice .AppName 0 99}}"}]))
    (config,) = select_applications(updater, [app("shop-1")]).configs
    (result,) = plan_scans(config, endpoint_for).items
    assert isinstance(result, ImageResult)
    assert (result.outcome, result.reason) == (Outcome.ERROR, ImageReason.INVALID_CONFIG)
    assert result.message.startswith(
        "ImageUpdater argocd/shop field spec.applicationRefs[0].images[0].imageName: template:"
    )


def test_template_error_raised_by_the_engine_is_a_value_error() -> None:
    with pytest.raises(TemplateError):
        parse_field("{{", "imageName")


# --- charts ----------------------------------------------------------------------------------

CHART_WHERE = "ImageUpdater argocd/shop field spec.applicationRefs[0].charts[0]"
CHART = 'oci://registry.example.com/charts/{{index .AppLabels "chart"}}:^1'


def chart(text: str, alias: str = "chart") -> ChartSpec:
    return ChartSpec(alias=alias, chart=text, origin=CHART_WHERE)


def test_chart_references_expand_per_app_and_equal_expansions_share_one_value() -> None:
    charts = RefCharts([chart(CHART, alias="{{.AppName}}"), chart("oci://r.example.com/x/y")])
    found, skipped = charts.for_app(app("shop-1", {"chart": "web"}))
    assert [(c.alias, c.chart) for c in found] == [
        ("shop-1", "oci://registry.example.com/charts/web:^1"),
        ("chart", "oci://r.example.com/x/y"),
    ]
    assert skipped == ()
    again, _ = RefCharts([chart(CHART)]).for_app(app("a", {"chart": "web"}))
    assert expand_chart(chart(CHART), AppContext(app("b", {"chart": "web"}))) == again[0]
    plain = RefCharts([chart("oci://r.example.com/x/y")])
    assert plain.for_app(app("a"))[0] == plain.specs


def test_a_chart_missing_its_label_is_skipped_and_an_alias_may_not_repeat_an_image() -> None:
    charts = RefCharts([chart(CHART), chart("oci://r.example.com/x/y", alias="{{.AppName}}")])
    found, skipped = charts.for_app(app("web"), taken=["web"])
    assert found == ()
    assert skipped[0] == SkippedImage(
        "chart",
        CHART,
        f"template: missing label chart ({CHART_WHERE}.chart)",
        detail="label chart",
    )
    assert skipped[1].error and "another image or chart" in skipped[1].message


def test_chart_template_errors_name_the_field() -> None:
    bad = cr([])
    bad["spec"]["applicationRefs"][0] = {
        "namePattern": "shop-*",
        "charts": [{"alias": "c", "chart": "oci://r/{{.AppName"}],
    }
    with pytest.raises(ImageUpdaterError) as caught:
        parse_image_updater(bad)
    assert caught.value.errors[0].startswith(
        "spec.applicationRefs[0].charts[0].chart: template: chart:1:"
    )


def test_a_skipped_chart_is_reported_with_the_charts_results() -> None:
    updater = cr([])
    updater["spec"]["applicationRefs"][0] = {
        "namePattern": "shop-*",
        "charts": [{"alias": "c", "chart": CHART}],
    }
    (config,) = select_applications(parse_image_updater(updater), [app("shop-1")]).configs
    assert config.charts == () and len(config.skipped_charts) == 1
    jobs = plan_scans(config, endpoint_for)
    (result,) = jobs.charts
    assert isinstance(result, ImageResult)
    assert (result.alias, result.reason) == ("c", ImageReason.TEMPLATE_MISSING_KEY)
    assert result.message.startswith("template: missing label chart (")
