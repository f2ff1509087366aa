"""Where the git write-back of one Application goes: repository, branches and file.

:func:`resolve_target` follows the original:

* **repository** — ``gitConfig.repository``, else the ``repoURL`` of the source that receives
  the updates;
* **base branch** — the base part of ``gitConfig.branch`` (``base`` or ``base:template``), else
  the ``targetRevision`` of the source whose ``repoURL`` is the repository (multi-source apps),
  else that of the written source; ``HEAD`` and ``""`` mean the remote's default branch;
* **write branch** — the template part of ``gitConfig.branch``, or in pull-request mode
  :data:`PR_BRANCH_TEMPLATE`; ``None`` means "push to the base branch";
* **file** — from ``gitConfig.writeBackTarget`` (one target or a list of them:
  :func:`resolve_targets`), read by the target formats of
  :mod:`~argocd_image_updater.writeback.formats` (one module per format):

  ======================================  ===================================================
  (unset)                                 ``<path>/.argocd-source-<app>.yaml``, or
                                          ``<path>/.argocd-source-<namespace>_<app>.yaml`` for
                                          apps outside the controller's namespace
  ``kustomization``                       the kustomization in ``<path>``
  ``kustomization:/dir``                  the kustomization in ``dir`` (repository root)
  ``kustomization:dir``                   the kustomization in ``<path>/dir``
  ``helmvalues``                          ``<path>/values.yaml``
  ``helmvalues:/file`` / ``:file``        ``file`` (repository root) / ``<path>/file``
  ``directory`` / ``directory[:/]dir``    the plain manifests in ``<path>`` / ``dir``
  ``application:[/]file``                 ``file`` (repository root): the Application's own
                                          manifest (an app of apps)
  ``application``                         the one YAML file below the parent Application's
                                          path holding that manifest, in the parent's
                                          repository and branch (:mod:`.parent`)
  any other text                          that file, relative to the repository root; a
                                          ``.yaml``/``.yml`` file not named
                                          ``.argocd-source-*`` is a Helm values file
  ======================================  ===================================================

  ``<path>`` is the written source's ``path``. Paths are normalised and may not leave the
  repository. A bare target naming a kustomization file (``kustomization.yaml``,
  ``kustomization.yml``, ``Kustomization``) is rejected: use ``kustomization:<dir>``. Other
  targets starting with ``kustomization`` are rejected too (the original read them as
  ``kustomization:`` with the first character after the prefix dropped).

:attr:`GitTarget.target_key` is the original's ``TargetKey`` (computed from the same strings), so
pull-request branch names match those the original creates for the same target.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from argocd_image_updater.model.application import (
    APPLICATION_PREFIX,
    DEFAULT_TARGET_FILE_PREFIX,
    Application,
    ApplicationError,
    AppSource,
    forced_source_type,
)
from argocd_image_updater.model.repo_url import repository_key
from argocd_image_updater.model.update_config import WriteBack, WriteBackError
from argocd_image_updater.writeback.formats import TargetFormat, parse_target
from argocd_image_updater.writeback.formats import named as target_format
from argocd_image_updater.writeback.formats.base import FileTarget, PathRules, TargetError
from argocd_image_updater.writeback.messages import target_key

__all__ = [
    "PR_BRANCH_TEMPLATE",
    "GitTarget",
    "TargetError",
    "default_override_name",
    "group_key",
    "resolve_target",
    "resolve_targets",
]

PR_BRANCH_TEMPLATE: Final = "image-updater-{{.TargetKey}}-{{.SHA256}}"
"""The head branch of pull/merge requests."""


@dataclass(frozen=True, slots=True)
class GitTarget:
    """Where one Application's changes are written.

    ``kind`` names the target :attr:`format`. ``file_path`` is relative to the repository root
    and normalised (``.`` is the root); for formats that list a directory (``kustomization``)
    it is the directory holding the file. ``source_path``
    is the written source's normalised ``path``. ``base_branch`` ``""`` means the remote's
    default branch; ``write_branch_template`` ``None`` means the base branch itself.
    """

    repo_url: str
    base_branch: str
    write_branch_template: str | None
    kind: str
    file_path: str
    source_path: str
    target_key: str
    pull_request: bool = False
    scan: Mapping[str, Any] | None = field(default=None, compare=False)
    """``writeBackTarget: application``: the parent's source, whose ``directory`` settings say
    which files below :attr:`file_path` (its path) to scan for the Application's manifest."""

    @property
    def format(self) -> TargetFormat:
        return target_format(self.kind)

    @property
    def pushes_elsewhere(self) -> bool:
        """True when changes go to another branch than the one checked out."""
        return self.write_branch_template is not None


def default_override_name(app_name: str, app_namespace: str, controller_namespace: str) -> str:
    """``.argocd-source-<app>.yaml``, or ``.argocd-source-<namespace>_<app>.yaml``.

    The short name is used when the app lives in the controller's Argo CD namespace, when that
    namespace is ``default`` (or unknown), or when the app has no namespace.
    """
    if app_namespace in ("", controller_namespace) or controller_namespace in ("", "default"):
        return f"{DEFAULT_TARGET_FILE_PREFIX}{app_name}.yaml"
    return f"{DEFAULT_TARGET_FILE_PREFIX}{app_namespace}_{app_name}.yaml"


def group_key(target: GitTarget, write_branch: str | None = None) -> tuple[str, str, str]:
    """``(repository, base branch, write branch)``: changes with equal keys share one commit.

    ``write_branch`` is the rendered write-branch name when the template has been rendered;
    otherwise the template text itself is used (``""`` when changes go to the base branch).
    """
    branch = write_branch if write_branch is not None else target.write_branch_template or ""
    return repository_key(target.repo_url), target.base_branch, branch


def _who(app: Application) -> str:
    return f"Application '{app.qualified_name}'"


def resolve_targets(
    app: Application,
    write_back: WriteBack,
    controller_namespace: str,
    parent: tuple[Application, AppSource] | None = None,
) -> tuple[GitTarget, ...]:
    """Every target of ``writeBackTarget`` (a list, or one), as :func:`resolve_target`: all
    in the same repository and branch. The targets must agree on the source type they write
    (all Helm values, all kustomizations, all directories, …): one plan feeds them all."""
    texts = write_back.write_back_targets
    if APPLICATION_PREFIX in texts and len(texts) > 1:
        raise TargetError(
            f"{_who(app)}: gitConfig.writeBackTarget {list(texts)}: '{APPLICATION_PREFIX}' "
            "(the manifest found through the parent, in the parent's repository) cannot be "
            "listed with other targets"
        )
    kinds = {forced_source_type(text) for text in texts}
    if len(kinds) > 1:
        raise TargetError(
            f"{_who(app)}: gitConfig.writeBackTarget {list(texts)}: the targets write "
            "different source types; list only targets of one type (Helm values files, "
            "kustomizations, directories or override files)"
        )
    return tuple(
        resolve_target(app, write_back, controller_namespace, text, parent) for text in texts
    )


def resolve_target(
    app: Application,
    write_back: WriteBack,
    controller_namespace: str,
    target_text: str | None = None,
    parent: tuple[Application, AppSource] | None = None,
) -> GitTarget:
    """The repository, branches and file the git write-back of ``app`` uses.

    ``controller_namespace`` is the Argo CD namespace the updater runs against;
    ``target_text`` one of the targets (default: the first). Raise :class:`TargetError`
    naming the Application and the offending setting. ``parent`` is the parent Application
    and its source for the target ``application`` (:mod:`~argocd_image_updater.writeback.
    parent`): the repository and branch are the parent's, the file is found in its path.
    """
    who = _who(app)
    first = write_back.write_back_target
    if target_text is None:
        target_text = first
    try:
        source = app.write_source(first)
    except ApplicationError as err:
        raise TargetError(f"{who}: {err}") from None

    implicit = target_text == APPLICATION_PREFIX
    if implicit:
        if parent is None:
            raise TargetError(
                f"{who}: gitConfig.writeBackTarget '{APPLICATION_PREFIX}': the parent "
                "Application is not known here"
            )
        source = parent[1]
    repo = (write_back.git.repository or "").strip() or source.repo_url.strip()
    if implicit:
        repo = source.repo_url.strip()
    if not repo:
        raise TargetError(
            f"{who}: no git repository to write to: set gitConfig.repository, or a repoURL on "
            "the application source"
        )
    try:
        configured_base, template = write_back.base_branch, write_back.write_branch
    except WriteBackError as err:
        raise TargetError(f"{who}: gitConfig.branch: {err}") from None
    configured_base = configured_base.strip()
    pull_request = write_back.git.pull_request is not None
    if pull_request and template:
        raise TargetError(
            f"{who}: gitConfig.branch '{write_back.git.branch}': pullRequest mode does not "
            "support colon branch format: set only the base branch, the pull request branch "
            "is generated"
        )
    base = configured_base
    if not base:
        branch_source = source if implicit else app.source_for_repo(repo) or source
        base = branch_source.target_revision.strip()
    if base == "HEAD":
        base = ""
    write_template: str | None = template.strip() or None
    if pull_request:
        write_template = PR_BRANCH_TEMPLATE

    root = PathRules(who, "source path", source.path)
    source_path = root.inside(source.path)
    default_name = default_override_name(app.name, app.namespace, controller_namespace)
    default_file = posixpath.join(source_path, default_name) if source_path != "." else default_name
    if implicit:
        file = FileTarget(APPLICATION_PREFIX, source_path, APPLICATION_PREFIX)
    else:
        file = parse_target(target_text or "", source_path, default_file, who)
    return GitTarget(
        repo_url=repo,
        base_branch=base,
        write_branch_template=write_template,
        kind=file.kind,
        file_path=file.file_path,
        source_path=source_path,
        target_key=target_key(repo, configured_base, file.key_path),
        pull_request=pull_request,
        scan=source.raw if implicit else None,
    )
