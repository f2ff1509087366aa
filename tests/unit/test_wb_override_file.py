from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from argocd_image_updater.model.application import AppSource, SourceType
from argocd_image_updater.plan.model import ParamEdit
from argocd_image_updater.writeback.override_file import (
    OverrideFileError,
    document_prefix,
    merge_kustomize_images,
    override_format,
    render_override,
)

D_NGINX = "sha256:917381f1e5f4b5ddb5a5ea8e2bbc4b1ebd1d4fbbd17f6d5b1fb0cd8a61e36e34"
D_BITNAMI = "sha256:1a2fe4f8c7d81f3cbad14d3f2be1b2d7a3b64a5bbf44ea0a3e3d56fe7f9c5d1a"


def source(**blocks: Any) -> AppSource:
    return AppSource(
        spec_path=("source",),
        repo_url="https://git/r",
        path="app",
        has_helm="helm" in blocks,
        has_kustomize="kustomize" in blocks,
        has_plugin="plugin" in blocks,
        kept=blocks,
    )


def kustomize(*images: str) -> AppSource:
    return source(kustomize={"images": list(images)})


def helm_edit(name: str, value: str) -> ParamEdit:
    return ParamEdit("helm", name, value, changed=True)


def plugin_edit(name: str, value: str) -> ParamEdit:
    return ParamEdit("plugin", name, value, changed=True, force_string=False)


def kustomize_edit(entry: str) -> ParamEdit:
    return ParamEdit("kustomize", entry.split(":")[0], entry, changed=True)


def load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


# ------------------------------------------------------------------------------- Kustomize


def test_ov5_existing_images_kept_new_appended() -> None:
    result = render_override(
        "kustomize:\n  images:\n  - baz\n", kustomize("foo", "bar"), "Kustomize", []
    )
    assert result == "kustomize:\n  images:\n  - baz\n  - foo\n  - bar\n"


def test_ov6_replaced_in_place_new_appended() -> None:
    existing = "kustomize:\n  images:\n  - existing:latest\n  - updated:old\n"
    result = render_override(existing, kustomize("new", "updated:latest"), "Kustomize", [])
    assert result == "kustomize:\n  images:\n  - existing:latest\n  - updated:latest\n  - new\n"


def test_ov7_explicit_docker_io_is_the_same_image_and_stays_single() -> None:
    text = "kustomize:\n  images:\n  - docker.io/jannfis/foobar:1.0.0\n"
    app = kustomize("jannfis/foobar:1.0.1")
    text = render_override(text, app, "Kustomize", []) or text
    assert text == "kustomize:\n  images:\n  - jannfis/foobar:1.0.1\n"
    for _ in range(3):
        assert render_override(text, app, "Kustomize", []) is None


def test_ov8_no_kustomize_block_writes_nothing() -> None:
    assert render_override(None, source(), "Kustomize", []) is None


def test_ov9_no_original_and_edits_create_the_block() -> None:
    edits = [kustomize_edit("jannfis/foobar:1.0.1"), kustomize_edit("ghcr.io/o/x:2")]
    expected = "kustomize:\n  images:\n  - jannfis/foobar:1.0.1\n  - ghcr.io/o/x:2\n"
    assert render_override(None, source(), "Kustomize", edits) == expected
    assert render_override("{{{ not yaml", source(), "Kustomize", edits) == expected
    assert render_override("", source(), "Kustomize", edits) == expected


@pytest.mark.parametrize(
    "prefix",
    ["---\n", "---\t# header\n", "%YAML 1.2\n---\n", "# generated\n---\n", "# note\n\n"],
)
def test_ov10_leading_block_is_kept(prefix: str) -> None:
    existing = prefix + "kustomize:\n  images:\n  - a:1\n"
    result = render_override(existing, kustomize("b:1"), "Kustomize", [])
    assert result == prefix + "kustomize:\n  images:\n  - a:1\n  - b:1\n"


def test_ov10_indented_marker_is_not_a_marker() -> None:
    result = render_override("   ---\n", kustomize("b:1"), "Kustomize", [])
    assert result == "kustomize:\n  images:\n  - b:1\n"


def test_ov10_no_marker_added() -> None:
    result = render_override(None, kustomize("b:1"), "Kustomize", [])
    assert result is not None and not result.startswith("---")


def test_value_change_after_a_marker_with_a_tab_is_edited_in_place() -> None:
    existing = "---\t# header\nkustomize:\n  images:\n  - a:1  # pinned\n"
    result = render_override(existing, kustomize("a:2"), "Kustomize", [])
    assert result == "---\t# header\nkustomize:\n  images:\n  - a:2  # pinned\n"


def test_value_change_is_edited_in_place() -> None:
    existing = (
        "# managed by the image updater\n"
        "kustomize:\n"
        "  images:\n"
        "    - nginx:1.0   # web\n"
        "\n"
        "    - redis:6\n"
    )
    result = render_override(existing, kustomize("nginx:1.1", "redis:6"), "Kustomize", [])
    assert result == existing.replace("nginx:1.0 ", "nginx:1.1 ")


def test_ov11_kustomize_format_whatever_else_the_app_has() -> None:
    app = source(helm={"parameters": []}, kustomize={})
    edits = [kustomize_edit("docker.io/myorg/myapp:v1.0.0")]
    assert render_override(None, app, "Kustomize", edits) == (
        "kustomize:\n  images:\n  - docker.io/myorg/myapp:v1.0.0\n"
    )


# --------------------------------------------------------------------- KI-33..46 merging


@pytest.mark.parametrize(
    ("existing", "new", "expected"),
    [
        (["nginx:foo"], ["nginx:foo"], ["nginx:foo"]),  # KI-33
        (["nginx:foo"], ["nginx"], ["nginx:foo"]),  # KI-34
        (["nginx"], ["nginx:latest"], ["nginx:latest"]),  # KI-35
        (["nginx:latest"], [f"nginx:latest@{D_NGINX}"], [f"nginx:latest@{D_NGINX}"]),  # KI-36
        (  # KI-37
            ["nginx:latest", f"bitnami/nginx:latest@{D_BITNAMI}"],
            [f"nginx:latest@{D_NGINX}", f"bitnami/nginx@{D_BITNAMI}"],
            [f"nginx:latest@{D_NGINX}", f"bitnami/nginx:latest@{D_BITNAMI}"],
        ),
        (["quay.io/nginx:latest"], ["quay.io/nginx:latest"], ["quay.io/nginx:latest"]),  # 38
        (  # KI-39
            ["quay.io/nginx:latest"],
            ["docker.io/nginx:latest"],
            ["docker.io/nginx:latest", "quay.io/nginx:latest"],
        ),
        (["nginx:foo"], None, ["nginx:foo"]),  # KI-40
        (None, ["nginx:foo"], ["nginx:foo"]),  # KI-41
        (None, None, None),  # KI-42
        ([], ["nginx:foo"], ["nginx:foo"]),  # KI-43
        (["docker.io/library/nginx:1.0.0"], ["nginx:1.0.1"], ["nginx:1.0.1"]),  # KI-44
        (["docker.io/jannfis/foobar:1.0.0"], ["jannfis/foobar:1.0.1"], ["jannfis/foobar:1.0.1"]),
        (  # KI-46
            ["123456.abc.ecr.us-east-1.amazonaws.com/myrepo:v1.0.0"],
            ["123456.abc.ecr.us-east-1.amazonaws.com/myrepo:v1.0.1"],
            ["123456.abc.ecr.us-east-1.amazonaws.com/myrepo:v1.0.1"],
        ),
        (  # override names keep images of one repository apart
            ["a=org/app:1", "b=org/app:1"],
            ["b=org/app:2"],
            ["a=org/app:1", "b=org/app:2"],
        ),
    ],
)
def test_ki33_ki46_merge_kustomize_images(
    existing: list[str] | None, new: list[str] | None, expected: list[str] | None
) -> None:
    result = merge_kustomize_images(existing, new)
    if expected is None:
        assert result is None
    else:
        assert result is not None and sorted(result) == sorted(expected)


# ------------------------------------------------------------------------------------ Helm

HELM_ORIGINAL = "helm:\n  parameters:\n  - name: baz\n    value: baz\n    forcestring: false\n"
UNMANAGED = source(
    helm={
        "parameters": [
            {"name": "foo", "value": "bar", "forceString": True},
            {"name": "bar", "value": "foo", "forceString": True},
        ]
    }
)


def test_ov12_unmanaged_parameters_are_not_written() -> None:
    assert render_override(HELM_ORIGINAL, UNMANAGED, "Helm", []) is None  # file stays as it is


@pytest.mark.parametrize("original", ["", "random content", None])
def test_ov13_empty_or_unparseable_original(original: str | None) -> None:
    assert render_override(original, UNMANAGED, "Helm", []) == "helm:\n  parameters: []\n"


def test_ov14_only_managed_parameters() -> None:
    app = source(
        helm={
            "parameters": [
                {"name": "image.name", "value": "nginx", "forceString": True},
                {"name": "image.tag", "value": "1.2.3", "forceString": True},
                {"name": "replicas", "value": "0"},
            ]
        }
    )
    edits = [helm_edit("image.name", "nginx"), helm_edit("image.tag", "1.2.3")]
    assert render_override(None, app, "Helm", edits) == (
        "helm:\n"
        "  parameters:\n"
        "  - name: image.name\n"
        "    value: nginx\n"
        "    forcestring: true\n"
        "  - name: image.tag\n"
        "    value: 1.2.3\n"
        "    forcestring: true\n"
    )


def test_ov15_no_helm_block_writes_nothing() -> None:
    assert render_override(None, source(), "Helm", []) is None


def test_ov16_merged_by_name_and_sorted() -> None:
    existing = "helm:\n  parameters:\n  - name: foo\n    value: foo\n    forcestring: true\n"
    app = source(helm={})
    result = render_override(
        existing, app, "Helm", [helm_edit("bar", "bar"), helm_edit("baz", "baz")]
    )
    assert result is not None
    assert load(result) == {
        "helm": {
            "parameters": [
                {"name": "bar", "value": "bar", "forcestring": True},
                {"name": "baz", "value": "baz", "forcestring": True},
                {"name": "foo", "value": "foo", "forcestring": True},
            ]
        }
    }


def test_ov17_hydrator_dry_source() -> None:
    dry = AppSource(spec_path=("sourceHydrator", "drySource"), has_helm=True, kept={"helm": {}})
    edits = [helm_edit("image.name", "nginx"), helm_edit("image.tag", "v1.0.0")]
    result = render_override(None, dry, "Helm", edits)
    assert result is not None and "value: v1.0.0" in result


@pytest.mark.parametrize("edits_kind", ["helm"])
def test_ov18_ov25_plugin_app_without_plugin_targets_is_written_as_helm(edits_kind: str) -> None:
    app = source(plugin={"name": "helmfile"})
    edits = [helm_edit("image.name", "myregistry/myapp"), helm_edit("image.tag", "v1.0.0")]
    assert override_format(SourceType.PLUGIN, edits) == edits_kind
    result = render_override(None, app, "Plugin", edits)
    assert result is not None
    assert result.startswith("helm:\n  parameters:\n")
    assert "image.tag" in result and "v1.0.0" in result
    assert "kustomize:" not in result and "plugin:" not in result


def test_helm_value_change_is_edited_in_place() -> None:
    existing = (
        "# do not edit by hand\n"
        "helm:\n"
        "  parameters:\n"
        "  - name: image.name\n"
        "    value: nginx\n"
        "    forcestring: true\n"
        "  - name: image.tag\n"
        "    value: 1.0.0   # current\n"
        "    forcestring: true\n"
    )
    edits = [helm_edit("image.name", "nginx"), helm_edit("image.tag", "1.0.1")]
    result = render_override(existing, source(helm={}), "Helm", edits)
    assert result == existing.replace("1.0.0 ", "1.0.1 ")


def test_helm_value_that_is_not_a_string_is_rewritten_quoted() -> None:
    existing = "helm:\n  parameters:\n  - name: image.tag\n    value: 1.0\n    forcestring: true\n"
    result = render_override(existing, source(helm={}), "Helm", [helm_edit("image.tag", "1.0")])
    assert result == existing.replace("value: 1.0", 'value: "1.0"')
    assert result is not None and load(result)["helm"]["parameters"][0]["value"] == "1.0"


def test_forcestring_change_re_renders() -> None:
    existing = "helm:\n  parameters:\n  - name: image.tag\n    value: v1\n    forcestring: false\n"
    result = render_override(existing, source(helm={}), "Helm", [helm_edit("image.tag", "v1")])
    assert (
        result
        == "helm:\n  parameters:\n  - name: image.tag\n    value: v1\n    forcestring: true\n"
    )


def test_re_render_keeps_other_keys_of_the_file() -> None:
    existing = (
        "---\n"
        "helm:\n"
        "  valuesObject:\n"
        "    replicas: 3\n"
        "  parameters:\n"
        "  - name: zzz\n"
        "    value: keep\n"
        "    forcestring: false\n"
        "kustomize:\n"
        "  namePrefix: dev-\n"
    )
    result = render_override(existing, source(helm={}), "Helm", [helm_edit("image.tag", "1.0")])
    assert result == (
        "---\n"
        "helm:\n"
        "  valuesObject:\n"
        "    replicas: 3\n"
        "  parameters:\n"
        "  - name: image.tag\n"
        '    value: "1.0"\n'
        "    forcestring: true\n"
        "  - name: zzz\n"
        "    value: keep\n"
        "    forcestring: false\n"
        "kustomize:\n"
        "  namePrefix: dev-\n"
    )


@pytest.mark.parametrize(
    "existing",
    ["helm: 5\n", "helm:\n  parameters: nope\n", "helm:\n  parameters:\n  - 1\n", "- a\n"],
)
def test_section_of_the_wrong_shape_is_replaced(existing: str) -> None:
    result = render_override(existing, source(helm={}), "Helm", [helm_edit("a", "b")])
    assert result == "helm:\n  parameters:\n  - name: a\n    value: b\n    forcestring: true\n"


def test_several_documents_are_an_error_naming_the_file() -> None:
    with pytest.raises(
        OverrideFileError, match=r"^app/\.argocd-source-x\.yaml: .*2 YAML documents"
    ):
        render_override(
            "helm: {}\n---\nhelm: {}\n",
            source(helm={}),
            "Helm",
            [helm_edit("a", "b")],
            path="app/.argocd-source-x.yaml",
        )


# ---------------------------------------------------------------------------------- Plugin


def test_ov22_only_managed_env_vars() -> None:
    app = source(
        plugin={
            "env": [
                {"name": "IMAGE_NAME", "value": "myregistry/redis"},
                {"name": "IMAGE_TAG", "value": "7.0.0"},
                {"name": "UNRELATED_VAR", "value": "keep-me"},
            ]
        }
    )
    edits = [plugin_edit("IMAGE_NAME", "myregistry/redis"), plugin_edit("IMAGE_TAG", "7.0.0")]
    assert render_override(None, app, "Plugin", edits) == (
        "plugin:\n"
        "  env:\n"
        "  - name: IMAGE_NAME\n"
        "    value: myregistry/redis\n"
        "  - name: IMAGE_TAG\n"
        "    value: 7.0.0\n"
    )


def test_ov23_merged_by_name_in_file_order() -> None:
    existing = (
        "plugin:\n  env:\n  - name: EXISTING_VAR\n    value: keep\n"
        '  - name: IMAGE_TAG\n    value: "7.0.0"\n'
    )
    app = source(plugin={"env": [{"name": "IMAGE_TAG", "value": "7.0.0"}]})
    result = render_override(existing, app, "Plugin", [plugin_edit("IMAGE_TAG", "8.0.0")])
    assert result is not None
    assert load(result)["plugin"]["env"] == [
        {"name": "EXISTING_VAR", "value": "keep"},
        {"name": "IMAGE_TAG", "value": "8.0.0"},
    ]
    assert result == existing.replace('"7.0.0"', '"8.0.0"')


def test_ov24_no_plugin_block_writes_nothing() -> None:
    assert override_format("Plugin", [plugin_edit("X", "y")]) == "plugin"
    assert render_override(None, source(), "Plugin", [ParamEdit("plugin", "X", "v", False)]) == (
        "plugin:\n  env:\n  - name: X\n    value: v\n"
    )
    assert render_override(None, source(), "Plugin", []) is None


@pytest.mark.parametrize("source_type", ["Directory", "", SourceType.UNKNOWN])
def test_ov26_unsupported_type(source_type: str | SourceType) -> None:
    with pytest.raises(OverrideFileError, match="unsupported application type"):
        render_override(None, source(), source_type, [])


# ------------------------------------------------------------------- document start (KI-32)


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        ("---\nfoo: bar", "---\n"),
        ("--- # header\nfoo: bar", "--- # header\n"),
        ("   ---\nfoo: bar", ""),
        ("\t---\nfoo: bar", ""),
        ("foo: bar", ""),
        ("# c\n---\nfoo: bar", "# c\n---\n"),
        ("%YAML 1.2\n---\nfoo: bar", "%YAML 1.2\n---\n"),
        ("# only a comment\nfoo: bar", "# only a comment\n"),
        ("--- !tag\nfoo: bar", ""),
    ],
)
def test_ki32_document_prefix(text: str, prefix: str) -> None:
    assert document_prefix(text) == prefix
