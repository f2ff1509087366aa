"""The resolved, per-application update configuration the planner consumes.

Values here are plain and already merged over their scopes (spec → applicationRef → image):

* :class:`UpdateSettings` — field by field, a set (non-``None``) field of a later scope wins;
  an explicit empty list (``ignoreTags: []``) therefore clears the inherited value.
* :class:`Verification` — ``enabled``, the cosign key, the signature repository, ``keyless`` and
  the trusted root, field by field; no block at any scope means no policy (``None``).
* :class:`WriteBack` — spec → ref only: ``method`` inherits when unset, ``gitConfig``
  repository/branch/writeBackTarget field by field, ``pullRequest`` replaced as a whole.
* :class:`ManifestTarget` — image level only, never merged.

Strategy names, ``allowTags`` match functions, pull secrets and platforms stay raw strings here;
the planner validates them. Every set field remembers where it was set (``origins``: the
ImageUpdater and field path, or the Application and annotation), so that a problem with a value
names the object and the field that hold it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from argocd_image_updater.model.application import Application, SourceType, forced_source_type

# Part of an application's configuration; its own module as a chart's configuration holds one too.
from argocd_image_updater.model.update_settings import UpdateSettings as UpdateSettings

if TYPE_CHECKING:
    from argocd_image_updater.model.chart import ChartSpec

DEFAULT_METHOD: Final = "argocd"
DEFAULT_GIT_CREDENTIALS: Final = "repocreds"

PullRequestProvider = str
"""The key of a pull request host (``model.pr_hosts``): ``github``, ``gitlab``, ``gitea``, …"""


def updatable(source_type: SourceType, target: str | None) -> bool:
    """Whether an app of ``source_type`` can be updated with the git write-back ``target``:
    Helm, Kustomize and Plugin sources, and plain manifests written with ``directory``."""
    return source_type.is_supported or forced_source_type(target) is SourceType.DIRECTORY


class WriteBackError(ValueError):
    """A write-back configuration that cannot be used for an application."""


_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class HelmTarget:
    """Helm parameter / value paths; ``None`` fields fall back to ``image.name``/``image.tag``."""

    name: str | None = None
    tag: str | None = None
    spec: str | None = None


@dataclass(frozen=True, slots=True)
class KustomizeTarget:
    """The image name as it appears in the kustomization (the image to override)."""

    name: str


@dataclass(frozen=True, slots=True)
class PluginTarget:
    """Plugin environment variable names; ``spec`` wins over ``name``/``tag``."""

    name: str | None = None
    tag: str | None = None
    spec: str | None = None


@dataclass(frozen=True, slots=True)
class YamlTarget:
    """``manifestTargets.yaml``: in a ``directory`` write-back target, objects of ``kind``
    (``Kind`` or ``group/Kind``) hold a pod spec at the dotted ``path``."""

    kind: str
    path: str


@dataclass(frozen=True, slots=True)
class ManifestTarget:
    helm: HelmTarget | None = None
    kustomize: KustomizeTarget | None = None
    plugin: PluginTarget | None = None
    yaml: YamlTarget | None = None
    """Not one of :attr:`kinds`: it adds where a plain manifest holds images."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The members that are set, e.g. ``("helm",)``."""
        names = ("helm", "kustomize", "plugin")
        values = (self.helm, self.kustomize, self.plugin)
        return tuple(n for n, v in zip(names, values, strict=True) if v is not None)


@dataclass(frozen=True, slots=True)
class PullRequestSettings:
    provider: PullRequestProvider
    labels: tuple[str, ...] = ()
    api_url: str | None = None
    """The host's API base from ``pullRequest.<host>.apiURL``; ``None``: derived."""


@dataclass(frozen=True, slots=True)
class GitSettings:
    """``gitConfig`` of one scope or merged; ``None`` fields are unset."""

    repository: str | None = None
    branch: str | None = None
    write_back_target: str | None = None
    pull_request: PullRequestSettings | None = None
    more_targets: tuple[str, ...] = ()
    """The targets after the first when ``writeBackTarget`` is a list (set, and merged, with
    ``write_back_target``)."""

    @property
    def write_back_targets(self) -> tuple[str, ...]:
        """Every write-back target, in order (``()`` when unset)."""
        if self.write_back_target is None:
            return ()
        return (self.write_back_target, *self.more_targets)

    def merged(self, over: GitSettings | None) -> GitSettings:
        if over is None:
            return self
        return GitSettings(
            repository=over.repository if over.repository is not None else self.repository,
            branch=over.branch if over.branch is not None else self.branch,
            write_back_target=(
                over.write_back_target
                if over.write_back_target is not None
                else self.write_back_target
            ),
            pull_request=over.pull_request if over.pull_request is not None else self.pull_request,
            more_targets=(
                over.more_targets if over.write_back_target is not None else self.more_targets
            ),
        )


@dataclass(frozen=True, slots=True)
class WriteBackLayer:
    """``writeBackConfig`` of one scope before merging; ``None`` means "inherit"."""

    method: str | None = None
    git: GitSettings | None = None


def split_branch(branch: str) -> tuple[str, str]:
    """``base``, ``base:template`` or ``:template`` → ``(base, write_branch_template)``.

    Raises :class:`WriteBackError` for more than one ``:``.
    """
    parts = branch.strip().split(":")
    if len(parts) > 2:
        raise WriteBackError(
            f"invalid format for git-branch: {branch}: use <branch>, "
            "<base>:<write-branch-template> or :<write-branch-template>"
        )
    return parts[0], parts[1] if len(parts) == 2 else ""


@dataclass(frozen=True, slots=True)
class WriteBack:
    """The merged write-back configuration of one application."""

    method: str = DEFAULT_METHOD
    git: GitSettings = field(default_factory=GitSettings)

    @classmethod
    def from_layers(cls, *layers: WriteBackLayer | None) -> WriteBack:
        """Merge scopes in order (spec, then ref)."""
        method: str | None = None
        git = GitSettings()
        for layer in layers:
            if layer is None:
                continue
            if layer.method is not None:
                method = layer.method
            git = git.merged(layer.git)
        return cls(method=method if method is not None else DEFAULT_METHOD, git=git)

    @property
    def _method(self) -> str:
        return self.method.strip()

    @property
    def is_git(self) -> bool:
        m = self._method
        return m == "git" or m.startswith("git:")

    @property
    def git_credentials_ref(self) -> str:
        """``repocreds`` (default), ``secret:<name>`` or ``secret:<namespace>/<name>``."""
        m = self._method
        if m.startswith("git:"):
            return m[len("git:") :]
        return DEFAULT_GIT_CREDENTIALS

    @property
    def write_back_target(self) -> str | None:
        """The explicit git write-back target (``None`` for the argocd method)."""
        return self.git.write_back_target if self.is_git else None

    @property
    def write_back_targets(self) -> tuple[str | None, ...]:
        """Every git write-back target, in order: ``(None,)`` for the default target."""
        return (self.git.write_back_targets if self.is_git else ()) or (None,)

    @property
    def base_branch(self) -> str:
        """The branch to check out; ``""`` means the source's targetRevision."""
        return split_branch(self.git.branch)[0] if self.git.branch else ""

    @property
    def write_branch(self) -> str:
        """The write-branch template; ``""`` means push to the checkout branch."""
        return split_branch(self.git.branch)[1] if self.git.branch else ""

    def check(self, namespace: str | None = None, *, qualified_secret: bool = False) -> None:
        """Raise :class:`WriteBackError` when this configuration cannot be used.

        ``namespace`` (when given) is the only namespace a ``secret:<ns>/<name>`` credential
        reference may name; ``qualified_secret`` requires the ``<ns>/<name>`` form. Git
        settings are only checked for the git method, as they are ignored otherwise.
        """
        m = self._method
        if m == "argocd":
            return
        if m != "git" and not m.startswith("git:"):
            raise WriteBackError(
                f"invalid update mechanism: {self.method}: use argocd, git or git:<credentials>"
            )
        _check_credentials(self.git_credentials_ref, namespace, qualified_secret)
        if self.git.branch is not None:
            split_branch(self.git.branch)
            if self.git.pull_request is not None and ":" in self.git.branch:
                raise WriteBackError(
                    f"pullRequest mode does not support colon branch format "
                    f"'{self.git.branch}': set the branch to the base branch only, the pull "
                    "request branch is generated"
                )


def _check_credentials(ref: str, namespace: str | None, qualified: bool) -> None:
    if ref == DEFAULT_GIT_CREDENTIALS:
        return
    if ref.startswith("secret:"):
        name = ref[len("secret:") :]
        parts = name.split("/")
        if len(parts) > 2 or not all(parts) or (qualified and len(parts) != 2):
            form = "secret:<namespace>/<name>" if qualified else "secret:[<namespace>/]<name>"
            raise WriteBackError(
                f"invalid git credentials source: '{ref}': use repocreds or {form}"
            )
        if len(parts) == 2 and namespace is not None and parts[0] != namespace:
            raise WriteBackError(
                f"invalid git credentials source: '{ref}': secret namespace '{parts[0]}' must be "
                f"the application's namespace '{namespace}'"
            )
        return
    raise WriteBackError(
        f"invalid git credentials source: unknown credential type in '{ref}': "
        "use repocreds, secret:<name> or secret:<namespace>/<name>"
    )


@dataclass(frozen=True, slots=True)
class Verification:
    """Cosign verification policy of one scope, or merged. ``cosignKey``, ``keyless`` and
    ``trustedRoot`` are each merged as a whole (their fields are required together)."""

    enabled: bool = True
    cosign_secret_name: str | None = None
    cosign_key: str | None = None
    cosign_repository: str | None = None
    """``<registry host>/<repository>`` holding the signatures (cosign's COSIGN_REPOSITORY)."""
    keyless_issuer: str | None = None
    """The OIDC issuer a keyless certificate must name (exact, or ``regexp:<expression>``)."""
    keyless_identity: str | None = None
    """The identity (email or URI) a keyless certificate must name (exact or ``regexp:``)."""
    trusted_root_config_map: str | None = None
    trusted_root_key: str | None = None
    """ConfigMap (in the ImageUpdater's namespace) and key holding a ``trusted_root.json``."""

    def merged(self, over: Verification | None) -> Verification:
        if over is None:
            return self
        has_key = over.cosign_secret_name is not None or over.cosign_key is not None
        has_keyless = over.keyless_issuer is not None or over.keyless_identity is not None
        has_root = over.trusted_root_config_map is not None or over.trusted_root_key is not None
        return Verification(
            enabled=over.enabled,
            cosign_secret_name=over.cosign_secret_name if has_key else self.cosign_secret_name,
            cosign_key=over.cosign_key if has_key else self.cosign_key,
            cosign_repository=over.cosign_repository
            if over.cosign_repository is not None
            else self.cosign_repository,
            keyless_issuer=over.keyless_issuer if has_keyless else self.keyless_issuer,
            keyless_identity=over.keyless_identity if has_keyless else self.keyless_identity,
            trusted_root_config_map=over.trusted_root_config_map
            if has_root
            else self.trusted_root_config_map,
            trusted_root_key=over.trusted_root_key if has_root else self.trusted_root_key,
        )

    @classmethod
    def merge(cls, *scopes: Verification | None) -> Verification | None:
        """Merge in order; ``None`` when no scope has a policy."""
        result: Verification | None = None
        for scope in scopes:
            if scope is None:
                continue
            result = scope if result is None else result.merged(scope)
        return result

    @property
    def has_key(self) -> bool:
        return bool(self.cosign_secret_name) and bool(self.cosign_key)

    @property
    def has_keyless(self) -> bool:
        return bool(self.keyless_issuer) and bool(self.keyless_identity)

    @property
    def has_method(self) -> bool:
        return self.has_key or self.has_keyless


@dataclass(frozen=True, slots=True)
class ImageSpec:
    """One image to manage in one application, with its merged settings.

    ``image`` is the configured ``[registry/]repo[:constraint][@digest]`` string, verbatim.
    ``alias`` may be ``""`` (legacy image lists without alias).
    """

    alias: str
    image: str
    settings: UpdateSettings = field(default_factory=UpdateSettings)
    target: ManifestTarget | None = None
    verification: Verification | None = None
    origin: str = field(default="", compare=False)
    """Where the image is configured, e.g. ``ImageUpdater ns/name field
    spec.applicationRefs[0].images[1]``; ``""`` when unknown."""
    expected_digest: str = ""
    """``set --image ALIAS=TAG@DIGEST``: the digest the chosen tag must have when it is
    written (the cycle pins it); another one is the image's error. ``""``: any (every
    configured image)."""

    @property
    def key(self) -> str:
        """The alias, or the image string when there is none."""
        return self.alias or self.image

    def where(self, subfield: str, annotation: str = "") -> str:
        """Names ``subfield`` of this image's configuration, e.g. ``….images[1].imageName``;
        ``annotation`` is the per-alias annotation holding it, when read from annotations."""
        if not self.origin:
            return f"image '{self.key}' field {subfield}"
        if " annotation " in self.origin:
            return f"{self.origin} ({self.alias}.{annotation})" if annotation else self.origin
        return f"{self.origin}.{subfield}"


@dataclass(frozen=True, slots=True)
class SkippedImage:
    """A configured image (or chart) left out of one application before planning (its templates could
    not be expanded for it: ``config.image_templates``). ``error`` is False when a label or
    annotation the template reads is missing (``detail``: ``label <key>``), True when the
    template is unusable for this application; ``message`` says which and names the field."""

    alias: str
    image: str
    message: str
    detail: str = ""
    error: bool = False


LEGACY_ORIGIN: Final = "annotations"


@dataclass(frozen=True, slots=True)
class AppUpdateConfig:
    """Everything the planner needs to update one application.

    ``origin`` is ``imageupdater <namespace>/<name>`` (an ImageUpdater CR, also in
    ``useAnnotations`` mode) or ``annotations`` (legacy annotation-only mode).
    """

    app: Application
    images: tuple[ImageSpec, ...]
    write_back: WriteBack = field(default_factory=WriteBack)
    origin: str = LEGACY_ORIGIN
    name_pattern: str = ""
    """The ``namePattern`` of the applicationRef that selected the app (CR origin only)."""
    skipped_images: tuple[SkippedImage, ...] = ()
    """Images of the configuration left out of this application, each with why."""
    skipped_charts: tuple[SkippedImage, ...] = ()
    """Charts of the configuration left out of this application, each with why (``image`` is
    the configured chart reference)."""
    charts: tuple[ChartSpec, ...] = ()
    """Helm charts and OCI artifacts whose versions are managed (see ``model.chart``)."""
    chart_versions: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Current chart versions read from a ``chartfile:`` write-back target, by chart key; the
    versions of charts matched to a source are that source's ``targetRevision``."""
    live_is_target: bool = False
    """The live images were read from the write-back target (local mode), not from Argo CD."""

    @property
    def is_legacy(self) -> bool:
        """Legacy annotation mode: pull secrets in any namespace are allowed."""
        return self.origin == LEGACY_ORIGIN
