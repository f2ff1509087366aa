"""Image reference parsing and rendering (upstream cases IP-1..IP-49, TG-3..TG-8)."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.image import (
    ImageRef,
    ImageRefError,
    extract_short_form,
    has_registry_prefix,
    match_for_digest_update,
    tags_equal,
)

HEX64 = "1234567890abcdef" * 4


@pytest.mark.parametrize(
    ("text", "registry", "alias", "name", "tag", "digest", "full_with_tag", "full"),
    [
        pytest.param(
            "jannfis/test-image:0.1", "", "", "jannfis/test-image", "0.1", "",
            "jannfis/test-image:0.1", "jannfis/test-image", id="IP-1",
        ),
        pytest.param(
            "test-image", "", "", "test-image", None, "", "test-image", "test-image", id="IP-2"
        ),
        pytest.param(
            "library/test-image", "", "", "library/test-image", None, "",
            "library/test-image", "library/test-image", id="IP-3",
        ),
        pytest.param(
            "harbor.example.com/library/test-image:0.1", "harbor.example.com", "",
            "library/test-image", "0.1", "", "harbor.example.com/library/test-image:0.1",
            "harbor.example.com/library/test-image", id="IP-4",
        ),
        pytest.param(
            "harbor.example.com/library/nested/test-image:0.1", "harbor.example.com", "",
            "library/nested/test-image", "0.1", "",
            "harbor.example.com/library/nested/test-image:0.1",
            "harbor.example.com/library/nested/test-image", id="IP-5",
        ),
        pytest.param(
            "gcr.io/jannfis/test-image:0.1", "gcr.io", "", "jannfis/test-image", "0.1", "",
            "gcr.io/jannfis/test-image:0.1", "gcr.io/jannfis/test-image", id="IP-6",
        ),
        pytest.param(
            "docker.io/jannfis/test-image:0.1", "docker.io", "", "jannfis/test-image", "0.1", "",
            "docker.io/jannfis/test-image:0.1", "docker.io/jannfis/test-image", id="IP-7",
        ),
        pytest.param(
            "gcr.io/jannfis/test-image@sha256:abcde", "gcr.io", "", "jannfis/test-image", None,
            "sha256:abcde", "gcr.io/jannfis/test-image@sha256:abcde",
            "gcr.io/jannfis/test-image", id="IP-9",
        ),
        pytest.param(
            "gcr.io/jannfis/test-image:test-tag@sha256:abcde", "gcr.io", "",
            "jannfis/test-image", "test-tag", "sha256:abcde",
            "gcr.io/jannfis/test-image:test-tag@sha256:abcde", "gcr.io/jannfis/test-image",
            id="IP-11",
        ),
        pytest.param(
            f"gcr.io/jannfis/test-image:latest-bookworm@sha256:{HEX64}", "gcr.io", "",
            "jannfis/test-image", "latest-bookworm", f"sha256:{HEX64}",
            f"gcr.io/jannfis/test-image:latest-bookworm@sha256:{HEX64}",
            "gcr.io/jannfis/test-image", id="IP-12",
        ),
        pytest.param(
            f"gcr.io/jannfis/test-image@sha256:{HEX64}", "gcr.io", "", "jannfis/test-image",
            None, f"sha256:{HEX64}", f"gcr.io/jannfis/test-image@sha256:{HEX64}",
            "gcr.io/jannfis/test-image", id="IP-13",
        ),
        pytest.param(
            "jannfis/orig-image=gcr.io/jannfis/test-image:0.1", "gcr.io", "jannfis/orig-image",
            "jannfis/test-image", "0.1", "", "gcr.io/jannfis/test-image:0.1",
            "gcr.io/jannfis/test-image", id="IP-14",
        ),
        pytest.param(
            "ghcr.io:4567/jannfis/orig-image=gcr.io:1234/jannfis/test-image:0.1", "gcr.io:1234",
            "ghcr.io:4567/jannfis/orig-image", "jannfis/test-image", "0.1", "",
            "gcr.io:1234/jannfis/test-image:0.1", "gcr.io:1234/jannfis/test-image", id="IP-15",
        ),
        pytest.param(
            "jannfis/orig-image=gcr.io/jannfis/test-image", "gcr.io", "jannfis/orig-image",
            "jannfis/test-image", None, "", "gcr.io/jannfis/test-image",
            "gcr.io/jannfis/test-image", id="IP-16",
        ),
        pytest.param(
            "classic-web=registry:5000/classic-web", "registry:5000", "classic-web",
            "classic-web", None, "", "registry:5000/classic-web", "registry:5000/classic-web",
            id="IP-17",
        ),
        pytest.param("nginx", "", "", "nginx", None, "", "nginx", "nginx", id="IP-18"),
        pytest.param(
            "quay.io/dexidp/dex:v1.23.0", "quay.io", "", "dexidp/dex", "v1.23.0", "",
            "quay.io/dexidp/dex:v1.23.0", "quay.io/dexidp/dex", id="IP-19",
        ),
        pytest.param(
            "foobar=gcr.io/jannfis/foobar:>=1.0.1", "gcr.io", "foobar", "jannfis/foobar",
            ">=1.0.1", "", "gcr.io/jannfis/foobar:>=1.0.1", "gcr.io/jannfis/foobar", id="IP-20",
        ),
        pytest.param(
            "jannfis/foobar:~1.0.0", "", "", "jannfis/foobar", "~1.0.0", "",
            "jannfis/foobar:~1.0.0", "jannfis/foobar", id="IP-21",
        ),
        pytest.param(
            "jannfis/foobar:1.0.x", "", "", "jannfis/foobar", "1.0.x", "",
            "jannfis/foobar:1.0.x", "jannfis/foobar", id="IP-22-hub",
        ),
        pytest.param(
            "example.io/jannfis/example:1.0.x", "example.io", "", "jannfis/example", "1.0.x", "",
            "example.io/jannfis/example:1.0.x", "example.io/jannfis/example", id="IP-22-registry",
        ),
        pytest.param(
            "docker.io/library/nginx:1.21", "docker.io", "", "nginx", "1.21", "",
            "docker.io/nginx:1.21", "docker.io/nginx", id="IP-23",
        ),
        pytest.param(
            "jannfis/foobar:>=1.0.1", "", "jannfis/foobar:>", "1.0.1", None, "", "1.0.1",
            "1.0.1", id="IP-24",
        ),
        # Beyond the upstream table: both parse paths normalise Docker Hub the same way.
        pytest.param(
            "docker.io/library/nginx:~1.21", "docker.io", "", "nginx", "~1.21", "",
            "docker.io/nginx:~1.21", "docker.io/nginx", id="hub-constraint-strips-library",
        ),
        pytest.param(
            "index.docker.io/bitnami/nginx:1.2", "", "", "bitnami/nginx", "1.2", "",
            "bitnami/nginx:1.2", "bitnami/nginx", id="legacy-hub-host",
        ),
        pytest.param(
            "quay.io/library/nginx", "quay.io", "", "library/nginx", None, "",
            "quay.io/library/nginx", "quay.io/library/nginx", id="other-registry-keeps-library",
        ),
        pytest.param(
            "localhost:5000/app:~1.0", "localhost:5000", "", "app", "~1.0", "",
            "localhost:5000/app:~1.0", "localhost:5000/app", id="constraint-with-port",
        ),
        pytest.param(
            "localhost/app:1.0", "localhost", "", "app", "1.0", "", "localhost/app:1.0",
            "localhost/app", id="localhost",
        ),
        pytest.param(
            "web=nginx:>=1.0 <2.0", "", "web", "nginx", ">=1.0 <2.0", "", "nginx:>=1.0 <2.0",
            "nginx", id="space-and-constraint",
        ),
        pytest.param(
            "  web = nginx:1.2  ", "", "web", "nginx", "1.2", "", "nginx:1.2", "nginx",
            id="trimmed",
        ),
        pytest.param(
            "=nginx:1.2", "", "", "nginx", "1.2", "", "nginx:1.2", "nginx", id="empty-alias",
        ),
    ],
)  # fmt: skip
def test_parse(
    text: str,
    registry: str,
    alias: str,
    name: str,
    tag: str | None,
    digest: str,
    full_with_tag: str,
    full: str,
) -> None:
    ref = ImageRef.parse(text)
    assert (ref.registry, ref.alias, ref.name, ref.tag, ref.digest) == (
        registry,
        alias,
        name,
        tag,
        digest,
    )
    assert ref.full_name_with_tag == full_with_tag
    assert ref.full_name == full
    assert ref.original == text


def test_ip8_registry_is_not_doubled() -> None:
    ref = ImageRef("docker.io", "docker.io/jannfis/test-image", "0.1")
    assert ref.full_name_with_tag == "docker.io/jannfis/test-image:0.1"
    assert ref.full_name == "docker.io/jannfis/test-image"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("gcr.io/jannfis/test-image@sha256:abcde", "latest@sha256:abcde", id="IP-10"),
        pytest.param(
            "gcr.io/jannfis/test-image:test-tag@sha256:abcde", "test-tag@sha256:abcde", id="IP-11"
        ),
        pytest.param(
            f"gcr.io/jannfis/test-image@sha256:{HEX64}", f"latest@sha256:{HEX64}", id="IP-13"
        ),
        pytest.param("x/test-tag:test-tag", "test-tag", id="IP-30-no-digest"),
        pytest.param("x/y", "", id="no-tag"),
    ],
)
def test_tag_with_digest(text: str, expected: str) -> None:
    assert ImageRef.parse(text).tag_with_digest == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("jannfis/argocd=jannfis/orig-image:0.1", id="IP-25"),
        pytest.param("jannfis/argocd=gcr.io/jannfis/orig-image:0.1", id="IP-26"),
        pytest.param("jannfis/argocd=gcr.io/jannfis/orig-image", id="IP-27"),
    ],
)
def test_str_round_trips(text: str) -> None:
    assert str(ImageRef.parse(text)) == text


def test_ip29_with_tag_keeps_identity_but_not_original() -> None:
    ref = ImageRef.parse("jannfis/argocd=jannfis/orig-image:0.1")
    new = ref.with_tag("0.2")
    assert str(new) == "jannfis/argocd=jannfis/orig-image:0.2"
    assert new.original == ""
    pinned = ref.with_tag("0.2", "sha256:abc")
    assert pinned.tag_with_digest == "0.2@sha256:abc"
    assert pinned.full_name_with_tag == "jannfis/orig-image:0.2@sha256:abc"


def test_ip30_tag_and_digest_split() -> None:
    ref = ImageRef.parse("x/y:test-tag@sha256:abcde")
    assert (ref.tag, ref.digest) == ("test-tag", "sha256:abcde")


def test_ip32_list_rendering() -> None:
    refs = [ImageRef.parse("foo/bar:0.1"), ImageRef.parse("alias=foo/bar:0.2")]
    assert ",".join(str(r) for r in refs) == "foo/bar:0.1,alias=foo/bar:0.2"
    assert [r.original for r in refs] == ["foo/bar:0.1", "alias=foo/bar:0.2"]


def test_ip33_matches_registry_and_name_only() -> None:
    listed = [ImageRef.parse(t) for t in ("a/a:0.1", "a/b:1.2", "x/y=foo.bar/a/c:0.23")]
    for entry in listed:
        needle = ImageRef.parse(entry.original)
        assert [e for e in listed if e.matches(needle)] == [entry]
    assert not any(e.matches(ImageRef.parse("foo/bar")) for e in listed)
    assert ImageRef.parse("a/a:0.9").matches(listed[0])
    assert ImageRef.parse("other=a/a").matches(listed[0])


@pytest.mark.parametrize(
    ("a", "b", "same_repo", "same_tag"),
    [
        pytest.param("x/foo:1", "x/foo:1", True, True, id="IP-35-same"),
        pytest.param("x/foo:1", "x/foo:2", True, False, id="IP-35-other-tag"),
        pytest.param("x/foo:1", "x/bar:1", False, True, id="IP-36"),
        pytest.param("x/bar:1", "docker.io/x/bar:1", False, True, id="IP-37"),
        pytest.param("nginx", "quay.io/nginx", False, True, id="registry-differs"),
    ],
)
def test_ip35_37_matching(a: str, b: str, same_repo: bool, same_tag: bool) -> None:
    ra, rb = ImageRef.parse(a), ImageRef.parse(b)
    assert ra.matches(rb) is same_repo and rb.matches(ra) is same_repo
    assert tags_equal(ra.tag, ra.digest, rb.tag, rb.digest) is same_tag


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("   ", "empty", id="blank"),
        pytest.param("web=", "no image after alias 'web='", id="alias-only"),
        pytest.param(":tag", "repository name is empty", id="tag-only"),
        pytest.param("Nginx:1.0", "'Nginx' must be lowercase", id="upper-case"),
        pytest.param("gcr.io/Jannfis/app", "'Jannfis/app' must be lowercase", id="upper-path"),
        pytest.param("ngi nx:1.0", "'ngi nx' contains whitespace", id="whitespace"),
        pytest.param("nginx:", "tag after ':' is empty", id="empty-tag"),
        pytest.param("nginx@", "digest after '@' is empty", id="empty-digest"),
        pytest.param("my_reg.io/app:~1", "registry 'my_reg.io'", id="bad-registry"),
        pytest.param("invalid==foo", "'=foo' is not valid", id="IP-28-garbage"),
        pytest.param("a//b", "'a//b' is not valid", id="empty-component"),
        pytest.param(
            "nginx:>=1.0 <2.0", "needs one: <alias>=<image>:<constraint>", id="IP-24-hint"
        ),
    ],
)
def test_parse_errors_name_the_input(text: str, problem: str) -> None:
    with pytest.raises(ImageRefError) as err:
        ImageRef.parse(text)
    message = str(err.value)
    assert f"'{text}'" in message
    assert problem in message
    assert "[<alias>=][<registry>/]<name>" in message


def test_is_docker_hub() -> None:
    assert ImageRef.parse("nginx").is_docker_hub
    assert ImageRef.parse("docker.io/bitnami/nginx").is_docker_hub
    assert not ImageRef.parse("quay.io/bitnami/nginx").is_docker_hub


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, id=f"IP-39-{n or 'empty'}")
        for n in [
            "bitnami/nginx", "jannfis/test-image", "library/test-image", "nginx", "test-image",
            "", "org/repo", "/image", "localhost:5000/image",
        ]
    ],
)  # fmt: skip
def test_has_registry_prefix_false(name: str) -> None:
    assert not has_registry_prefix(name)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, id=f"IP-40-{n}")
        for n in [
            "docker.io/bitnami/nginx", "gcr.io/myproject/image", "registry.example.com/image",
            "quay.io/org/repo", "192.168.1.1:5000/image", "10.0.0.1/image",
            "my.registry.example.com/image", "registry.example.com:5000/image",
        ]
    ],
)  # fmt: skip
def test_has_registry_prefix_true(name: str) -> None:
    assert has_registry_prefix(name)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        pytest.param("docker.io/bitnami/nginx", "bitnami/nginx", id="IP-41-docker"),
        pytest.param("gcr.io/myproject/image", "myproject/image", id="IP-41-gcr"),
        pytest.param("quay.io/org/repo", "org/repo", id="IP-41-quay"),
        *[
            pytest.param(n, n, id=f"IP-42-{n or 'empty'}")
            for n in [
                "bitnami/nginx", "jannfis/test-image", "library/test-image", "nginx",
                "test-image", "org/repo", "", "localhost:5000/image",
            ]
        ],
        pytest.param("registry.example.com:5000/image", "image", id="IP-43-port"),
        pytest.param("gcr.io/deep/nested/path/image", "deep/nested/path/image", id="IP-43-deep"),
        pytest.param("docker.io/a/b/c", "a/b/c", id="IP-43-abc"),
        pytest.param("docker.io/", "", id="IP-43-trailing-slash"),
        pytest.param("192.168.1.1:5000/image", "image", id="IP-43-ip-port"),
        pytest.param("10.0.0.1/image", "image", id="IP-43-ip"),
        pytest.param("my.registry.example.com/image", "image", id="IP-43-host"),
        pytest.param("my.registry.example.com/path/to/image", "path/to/image", id="IP-43-path"),
    ],
)  # fmt: skip
def test_extract_short_form(name: str, short: str) -> None:
    assert extract_short_form(name) == short


@pytest.mark.parametrize(
    ("a_tag", "a_digest", "b_tag", "b_digest", "expected"),
    [
        pytest.param("v1.0.0", "", "v1.0.0", "", True, id="TG-3"),
        pytest.param("v1.0.0", "abcdef", "v1.0.0-variant2", "abcdef", True, id="TG-4"),
        pytest.param("v1.0.0", "abcdef", "v1.0.0", "abcdef", True, id="TG-5"),
        pytest.param("v1.0.0", "", "v1.0.1", "", False, id="TG-6"),
        pytest.param("v1.0.0", "abc", "v1.0.0", "def", False, id="TG-7"),
        pytest.param("v1.0.0", "abc", "v1.0.0", "", False, id="TG-8"),
        pytest.param("v1.0.0", "", "v1.0.0", "abc", False, id="TG-8-reverse"),
        pytest.param(None, "", "", "", True, id="none-equals-empty"),
    ],
)
def test_tags_equal(
    a_tag: str | None, a_digest: str, b_tag: str | None, b_digest: str, expected: bool
) -> None:
    assert tags_equal(a_tag, a_digest, b_tag, b_digest) is expected


R = "registry.example.com/org/app"
NEW, OLD, OTHER = "sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64


@pytest.mark.parametrize(
    ("cfg", "live", "latest", "expected"),
    [
        pytest.param(
            f"{R}:develop", [f"{R}:develop@{NEW}", f"{R}:develop@{OLD}"], NEW, 1, id="IP-44"
        ),
        pytest.param(f"{R}:tag-a", [f"{R}:tag-b@{OTHER}", f"{R}:tag-a@{OLD}"], NEW, 1, id="IP-45"),
        pytest.param(
            f"{R}:tag-b", [f"{R}:tag-a@{NEW}", f"{R}:tag-b@{OTHER}"], OTHER, 1, id="IP-46"
        ),
        pytest.param(f"{R}:develop", [f"{R}@{OLD}"], NEW, 0, id="IP-47"),
        pytest.param(
            f"{R}:develop", [f"registry.example.com/org/other:develop@{OLD}"], NEW, None, id="IP-48"
        ),
        pytest.param(f"{R}:develop", [f"{R}:other@{NEW}"], NEW, None, id="IP-49"),
        pytest.param(f"{R}:develop", [f"{R}:develop"], NEW, 0, id="tag-without-digest"),
        pytest.param(f"{R}:develop", [], NEW, None, id="nothing-live"),
    ],
)
def test_match_for_digest_update(
    cfg: str, live: list[str], latest: str, expected: int | None
) -> None:
    live_refs = [ImageRef.parse(t) for t in live]
    found = match_for_digest_update(ImageRef.parse(cfg), live_refs, latest)
    assert found is (None if expected is None else live_refs[expected])
