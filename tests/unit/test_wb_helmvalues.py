from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    HelmTarget,
    ImageSpec,
    ManifestTarget,
    UpdateSettings,
    WriteBack,
)
from argocd_image_updater.plan.model import AppPlan, ImageReason, ImageResult, Outcome, ParamEdit
from argocd_image_updater.writeback.helmvalues import (
    HEADER_COMMENT,
    HelmValuesError,
    ImageValues,
    update_values,
    values_for_plan,
)


def load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def image(
    name: str = "nginx",
    tag: str = "v1.0.0",
    *,
    name_key: str = "image.name",
    tag_key: str = "image.tag",
    label: str = "nginx",
) -> ImageValues:
    return ImageValues(label, name_key=name_key, name_value=name, tag_key=tag_key, tag_value=tag)


def keys(prefix: str, name: str = "nginx", tag: str = "v1.0.0") -> ImageValues:
    return image(name, tag, name_key=f"{prefix}.image.name", tag_key=f"{prefix}.image.tag")


SPEC = ImageValues("nginx", spec_key="image.spec.foo", spec_value="nginx:v1.0.0")


# -------------------------------------------------------------------------- HV table cases


@pytest.mark.parametrize(
    ("original", "images", "expected"),
    [
        (  # HV-1: literal dotted root keys
            "image.name: nginx\nimage.tag: v0.0.0\nreplicas: 1",
            [image()],
            "image.name: nginx\nimage.tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-2: spec key
            "image.spec.foo: nginx:v0.0.0\nreplicas: 1",
            [SPEC],
            "image.spec.foo: nginx:v1.0.0\nreplicas: 1",
        ),
        ("test-value1: one", [SPEC], "test-value1: one\nimage:\n  spec:\n    foo: nginx:v1.0.0"),
        (  # HV-4
            "nginx.image.name: nginx\nnginx.image.tag: v0.0.0\n"
            "redis.image.name: redis\nredis.image.tag: v0.0.0\nreplicas: 1\n",
            [keys("nginx"), keys("redis", "redis")],
            "nginx.image.name: nginx\nnginx.image.tag: v1.0.0\n"
            "redis.image.name: redis\nredis.image.tag: v1.0.0\nreplicas: 1\n",
        ),
        (  # HV-5: nested creation, tag before name
            "test-value1: one",
            [keys("nginx"), keys("redis", "redis")],
            "test-value1: one\nnginx:\n  image:\n    tag: v1.0.0\n    name: nginx\n"
            "redis:\n  image:\n    tag: v1.0.0\n    name: redis",
        ),
        (  # HV-7: three aliases of one image
            "foo.image.name: nginx\nfoo.image.tag: v0.0.0\nbar.image.name: nginx\n"
            "bar.image.tag: v0.0.0\nbbb.image.name: nginx\nbbb.image.tag: v0.0.0\nreplicas: 1\n",
            [keys("foo"), keys("bar"), keys("bbb")],
            "foo.image.name: nginx\nfoo.image.tag: v1.0.0\nbar.image.name: nginx\n"
            "bar.image.tag: v1.0.0\nbbb.image.name: nginx\nbbb.image.tag: v1.0.0\nreplicas: 1\n",
        ),
        (  # HV-8: missing tag key appended to the mapping
            "test-value1: one\nimage:\n  name: nginx\nreplicas: 1",
            [image()],
            "test-value1: one\nimage:\n  name: nginx\n  tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-9: missing name key
            "image:\n  tag: v0.0.0\nreplicas: 1",
            [image()],
            "image:\n  tag: v1.0.0\n  name: nginx\nreplicas: 1",
        ),
        (  # HV-10/HV-11 (default names) and HV-14 (name key not in the file)
            "random: yaml",
            [image(name_key="wrongimage.name")],
            "random: yaml\nimage:\n  tag: v1.0.0\nwrongimage:\n  name: nginx",
        ),
        (  # HV-15
            "random: yaml",
            [image(tag="v0.0.0", tag_key="wrongimage.tag")],
            "random: yaml\nwrongimage:\n  tag: v0.0.0\nimage:\n  name: nginx",
        ),
        (  # HV-19: short form kept
            "image:\n  registry: docker.io\n  name: bitnami/nginx\n  tag: v0.0.0\nreplicas: 1",
            [image("docker.io/bitnami/nginx")],
            "image:\n  registry: docker.io\n  name: bitnami/nginx\n  tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-20: long form kept
            "image:\n  name: docker.io/bitnami/nginx\n  tag: v0.0.0\nreplicas: 1",
            [image("docker.io/bitnami/nginx")],
            "image:\n  name: docker.io/bitnami/nginx\n  tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-21
            "image:\n  name: bitnami/nginx\n  tag: v0.0.0\nreplicas: 1",
            [image("bitnami/nginx")],
            "image:\n  name: bitnami/nginx\n  tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-22
            "image:\n  name: docker.io/myorg/myapp\n  tag: v0.9.0\nreplicas: 3",
            [image("docker.io/myorg/myapp")],
            "image:\n  name: docker.io/myorg/myapp\n  tag: v1.0.0\nreplicas: 3",
        ),
        (  # unsafe values are quoted, in place
            "image:\n  name: app\n  tag: v1\n",
            [image("app", "1.20")],
            'image:\n  name: app\n  tag: "1.20"\n',
        ),
        (  # a digest with the tag
            "image:\n  tag: v1\n",
            [image("app", "v2@sha256:" + "a" * 64, name_key="")],
            "image:\n  tag: v2@sha256:" + "a" * 64 + "\n",
        ),
    ],
)
def test_hv_cases(original: str, images: list[ImageValues], expected: str) -> None:
    assert update_values(original, images) == expected


def test_hv18_blank_file_gets_the_header() -> None:
    assert update_values("\n", [keys("nginx")]) == (
        f"{HEADER_COMMENT}\n\nnginx:\n  image:\n    tag: v1.0.0\n    name: nginx\n"
    )


def test_hv17_hv23_hv26_missing_file_is_created() -> None:
    theme = keys("theme", "docker.io/hello-world")
    assert update_values(None, [theme]) == (
        "# auto generated by argocd image updater\n\n"
        "theme:\n  image:\n    tag: v1.0.0\n    name: docker.io/hello-world\n"
    )
    assert update_values(None, [image(tag="v0.0.0")]) == (
        "# auto generated by argocd image updater\n\nimage:\n  tag: v0.0.0\n  name: nginx\n"
    )


def test_nothing_to_write_into_a_missing_file_gives_none() -> None:
    assert update_values(None, []) is None
    assert update_values(None, [image(name="", tag="")]) is None


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        (  # HV-24: an empty tag is never written
            "image.name: nginx\nimage.tag: v1.0.0\nreplicas: 1",
            None,
        ),
        (  # HV-25
            "image.name: nginx\nreplicas: 1",
            None,
        ),
    ],
)
def test_hv24_hv25_empty_tag(original: str, expected: str | None) -> None:
    assert update_values(original, [image(tag="")]) is expected


def test_unchanged_file_gives_none() -> None:
    assert update_values("image:\n  name: nginx\n  tag: v1.0.0\n", [image()]) is None


def test_hv6_only_given_images_are_written() -> None:
    original = "".join(
        f'{block}:\n  image:\n    repository: repo/{block}\n    tag: "main-0000000"\n'
        for block in ("manager", "session", "reaper", "tokenRotator")
    )
    result = update_values(
        original,
        [
            image(
                "repo/manager",
                "main-1111111",
                name_key="manager.image.repository",
                tag_key="manager.image.tag",
            )
        ],
    )
    assert result is not None
    assert result == original.replace('"main-0000000"', '"main-1111111"', 1)
    assert 'tag: ""' not in result


# ----------------------------------------------------------------- in-place (HV-27..31)

HV27 = """# Default values for myapp.
# This is a YAML-formatted file.

images:
  app: &app-image
    repository: myapp
    tag: v1.0.0  # Current version

  sidecar:
    <<: *app-image
    tag: v1.0.0

replicas:   2     # aligned
"""


def test_hv27_only_the_tags_change() -> None:
    result = update_values(
        HV27,
        [
            image("myapp", "v2.0.0", name_key="images.app.repository", tag_key="images.app.tag"),
            ImageValues("sidecar", tag_key="images.sidecar.tag", tag_value="v2.0.0"),
        ],
    )
    assert result == HV27.replace("v1.0.0", "v2.0.0")
    assert "tag: v2.0.0  # Current version" in result


def test_hv28_block_scalar_kept() -> None:
    original = "motd: |\n  Hello\n\n  World\nconfig.image.tag: v1.0.0\n"
    result = update_values(
        original, [ImageValues("x", tag_key="config.image.tag", tag_value="v2.0.0")]
    )
    assert result == "motd: |\n  Hello\n\n  World\nconfig.image.tag: v2.0.0\n"


def test_hv29_hv30_quoted_tag_and_marker() -> None:
    original = '---\nconfig:\n  image:\n    tag: "v1.0.0"\n'
    result = update_values(
        original, [ImageValues("x", tag_key="config.image.tag", tag_value="v2.0.0")]
    )
    assert result == '---\nconfig:\n  image:\n    tag: "v2.0.0"\n'
    assert load(result)["config"]["image"]["tag"] == "v2.0.0"


def test_hv31_index_on_a_mapping_is_an_error_naming_file_key_and_image() -> None:
    original = "foo:\n  tag: v1.0.0\n"
    with pytest.raises(HelmValuesError) as err:
        update_values(
            original,
            [image(tag="v2", tag_key="foo[2].tag", label="web")],
            path="charts/values.yaml",
        )
    message = str(err.value)
    assert message.startswith("charts/values.yaml: ")
    assert "'foo[2].tag'" in message and "'web'" in message and "not a sequence" in message


def test_hv16_scalar_document_is_an_error() -> None:
    with pytest.raises(HelmValuesError, match="not a mapping"):
        update_values("random content", [image()])


@pytest.mark.parametrize(
    ("original", "key", "message"),
    [
        ("images:\n- tag: a\n", "images[1].tag", "out of range"),
        ("images:\n- tag: a\n", "images.tag", "sequence"),
        ("image:\n  attributes: v1\n", "image.attributes.tag", "not a mapping"),
        ("image:\n  tag:\n    x: 1\n", "image.tag", "not a scalar"),
        ("a: [\n", "a", "invalid YAML"),
    ],
)
def test_bad_paths_are_errors(original: str, key: str, message: str) -> None:
    with pytest.raises(HelmValuesError, match=message):
        update_values(original, [ImageValues("x", tag_key=key, tag_value="v2")])


def test_a_failing_write_leaves_no_partial_result() -> None:
    original = "image:\n  tag: v1\nother: x\n"
    with pytest.raises(HelmValuesError):
        update_values(
            original,
            [
                ImageValues("a", tag_key="image.tag", tag_value="v2"),
                ImageValues("b", tag_key="other.tag", tag_value="v2"),
            ],
        )


# ------------------------------------------------------------------------- values for a plan


def application(params: list[dict[str, Any]] | None = None) -> Application:
    helm: dict[str, Any] = {"parameters": params} if params else {}
    return Application.from_object(
        {
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {"source": {"repoURL": "https://git/r", "path": "chart", "helm": helm}},
            "status": {"sourceType": "Helm"},
        }
    )


def config(app: Application, *specs: ImageSpec) -> AppUpdateConfig:
    wb = WriteBack(method="git", git=GitSettings(write_back_target="helmvalues"))
    return AppUpdateConfig(app=app, images=specs, write_back=wb)


def result(
    spec: ImageSpec, outcome: Outcome, reason: ImageReason, current: str | None
) -> ImageResult:
    return ImageResult(spec.alias, spec.image, current, None, outcome, reason, "")


def plan(results: list[ImageResult], managed: list[ParamEdit]) -> AppPlan:
    return AppPlan.build(
        app_name="web",
        app_namespace="argocd",
        source_path=("spec", "source"),
        source_type="Helm",
        results=results,
        managed=managed,
    )


def helm_target(name: str, tag: str) -> ManifestTarget:
    return ManifestTarget(helm=HelmTarget(name=name, tag=tag))


def test_values_for_plan_writes_checked_images_only() -> None:
    manager = ImageSpec("manager", "repo/manager", target=helm_target("m.repository", "m.tag"))
    session = ImageSpec("session", "repo/session", target=helm_target("s.repository", "s.tag"))
    broken = ImageSpec("broken", "repo/broken", target=helm_target("b.repository", "b.tag"))
    p = plan(
        [
            result(manager, Outcome.UPDATED, ImageReason.UPDATED, "repo/manager:main-0000000"),
            result(session, Outcome.SKIPPED, ImageReason.NOT_LIVE, None),
            result(broken, Outcome.ERROR, ImageReason.REGISTRY_ERROR, "repo/broken:v1"),
        ],
        [
            ParamEdit("helm", "m.repository", "repo/manager", changed=False),
            ParamEdit("helm", "m.tag", "main-1111111", changed=True),
        ],
    )
    values = values_for_plan(config(application(), manager, session, broken), p)
    assert values == (
        ImageValues(
            "manager",
            name_key="m.repository",
            name_value="repo/manager",
            tag_key="m.tag",
            tag_value="main-1111111",
        ),
    )


def test_values_for_plan_falls_back_to_app_parameters_then_the_live_image() -> None:
    spec = ImageSpec("nginx", "nginx")
    p = plan([result(spec, Outcome.UP_TO_DATE, ImageReason.UP_TO_DATE, "nginx:v0.0.0")], [])
    assert values_for_plan(config(application(), spec), p) == (
        ImageValues(
            "nginx",
            name_key="image.name",
            name_value="nginx",
            tag_key="image.tag",
            tag_value="v0.0.0",
        ),
    )
    app = application([{"name": "image.tag", "value": "v0.0.1", "forceString": True}])
    assert values_for_plan(config(app, spec), p)[0].tag_value == "v0.0.1"


def test_values_for_plan_spec_key() -> None:
    spec = ImageSpec(
        "web", "ghcr.io/org/web", target=ManifestTarget(helm=HelmTarget(spec="web.image"))
    )
    p = plan(
        [result(spec, Outcome.UPDATED, ImageReason.UPDATED, "ghcr.io/org/web:1.0")],
        [ParamEdit("helm", "web.image", "ghcr.io/org/web:1.1", changed=True)],
    )
    values = values_for_plan(config(application(), spec), p)
    assert values == (ImageValues("web", spec_key="web.image", spec_value="ghcr.io/org/web:1.1"),)
    assert update_values("web:\n  image: ghcr.io/org/web:1.0\n", values) == (
        "web:\n  image: ghcr.io/org/web:1.1\n"
    )


def test_values_for_plan_forced_image_without_live_image() -> None:
    spec = ImageSpec("x", "org/x", settings=UpdateSettings(force_update=True))
    p = plan(
        [result(spec, Outcome.UPDATED, ImageReason.UPDATED, None)],
        [
            ParamEdit("helm", "image.name", "org/x", changed=True),
            ParamEdit("helm", "image.tag", "2.0", changed=True),
        ],
    )
    (values,) = values_for_plan(config(application(), spec), p)
    assert (values.name_value, values.tag_value) == ("org/x", "2.0")
