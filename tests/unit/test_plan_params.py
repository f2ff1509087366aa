"""Parameter edits on an Application source: Helm (HP-*), Kustomize (KI-*), plugin env."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.plan import params
from argocd_image_updater.plan.model import ParamEdit
from argocd_image_updater.plan.params import ParamNames


def helm_source(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"helm": {"parameters": [{"name": n, "value": v} for n, v in pairs]}}


def helm_values(source: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in source["helm"]["parameters"]}


def img(text: str) -> ImageRef:
    return ImageRef.parse(text)


# --- Helm parameter names (HP-1..6) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "name", "tag", "expected"),
    [
        (None, None, None, ParamNames(name="image.name", tag="image.tag")),  # HP-4, HP-6
        ("image.path", None, "image.tag", ParamNames(spec="image.path")),  # HP-2
        (None, "image.name", "image.tag", ParamNames(name="image.name", tag="image.tag")),  # HP-3
        (None, None, "image.tag", ParamNames(name="image.name", tag="image.tag")),  # HP-5
        (None, "a.repo", None, ParamNames(name="a.repo", tag="image.tag")),
        ("", "x.name", "x.tag", ParamNames(name="x.name", tag="x.tag")),
    ],
)
def test_helm_param_names_use_defaults(
    spec: str | None, name: str | None, tag: str | None, expected: ParamNames
) -> None:
    assert ParamNames.helm(spec, name, tag) == expected


def test_plugin_param_names_default_to_image_name_and_tag() -> None:
    assert ParamNames.plugin() == ParamNames(name="IMAGE_NAME", tag="IMAGE_TAG")
    assert ParamNames.plugin(spec="REDIS_IMAGE", name="N") == ParamNames(spec="REDIS_IMAGE")


# --- Helm edits (HP-7..14) --------------------------------------------------------------------


def test_hp7_merge_replaces_in_place_and_keeps_other_params() -> None:
    src = helm_source(
        ("someparam", "somevalue"),
        ("image.name", "foobar"),
        ("otherparam", "othervalue"),
        ("image.tag", "1.2.3"),
    )
    edits = params.helm_edits(src, ParamNames.helm(), img("foobar:1.2.4"))
    assert edits == (
        ParamEdit("helm", "image.name", "foobar", changed=False),
        ParamEdit("helm", "image.tag", "1.2.4", changed=True),
    )
    out = params.apply_edits(src, edits)
    assert [p["name"] for p in out["helm"]["parameters"]] == [
        "someparam",
        "image.name",
        "otherparam",
        "image.tag",
    ]
    assert helm_values(out) == {
        "someparam": "somevalue",
        "image.name": "foobar",
        "otherparam": "othervalue",
        "image.tag": "1.2.4",
    }
    assert src["helm"]["parameters"][3]["value"] == "1.2.3"  # input untouched


def test_hp8_merge_into_empty_list_appends_both() -> None:
    out = params.apply_edits(
        helm_source(), params.helm_edits(helm_source(), ParamNames.helm(), img("foobar:1.2.4"))
    )
    assert out["helm"]["parameters"] == [
        {"name": "image.name", "value": "foobar", "forceString": True},
        {"name": "image.tag", "value": "1.2.4", "forceString": True},
    ]


def test_hp9_set_helm_image_uses_full_name_and_tag_with_force_string() -> None:
    src = helm_source(("image.tag", "1.0.0"), ("image.name", "jannfis/foobar"))
    out = params.apply_edits(
        src, params.helm_edits(src, ParamNames.helm(), img("foobar=jannfis/foobar:1.0.1"))
    )
    assert out["helm"]["parameters"] == [
        {"name": "image.tag", "value": "1.0.1", "forceString": True},
        {"name": "image.name", "value": "jannfis/foobar", "forceString": True},
    ]


def test_hp10_helm_block_without_parameters_gets_both() -> None:
    src: dict[str, Any] = {"helm": {}}
    out = params.apply_edits(src, params.helm_edits(src, ParamNames.helm(), img("a/b:1.0.1")))
    assert helm_values(out) == {"image.name": "a/b", "image.tag": "1.0.1"}


def test_missing_helm_block_is_created() -> None:
    out = params.apply_edits({}, params.helm_edits({}, ParamNames.helm(), img("a/b:1.0.1")))
    assert helm_values(out) == {"image.name": "a/b", "image.tag": "1.0.1"}


def test_hp11_alias_specific_names_are_added_next_to_defaults() -> None:
    src = helm_source(("image.tag", "1.0.0"), ("image.name", "jannfis/foobar"))
    names = ParamNames.helm(name="foobar.image.name", tag="foobar.image.tag")
    out = params.apply_edits(src, params.helm_edits(src, names, img("jannfis/foobar:1.0.1")))
    assert len(out["helm"]["parameters"]) == 4
    assert helm_values(out)["foobar.image.tag"] == "1.0.1"
    assert helm_values(out)["image.tag"] == "1.0.0"


def test_hp13_empty_tag_is_never_written() -> None:
    src = helm_source(
        ("global.image.tag", "mq@sha256:123456"),
        ("global.image.name", "example-registry/docker/frontend-partners"),
    )
    names = ParamNames.helm(name="global.image.name", tag="global.image.tag")
    image = img("frontend-partners=example-registry/docker/frontend-partners")
    edits = params.helm_edits(src, names, image)
    assert [e.name for e in edits] == ["global.image.name"]
    assert helm_values(params.apply_edits(src, edits))["global.image.tag"] == "mq@sha256:123456"


def test_hp14_spec_param_gets_full_name_with_tag() -> None:
    src = helm_source(("image.name", "x"), ("image.tag", "y"))
    edits = params.helm_edits(src, ParamNames.helm(spec="P"), img("nginx:v1.0.0"))
    assert edits == (ParamEdit("helm", "P", "nginx:v1.0.0", changed=True),)
    out = params.apply_edits(src, edits)
    assert out["helm"]["parameters"][-1] == {
        "name": "P",
        "value": "nginx:v1.0.0",
        "forceString": True,
    }
    assert helm_values(out)["image.tag"] == "y"


def test_digest_tag_written_as_tag_at_digest() -> None:
    image = img("docker.io/library/nginx:develop").with_tag("develop", "sha256:" + "a" * 64)
    edits = params.helm_edits({}, ParamNames.helm(), image)
    assert edits[0].value == "docker.io/nginx"
    assert edits[1].value == "develop@sha256:" + "a" * 64


def test_helm_list_index_paths_are_plain_parameter_names() -> None:
    names = ParamNames.helm(name="images[0].name", tag="images[0].tag")
    out = params.apply_edits({}, params.helm_edits({}, names, img("a/b:2")))
    assert helm_values(out) == {"images[0].name": "a/b", "images[0].tag": "2"}


def test_helm_image_reads_current_value() -> None:
    src = helm_source(("image.name", "a/b"), ("image.tag", "1.0"), ("P", "a/b:2"))
    assert params.helm_image(src, ParamNames.helm()) == "a/b:1.0"
    assert params.helm_image(src, ParamNames.helm(spec="P")) == "a/b:2"
    assert params.helm_image(helm_source(("image.name", "a/b")), ParamNames.helm()) == ""
    assert params.helm_image({}, ParamNames.helm()) == ""


# --- Kustomize (KI-1..4, KI-47..52) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("foo=1", "bar=1", False),
        ("foo=1", "bar:1", False),
        ("foo:1", "bar=1", False),
        ("foobar:2", "foo:2", False),
        ("foobar@2", "foo@2", False),
        ("foo=1", "foo=2", True),
        ("foo:1", "foo:2", True),
        ("foo@1", "foo@2", True),
        ("nginx", "nginx", True),
    ],
)
def test_kustomize_match_uses_delimiter_of_argument(a: str, b: str, expected: bool) -> None:
    assert params.kustomize_match(a, b) is expected


def test_ki4_find() -> None:
    images = [
        "a/b:1.0",
        "a/b@sha256:aabb",
        "a/b:latest@sha256:aabb",
        "x/y=busybox",
        "x/y=foo.bar/a/c:0.23",
    ]
    for item in images:
        assert params.kustomize_find(images, item) >= 0
    for needle in ("a/b", "a/b:2", "x/y=foo.bar"):
        assert params.kustomize_find(images, needle) >= 0
    for needle in ("x", "x/y"):
        assert params.kustomize_find(images, needle) == -1


def kustomize_source(*images: str) -> dict[str, Any]:
    return {"kustomize": {"images": list(images)}}


def set_image(src: dict[str, Any], name: str, image: str) -> dict[str, Any]:
    return params.apply_edits(src, params.kustomize_edits(src, name, img(image)))


def test_ki47_existing_entry_replaced() -> None:
    out = set_image(kustomize_source("jannfis/foobar:1.0.0"), "", "jannfis/foobar:1.0.1")
    assert out["kustomize"]["images"] == ["jannfis/foobar:1.0.1"]


def test_ki48_missing_block_created() -> None:
    out = set_image({"path": "x"}, "", "jannfis/foobar:1.0.1")
    assert out == {"path": "x", "kustomize": {"images": ["jannfis/foobar:1.0.1"]}}


def test_ki50_kustomize_name_override() -> None:
    out = set_image(kustomize_source("jannfis/foobar:1.0.0"), "foobar", "jannfis/foobar:1.0.1")
    assert out["kustomize"]["images"] == ["foobar=jannfis/foobar:1.0.1"]


def test_ki51_two_names_sharing_one_image_do_not_collide() -> None:
    src = kustomize_source("service-a=jannfis/foobar:tag-a", "service-b=jannfis/foobar:tag-b")
    out = set_image(src, "service-a", "jannfis/foobar:tag-a@sha256:digesta")
    out = set_image(out, "service-b", "jannfis/foobar:tag-b@sha256:digestb")
    assert out["kustomize"]["images"] == [
        "service-a=jannfis/foobar:tag-a@sha256:digesta",
        "service-b=jannfis/foobar:tag-b@sha256:digestb",
    ]


def test_ki52_current_kustomize_image() -> None:
    src = kustomize_source("jannfis/foobar:1.0.0")
    assert params.kustomize_image(src, "", img("jannfis/foobar:1.0.0")) == "jannfis/foobar:1.0.0"
    src = kustomize_source("service-a=jannfis/foobar:tag-a", "service-b=jannfis/foobar:tag-b")
    image = img("jannfis/foobar:x")
    assert params.kustomize_image(src, "service-a", image) == "service-a=jannfis/foobar:tag-a"
    assert params.kustomize_image(src, "service-b", image) == "service-b=jannfis/foobar:tag-b"
    assert params.kustomize_image(src, "service-c", image) == ""


def test_kustomize_registry_swap_rewrites_same_repository() -> None:
    src = kustomize_source("jannfis/foobar:1.0.1", "jannfis/barbar:1.0.1")
    out = set_image(src, "", "gcr.io/jannfis/foobar:1.0.3")
    out = set_image(out, "", "gcr.io/jannfis/barbar:1.0.3")
    assert out["kustomize"]["images"] == [
        "gcr.io/jannfis/foobar:1.0.3",
        "gcr.io/jannfis/barbar:1.0.3",
    ]


def test_kustomize_edit_reports_unchanged_when_entry_present() -> None:
    src = kustomize_source("foobar=jannfis/foobar:1.0.1")
    (edit,) = params.kustomize_edits(src, "foobar", img("jannfis/foobar:1.0.1"))
    assert edit == ParamEdit("kustomize", "foobar", "foobar=jannfis/foobar:1.0.1", changed=False)
    (edit,) = params.kustomize_edits(src, "", img("jannfis/foobar:1.0.2"))
    assert edit.name == "jannfis/foobar"
    assert edit.changed


# --- Plugin env (HP-16..19) -----------------------------------------------------------------------


def env_values(source: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in source["plugin"]["env"]}


def test_hp16_plugin_name_and_tag_env() -> None:
    src = {
        "plugin": {
            "env": [
                {"name": "REDIS_IMAGE_NAME", "value": "myregistry/redis"},
                {"name": "REDIS_IMAGE_TAG", "value": "6.0.0"},
            ]
        }
    }
    names = ParamNames.plugin(name="REDIS_IMAGE_NAME", tag="REDIS_IMAGE_TAG")
    edits = params.plugin_edits(src, names, img("redis=myregistry/redis:7.0.0"))
    assert [e.changed for e in edits] == [False, True]
    out = params.apply_edits(src, edits)
    assert out["plugin"]["env"] == [
        {"name": "REDIS_IMAGE_NAME", "value": "myregistry/redis"},
        {"name": "REDIS_IMAGE_TAG", "value": "7.0.0"},
    ]


def test_hp17_plugin_spec_env() -> None:
    src = {"plugin": {"name": "cmp", "env": [{"name": "OTHER", "value": "x"}]}}
    names = ParamNames.plugin(spec="REDIS_IMAGE")
    out = params.apply_edits(src, params.plugin_edits(src, names, img("myregistry/redis:7.0.0")))
    assert out["plugin"] == {
        "name": "cmp",
        "env": [
            {"name": "OTHER", "value": "x"},
            {"name": "REDIS_IMAGE", "value": "myregistry/redis:7.0.0"},
        ],
    }


def test_hp18_missing_plugin_block_created() -> None:
    out = params.apply_edits(
        {}, params.plugin_edits({}, ParamNames.plugin(), img("myregistry/redis:7.0.0"))
    )
    assert env_values(out) == {"IMAGE_NAME": "myregistry/redis", "IMAGE_TAG": "7.0.0"}


def test_hp19_plugin_image() -> None:
    src = {
        "plugin": {
            "env": [
                {"name": "IMAGE_NAME", "value": "myregistry/redis"},
                {"name": "IMAGE_TAG", "value": "7.0.0"},
                {"name": "SPEC", "value": "myregistry/redis:6"},
            ]
        }
    }
    assert params.plugin_image(src, ParamNames.plugin()) == "myregistry/redis:7.0.0"
    assert params.plugin_image(src, ParamNames.plugin(spec="SPEC")) == "myregistry/redis:6"
    assert params.plugin_image({}, ParamNames.plugin()) == ""


def test_thaw_copies_deeply() -> None:
    src = {"a": [{"b": 1}], "c": ("x", "y")}
    out = params.thaw(src)
    out["a"][0]["b"] = 2
    assert src["a"][0]["b"] == 1
    assert out["c"] == ["x", "y"]
