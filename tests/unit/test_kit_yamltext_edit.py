from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from argocd_image_updater.kits.yamltext import (
    YamlEditError,
    format_path,
    get_dotted_value,
    get_value,
    is_safe_plain,
    parse_dot_path,
    resolve_path,
    set_value,
    set_values,
)
from argocd_image_updater.kits.yamltext import edit as yamledit


def helm_set(text: str, key: str, value: str) -> str:
    """How the Helm values write-back uses the editor: literal key first, else the dotted walk."""
    return set_value(text, resolve_path(text, key), value)


def load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


# ------------------------------------------------------------- Helm values files (§12)


@pytest.mark.parametrize(
    ("original", "writes", "expected"),
    [
        (  # HV-1
            "image.name: nginx\nimage.tag: v0.0.0\nreplicas: 1",
            [("image.tag", "v1.0.0"), ("image.name", "nginx")],
            "image.name: nginx\nimage.tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-2
            "image.spec.foo: nginx:v0.0.0\nreplicas: 1",
            [("image.spec.foo", "nginx:v1.0.0")],
            "image.spec.foo: nginx:v1.0.0\nreplicas: 1",
        ),
        (  # HV-3
            "test-value1: one",
            [("image.spec.foo", "nginx:v1.0.0")],
            "test-value1: one\nimage:\n  spec:\n    foo: nginx:v1.0.0",
        ),
        (  # HV-4
            "nginx.image.name: nginx\nnginx.image.tag: v0.0.0\n"
            "redis.image.name: redis\nredis.image.tag: v0.0.0\nreplicas: 1\n",
            [
                ("nginx.image.tag", "v1.0.0"),
                ("nginx.image.name", "nginx"),
                ("redis.image.tag", "v1.0.0"),
                ("redis.image.name", "redis"),
            ],
            "nginx.image.name: nginx\nnginx.image.tag: v1.0.0\n"
            "redis.image.name: redis\nredis.image.tag: v1.0.0\nreplicas: 1\n",
        ),
        (  # HV-5
            "test-value1: one",
            [
                ("nginx.image.tag", "v1.0.0"),
                ("nginx.image.name", "nginx"),
                ("redis.image.tag", "v1.0.0"),
                ("redis.image.name", "redis"),
            ],
            "test-value1: one\nnginx:\n  image:\n    tag: v1.0.0\n    name: nginx\n"
            "redis:\n  image:\n    tag: v1.0.0\n    name: redis",
        ),
        (  # HV-8
            "test-value1: one\nimage:\n  name: nginx\nreplicas: 1",
            [("image.tag", "v1.0.0"), ("image.name", "nginx")],
            "test-value1: one\nimage:\n  name: nginx\n  tag: v1.0.0\nreplicas: 1",
        ),
        (  # HV-9
            "image:\n  tag: v0.0.0\nreplicas: 1",
            [("image.tag", "v1.0.0"), ("image.name", "nginx")],
            "image:\n  tag: v1.0.0\n  name: nginx\nreplicas: 1",
        ),
        (  # HV-14
            "random: yaml",
            [("image.tag", "v1.0.0"), ("wrongimage.name", "nginx")],
            "random: yaml\nimage:\n  tag: v1.0.0\nwrongimage:\n  name: nginx",
        ),
        (  # HV-15
            "random: yaml",
            [("wrongimage.tag", "v0.0.0"), ("image.name", "nginx")],
            "random: yaml\nwrongimage:\n  tag: v0.0.0\nimage:\n  name: nginx",
        ),
        (  # HV-18 (the caller adds its header comment)
            "\n",
            [("nginx.image.tag", "v1.0.0"), ("nginx.image.name", "nginx")],
            "\nnginx:\n  image:\n    tag: v1.0.0\n    name: nginx\n",
        ),
        (  # HV-22
            "image:\n  name: docker.io/myorg/myapp\n  tag: v0.9.0\nreplicas: 3",
            [("image.tag", "v1.0.0"), ("image.name", "docker.io/myorg/myapp")],
            "image:\n  name: docker.io/myorg/myapp\n  tag: v1.0.0\nreplicas: 3",
        ),
        (  # HV-26 / HV-23: a missing file starts empty
            "",
            [("theme.image.tag", "v1.0.0"), ("theme.image.name", "docker.io/hello-world")],
            "theme:\n  image:\n    tag: v1.0.0\n    name: docker.io/hello-world\n",
        ),
    ],
)
def test_helm_values_write_back(
    original: str, writes: list[tuple[str, str]], expected: str
) -> None:
    text = original
    for key, value in writes:
        text = helm_set(text, key, value)
    assert text == expected


def test_hv6_only_the_written_block_changes() -> None:
    original = "".join(
        f'{name}:\n  image:\n    repository: r/{name}\n    tag: "main-0000000"\n'
        for name in ("manager", "session", "reaper", "tokenRotator")
    )
    result = helm_set(original, "manager.image.tag", "main-1111111")
    assert result == original.replace('"main-0000000"', '"main-1111111"', 1)
    assert result.count("main-0000000") == 3
    assert 'tag: ""' not in result


def test_hv16_scalar_document_root_is_an_error() -> None:
    with pytest.raises(YamlEditError, match="document root is a scalar"):
        helm_set("random content", "image.tag", "v1.0.0")


HV27 = """\
# Default values for myapp.
# This is a YAML-formatted file.

replicaCount: 1

images:
  app: &app-image
    repository: myapp
    tag: v1.0.0  # Current version
    pullPolicy: IfNotPresent

  sidecar:
    <<: *app-image
    repository: sidecar
    tag: v1.0.0

service:
  type:   ClusterIP   # aligned
  port: 80
"""


def test_hv27_in_place_patch_is_byte_exact() -> None:
    result = set_values(
        HV27,
        [
            (["images", "app", "tag"], "v2.0.0"),
            (["images", "sidecar", "tag"], "v2.0.0"),
            (["images", "app", "repository"], "myapp"),
        ],
    )
    assert result == HV27.replace("tag: v1.0.0", "tag: v2.0.0")
    assert "tag: v2.0.0  # Current version" in result


def test_hv28_block_scalar_kept_byte_for_byte() -> None:
    original = "motd: |\n  Welcome!\n\n  Have fun.\nconfig.image.tag: v1.0.0\n"
    assert helm_set(original, "config.image.tag", "v2.0.0") == original.replace("v1.0.0", "v2.0.0")


def test_hv29_hv30_quoted_values_keep_their_quotes_and_document_marker() -> None:
    original = '---\nconfig:\n  image:\n    tag: "v1.0.0"\n'
    result = helm_set(original, "config.image.tag", "v2.0.0")
    assert result == '---\nconfig:\n  image:\n    tag: "v2.0.0"\n'
    assert get_dotted_value(result, "config.image.tag") == "v2.0.0"


def test_hv31_index_on_a_mapping_is_an_error_and_nothing_changes() -> None:
    original = "foo:\n  tag: v1.0.0\n"
    with pytest.raises(YamlEditError, match=r"foo\[2\]\.tag: index \[2\] used on foo"):
        set_values(original, [(["foo", "tag"], "v2.0.0"), (parse_dot_path("foo[2].tag"), "x")])
    assert get_value(original, ["foo", "tag"]) == "v1.0.0"


@pytest.mark.parametrize("value", ["v1.0.0", "myapp", "1.2.3", "sha256-abc", "release-2024"])
def test_hv32_safe_plain(value: str) -> None:
    assert is_safe_plain(value)
    assert set_value("tag: old\n", ["tag"], value) == f"tag: {value}\n"


@pytest.mark.parametrize(
    "value",
    [
        "", "1.20", "16", "0755", "true", "false", "yes", "no", "on", "off", "y", "n", "Y", "NO",
        "null", "~", "a: b", "tag #1", "-latest", "*anchor", "&anchor", "@ref", "!tag", "%x",
        "1e3", ".5", "0x1F", "1_000", "1:20", ".inf", "-.Inf", ".NaN", "2024-01-01", "<<", "=",
        " lead", "trail ", "ends:", "line\nbreak", "tab\there", "{x}", "[x]", "'q", '"q', "#c",
    ],
)  # fmt: skip
def test_hv32_unsafe_plain_becomes_double_quoted(value: str) -> None:
    assert not is_safe_plain(value)
    result = set_value("tag: old\n", ["tag"], value)
    assert result.startswith('tag: "')
    assert load(result) == {"tag": value}


def test_flow_context_also_rejects_flow_indicators() -> None:
    assert is_safe_plain("a,b")
    assert not is_safe_plain("a,b", in_flow=True)
    assert set_value("l: [x, y]\n", ["l", 1], "a,b") == 'l: [x, "a,b"]\n'


# ------------------------------------------------------------- get/set helpers (§13)


NESTED = "image:\n  attributes:\n    name: repo-name\n    tag: v1.0.0\n"


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        (NESTED, "image.attributes.tag", "v1.0.0"),  # HG-1
        ("image.attributes.tag: v1.0.0\n", "image.attributes.tag", "v1.0.0"),  # HG-2
        ("name: repo-name\n", "name", "repo-name"),  # HG-3
        (  # HG-4
            "image:\n  attributes:\n    tag: nested-value\nimage.attributes.tag: literal-value\n",
            "image.attributes.tag",
            "nested-value",
        ),
        (  # HG-5
            "image.attributes.tag: literal-value\nother:\n  field: x\n",
            "image.attributes.tag",
            "literal-value",
        ),
        (  # HG-6
            "image:\n  attributes: &attrs\n    name: repo-name\n    tag: v1.0.0\n"
            "other:\n  attributes: *attrs\n",
            "other.attributes.tag",
            "v1.0.0",
        ),
        (  # HG-7
            "images: [{name: image1, tag: v1.0.0}, {name: image2, tag: v2.0.0}]\n",
            "images[1].tag",
            "v2.0.0",
        ),
        ("image:\n  name: x\n", "image.tag", None),  # HG-8
        ("", "image.tag", None),  # HG-9
        (  # HG-12
            "level1:\n  level2:\n    level3:\n      level4:\n        value: deep-value\n",
            "level1.level2.level3.level4.value",
            "deep-value",
        ),
        (  # HG-13
            "image:\n  attributes: scalar\nimage.attributes.tag: literal-value\n",
            "image.attributes.tag",
            "literal-value",
        ),
        ("foo: {tag: v1.0.0}\n", "foo.tag", "v1.0.0"),  # HG-14
        ("base: &b {tag: 1}\nchild:\n  <<: *b\n", "child.tag", "1"),  # merge keys are read
    ],
)
def test_get_dotted_value(text: str, key: str, expected: str | None) -> None:
    assert get_dotted_value(text, key) == expected


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("random content\n", ["image"], "document root is a scalar"),  # HG-10
        ("image.attributes:\n  tag: x\n", ["image.attributes"], "is a mapping, not a scalar"),
        ("foo: {tag: v1.0.0}\n", ["foo", 2, "tag"], r"index \[2\] used on foo"),  # HG-14
    ],
)
def test_get_value_errors(text: str, path: list[str | int], message: str) -> None:
    with pytest.raises(YamlEditError, match=message):
        get_value(text, path)


def test_get_value_out_of_range_is_missing() -> None:
    assert get_value("l: [1]\n", ["l", 3]) is None


@pytest.mark.parametrize(
    ("original", "key", "expected"),
    [
        (NESTED, "image.attributes.tag", NESTED.replace("v1.0.0", "v2.0.0")),  # HS-1
        (
            "image.attributes.tag: v1.0.0\n",
            "image.attributes.tag",
            "image.attributes.tag: v2.0.0\n",
        ),  # HS-2
        (
            "image:\n  attributes:\n    name: repo-name\n",
            "image.attributes.tag",
            "image:\n  attributes:\n    name: repo-name\n    tag: v2.0.0\n",
        ),  # HS-3
        ("name: repo-name\n", "tag", "name: repo-name\ntag: v2.0.0\n"),  # HS-4
        ("{}\n", "image.attributes.tag", "{image: {attributes: {tag: v2.0.0}}}\n"),  # HS-5
        (  # HS-7
            "image:\n  attributes:\n    name: &repo repo-name # this is a comment\n"
            "    tag: v1.0.0\n    multiline: |\n      line1\n\n      line2\n    alias: *repo\n",
            "image.attributes.tag",
            "image:\n  attributes:\n    name: &repo repo-name # this is a comment\n"
            "    tag: v2.0.0\n    multiline: |\n      line1\n\n      line2\n    alias: *repo\n",
        ),
        (  # HS-8: the anchored mapping is edited, the alias stays
            "global:\n  attributes: &attrs {name: &repo repo-name, tag: v1.0.0}\n"
            "image:\n  attributes: *attrs\n",
            "image.attributes.tag",
            "global:\n  attributes: &attrs {name: &repo repo-name, tag: v2.0.0}\n"
            "image:\n  attributes: *attrs\n",
        ),
        (  # HS-9
            "version: &ver v1.0.0\nimage:\n  attributes:\n    tag: *ver\n",
            "image.attributes.tag",
            "version: &ver v2.0.0\nimage:\n  attributes:\n    tag: *ver\n",
        ),
        (  # HS-10
            "images:\n- name: image-1\n  attributes:\n    name: repo-name\n    tag: 1.0.0\n",
            "images[0].attributes.tag",
            "images:\n- name: image-1\n  attributes:\n    name: repo-name\n    tag: v2.0.0\n",
        ),
        (  # HS-11
            "images:\n- attributes:\n    tag: a\n- attributes:\n    tag: b\n",
            "images[1].attributes.tag",
            "images:\n- attributes:\n    tag: a\n- attributes:\n    tag: v2.0.0\n",
        ),
        (  # HS-12
            "extraContainers:\n  images:\n  - name: image-1\n    attributes:\n      tag: 1.0.0\n",
            "extraContainers.images[0].attributes.tag",
            "extraContainers:\n  images:\n  - name: image-1\n    attributes:\n      tag: v2.0.0\n",
        ),
        (  # HS-13
            "extraContainers:\n  images123:\n    - attributes:\n        tag: 1.0.0\n",
            "extraContainers.images123[0].attributes.tag",
            "extraContainers:\n  images123:\n    - attributes:\n        tag: v2.0.0\n",
        ),
    ],
)
def test_helm_set(original: str, key: str, expected: str) -> None:
    assert helm_set(original, key, "v2.0.0") == expected


@pytest.mark.parametrize(
    ("original", "key", "message"),
    [
        (  # HS-6
            "image:\n  attributes: v1.0.0\n",
            "image.attributes.tag",
            r"image\.attributes is a scalar at line 2, column 15, not a mapping",
        ),
        (  # HS-14
            "images:\n- attributes:\n    tag: 1\n",
            "images[-1].attributes.tag",
            r"index -1 is out of range \[0, 1\)",
        ),
        (  # HS-15
            "images:\n- attributes:\n    tag: 1\n",
            "images[1].attributes.tag",
            r"index 1 is out of range \[0, 1\)",
        ),
        ("images:\n- tag: 1\n", "images[invalid].tag", "index 'invalid' is not an integer"),
        (  # HS-17
            "images:\n- tag: 1\n",
            "images.attributes.tag",
            r"images is a sequence at line 2, column 1; select an item with an index",
        ),
        (  # HS-18
            "image:\n  attributes: {}\n",
            "image[0].attributes.tag",
            r"index \[0\] used on image, which is a mapping at line 2, column 3",
        ),
        ("image:\n  a: 1\n", "image[invalid].tag", "index 'invalid' is not an integer"),
    ],
)
def test_helm_set_errors(original: str, key: str, message: str) -> None:
    with pytest.raises(YamlEditError, match=message):
        helm_set(original, key, "v2.0.0")


def test_hs20_number_like_values_stay_strings() -> None:
    result = helm_set("image:\n  tag: v1\n", "image.tag", "1.0")
    assert result == 'image:\n  tag: "1.0"\n'
    assert load(result) == {"image": {"tag": "1.0"}}
    created = helm_set("image: {}\n", "image.tag", "16")
    assert created == 'image: {tag: "16"}\n'


# --------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("image.tag", ["image", "tag"]),
        ("images[0].name", ["images", 0, "name"]),
        ("foo[1].image", ["foo", 1, "image"]),
        ("a[0][2]", ["a", 0, 2]),
        ("a[-1]", ["a", -1]),
        ("a\\.b.c", ["a.b", "c"]),
        ("key", ["key"]),
    ],
)
def test_parse_dot_path(expr: str, expected: list[str | int]) -> None:
    assert parse_dot_path(expr) == expected
    assert parse_dot_path(format_path(expected)) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "empty path"),
        ("a..b", "empty key at position 3"),
        (".a", "empty key at position 1"),
        ("a.", "ends with '.'"),
        ("a.[0]", "empty key at position 3"),
        ("a[x]", "index 'x' is not an integer"),
        ("a[1", "unclosed '[' at position 2"),
        ("[0]", "an index needs a key before it"),
        ("a[0]b", "expected '.' or '[' after ']' at position 5"),
    ],
)
def test_parse_dot_path_errors(expr: str, message: str) -> None:
    with pytest.raises(YamlEditError) as info:
        parse_dot_path(expr)
    assert str(info.value) == f"invalid path {expr!r}: {message}"


def test_resolve_path_prefers_an_existing_literal_key() -> None:
    assert resolve_path("image.tag: 1\nimage:\n  tag: 2\n", "image.tag") == ["image.tag"]
    assert resolve_path("image:\n  tag: 2\n", "image.tag") == ["image", "tag"]
    assert resolve_path("", "images[0].tag") == ["images", 0, "tag"]
    assert resolve_path("a: 1\n---\nimage.tag: 1\n", "image.tag") == ["image.tag"]
    assert resolve_path("a: 1\n---\nimage.tag: 1\n", "image.tag", document=0) == ["image", "tag"]


# ------------------------------------------------------------------ byte-exact fixtures


@pytest.mark.parametrize(
    ("original", "path", "value", "expected"),
    [
        pytest.param(
            "\ufeffa: 'x'\r\nb: \"y\" # c\r\n\r\nc: plain\r\n",
            ["a"],
            "it's",
            "\ufeffa: 'it''s'\r\nb: \"y\" # c\r\n\r\nc: plain\r\n",
            id="bom-crlf-single-quoted",
        ),
        pytest.param(
            "a: 1\r\nb:\r\n  c: 2\r\n",
            ["b", "d", "e"],
            "x",
            "a: 1\r\nb:\r\n  c: 2\r\n  d:\r\n    e: x\r\n",
            id="crlf-create",
        ),
        pytest.param(
            'k: "old"   # keep\n',
            ["k"],
            'say "hi"\\',
            'k: "say \\"hi\\"\\\\"   # keep\n',
            id="double-quoted-escapes",
        ),
        pytest.param(
            "k: 'old'\n", ["k"], "multi\nline", 'k: "multi\\nline"\n', id="single-to-double"
        ),
        pytest.param(
            "%YAML 1.2\n---\n# head\nimage: {name: a, tag: b}  # flow\n...\n",
            ["image", "tag"],
            "c",
            "%YAML 1.2\n---\n# head\nimage: {name: a, tag: c}  # flow\n...\n",
            id="directive-flow-document-end",
        ),
        pytest.param(
            "image: {name: a}\n", ["image", "tag"], "b", "image: {name: a, tag: b}\n", id="flow-add"
        ),
        pytest.param(
            "image: {\n  name: a\n}\n",
            ["image", "tag"],
            "b",
            "image: {\n  name: a, tag: b\n}\n",
            id="multiline-flow-add",
        ),
        pytest.param("{a: 1, b: }\n", ["c"], "z", "{a: 1, b: , c: z}\n", id="flow-after-empty"),
        pytest.param("a:\nb: 1\n", ["a"], "v", "a: v\nb: 1\n", id="empty-value"),
        pytest.param("a: &x\nb: *x\n", ["b"], "v", "a: &x v\nb: *x\n", id="empty-anchored"),
        pytest.param("l:\n- \n- x\n", ["l", 0], "v", "l:\n- v\n- x\n", id="empty-item"),
        pytest.param(
            "image:  # comment\nother: 1\n",
            ["image", "tag"],
            "v",
            "image:  # comment\n  tag: v\nother: 1\n",
            id="empty-becomes-mapping",
        ),
        pytest.param(
            "a:\n    b: 1\n\n\n# trailing comment\nc: 2",
            ["a", "x", "w"],
            "v",
            "a:\n    b: 1\n    x:\n        w: v\n\n\n# trailing comment\nc: 2",
            id="four-space-indent",
        ),
        pytest.param(
            "a: 1\nb: 2  # last", ["c"], "3", 'a: 1\nb: 2  # last\nc: "3"', id="no-final-newline"
        ),
        pytest.param(
            "k: |-\n  old\n  text\n\nnext: 1\n",
            ["k"],
            "new",
            'k: "new"\n\nnext: 1\n',
            id="block-scalar-replaced",
        ),
        pytest.param(
            "k: |+\n  kept\n\n", ["z"], "1", 'k: |+\n  kept\n\nz: "1"\n', id="after-keep-block"
        ),
        pytest.param(
            "k: >\n  folded\nz: 1\n",
            ["k", "x"],
            "1",
            None,
            id="block-scalar-is-not-a-mapping",
        ),
        pytest.param(
            "a: !!str 1.0\n", ["a"], "2.0", "a: !!str 2.0\n", id="explicit-str-tag-stays-plain"
        ),
        pytest.param("a: x\n  y\nb: 1\n", ["a"], "z", "a: z\nb: 1\n", id="multiline-plain"),
        pytest.param(
            "- name: a\n  tag: 1\n- name: b\n", [1, "tag"], "2", '- name: a\n  tag: 1\n- name: b\n  tag: "2"\n', id="root-sequence"
        ),
        pytest.param(
            "---\na: 1\n---\nb: 2\n", ["b"], "3", '---\na: 1\n---\nb: "3"\n', id="second-document"
        ),
        pytest.param("# only a comment\n", ["a"], "b", "# only a comment\na: b\n", id="comment-only"),
        pytest.param("---\n", ["a", "b"], "c", "---\na:\n  b: c\n", id="empty-explicit-document"),
    ],
)  # fmt: skip
def test_byte_exact(original: str, path: list[str | int], value: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(YamlEditError):
            set_value(original, path, value)
    else:
        assert set_value(original, path, value) == expected


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "path", "kwargs", "message"),
    [
        ("a: [1,\nb", ["a"], {}, r"invalid YAML at line 2, column 2: expected ',' or ']'"),
        ("a: b: c\n", ["a"], {}, "invalid YAML at line 1, column 5: mapping values"),
        ("a: \x01\n", ["a"], {}, "invalid YAML"),
        ("a: [1, 2]\n", ["a"], {}, "a: the target at line 1, column 4 is a sequence, not a scalar"),
        ("a: {b: 1}\n", ["a"], {}, "is a mapping, not a scalar"),
        ("a: 1\n---\na: 2\n", ["a"], {}, "ambiguous path a: it exists in documents 0, 1"),
        ("a: 1\n---\nb: 2\n", ["c"], {}, "ambiguous path c: it exists in none of the 2"),
        ("a: 1\n", ["a"], {"document": 3}, "document 3 does not exist; the file has 1"),
        ("a: 1\n", ["b"], {"create": False}, "b: not found; <root> has no key 'b'"),
        ("a:\n  x: 1\n", ["a", "b", "c"], {"create": False}, "a has no key 'b'"),
        ("", ["a"], {"create": False}, "a: not found"),
        ("l: [1]\n", ["l", 1], {}, r"index 1 is out of range \[0, 1\)"),
        ("a: {}\n", ["a", "b", 0], {}, "sequence items are never created"),
        ("a: 1\n", [], {}, "the path is empty"),
        ("a: 1\na: 2\n", ["a"], {}, "duplicate key 'a' at line 2, column 1"),
        ("a: |  # note\n  x\n", ["a"], {}, "has a comment on its header line"),
        ("l: [a, ~]\n", ["l", 1, "k"], {}, r"l\[1\] is a scalar at line 1, column 8"),
    ],
)
def test_errors(text: str, path: list[str | int], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(YamlEditError, match=message):
        set_value(text, path, "v", **kwargs)


def test_set_values_is_all_or_nothing() -> None:
    text = "a: 1\nb: [1]\n"
    with pytest.raises(YamlEditError, match="out of range"):
        set_values(text, [(["a"], "2"), (["b", 5], "x")])
    assert set_values(text, [(["a"], "x"), (["c"], "y")]) == 'a: x\nb: [1]\nc: "y"\n'


def test_document_selection() -> None:
    text = "a: 1\n---\nb: 2\n"
    assert set_value(text, ["c"], "v", document=0) == "a: 1\nc: v\n---\nb: 2\n"
    assert get_value(text, ["b"]) == "2"
    assert get_value(text, ["c"]) is None
    with pytest.raises(YamlEditError, match="ambiguous"):
        get_value("a: 1\n---\na: 2\n", ["a"])
    assert get_value("a: 1\n---\na: 2\n", ["a"], document=1) == "2"


def test_self_check_refuses_a_wrong_result(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamledit, "render", lambda value, style, in_flow: value + "\nextra: 1")
    with pytest.raises(YamlEditError, match="would change more than the target value"):
        set_value("a: 1\nb: 2\n", ["a"], "x")
    monkeypatch.setattr(yamledit, "render", lambda value, style, in_flow: "[unclosed")
    with pytest.raises(YamlEditError, match="would break the file"):
        set_value("a: 1\nb: 2\n", ["a"], "x")


# --------------------------------------------------------------------- properties

KEYS = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_-]{0,5}", fullmatch=True),
    st.sampled_from(["on", "1", "a b", "x.y", "null"]),
)
TRICKY = st.sampled_from(
    ["yes", "no", "1.0", "0755", "a: b", "it's", 'say "x"', "", " lead", "#x", "x #y", "é", "~"]
)
STRINGS = st.one_of(st.from_regex(r"[a-zA-Z][a-zA-Z0-9.:/_-]{0,8}", fullmatch=True), TRICKY)
SCALARS = st.one_of(STRINGS, st.integers(-5, 500), st.booleans(), st.none())
NEW_VALUES = st.one_of(STRINGS, st.text(max_size=6))


def documents(depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    values = st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)
        ),
        max_leaves=12,
    )
    return st.dictionaries(KEYS, values, min_size=1, max_size=4)


def leaf_paths(node: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in leaf_paths(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in leaf_paths(v, (*path, i))]
    return [path]


def mapping_paths(node: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [path] if isinstance(node, dict) else []
    children = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, value in children:
        out += mapping_paths(value, (*path, key))
    return out


def assign(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for elem in path[:-1]:
        data = data[elem]
    data[path[-1]] = value


def lookup(data: Any, path: tuple[str | int, ...]) -> Any:
    for elem in path:
        data = data[elem]
    return data


@st.composite
def yaml_texts(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    data = draw(documents())
    shared = [v for v in data.values() if isinstance(v, dict) and v]
    use_alias: bool = draw(st.booleans())
    if shared and use_alias:
        data["alias"] = shared[0]  # dumped as an anchor and an alias
    mapping, sequence = draw(st.sampled_from([(2, 2), (4, 4), (2, 4), (3, 2)]))
    offset = draw(st.sampled_from([0, sequence - 2]))
    yaml = YAML()
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.width = 4096
    yaml.default_flow_style = draw(st.sampled_from([False, None]))
    buf = io.StringIO()
    yaml.dump(data, buf)
    lines = []
    for line in buf.getvalue().splitlines():
        decoration = draw(st.sampled_from(["", "", "blank", "comment", "trailing"]))
        indent = line[: len(line) - len(line.lstrip(" "))]
        if decoration == "blank":
            lines.append("")
        elif decoration == "comment":
            lines.append(f"{indent}# note")
        lines.append(line + ("  # trailing" if decoration == "trailing" else ""))
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = "# header\n---\n" + text
    assume(load(text) == data)
    return data, text


def changed_lines(old: str, new: str) -> list[int]:
    old_lines, new_lines = old.split("\n"), new.split("\n")
    assert len(old_lines) == len(new_lines)
    return [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@PROPERTY_SETTINGS
@given(yaml_texts(), st.data(), NEW_VALUES)
def test_property_edit_touches_only_the_target_line(
    sample: tuple[dict[str, Any], str], data: st.DataObject, value: str
) -> None:
    expected, text = sample
    paths = leaf_paths(expected)
    assume(paths)
    path = data.draw(st.sampled_from(paths))
    result = set_value(text, list(path), value)
    assign(expected, path, value)  # through an alias this also changes the anchored original
    assert load(result) == expected
    assert get_value(result, list(path)) == value
    assert len(changed_lines(text, result)) <= 1


@PROPERTY_SETTINGS
@given(yaml_texts(), st.data(), st.lists(KEYS, min_size=1, max_size=3), NEW_VALUES)
def test_property_creating_keys_keeps_every_existing_line(
    sample: tuple[dict[str, Any], str], data: st.DataObject, keys: list[str], value: str
) -> None:
    expected, text = sample
    parent = data.draw(st.sampled_from(mapping_paths(expected)))
    assume(keys[0] not in lookup(expected, parent))
    result = set_value(text, [*parent, *keys], value)
    nested: Any = value
    for key in reversed(keys[1:]):
        nested = {key: nested}
    lookup(expected, parent)[keys[0]] = nested
    assert load(result) == expected
    old_lines, new_lines = text.split("\n"), result.split("\n")
    prefix = 0
    while prefix < len(old_lines) and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while suffix < len(old_lines) - prefix and old_lines[-1 - suffix] == new_lines[-1 - suffix]:
        suffix += 1
    if len(new_lines) == len(old_lines):  # inside a flow mapping: one line grows
        assert prefix + suffix == len(old_lines) - 1
        assert new_lines[prefix].startswith(old_lines[prefix].split("}")[0].rstrip())
    else:  # block mapping: whole lines are inserted, nothing else moves
        assert prefix + suffix == len(old_lines)
        assert len(new_lines) - len(old_lines) == len(keys)


def test_merge_keys_are_followed_for_reads_and_overridden_locally_on_writes() -> None:
    text = "b: &b {t: 1}\nc: &c {<<: *b}\nd:\n  <<: [*c]\n"
    assert get_value(text, ["d", "t"]) == "1"
    assert set_value(text, ["d", "t"], "2") == text + '  t: "2"\n'
    assert get_value("a: &a\n  <<: *a\n  x: 1\n", ["a", "y"]) is None  # a merge cycle ends


@PROPERTY_SETTINGS
@given(yaml_texts(), st.data(), NEW_VALUES)
def test_property_in_place_verification_agrees_with_a_full_parse(
    sample: tuple[dict[str, Any], str], data: st.DataObject, value: str
) -> None:
    """An edit verified on the new token alone passes the whole-file verification too."""
    expected, text = sample
    paths = leaf_paths(expected)
    assume(paths)
    path = list(data.draw(st.sampled_from(paths)))
    new, index, leaf, splice = yamledit._plan(text, path, value, True, None)
    if splice is not None and yamledit._verified_in_place(text, splice, value):
        yamledit._verify(text, new, path, value, index, leaf())  # raises when it disagrees
        assign(expected, tuple(path), value)
        assert load(new) == expected


@pytest.mark.parametrize(
    ("text", "path", "value", "in_place"),
    [
        ("a: 1.0.0  # pinned\nb: 2\n", ["a"], "1.0.1", True),
        ("a: '1.0'\n", ["a"], "1.1", True),
        ('a: "x"\n', ["a"], 'say "y"', True),
        ("a: [x, y]\n", ["a", 0], "z", True),
        ("a: x\n", ["a"], "1.0", False),  # plain to quoted: the whole file is parsed again
        ("a:\n", ["a"], "x", False),  # an empty value gets text
        ("a: |\n  x\n", ["a"], "y", False),  # a block scalar
        ("a: x\n", ["b"], "y", False),  # a new key
        ("[\nx]\n", [0], "...", False),  # a plain token at column 0
    ],
)
def test_which_edits_are_verified_in_place(
    text: str, path: list[str | int], value: str, in_place: bool
) -> None:
    _, _, _, splice = yamledit._plan(text, path, value, True, None)
    assert (splice is not None and yamledit._verified_in_place(text, splice, value)) is in_place
    assert get_value(set_value(text, path, value), path) == value
