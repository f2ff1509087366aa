"""Commit messages, write-branch names and pull-request texts of the git write-back.

Templates are Go ``text/template`` text (see :mod:`~argocd_image_updater.kits.gotemplate`),
so templates written for the original work unchanged.

**Commit message** data: ``.AppName`` and ``.AppChanges``, a list of ``{Image, OldTag, NewTag,
Labels}`` where ``Image`` is the image path without registry (``example/app`` for
``gcr.io/example/app``), ``OldTag``/``NewTag`` the digest when known, else the tag name, and
``Labels`` the OCI labels of the new image (an empty map when it has none). A template that
fails to execute (also one past the template limits of
:mod:`~argocd_image_updater.kits.gotemplate.limits`) gives ``build: update of application
<app>`` and logs the error, as the original does. A change whose tag name stays and
whose digest differs (the tag was pushed again, written because of ``pinDigest`` or the
``digest`` strategy) has its reason appended to the message, whatever the template: ``tag
'<tag>' of <image> moved to another digest``.

**Write-branch name** data: ``.Images`` (``{Name, Alias, OldTag, NewTag}``), ``.SHA256`` (hex
SHA-256 over ``"<Name>-<OldTag>-<NewTag>,"`` of every change, in order), ``.AppName``,
``.AppNamespace`` and ``.TargetKey``. The original fills the last three only in pull-request
mode and passes empty strings otherwise; here they are always filled, so a template such as
``image-updater-{{.AppName}}`` works without a pull request too. Names are cut to 255
characters; an empty name, or one git cannot use as a branch, is an error.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from argocd_image_updater.kits.gotemplate import Template, TemplateError
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.plan.model import ImageChange

__all__ = [
    "DEFAULT_COMMIT_MESSAGE_TEMPLATE",
    "NO_CHANGES_MESSAGE",
    "BranchNameError",
    "MessageError",
    "branch_name",
    "commit_message",
    "commit_message_template",
    "grouped_commit_message",
    "pr_title_body",
    "render_template_command",
    "target_key",
]

DEFAULT_COMMIT_MESSAGE_TEMPLATE: Final = """build: automatic update of {{ .AppName }}

{{ range .AppChanges -}}
updates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'
{{ end -}}
"""

NO_CHANGES_MESSAGE: Final = "Update parameters"
"""The message of a commit without image changes (the original's git default)."""

MAX_BRANCH_LENGTH: Final = 255
MAX_PR_TITLE: Final = 255
MAX_PR_BODY: Final = 65536

_EMPTY_LABELS: Mapping[str, str] = MappingProxyType({})


class MessageError(ValueError):
    """A commit-message template that cannot be parsed."""


class BranchNameError(ValueError):
    """A write-branch template that gives no usable branch name."""


@dataclass(frozen=True, slots=True)
class _AppChange:
    Image: str
    OldTag: str
    NewTag: str
    Labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY_LABELS)


@dataclass(frozen=True, slots=True)
class _CommitData:
    AppName: str
    AppChanges: tuple[_AppChange, ...]


@dataclass(frozen=True, slots=True)
class _BranchImage:
    Name: str
    Alias: str
    OldTag: str
    NewTag: str


@dataclass(frozen=True, slots=True)
class _BranchData:
    Images: tuple[_BranchImage, ...]
    SHA256: str
    AppName: str
    AppNamespace: str
    TargetKey: str


def commit_message_template(text: str | None, name: str = "commitMessage") -> Template:
    """Parse a commit-message template (the default one when ``text`` is ``None``)."""
    try:
        return Template.parse(DEFAULT_COMMIT_MESSAGE_TEMPLATE if text is None else text, name)
    except TemplateError as err:
        raise MessageError(f"could not parse commit message template: {err}") from None


_DEFAULT_TEMPLATE: Final = commit_message_template(None)
log = get_logger("git")


def _as_data(data: Any) -> Mapping[str, Any]:
    # The interpreter accepts a dataclass as "." like a Go struct; its signature says Mapping.
    return data  # type: ignore[no-any-return]


def commit_message(template: Template | None, app_name: str, changes: Sequence[ImageChange]) -> str:
    """The commit message for ``changes`` of one application (default template when ``None``).

    Without changes the message is :data:`NO_CHANGES_MESSAGE`.
    """
    if not changes:
        return NO_CHANGES_MESSAGE
    data = _CommitData(
        AppName=app_name,
        AppChanges=tuple(
            _AppChange(
                Image=c.image.name,
                OldTag=c.old_version,
                NewTag=c.new_version,
                Labels=c.labels if c.labels else _EMPTY_LABELS,
            )
            for c in changes
        ),
    )
    try:
        message = (template or _DEFAULT_TEMPLATE).render(_as_data(data))
    except TemplateError as err:
        log.error(
            "could not execute template for Git commit message: %s",
            str(err),
            application=app_name,
        )
        message = f"build: update of application {app_name}"
    moved = [
        f"tag '{c.moved_tag}' of {c.image.name} moved to another digest"
        for c in changes
        if c.moved_tag
    ]
    if moved:
        message = message.rstrip("\n") + "\n\n" + "\n".join(moved) + "\n"
    return message


def grouped_commit_message(
    template: Template | None, apps: Sequence[tuple[str, Sequence[ImageChange]]]
) -> str:
    """One commit message for several applications written in one commit.

    With one application this is its own :func:`commit_message`. With more, the subject is
    ``build: automatic update of <n> applications`` and the body holds every application's
    own message, in order, separated by blank lines, so every changed image is listed.
    """
    apps = [(name, changes) for name, changes in apps if changes]
    if not apps:
        return NO_CHANGES_MESSAGE
    if len(apps) == 1:
        return commit_message(template, *apps[0])
    parts = [f"build: automatic update of {len(apps)} applications"]
    parts.extend(commit_message(template, name, changes).strip("\n") for name, changes in apps)
    return "\n\n".join(parts) + "\n"


def target_key(repo: str, base_branch: str, target: str) -> str:
    """The first 8 hex digits of SHA-256 over ``<repo>|<base branch>|<target>``."""
    digest = hashlib.sha256(f"{repo}|{base_branch}|{target}".encode()).hexdigest()
    return digest[:8]


def changes_sha256(changes: Sequence[ImageChange]) -> str:
    """``.SHA256`` of the branch template: over ``"<Name>-<OldTag>-<NewTag>,"`` per change."""
    h = hashlib.sha256()
    for c in changes:
        h.update(f"{c.image.name}-{c.old_version}-{c.new_version},".encode())
    return h.hexdigest()


# What git refuses in a branch name (git check-ref-format), checked on the rendered name.
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def _ref_problem(name: str) -> str | None:
    if _BAD_REF.search(name):
        return "it contains a space, a control character, '..', '//', '@{' or one of ~^:?*[\\"
    if name.startswith(("/", "-", ".")) or name.endswith(("/", ".", ".lock")) or name == "@":
        return "it starts or ends with a character git does not allow there"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "a path component starts with '.' or ends with '.lock'"
    return None


def branch_name(
    template: Template | str,
    changes: Sequence[ImageChange],
    app_name: str,
    app_namespace: str,
    target_key: str,
) -> str:
    """Render a write-branch template; raise :class:`BranchNameError` when it gives no name."""
    text = template.source if isinstance(template, Template) else template
    failure = f"git branch name could not be created from the template: {text}"
    try:
        tpl = template if isinstance(template, Template) else Template.parse(text, "branchName")
        data = _BranchData(
            Images=tuple(
                _BranchImage(
                    Name=c.image.name, Alias=c.alias, OldTag=c.old_version, NewTag=c.new_version
                )
                for c in changes
            ),
            SHA256=changes_sha256(changes),
            AppName=app_name,
            AppNamespace=app_namespace,
            TargetKey=target_key,
        )
        name = tpl.render(_as_data(data))
    except TemplateError as err:
        raise BranchNameError(f"{failure}: {err}") from None
    name = name[:MAX_BRANCH_LENGTH]
    if not name:
        raise BranchNameError(failure)
    problem = _ref_problem(name)
    if problem is not None:
        raise BranchNameError(f"{failure}: '{name}' is not a valid branch name: {problem}")
    return name


def pr_title_body(message: str, app_namespace: str, app_name: str) -> tuple[str, str]:
    """Pull-request title and body from a commit message.

    The title is the first line, the body the rest (both trimmed). Without a message the
    original's fixed texts naming ``<namespace>/<app>`` are used. The title is cut to 255
    characters, the body to 65536.
    """
    text = message.strip()
    if not text:
        qualified = f"{app_namespace}/{app_name}"
        return (
            f"chore: update images for {qualified}",
            "This pull request was created automatically by argocd-image-updater for "
            f"application {qualified}.",
        )
    title, _, body = text.partition("\n")
    return title.strip()[:MAX_PR_TITLE], body.strip()[:MAX_PR_BODY]


def _example_changes() -> tuple[ImageChange, ...]:
    old = "sha256:01d09d19c2139a46aebfb577780d123d7396e97201bc7ead210a2ebff8239dee"
    new = "sha256:7aa7a5359173d05b63cfd682e3c38487f3cb4f7f1d60659fe59fab1505977d4c"
    return (
        ImageChange(
            alias="",
            image=ImageRef.parse("gcr.io/example/example:1.0.0"),
            old_tag="1.0.0",
            new_tag="1.0.1",
            new_digest="",
        ),
        ImageChange(
            alias="",
            image=ImageRef.parse("gcr.io/example/updater"),
            old_tag=old,
            new_tag=new,
            new_digest=new,
            old_digest=old,
        ),
    )


def render_template_command(template_text: str | None) -> str:
    """The output of the ``template`` command: the template rendered for an example app.

    Raise :class:`MessageError` when the template cannot be parsed.
    """
    template = commit_message_template(template_text)
    return commit_message(template, "example-app", _example_changes()) + "\n"
