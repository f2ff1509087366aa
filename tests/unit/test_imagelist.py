"""The image-list annotation (upstream cases AN-1..AN-11, AN-17..AN-24, AN-30, AN-65)."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.imagelist import (
    ImageListEntry,
    ImageListError,
    annotation_alias_key,
    parse_image_list,
)

NGINX = "docker.io/library/nginx:1.21"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(NGINX, [("", NGINX)], id="AN-4"),
        pytest.param(f"web={NGINX}", [("web", NGINX)], id="AN-5"),
        pytest.param(
            f"{NGINX},quay.io/prometheus/node-exporter:v1.5.0",
            [("", NGINX), ("", "quay.io/prometheus/node-exporter:v1.5.0")],
            id="AN-6",
        ),
        pytest.param(
            f"web={NGINX},api=quay.io/myorg/api:v2.0",
            [("web", NGINX), ("api", "quay.io/myorg/api:v2.0")],
            id="AN-7",
        ),
        pytest.param(
            f"web={NGINX},docker.io/library/postgres:14,api=quay.io/myorg/api:v2.0",
            [("web", NGINX), ("", "docker.io/library/postgres:14"), ("api", "quay.io/myorg/api:v2.0")],
            id="AN-8",
        ),
        pytest.param(
            f"  web = {NGINX}  ,  api = quay.io/myorg/api:v2.0  ",
            [("web", NGINX), ("api", "quay.io/myorg/api:v2.0")],
            id="AN-9",
        ),
        pytest.param(
            f"web={NGINX},,api=quay.io/myorg/api:v2.0",
            [("web", NGINX), ("api", "quay.io/myorg/api:v2.0")],
            id="AN-10",
        ),
        pytest.param(f"my-app={NGINX}", [("my-app", NGINX)], id="AN-17"),
        pytest.param(
            "quay.io/prometheus/node-exporter:v1.5.0",
            [("", "quay.io/prometheus/node-exporter:v1.5.0")],
            id="AN-18",
        ),
        pytest.param(
            "web=docker.io/library/nginx@sha256:abc123",
            [("web", "docker.io/library/nginx@sha256:abc123")],
            id="AN-19",
        ),
        pytest.param(f"  ={NGINX}", [("", NGINX)], id="AN-20"),
        pytest.param(
            f"web=nginx:1.21,api=quay.io/myorg/api:v2.0,db={NGINX}",
            [("web", "nginx:1.21"), ("api", "quay.io/myorg/api:v2.0"), ("db", NGINX)],
            id="AN-21-aliases",
        ),
        pytest.param(" foo, bar ", [("", "foo"), ("", "bar")], id="AN-22"),
        pytest.param(
            " foo, bar,baz = qux ", [("", "foo"), ("", "bar"), ("baz", "qux")], id="AN-23-head"
        ),
        pytest.param("foo,bar,baz=qux", [("", "foo"), ("", "bar"), ("baz", "qux")], id="AN-24"),
        pytest.param(
            "nginx, quay.io/dexidp/dex:v1.23.0",
            [("", "nginx"), ("", "quay.io/dexidp/dex:v1.23.0")],
            id="AN-26",
        ),
        pytest.param(
            "web=nginx:>=1.0 <2.0", [("web", "nginx:>=1.0 <2.0")], id="space-and-constraint"
        ),
        pytest.param(
            "jannfis/foobar:>=1.0.1", [("jannfis/foobar:>", "1.0.1")], id="IP-24-first-equals"
        ),
    ],
)  # fmt: skip
def test_parse_image_list(value: str, expected: list[tuple[str, str]]) -> None:
    assert parse_image_list(value) == [ImageListEntry(a, i) for a, i in expected]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(None, "annotation not found", id="AN-1"),
        pytest.param("", "annotation is empty", id="AN-2"),
        pytest.param("  ,  ,  ", "annotation is empty", id="AN-3"),
        pytest.param("web=", "empty image name", id="AN-11"),
        pytest.param("nginx, api = ", "empty image name", id="empty-image-after-alias"),
    ],
)
def test_parse_image_list_errors(value: str | None, message: str) -> None:
    with pytest.raises(ImageListError) as err:
        parse_image_list(value)
    text = str(err.value)
    assert message in text
    assert "argocd-image-updater.argoproj.io/image-list" in text
    assert "[<alias>=]<image>[:<constraint>]" in text
    if value and value.strip(", "):
        assert value.split(",")[-1].strip() in text


@pytest.mark.parametrize(
    ("alias", "key"),
    [
        pytest.param("foo/dummy", "foo_dummy", id="AN-30"),
        pytest.param("dummy", "dummy", id="AN-65-plain"),
        pytest.param("a/b/c", "a_b_c", id="nested"),
        pytest.param("", "", id="empty"),
    ],
)
def test_annotation_alias_key(alias: str, key: str) -> None:
    assert annotation_alias_key(alias) == key
