from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.imageupdater import (
    ApplicationRef,
    ImageUpdater,
    parse_image_updater,
)
from argocd_image_updater.config.labels import (
    PatternError,
    Requirement,
    SelectorError,
    check_pattern,
    go_path_match,
    selector_matches,
)
from argocd_image_updater.config.selection import select_applications, sort_refs, specificity
from argocd_image_updater.config.selection_v0 import select_applications_v0
from argocd_image_updater.kits.globs import GlobError, compile_glob
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.update_config import (
    GitSettings,
    HelmTarget,
    ManifestTarget,
    UpdateSettings,
    Verification,
    WriteBack,
)

P = "argocd-image-updater.argoproj.io"
IMAGE_LIST = f"{P}/image-list"


def app(
    name: str,
    *,
    source_type: str = "Kustomize",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    namespace: str = "argocd",
    source: dict[str, Any] | None = None,
) -> Application:
    return Application.from_object(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": {
                "source": source if source is not None else {"repoURL": "https://g/r", "path": name}
            },
            "status": {"sourceType": source_type},
        }
    )


def make_cr(*refs: dict[str, Any], **spec: Any) -> ImageUpdater:
    return parse_image_updater(
        {
            "metadata": {"name": "iu", "namespace": "argocd"},
            "spec": {"applicationRefs": list(refs), **spec},
        }
    )


def ref(pattern: str, *aliases: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namePattern": pattern,
        "images": [{"alias": a, "imageName": f"example.io/{a}:1.x"} for a in aliases or ("web",)],
    }
    out.update(extra)
    return out


def model_ref(pattern: str, selector: dict[str, Any] | None = None) -> ApplicationRef:
    data: dict[str, Any] = {"namePattern": pattern, "useAnnotations": True}
    if selector is not None:
        data["labelSelectors"] = selector
    return ApplicationRef.model_validate(data)


# --- globs (AS-3) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        ("my-app", "my-app", True),
        ("other-app", "my-app", False),
        ("my-app-production", "my-app-*", True),
        ("other-app", "my-app-*", False),
        ("app-v1", "app-v?", True),
        ("app-v12", "app-v?", False),
        ("color-red", "color-[rbg]ed", True),
        ("color-yellow", "color-[rbg]ed", False),
        ("pod-3", "pod-[0-9]", True),
        ("pod-a", "pod-[0-9]", False),
        ("pod-a", "pod-[^0-9]", True),
        ("a/b", "*", False),
        ("a/b", "a/*", True),
        ("a*b", "a\\*b", True),
        ("axb", "a\\*b", False),
        ("", "", True),
        ("x", "", False),
        ("abc", "*c", True),
        ("abcd", "a*b*d", True),
    ],
)
def test_go_path_match(name: str, pattern: str, expected: bool) -> None:
    assert go_path_match(pattern, name) is expected


@pytest.mark.parametrize("pattern", ["my-app-[", "app-[]", "a\\", "[a-]", "[]a]", "x*[", "[-a]"])
def test_malformed_patterns_raise(pattern: str) -> None:
    with pytest.raises(PatternError, match="syntax error in pattern"):
        go_path_match(pattern, "zzz-does-not-match")
    with pytest.raises(PatternError):
        check_pattern(pattern)


@given(st.text(alphabet="ab-*?[]^\\/", max_size=8))
def test_check_pattern_rejects_exactly_the_globs_that_do_not_compile(pattern: str) -> None:
    try:
        compile_glob(pattern)
    except GlobError:
        with pytest.raises(PatternError):
            check_pattern(pattern)
    else:
        check_pattern(pattern)


def _glob_regex(pattern: str) -> str:
    return "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in pattern)


@given(st.text(alphabet="ab*?/", max_size=8), st.text(alphabet="ab/", max_size=8))
def test_stars_and_question_marks_never_cross_slashes(pattern: str, name: str) -> None:
    expected = re.fullmatch(_glob_regex(pattern), name) is not None
    assert go_path_match(pattern, name) is expected


# --- label selectors (AS-5) ---------------------------------------------------------------------


def test_selector_semantics() -> None:
    labels = {"env": "prod", "team": "a"}
    assert selector_matches(None, None, labels)
    assert selector_matches({}, [], {})
    assert selector_matches({"env": "prod"}, None, labels)
    assert not selector_matches({"env": "dev"}, None, labels)
    assert not selector_matches({"tier": "x"}, None, labels)
    assert selector_matches(None, [Requirement("env", "In", ("prod", "stage"))], labels)
    assert not selector_matches(None, [Requirement("env", "In", ("dev",))], labels)
    assert selector_matches(None, [Requirement("env", "NotIn", ("dev",))], labels)
    assert selector_matches(None, [Requirement("tier", "NotIn", ("dev",))], labels)
    assert not selector_matches(None, [Requirement("env", "NotIn", ("prod",))], labels)
    assert selector_matches(None, [Requirement("team", "Exists")], labels)
    assert not selector_matches(None, [Requirement("tier", "Exists")], labels)
    assert selector_matches(None, [Requirement("tier", "DoesNotExist")], labels)
    assert not selector_matches({"env": "prod"}, [Requirement("team", "DoesNotExist")], labels)


@pytest.mark.parametrize(
    ("match_labels", "expressions", "message"),
    [
        (None, [Requirement("env", "In")], "needs at least one value"),
        (None, [Requirement("env", "Exists", ("x",))], "takes no values"),
        (None, [Requirement("env", "Equals", ("x",))], "'Equals' is not a valid operator"),
        ({"bad key!": "x"}, None, "invalid label key 'bad key!'"),
        ({"env": "not valid!"}, None, "invalid label value 'not valid!'"),
        ({"Example.COM/x": "y"}, None, "prefix must be a DNS subdomain"),
    ],
)
def test_invalid_selectors(
    match_labels: dict[str, str] | None, expressions: list[Requirement] | None, message: str
) -> None:
    with pytest.raises(SelectorError, match=message):
        selector_matches(match_labels, expressions, {"env": "prod"})


def test_valid_prefixed_key() -> None:
    assert selector_matches(
        {"app.kubernetes.io/part-of": "argocd"}, None, {"app.kubernetes.io/part-of": "argocd"}
    )


# --- specificity (AS-6) and order (AS-7) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "selector", "score"),
    [
        ("app-one", None, 1_000_007),
        ("app-*", None, 4),
        ("app-prod-*", None, 9),
        ("app-v?", None, 5),
        ("app-[abc]", None, 4),
        ("*", None, 0),
        ("app-one", {}, 1_010_007),
        ("app-one", {"matchLabels": {"env": "prod"}}, 1_010_107),
        ("app-*", {"matchLabels": {"env": "prod"}}, 10_104),
        ("app-*", {"matchExpressions": [{"key": "env", "operator": "Exists"}]}, 10_104),
        (
            "app-*",
            {
                "matchLabels": {"a": "1", "b": "2"},
                "matchExpressions": [{"key": "c", "operator": "Exists"}],
            },
            10_304,
        ),
        ("", None, 1_000_000),
    ],
)
def test_specificity(pattern: str, selector: dict[str, Any] | None, score: int) -> None:
    assert specificity(model_ref(pattern, selector)) == score


@given(st.text(alphabet="ab[]\n*", max_size=12))
def test_specificity_drops_classes_as_the_originals_expression_does(pattern: str) -> None:
    literals = re.sub(r"\[.*?]", "", pattern).replace("*", "").replace("?", "")
    exact = 0 if any(c in pattern for c in "*?[]") else 1_000_000
    assert specificity(model_ref(pattern)) == exact + len(literals.encode())


def test_specificity_of_unclosed_brackets_is_linear() -> None:
    """From every ``[`` no ``]`` closes, a backtracking search scanned to the end."""
    assert specificity(model_ref("\\[" * 100_000)) == 200_000
    assert specificity(model_ref("[" * 100_000 + "\n]")) == 100_002


def test_sort_refs_most_specific_first_and_stable() -> None:
    labels = {"matchLabels": {"env": "prod"}}
    refs = [
        model_ref("app-*"),
        model_ref("app-one"),
        model_ref("*"),
        model_ref("app-one", labels),
        model_ref("app-prod-*"),
        model_ref("app-*", labels),
    ]
    ordered = [(r.name_pattern, r.label_selectors is not None) for r in sort_refs(refs)]
    assert ordered == [
        ("app-one", True),
        ("app-one", False),
        ("app-*", True),
        ("app-prod-*", False),
        ("app-*", False),
        ("*", False),
    ]
    assert [r.name_pattern for r in sort_refs([model_ref("app-*"), model_ref("app-?")])] == [
        "app-*",
        "app-?",
    ]
    assert [r.name_pattern for r in sort_refs([model_ref("app-?"), model_ref("app-*")])] == [
        "app-?",
        "app-*",
    ]
    assert sort_refs(None) == []


# --- selection (AS-8, AS-9, ST-8) ----------------------------------------------------------------


def test_invalid_pattern_fails_the_whole_cr() -> None:
    cr = make_cr(ref("app-prod"), ref("app-["))
    result = select_applications(cr, [app("app-prod")])
    assert result.configs == []
    assert result.error is not None
    assert result.error.startswith("invalid application name pattern 'app-[': syntax error")


def test_no_apps_selects_nothing() -> None:
    result = select_applications(make_cr(ref("*")), [])
    assert (result.configs, result.skipped, result.error) == ([], [], None)


def test_each_app_uses_its_most_specific_ref() -> None:
    cr = make_cr(ref("app-*", "generic"), ref("app-one", "special"), ref("*", "fallback"))
    result = select_applications(cr, [app("app-one"), app("app-two"), app("other")])
    by_app = {c.app.name: ([i.alias for i in c.images], c.name_pattern) for c in result.configs}
    assert by_app == {
        "app-one": (["special"], "app-one"),
        "app-two": (["generic"], "app-*"),
        "other": (["fallback"], "*"),
    }
    assert all(c.origin == "imageupdater argocd/iu" for c in result.configs)
    assert not any(c.is_legacy for c in result.configs)


def test_label_selector_must_match_and_invalid_selector_matches_nothing() -> None:
    cr = make_cr(
        ref("app-*", "labelled", labelSelectors={"matchLabels": {"env": "prod"}}),
        ref(
            "app-one",
            "broken",
            labelSelectors={"matchExpressions": [{"key": "env", "operator": "In"}]},
        ),
        ref("*", "fallback"),
    )
    result = select_applications(cr, [app("app-one", labels={"env": "prod"}), app("app-two")])
    by_app = {c.app.name: c.images[0].alias for c in result.configs}
    assert by_app == {"app-one": "labelled", "app-two": "fallback"}
    assert any("Invalid label selector provided" in w for w in result.warnings)


def test_unsupported_source_type_is_skipped_without_trying_other_refs() -> None:
    cr = make_cr(ref("dir-app", "a"), ref("*", "b"))
    result = select_applications(
        cr, [app("dir-app", source_type="Directory"), app("plug", source_type="Plugin")]
    )
    assert [c.app.name for c in result.configs] == ["plug"]
    reason = "skipping app 'argocd/dir-app' of type 'Directory' because it's not of supported source type"
    assert result.skipped == [("argocd/dir-app", reason)]
    assert reason in result.warnings


def test_write_back_target_forces_a_supported_type() -> None:
    cr = make_cr(
        ref(
            "dir-app",
            writeBackConfig={
                "method": "git",
                "gitConfig": {"writeBackTarget": "helmvalues:values.yaml"},
            },
        )
    )
    result = select_applications(cr, [app("dir-app", source_type="Directory")])
    assert [c.app.name for c in result.configs] == ["dir-app"]
    argocd = make_cr(
        ref("dir-app", writeBackConfig={"gitConfig": {"writeBackTarget": "helmvalues"}})
    )
    assert select_applications(argocd, [app("dir-app", source_type="Directory")]).configs == []


def test_cr_settings_are_merged_into_images() -> None:
    cr = make_cr(
        ref(
            "app-*",
            "web",
            "api",
            commonUpdateSettings={"forceUpdate": True},
            imagesVerification={"enabled": False},
            writeBackConfig={"gitConfig": {"branch": "dev"}},
        ),
        commonUpdateSettings={"updateStrategy": "digest", "ignoreTags": ["x"]},
        writeBackConfig={"method": "git", "gitConfig": {"repository": "https://g/other"}},
        imagesVerification={"cosignKey": {"secretName": "s", "key": "k"}},
    )
    (config,) = select_applications(cr, [app("app-1")]).configs
    web = config.images[0]
    assert web.image == "example.io/web:1.x"
    assert web.settings == UpdateSettings(strategy="digest", force_update=True, ignore_tags=("x",))
    assert web.verification == Verification(False, "s", "k")
    assert config.write_back == WriteBack(
        "git", GitSettings(repository="https://g/other", branch="dev")
    )


def test_bad_write_back_falls_through_to_a_less_specific_ref() -> None:
    cr = make_cr(
        ref("app-one", "special", writeBackConfig={"method": "git:secret:other-ns/creds"}),
        ref("app-*", "generic"),
    )
    result = select_applications(cr, [app("app-one")])
    assert [c.images[0].alias for c in result.configs] == ["generic"]
    assert any(
        w.startswith("Could not create write-back config for app argocd/app-one, skipping:")
        for w in result.warnings
    )


def test_app_without_source_is_not_selected() -> None:
    bare = Application.from_object(
        {"metadata": {"name": "app-x", "namespace": "argocd"}, "status": {"sourceType": "Helm"}}
    )
    result = select_applications(make_cr(ref("*")), [bare])
    assert result.configs == []
    assert any("application source is not defined" in w for w in result.warnings)


ANNOTATED = {
    IMAGE_LIST: "web=nginx:1.x,api=quay.io/org/api",
    f"{P}/update-strategy": "latest",
    f"{P}/force-update": "false",
    f"{P}/web.update-strategy": "semver",
    f"{P}/web.force-update": "true",
    f"{P}/api.allow-tags": "v2.*",
    f"{P}/web.helm.image-name": "image.repository",
    f"{P}/write-back-method": "git",
    f"{P}/git-branch": "main",
}


# ST-8 and AS-9
def test_use_annotations_reads_the_app_annotations() -> None:
    cr = make_cr(
        {
            "namePattern": "legacy-*",
            "useAnnotations": True,
            "commonUpdateSettings": {"updateStrategy": "alphabetical"},
            "writeBackConfig": {"method": "argocd"},
            "imagesVerification": {"enabled": False},
        },
        commonUpdateSettings={"pullSecret": "ignored"},
        imagesVerification={"cosignKey": {"secretName": "s", "key": "k"}},
    )
    (config,) = select_applications(cr, [app("legacy-1", annotations=ANNOTATED)]).configs
    web, api = config.images
    assert web.settings == UpdateSettings(strategy="semver", force_update=True)
    assert api.settings == UpdateSettings(strategy="latest", force_update=False, allow_tags="v2.*")
    assert web.target == ManifestTarget(helm=HelmTarget(name="image.repository"))
    assert config.write_back == WriteBack("git", GitSettings(branch="main"))
    # the CR-level verification is ignored in annotation mode; the ref-level one applies
    assert web.verification == Verification(False)
    assert config.origin == "imageupdater argocd/iu"


def test_use_annotations_app_wide_settings_apply_to_all_images() -> None:
    annotations = {
        IMAGE_LIST: "nginx, redis",
        f"{P}/update-strategy": "digest",
        f"{P}/force-update": "true",
        f"{P}/allow-tags": "v1.*",
        f"{P}/ignore-tags": "dev,test",
        f"{P}/pull-secret": "my-secret",
    }
    cr = make_cr({"namePattern": "*", "useAnnotations": True})
    (config,) = select_applications(cr, [app("a", annotations=annotations)]).configs
    expected = UpdateSettings("digest", True, "v1.*", ("dev", "test"), "my-secret")
    assert [i.settings for i in config.images] == [expected, expected]
    assert [i.verification for i in config.images] == [None, None]
    assert config.write_back == WriteBack()


@pytest.mark.parametrize(
    ("annotations", "warning"),
    [
        ({}, "Could not create image list"),
        ({IMAGE_LIST: " "}, "Could not create image list"),
        (
            {IMAGE_LIST: "web=nginx", f"{P}/web.force-update": "maybe"},
            "Could not create image list",
        ),
        (
            {IMAGE_LIST: "nginx", f"{P}/force-update": "maybe"},
            "Could not create common update settings",
        ),
        (
            {
                IMAGE_LIST: "web=nginx",
                f"{P}/web.helm.image-name": "a",
                f"{P}/web.kustomize.image-name": "b",
            },
            "Could not create image list",
        ),
        (
            {IMAGE_LIST: "nginx", f"{P}/write-back-method": "svn"},
            "Could not create write-back config",
        ),
    ],
)
def test_annotation_errors_fall_through_to_less_specific_ref(
    annotations: dict[str, str], warning: str
) -> None:
    cr = make_cr({"namePattern": "legacy-app", "useAnnotations": True}, ref("legacy-*", "fallback"))
    result = select_applications(cr, [app("legacy-app", annotations=annotations)])
    assert [c.images[0].alias for c in result.configs] == ["fallback"]
    assert any(
        w.startswith(f"{warning} for app argocd/legacy-app, skipping:") for w in result.warnings
    )


def test_annotation_errors_without_fallback_skip_the_app() -> None:
    cr = make_cr({"namePattern": "*", "useAnnotations": True})
    assert select_applications(cr, [app("x")]).configs == []


def test_use_annotations_false_ignores_annotations() -> None:
    cr = make_cr(ref("*", "cr-image"))
    (config,) = select_applications(cr, [app("a", annotations=ANNOTATED)]).configs
    assert [i.alias for i in config.images] == ["cr-image"]
    assert config.write_back == WriteBack()


# --- v0.x selection (AS-1, AS-2, AS-4) ----------------------------------------------------------


def v0_apps() -> list[Application]:
    ann = {IMAGE_LIST: "nginx, quay.io/dexidp/dex:v1.23.0"}
    return [
        app("app1", annotations=ann, labels={"team": "a"}),
        app("app2", annotations=ann, source_type="Plugin"),
        app("app3", source_type="Helm"),
    ]


def test_v0_selects_annotated_helm_and_kustomize_apps() -> None:
    result = select_applications_v0(v0_apps())
    assert [c.app.qualified_name for c in result.configs] == ["argocd/app1"]
    assert len(result.configs[0].images) == 2
    assert result.configs[0].is_legacy
    assert [name for name, _ in result.skipped] == ["argocd/app2"]


def test_v0_name_patterns_and_label() -> None:
    ann = {IMAGE_LIST: "nginx"}
    apps = [
        app("app1", annotations=ann, labels={"team": "a"}),
        app("app2", annotations=ann),
        app("otherapp3", annotations=ann, source_type="Helm"),
    ]
    assert [c.app.name for c in select_applications_v0(apps, ["app*"]).configs] == ["app1", "app2"]
    assert [c.app.name for c in select_applications_v0(apps, ["nomatch", "other*"]).configs] == [
        "otherapp3"
    ]
    invalid = select_applications_v0(apps, ["app1", "app-["])
    assert [c.app.name for c in invalid.configs] == ["app1"]
    assert any("Invalid application name pattern 'app-['" in w for w in invalid.warnings)
    assert [c.app.name for c in select_applications_v0(apps, [], "team=a").configs] == ["app1"]
    bad_label = select_applications_v0(apps, [], "team")
    assert bad_label.configs == []
    assert any("labels should have key=value" in w for w in bad_label.warnings)


def test_v0_kustomization_target_forces_kustomize() -> None:
    ann = {IMAGE_LIST: "nginx", f"{P}/write-back-target": "kustomization:."}
    result = select_applications_v0([app("plug", annotations=ann, source_type="Plugin")])
    assert [c.app.name for c in result.configs] == ["plug"]


# --- the name index ------------------------------------------------------------------------------

_INDEXED = [
    app(name)
    for name in ("web-1", "web-2", "web", "webshop-1", "api-1", "api-2", "w", "web-1x", "[x]")
]


@pytest.mark.parametrize(
    "patterns",
    [
        ["web-*"],
        ["web"],
        ["web-1"],
        ["nothing-*"],
        ["nothing"],
        ["w*"],
        ["*"],
        ["web-?"],
        ["api-*", "web-[12]"],
        ["api-1", "web-*"],
        ["\\[x\\]"],
        ["api-*", "*-1"],
    ],
)
def test_selection_through_the_index_is_the_same_as_without(patterns: list[str]) -> None:
    cr = make_cr(*(ref(p) for p in patterns))
    plain = select_applications(cr, _INDEXED)
    indexed = select_applications(cr, AppIndex(_INDEXED))
    assert [c.app.name for c in indexed.configs] == [c.app.name for c in plain.configs]
    assert indexed.skipped == plain.skipped
    assert indexed.warnings == plain.warnings


def test_the_index_narrows_exact_names_and_prefixes() -> None:
    index = AppIndex(_INDEXED)
    assert [a.name for a in index.candidates(["web-*"])] == ["web-1", "web-2", "web-1x"]
    assert [a.name for a in index.candidates(["api-2", "web"])] == ["web", "api-2"]
    assert index.candidates(["missing"]) == []
    assert index.candidates(["web-?"]) is index.apps  # any other glob: every app
