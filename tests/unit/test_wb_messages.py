from __future__ import annotations

import hashlib

import pytest

from argocd_image_updater.kits.gotemplate import Template
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.plan.model import ImageChange
from argocd_image_updater.writeback.messages import (
    DEFAULT_COMMIT_MESSAGE_TEMPLATE,
    NO_CHANGES_MESSAGE,
    BranchNameError,
    MessageError,
    branch_name,
    changes_sha256,
    commit_message,
    commit_message_template,
    grouped_commit_message,
    pr_title_body,
    render_template_command,
    target_key,
)

D1 = "sha256:01d09d19c2139a46aebfb577780d123d7396e97201bc7ead210a2ebff8239dee"
D2 = "sha256:7aa7a5359173d05b63cfd682e3c38487f3cb4f7f1d60659fe59fab1505977d4c"


def change(
    image: str,
    old: str,
    new: str,
    *,
    labels: dict[str, str] | None = None,
    old_digest: str = "",
    new_digest: str = "",
) -> ImageChange:
    ref = ImageRef.parse(image)
    return ImageChange(
        alias=ref.alias,
        image=ref,
        old_tag=old,
        new_tag=new,
        new_digest=new_digest,
        labels=labels or {},
        old_digest=old_digest,
    )


TWO = (change("foo/bar:1.0", "1.0", "1.1"), change("bar/baz:2.0", "2.0", "2.1"))

LABELS_TEMPLATE = (
    "build: automatic update of {{ .AppName }}\n\n"
    "{{ range .AppChanges -}}\n"
    "updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n"
    '{{ if index .Labels "org.opencontainers.image.revision" -}}'
    'Upstream Commit: {{ index .Labels "org.opencontainers.image.source" }}/commit/'
    '{{ index .Labels "org.opencontainers.image.revision" }}\n'
    "{{ end -}}\n"
    "{{ end -}}\n"
)


# ---------------------------------------------------------------------- commit messages


def test_cm1_default_template() -> None:
    assert commit_message(None, "foobar", TWO) == (
        "build: automatic update of foobar\n\n"
        "updates image foo/bar tag '1.0' to '1.1'\n"
        "updates image bar/baz tag '2.0' to '2.1'\n"
    )


def test_default_template_text_is_the_originals() -> None:
    assert DEFAULT_COMMIT_MESSAGE_TEMPLATE == (
        "build: automatic update of {{ .AppName }}\n\n"
        "{{ range .AppChanges -}}\n"
        "updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n"
        "{{ end -}}\n"
    )


def test_cm2_labels_of_the_new_image() -> None:
    labels = {
        "org.opencontainers.image.source": "https://github.com/org/repo",
        "org.opencontainers.image.revision": "abc123",
    }
    template = Template.parse(LABELS_TEMPLATE)
    changes = [change("foo/bar:1.0", "1.0", "1.1", labels=labels)]
    assert commit_message(template, "foobar", changes) == (
        "build: automatic update of foobar\n\n"
        "updates image foo/bar tag '1.0' to '1.1'\n"
        "Upstream Commit: https://github.com/org/repo/commit/abc123\n"
    )


def test_cm3_no_labels_omits_the_line() -> None:
    template = Template.parse(LABELS_TEMPLATE)
    changes = [change("foo/bar:1.0", "1.0", "1.1")]
    assert commit_message(template, "foobar", changes) == (
        "build: automatic update of foobar\n\nupdates image foo/bar tag '1.0' to '1.1'\n"
    )


def test_cm4_image_without_registry_and_digest_as_tag() -> None:
    changes = [
        change("gcr.io/example/app:1.0", "1.0@" + D1, "1.1@" + D2, old_digest=D1, new_digest=D2),
        change("ghcr.io/org/tool:2.0", "2.0", "2.1"),
    ]
    assert commit_message(None, "app", changes) == (
        "build: automatic update of app\n\n"
        f"updates image example/app tag '{D1}' to '{D2}'\n"
        "updates image org/tool tag '2.0' to '2.1'\n"
    )


def test_cm5_execution_error_falls_back() -> None:
    template = Template.parse("{{ .NoSuchField }}")
    assert commit_message(template, "myapp", TWO) == "build: update of application myapp"


def test_cm11_no_changes_gives_the_git_default() -> None:
    assert commit_message(None, "myapp", []) == NO_CHANGES_MESSAGE == "Update parameters"


def test_cm6_template_command_default_output() -> None:
    assert render_template_command(None) == (
        "build: automatic update of example-app\n\n"
        "updates image example/example tag '1.0.0' to '1.0.1'\n"
        f"updates image example/updater tag '{D1}' to '{D2}'\n\n"
    )


def test_cm7_template_command_custom_template() -> None:
    text = (
        "Custom Commit Message:\nApp: {{.AppName}}\n{{- range .AppChanges }}\n"
        "- {{.Image}}: {{.OldTag}} -> {{.NewTag}}\n{{- end }}"
    )
    assert render_template_command(text) == (
        "Custom Commit Message:\nApp: example-app\n"
        "- example/example: 1.0.0 -> 1.0.1\n"
        f"- example/updater: {D1} -> {D2}\n"
    )


@pytest.mark.parametrize("text", ["feat: update {{.AppName to {{.NewTag}}", "{{ if }}"])
def test_cm8_cm10_invalid_template_is_an_error(text: str) -> None:
    with pytest.raises(MessageError, match="could not parse commit message template"):
        render_template_command(text)
    with pytest.raises(MessageError, match="could not parse commit message template"):
        commit_message_template(text)


def test_cm10_valid_custom_template() -> None:
    template = commit_message_template("feat: update {{.AppName}}")
    assert commit_message(template, "web", TWO) == "feat: update web"


def test_grouped_message_with_one_app_is_its_own_message() -> None:
    assert grouped_commit_message(None, [("foobar", TWO)]) == commit_message(None, "foobar", TWO)


def test_grouped_message_lists_every_app_and_image() -> None:
    other = [change("ghcr.io/org/tool:3", "3", "4")]
    message = grouped_commit_message(None, [("app-a", TWO), ("app-b", other), ("idle", [])])
    assert message == (
        "build: automatic update of 2 applications\n\n"
        "build: automatic update of app-a\n\n"
        "updates image foo/bar tag '1.0' to '1.1'\n"
        "updates image bar/baz tag '2.0' to '2.1'\n\n"
        "build: automatic update of app-b\n\n"
        "updates image org/tool tag '3' to '4'\n"
    )
    title, body = pr_title_body(message, "argocd", "app-a")
    assert title == "build: automatic update of 2 applications"
    assert "app-b" in body and "org/tool" in body


def test_grouped_message_without_changes() -> None:
    assert grouped_commit_message(None, []) == NO_CHANGES_MESSAGE


# ------------------------------------------------------------------------- branch names


def test_br1_names_and_tags() -> None:
    tpl = "image-updater{{range .Images}}-{{.Name}}-{{.NewTag}}{{end}}"
    assert branch_name(tpl, TWO, "app", "ns", "k") == "image-updater-foo/bar-1.1-bar/baz-2.1"


def test_br2_alias() -> None:
    changes = [change("bar=0001.dkr.ecr.us-east-1.amazonaws.com/bar:1.0", "1.0", "1.1")]
    tpl = "image-updater{{range .Images}}-{{.Alias}}-{{.NewTag}}{{end}}"
    assert branch_name(tpl, changes, "app", "ns", "k") == "image-updater-bar-1.1"


def test_br3_sha256() -> None:
    changes = [change("foo/bar:1.0", "1.0", "1.1")]
    expected = "0fcc2782543e4bb067c174c21bf44eb947f3e55c0d62c403e359c1c209cbd041"
    assert hashlib.sha256(b"foo/bar-1.0-1.1,").hexdigest() == expected
    assert changes_sha256(changes) == expected
    assert branch_name("image-updater-{{.SHA256}}", changes, "a", "n", "k") == (
        "image-updater-" + expected
    )


def test_sha256_covers_every_change_in_order() -> None:
    expected = hashlib.sha256(b"foo/bar-1.0-1.1,bar/baz-2.0-2.1,").hexdigest()
    assert changes_sha256(TWO) == expected
    assert changes_sha256(tuple(reversed(TWO))) != expected


def test_br4_truncated_to_255() -> None:
    name = branch_name("x" * 300 + "{{.AppName}}", TWO, "app", "ns", "k")
    assert name == "x" * 255


def test_br5_br6_app_namespace_and_name() -> None:
    tpl = "image-updater-{{.AppNamespace}}-{{.AppName}}"
    assert branch_name(tpl, TWO, "my-app", "my-namespace", "k") == (
        "image-updater-my-namespace-my-app"
    )
    other = [change("foo/bar:1.0", "1.0", "9.9")]
    assert branch_name(tpl, other, "my-app", "my-namespace", "k") == (
        "image-updater-my-namespace-my-app"
    )


def test_br6_empty_app_fields_render_as_empty_strings() -> None:
    tpl = "image-updater-{{.AppNamespace}}-{{.AppName}}"
    assert branch_name(tpl, TWO, "", "", "k") == "image-updater--"


def test_br7_app_name_and_images() -> None:
    changes = [change("nginx:1.4", "1.4", "1.5")]
    tpl = "{{.AppName}}{{range .Images}}-{{.Name}}-{{.NewTag}}{{end}}"
    assert branch_name(tpl, changes, "my-app", "ns", "k") == "my-app-nginx-1.5"


def test_br8_target_key_not_app_name() -> None:
    tpl = Template.parse("image-updater-{{.TargetKey}}-{{.SHA256}}")
    a = branch_name(tpl, TWO, "app-a", "ns", "abc12345")
    b = branch_name(tpl, TWO, "app-b", "ns", "abc12345")
    assert a == b == f"image-updater-abc12345-{changes_sha256(TWO)}"
    assert "app-a" not in a


@pytest.mark.parametrize("tpl", ["{{ .Nope }}", "{{ if }}", "", "{{ if false }}x{{ end }}"])
def test_br9_error_or_empty(tpl: str) -> None:
    with pytest.raises(BranchNameError, match="git branch name could not be created"):
        branch_name(tpl, TWO, "app", "ns", "k")


@pytest.mark.parametrize(
    "tpl",
    [
        "update {{.AppName}}",  # space
        "u-{{range .Images}}{{.NewTag}}{{end}}:x",  # colon
        "a..b",
        "/lead",
        "trail/",
        "x.lock",
        "a//b",
        "-opt",
    ],
)
def test_branch_names_git_refuses_are_errors(tpl: str) -> None:
    with pytest.raises(BranchNameError, match="not a valid branch name"):
        branch_name(tpl, TWO, "app", "ns", "k")


def test_br11_target_key() -> None:
    expected = hashlib.sha256(b"https://git/r|main|apps/x/.argocd-source-x.yaml").hexdigest()[:8]
    key = target_key("https://git/r", "main", "apps/x/.argocd-source-x.yaml")
    assert key == expected and len(key) == 8
    assert key == target_key("https://git/r", "main", "apps/x/.argocd-source-x.yaml")
    assert key != target_key("https://git/other", "main", "apps/x/.argocd-source-x.yaml")
    assert key != target_key("https://git/r", "dev", "apps/x/.argocd-source-x.yaml")
    assert key != target_key("https://git/r", "main", "apps/y")


# ------------------------------------------------------------------------ pull requests


def test_gf11_pr_texts() -> None:
    assert pr_title_body("", "ns", "app") == (
        "chore: update images for ns/app",
        "This pull request was created automatically by argocd-image-updater for "
        "application ns/app.",
    )
    assert pr_title_body("  just a title \n", "ns", "app") == ("just a title", "")
    assert pr_title_body("build: update nginx\n\nupdates nginx tag '1.0' → '1.5'\n", "n", "a") == (
        "build: update nginx",
        "updates nginx tag '1.0' → '1.5'",
    )


def test_pr_texts_are_truncated() -> None:
    title, body = pr_title_body("t" * 300 + "\n" + "b" * 70000, "n", "a")
    assert title == "t" * 255
    assert body == "b" * 65536
