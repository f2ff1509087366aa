"""Where the git write-back of one Application goes: repository, branches and file.

:func:`resolve_target` follows the original:

* **repository** — ``gitConfig.repository``, else the ``repoURL`` of the source that receives
  the updates;
* **base branch** — the base part of ``gitConfig.branch`` (``base`` or ``base:template``), else
  the ``targetRevision`` of the source whose ``repoURL`` is the repository (multi-source apps),
  else that of the written source; ``HEAD`` and ``""`` mean the remote's default branch;
* **write branch** — the template part of ``gitConfig.branch``, or in pull-request mode
  :data:`PR_BRANCH_TEMPLATE`; ``None`` means "push to the base branch";
* **file** — from ``gitConfig.writeBackTarget``:

  ======================================  ===================================================
  (unset)                                 ``<path>/.argocd-source-<app>.yaml``, or
                                          ``<path>/.argocd-source-<namespace>_<app>.yaml`` for
                                          apps outside the controller's namespace
  ``kustomization``                       the kustomization in ``<path>``
  ``kustomization:/dir``                  the kustomization in ``dir`` (repository root)
  ``kustomization:dir``                   the kustomization in ``<path>/dir``
  ``helmvalues``                          ``<path>/values.yaml``
  ``helmvalues:/file`` / ``:file``        ``file`` (repository root) / ``<path>/file``
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
from dataclasses import dataclass
from typing import Final, Literal

from argocd_image_updater.config.update_config import WriteBack, WriteBackError
from argocd_image_updater.model.application import (
    DEFAULT_HELM_VALUES_FILE,
    DEFAULT_TARGET_FILE_PREFIX,
    HELMVALUES_PREFIX,
    KUSTOMIZATION_PREFIX,
    Application,
    ApplicationError,
)
from argocd_image_updater.writeback.messages import target_key

__all__ = [
    "KUSTOMIZATION_FILE_NAMES",
    "PR_BRANCH_TEMPLATE",
    "GitTarget",
    "TargetError",
    "TargetKind",
    "default_override_name",
    "group_key",
    "normalize_repo_url",
    "resolve_target",
]

TargetKind = Literal["override", "kustomization", "helmvalues"]

KUSTOMIZATION_FILE_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The file names kustomize recognises, in the order they are looked for."""

PR_BRANCH_TEMPLATE: Final = "image-updater-{{.TargetKey}}-{{.SHA256}}"
"""The head branch of pull/merge requests."""


class TargetError(ValueError):
    """The write-back target of an Application cannot be used; the message names the setting."""


@dataclass(frozen=True, slots=True)
class GitTarget:
    """Where one Application's changes are written.

    ``file_path`` is relative to the repository root and normalised (``.`` is the root). For
    ``kind == "kustomization"`` it is the directory holding the kustomization file (see
    :func:`~argocd_image_updater.writeback.kustomization.find_kustomization`). ``source_path``
    is the written source's normalised ``path``. ``base_branch`` ``""`` means the remote's
    default branch; ``write_branch_template`` ``None`` means the base branch itself.
    """

    repo_url: str
    base_branch: str
    write_branch_template: str | None
    kind: TargetKind
    file_path: str
    source_path: str
    target_key: str
    pull_request: bool = False

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


def normalize_repo_url(url: str) -> str:
    """A comparison key for repository URLs: case, trailing ``/`` and ``.git`` ignored."""
    key = url.strip().lower().rstrip("/")
    return key.removesuffix(".git").rstrip("/")


def group_key(target: GitTarget, write_branch: str | None = None) -> tuple[str, str, str]:
    """``(repository, base branch, write branch)``: changes with equal keys share one commit.

    ``write_branch`` is the rendered write-branch name when the template has been rendered;
    otherwise the template text itself is used (``""`` when changes go to the base branch).
    """
    branch = write_branch if write_branch is not None else target.write_branch_template or ""
    return normalize_repo_url(target.repo_url), target.base_branch, branch


class _Resolver:
    def __init__(self, who: str, setting: str, text: str) -> None:
        self.who = who
        self.setting = setting
        self.text = text

    def fail(self, problem: str) -> TargetError:
        return TargetError(f"{self.who}: {self.setting} '{self.text}': {problem}")

    def inside(self, path: str) -> str:
        """``path`` normalised; an error when it leaves the repository."""
        norm = posixpath.normpath(path) if path else "."
        if norm == ".." or norm.startswith("../"):
            raise self.fail(
                f"the path '{norm}' leaves the repository; paths are relative to the source "
                "path, or to the repository root when they start with '/'"
            )
        return norm

    def under(self, source_path: str, rel: str) -> tuple[str, str]:
        """The normalised path of ``rel`` and the original's (unnormalised) spelling of it."""
        if rel.startswith("/"):
            return self.inside(rel[1:]), rel[1:]
        joined = posixpath.join(source_path, rel) if rel else source_path
        return self.inside(joined), posixpath.normpath(joined) if joined else "."


def _who(app: Application) -> str:
    return f"Application '{app.qualified_name}'"


def resolve_target(app: Application, write_back: WriteBack, controller_namespace: str) -> GitTarget:
    """The repository, branches and file the git write-back of ``app`` uses.

    ``controller_namespace`` is the Argo CD namespace the updater runs against. Raise
    :class:`TargetError` naming the Application and the offending setting.
    """
    who = _who(app)
    target_text = write_back.write_back_target
    try:
        source = app.write_source(target_text)
    except ApplicationError as err:
        raise TargetError(f"{who}: {err}") from None

    repo = (write_back.git.repository or "").strip() or source.repo_url.strip()
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
        branch_source = app.source_for_repo(repo) or source
        base = branch_source.target_revision.strip()
    if base == "HEAD":
        base = ""
    write_template: str | None = template.strip() or None
    if pull_request:
        write_template = PR_BRANCH_TEMPLATE

    root = _Resolver(who, "source path", source.path)
    source_path = root.inside(source.path)
    default_name = default_override_name(app.name, app.namespace, controller_namespace)
    default_file = posixpath.join(source_path, default_name) if source_path != "." else default_name
    kind, file_path, key_path = _file_target(who, target_text or "", source_path, default_file)
    return GitTarget(
        repo_url=repo,
        base_branch=base,
        write_branch_template=write_template,
        kind=kind,
        file_path=file_path,
        source_path=source_path,
        target_key=target_key(repo, configured_base, key_path),
        pull_request=pull_request,
    )


def _file_target(
    who: str, text: str, source_path: str, default_file: str
) -> tuple[TargetKind, str, str]:
    """``(kind, file path, the original's spelling of the target used in the target key)``."""
    r = _Resolver(who, "gitConfig.writeBackTarget", text)
    if not text.strip():
        return "override", default_file, default_file
    if text == KUSTOMIZATION_PREFIX or text.startswith(KUSTOMIZATION_PREFIX + ":"):
        rel = text[len(KUSTOMIZATION_PREFIX) + 1 :]
        return "kustomization", r.under(source_path, rel)[0], default_file
    if text.startswith(KUSTOMIZATION_PREFIX):
        raise r.fail(
            "use 'kustomization' for the source path or 'kustomization:<directory>' to name "
            "the directory holding the kustomization file"
        )
    if text == HELMVALUES_PREFIX or text.startswith(HELMVALUES_PREFIX + ":"):
        rel = text[len(HELMVALUES_PREFIX) + 1 :] or "./" + DEFAULT_HELM_VALUES_FILE
        if rel.endswith("/") or rel in ("/", "."):
            raise r.fail("the target names a directory; name a values file, e.g. helmvalues")
        path, key_path = r.under(source_path, rel)
        if path == ".":
            raise r.fail("the target names no values file")
        return "helmvalues", path, key_path
    path = r.inside(text.lstrip("/"))
    base = posixpath.basename(path)
    if base in KUSTOMIZATION_FILE_NAMES:
        raise r.fail(
            f"'{base}' is a kustomization file: use 'kustomization:{posixpath.dirname(path)}' "
            "to update the images of a kustomization"
        )
    if path == "." or text.endswith("/"):
        raise r.fail("the target names a directory, not a file")
    if base.startswith(DEFAULT_TARGET_FILE_PREFIX):
        return "override", path, text
    if base.endswith((".yaml", ".yml")):
        return "helmvalues", path, text
    return "override", path, text
