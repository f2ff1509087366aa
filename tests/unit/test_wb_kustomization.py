from __future__ import annotations

from typing import Any

import pytest
from ruamel.yaml import YAML

from argocd_image_updater.model.application import AppSource
from argocd_image_updater.plan.model import ParamEdit
from argocd_image_updater.writeback.kustomization import (
    KustomizationError,
    KustomizeImage,
    find_kustomization,
    images_for_plan,
    kustomization_path,
    parse_image_override,
    update_kustomization,
)

DIGEST = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


# ------------------------------------------------------------------ parseImageOverride


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ghcr.io:1234/foo/foo:123", KustomizeImage("ghcr.io:1234/foo/foo", new_tag="123")),  # 5
        (
            "ghcr.io:1234/foo/foo=ghcr.io:1234/bar",  # KI-6
            KustomizeImage("ghcr.io:1234/foo/foo", new_name="ghcr.io:1234/bar"),
        ),
        (
            "ghcr.io:1234/foo/foo=1234.foo.com:9876/bar:123",  # KI-7
            KustomizeImage("ghcr.io:1234/foo/foo", "1234.foo.com:9876/bar", "123"),
        ),
        (
            "ghcr.io:1234/foo/foo=1234.dkr.ecr.us-east-1.amazonaws.com/bar:123",  # KI-8
            KustomizeImage(
                "ghcr.io:1234/foo/foo", "1234.dkr.ecr.us-east-1.amazonaws.com/bar", "123"
            ),
        ),
        (
            "0001.dkr.ecr.us-east-1.amazonaws.com/bar=1234.dkr.ecr.us-east-1.amazonaws.com/bar",
            KustomizeImage(
                "0001.dkr.ecr.us-east-1.amazonaws.com/bar",
                new_name="1234.dkr.ecr.us-east-1.amazonaws.com/bar",
            ),  # KI-9
        ),
        (f"foo=acme/app@{DIGEST}", KustomizeImage("foo", new_name="acme/app", digest=DIGEST)),
        (f"acme/app@{DIGEST}", KustomizeImage("acme/app", digest=DIGEST)),  # KI-11
        ("acme/app:1.0@" + DIGEST, KustomizeImage("acme/app", new_tag="1.0", digest=DIGEST)),
    ],
)
def test_ki5_ki11_parse_image_override(text: str, expected: KustomizeImage) -> None:
    assert parse_image_override(text) == expected


# ------------------------------------------------------------ images set on an empty file


@pytest.mark.parametrize(
    ("images", "expected"),
    [
        (["foo"], [{"name": "foo"}]),  # KI-12
        (["foo:bar"], [{"name": "foo", "newTag": "bar"}]),  # KI-13
        (["baz=foo:bar"], [{"name": "baz", "newName": "foo", "newTag": "bar"}]),  # KI-14
        (["baz=foo@sha12345"], [{"name": "baz", "newName": "foo", "digest": "sha12345"}]),
        (["foo@sha12345"], [{"name": "foo", "digest": "sha12345"}]),  # KI-16
        (
            ["foo", "foo=bar", "baz@sha12345", "bar:123", "foo=bar:123"],  # KI-17
            [
                {"name": "foo", "newName": "bar", "newTag": "123"},
                {"name": "baz", "digest": "sha12345"},
                {"name": "bar", "newTag": "123"},
            ],
        ),
    ],
)
def test_ki12_ki17_images_on_an_empty_document(
    images: list[str], expected: list[dict[str, str]]
) -> None:
    result = update_kustomization("", images)
    assert result is not None
    assert load(result) == {"images": expected}


def test_ki17_numeric_tags_are_quoted() -> None:
    assert update_kustomization("", ["bar:123", "baz:1.10"]) == (
        'images:\n- name: bar\n  newTag: "123"\n- name: baz\n  newTag: "1.10"\n'
    )


# --------------------------------------------------------- byte-exact updates (KI-18..31)

OLD = "images:\n- name: foo\n  digest: sha12345\n"
NEW = "images:\n- name: foo\n  digest: sha23456\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (  # KI-18: key order kept
            "images:\n- digest: sha12345\n  name: foo\n",
            "images:\n- digest: sha23456\n  name: foo\n",
        ),
        (OLD, NEW),  # KI-19
        (  # KI-20: indented sequence kept
            "images:\n  - name: foo\n    digest: sha12345\n",
            "images:\n  - name: foo\n    digest: sha23456\n",
        ),
        (  # KI-23: blank line between sections
            OLD + "\nresources:\n- some-resource.yaml\n",
            NEW + "\nresources:\n- some-resource.yaml\n",
        ),
        (  # KI-24
            "apiVersion: kustomize.config.k8s.io/v1beta1\n\n" + OLD,
            "apiVersion: kustomize.config.k8s.io/v1beta1\n\n" + NEW,
        ),
        ("---\n" + OLD, "---\n" + NEW),  # KI-25
        ("# leading comment\n---\n" + OLD, "# leading comment\n---\n" + NEW),  # KI-27
        ("# leading comment\n" + OLD, "# leading comment\n" + NEW),  # KI-28
        ("\n" + OLD, "\n" + NEW),  # KI-29
        ("\n---\n" + OLD, "\n---\n" + NEW),  # KI-30
        ("%YAML 1.2\n---\n" + OLD, "%YAML 1.2\n---\n" + NEW),  # KI-31
        ("---\t# header\n" + OLD, "---\t# header\n" + NEW),  # KI-32
        (  # comments and CRLF line endings
            "images: # pinned\r\n- name: foo  # the app\r\n  digest: sha12345 # old\r\n",
            "images: # pinned\r\n- name: foo  # the app\r\n  digest: sha23456 # old\r\n",
        ),
    ],
)
def test_ki18_ki31_existing_file_is_edited_in_place(before: str, after: str) -> None:
    assert update_kustomization(before, ["foo@sha23456"]) == after


def test_ki26_no_marker_is_added() -> None:
    result = update_kustomization(OLD, ["foo@sha23456"])
    assert result is not None and not result.startswith("---")


def test_ki21_already_current_gives_none() -> None:
    assert update_kustomization(NEW, ["foo@sha23456"]) is None


def test_gf7_new_images_and_replaced_entries() -> None:
    original = (
        "kind: Kustomization\napiVersion: kustomize.config.k8s.io/v1beta1\nreplacements: []\n"
    )
    first = update_kustomization(original, ["foo=bar", "bar=baz:123"])
    assert first == original + (
        'images:\n- name: foo\n  newName: bar\n- name: bar\n  newName: baz\n  newTag: "123"\n'
    )
    second = update_kustomization(first, ["foo:123", "bar=qux"])
    assert second == original + (
        'images:\n- name: foo\n  newTag: "123"\n- name: bar\n  newName: qux\n'
    )
    assert load(second)["images"] == [
        {"name": "foo", "newTag": "123"},
        {"name": "bar", "newName": "qux"},
    ]


def test_new_entry_follows_the_list_indentation() -> None:
    before = "images:\n    -   name: a\n        newTag: v1\nresources:\n- x.yaml\n"
    assert update_kustomization(before, ["b:v2"]) == (
        "images:\n    -   name: a\n        newTag: v1\n    -   name: b\n        newTag: v2\n"
        "resources:\n- x.yaml\n"
    )


def test_new_images_list_follows_the_files_list_style() -> None:
    before = "resources:\n  - deployment.yaml\n"
    assert update_kustomization(before, ["app:1.2.3"]) == (
        "resources:\n  - deployment.yaml\nimages:\n  - name: app\n    newTag: 1.2.3\n"
    )


@pytest.mark.parametrize("value", ["", " []", " ~", " null"])
def test_empty_images_value_becomes_a_list(value: str) -> None:
    before = f"images:{value}\nresources:\n- a.yaml\n"
    assert update_kustomization(before, ["app:v1"]) == (
        "images:\n- name: app\n  newTag: v1\nresources:\n- a.yaml\n"
    )


def test_first_field_removed_pulls_the_next_one_up() -> None:
    before = "images:\n- newName: other  # renamed\n  name: foo\n  newTag: v1\n"
    assert update_kustomization(before, ["foo:v2"]) == "images:\n- name: foo\n  newTag: v2\n"


def test_other_fields_of_an_element_are_kept() -> None:
    before = "images:\n- name: foo\n  newTag: v1\n  tagSuffix: -slim\n"
    assert update_kustomization(before, ["foo:v2"]) == (
        "images:\n- name: foo\n  newTag: v2\n  tagSuffix: -slim\n"
    )


def test_file_without_trailing_newline() -> None:
    assert update_kustomization("images:\n- name: a\n  newTag: v1", ["b:v2"]) == (
        "images:\n- name: a\n  newTag: v1\n- name: b\n  newTag: v2"
    )


def test_no_images_gives_none() -> None:
    assert update_kustomization(OLD, []) is None


# ----------------------------------------------------------------------------- errors


def test_gf8_multi_document_file_is_an_error() -> None:
    with pytest.raises(KustomizationError, match="single YAML document"):
        update_kustomization("a: 1\n---\nb: 2\n", ["foo:1"], path="app/kustomization.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "must be a mapping"),
        ("images: [{name: foo}]\n", "flow style"),
        ("{images: []}\n", "flow style"),
        ("images: foo\n", "expected a list"),
        ("images:\n- foo\n", r"element \[0\]"),
        ("images: [\n", "invalid YAML"),
    ],
)
def test_bad_files_are_errors_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(KustomizationError, match=message) as err:
        update_kustomization(text, ["foo:1"], path="overlays/prod/kustomization.yaml")
    assert str(err.value).startswith("overlays/prod/kustomization.yaml: ")


def test_invalid_image_string_is_an_error() -> None:
    with pytest.raises(KustomizationError, match="names no image"):
        update_kustomization(OLD, ["=foo:1"])


# ----------------------------------------------------------------------- file lookup


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (["kustomization.yaml", "deployment.yaml"], "kustomization.yaml"),
        (["Kustomization", "kustomization.yml"], "kustomization.yml"),
        (["Kustomization"], "Kustomization"),
    ],
)
def test_find_kustomization(present: list[str], expected: str) -> None:
    assert find_kustomization(present, "overlays/prod") == expected


def test_gf8_missing_kustomization_is_an_error() -> None:
    with pytest.raises(KustomizationError, match="could not find kustomization in overlays/prod"):
        find_kustomization(["values.yaml"], "overlays/prod")


def test_kustomization_path() -> None:
    assert kustomization_path(".", "kustomization.yaml") == "kustomization.yaml"
    assert kustomization_path("a/b", "Kustomization") == "a/b/Kustomization"


def test_an_edit_that_does_not_read_back_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from argocd_image_updater.writeback import kustomization

    def wrong_lines(entry: KustomizeImage, dash_col: int, key_col: int) -> list[str]:
        return [" " * dash_col + "- name: somebody-else"]

    monkeypatch.setattr(kustomization, "_item_lines", wrong_lines)
    with pytest.raises(KustomizationError, match="refusing to write"):
        update_kustomization(OLD, ["bar:1"])


def test_images_for_plan_applies_the_kustomize_edits_to_the_source() -> None:
    source = AppSource(
        spec_path=("source",),
        has_kustomize=True,
        kept={"kustomize": {"images": ["keep/me:1", "org/app:1.0"]}},
    )
    managed = [
        ParamEdit("kustomize", "org/app", "org/app:1.1", changed=True),
        ParamEdit("kustomize", "web", "web=ghcr.io/org/web:2.0", changed=True),
        ParamEdit("helm", "image.tag", "9", changed=True),
    ]
    images = images_for_plan(source, managed)
    assert images == ("keep/me:1", "org/app:1.1", "web=ghcr.io/org/web:2.0")
    assert update_kustomization("resources:\n- a.yaml\n", images) == (
        'resources:\n- a.yaml\nimages:\n- name: keep/me\n  newTag: "1"\n'
        '- name: org/app\n  newTag: "1.1"\n- name: web\n  newName: ghcr.io/org/web\n'
        '  newTag: "2.0"\n'
    )


@pytest.mark.parametrize(
    ("text", "images", "in_place"),
    [
        ("images:\n- name: web\n  newTag: v1  # pinned\n", ["web:v2"], True),
        ("kind: K\nimages:\n  - name: web\n    newTag: 'v1'\n  - name: db\n", ["web:v2"], True),
        ("images:\n- name: web\n  newTag: v1\n", ["web:v1"], True),  # already there
        ("images:\n- name: web\n  newTag: v1\n", [f"web:v1@sha256:{'a' * 64}"], False),
        ("images:\n- name: web\n  newTag: v1\n  digest: sha256:x\n", ["web:v2"], False),
        ("images:\n- name: web\n  newTag: v1\n", ["api:v2"], False),  # a new element
        ("images:\n- name: web\n  newTag: &t v1\nx: *t\n", ["web:v2"], False),
        ("images:\n- {name: web, newTag: v1}\n", ["web:v2"], False),
        ("images:\n- name: web\n  newTag: v1\n", ["web:1.10"], True),  # quoted: parsed again
    ],
)
def test_value_only_updates_take_the_one_parse_way(
    text: str, images: list[str], in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argocd_image_updater.writeback import kustomization as module

    entries = module._merge(images)
    assert (module._in_place_edits(text, entries) is not None) is in_place
    try:
        quick: str | Exception | None = update_kustomization(text, images)
    except module.KustomizationError as err:
        quick = err
    monkeypatch.setattr(module, "_in_place_edits", lambda text, entries, docs=None: None)
    try:
        general: str | Exception | None = update_kustomization(text, images)
    except module.KustomizationError as err:
        general = err
    assert str(quick) == str(general)


def test_a_file_ruamel_cannot_read_is_a_kustomization_error() -> None:
    """ruamel.yaml raises NotImplementedError for a line separator inside a comment followed by
    a blank line: the file is reported (its group goes on), never an unexpected exception."""
    text = (
        "kind: Kustomization\nimages:\n- name: web\n  newTag: 1.0.0\n"
        "x:\n  '1':  # tra\u2028iling\n   \n  A: '0'\n"
    )
    with pytest.raises(KustomizationError, match="unsupported YAML"):
        update_kustomization(text, ["web:1.0.1"])
