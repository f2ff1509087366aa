"""The write-back blocks of the ``ImageUpdater`` resource: ``writeBackConfig`` (method, Git
settings, the pull request host) and ``manifestTargets`` (Helm, Kustomize, plugin, and
the kinds holding a pod spec for plain manifests), validated as
the CRD validates them and turned into ``model.update_config`` values."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pydantic import Field, ValidationInfo, create_model, field_validator, model_validator

from argocd_image_updater.config.cr_validation import CRModel, invalid
from argocd_image_updater.config.image_templates import check_template
from argocd_image_updater.kits.gotemplate import TemplateError
from argocd_image_updater.kits.yamltext import YamlEditError, parse_dot_path
from argocd_image_updater.model import update_config as uc
from argocd_image_updater.model.pr_hosts import ONE_HOST_MESSAGE, PR_HOST_KEYS, normalize_labels

METHOD_PATTERN: Final = r"^(argocd|git|git:[a-zA-Z0-9][a-zA-Z0-9-._/:]*)$"
_METHOD_RE: Final = re.compile(METHOD_PATTERN)
MSG_ONE_TARGET: Final = (
    "Exactly one of helm, kustomize, or plugin must be specified within manifestTargets "
    "if the block is present."
)
MSG_PLUGIN_NAME: Final = "At least one of spec or name must be specified in plugin target."
MSG_ONE_PROVIDER: Final = ONE_HOST_MESSAGE


# --- manifest targets --------------------------------------------------------------------------


def _templated(value: str | None, kind: str, key: str) -> str | None:
    """``value`` when its template (if any) parses (``config.image_templates``)."""
    if value is None:
        return None
    try:
        return check_template(value, f"manifestTargets.{kind}.{key}")
    except TemplateError as err:
        raise invalid(str(err)) from None


class HelmTarget(CRModel):
    name: str | None = None
    tag: str | None = None
    spec: str | None = None

    @field_validator("name", "tag", "spec")
    @classmethod
    def _templates(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _templated(value, "helm", str(info.field_name))


class KustomizeTarget(CRModel):
    name: str

    @field_validator("name")
    @classmethod
    def _templates(cls, value: str) -> str:
        return _templated(value, "kustomize", "name") or value


class PluginTarget(CRModel):
    name: str | None = Field(default=None, min_length=1, max_length=253)
    tag: str | None = Field(default=None, min_length=1, max_length=253)
    spec: str | None = Field(default=None, min_length=1, max_length=253)

    @field_validator("name", "tag", "spec")
    @classmethod
    def _templates(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _templated(value, "plugin", str(info.field_name))

    @model_validator(mode="after")
    def _name_or_spec(self) -> PluginTarget:
        if self.spec is None and self.name is None:
            raise invalid(MSG_PLUGIN_NAME)
        return self


class YamlTarget(CRModel):
    """Objects of ``kind`` (``Kind`` or ``group/Kind``) hold a pod spec at the dotted ``path``
    (``writeBackTarget: directory``)."""

    kind: str = Field(min_length=1, max_length=253)
    path: str = Field(min_length=1, max_length=253)

    @field_validator("path")
    @classmethod
    def _dotted(cls, value: str) -> str:
        try:
            parse_dot_path(value)
        except YamlEditError as err:
            raise invalid(
                f"{value!r} is not a dotted path (e.g. spec.template.spec): {err}"
            ) from None
        return value


class ManifestTarget(CRModel):
    helm: HelmTarget | None = None
    kustomize: KustomizeTarget | None = None
    plugin: PluginTarget | None = None
    yaml: YamlTarget | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ManifestTarget:
        count = sum(t is not None for t in (self.helm, self.kustomize, self.plugin))
        if count != 1 and not (self.yaml is not None and count == 0):
            raise invalid(MSG_ONE_TARGET)
        return self

    def to_target(self) -> uc.ManifestTarget:
        return uc.ManifestTarget(
            helm=(
                uc.HelmTarget(self.helm.name, self.helm.tag, self.helm.spec)
                if self.helm is not None
                else None
            ),
            kustomize=(
                uc.KustomizeTarget(self.kustomize.name) if self.kustomize is not None else None
            ),
            plugin=(
                uc.PluginTarget(self.plugin.name, self.plugin.tag, self.plugin.spec)
                if self.plugin is not None
                else None
            ),
            yaml=uc.YamlTarget(self.yaml.kind, self.yaml.path) if self.yaml else None,
        )


# --- write-back --------------------------------------------------------------------------------


API_URL_PATTERN: Final = r"^https?://[^\s/?#@]+(/[^\s?#]*)?$"


class ProviderConfig(CRModel):
    """``github: {}``, ``gitea: {apiURL: https://git.example.com/api/v1}``, …: the host's API
    base, when it is not the one derived from the repository URL (``model.pr_hosts``)."""

    api_url: str | None = Field(
        default=None, alias="apiURL", max_length=2048, pattern=API_URL_PATTERN
    )


def normalize_pr_labels(labels: Sequence[str] | None) -> tuple[str, ...] | None:
    """Trim labels, drop blanks and duplicates (order kept); ``None`` when none remain."""
    return normalize_labels(labels) or None


PullRequestHosts = create_model(
    "PullRequestHosts",
    __base__=CRModel,
    **{key: (ProviderConfig | None, None) for key in PR_HOST_KEYS},  # type: ignore[call-overload]
)
"""One optional object per pull request host of ``model.pr_hosts`` (``github: {}``, …)."""


class PullRequest(PullRequestHosts):
    labels: list[str] | None = Field(default=None, max_length=100)

    @field_validator("labels")
    @classmethod
    def _label_lengths(cls, labels: list[str] | None) -> list[str] | None:
        for i, label in enumerate(labels or ()):
            if not 1 <= len(label) <= 255:
                raise invalid(f"label {label!r} must be 1-255 characters long", f"[{i}]")
        return labels

    @property
    def providers(self) -> tuple[str, ...]:
        """The keys of the hosts that are set."""
        return tuple(key for key in PR_HOST_KEYS if getattr(self, key) is not None)

    @model_validator(mode="after")
    def _one_provider(self) -> PullRequest:
        if len(self.providers) != 1:
            raise invalid(MSG_ONE_PROVIDER)
        return self

    @property
    def normalized_labels(self) -> tuple[str, ...] | None:
        return normalize_pr_labels(self.labels)

    def to_settings(self) -> uc.PullRequestSettings:
        provider = self.providers[0]
        host: ProviderConfig = getattr(self, provider)
        return uc.PullRequestSettings(
            provider=provider, labels=self.normalized_labels or (), api_url=host.api_url
        )


class GitConfig(CRModel):
    repository: str | None = None
    branch: str | None = None
    write_back_target: str | list[str] | None = None
    pull_request: PullRequest | None = None

    @field_validator("write_back_target")
    @classmethod
    def _targets(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list):
            if not value:
                raise invalid("a list of write-back targets holds at least one target")
            for i, item in enumerate(value):
                if not item.strip():
                    raise invalid("a write-back target in a list may not be blank", f"[{i}]")
            if len(set(value)) != len(value):
                raise invalid("the list of write-back targets names a target twice")
        return value

    @model_validator(mode="after")
    def _branch_format(self) -> GitConfig:
        if self.branch is None:
            return self
        if self.branch.strip().count(":") > 1:
            raise invalid(
                f"invalid format for git-branch: '{self.branch}' has more than one ':'; use "
                "<branch>, <base>:<write-branch-template> or :<write-branch-template>",
                "branch",
            )
        if self.pull_request is not None and ":" in self.branch:
            raise invalid(
                f"pullRequest mode does not support colon branch format '{self.branch}': set "
                "the branch to the base branch only, the pull request branch is generated",
                "branch",
            )
        return self

    def to_settings(self) -> uc.GitSettings:
        return uc.GitSettings(
            repository=self.repository,
            branch=self.branch,
            write_back_target=(
                self.write_back_target[0]
                if isinstance(self.write_back_target, list)
                else self.write_back_target
            ),
            more_targets=(
                tuple(self.write_back_target[1:])
                if isinstance(self.write_back_target, list)
                else ()
            ),
            pull_request=self.pull_request.to_settings() if self.pull_request else None,
        )


class WriteBackConfig(CRModel):
    method: str | None = None
    git_config: GitConfig | None = None

    @field_validator("method")
    @classmethod
    def _method_pattern(cls, method: str | None) -> str | None:
        if method is not None and not _METHOD_RE.match(method):
            raise invalid(
                f"{method!r} does not match {METHOD_PATTERN}: use argocd, git, git:repocreds, "
                "git:secret:<name> or git:secret:<namespace>/<name>"
            )
        return method

    def to_layer(self) -> uc.WriteBackLayer:
        return uc.WriteBackLayer(
            method=self.method,
            git=self.git_config.to_settings() if self.git_config is not None else None,
        )


def write_back_layer(wbc: WriteBackConfig | None) -> uc.WriteBackLayer | None:
    return wbc.to_layer() if wbc is not None else None
