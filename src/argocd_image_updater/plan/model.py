"""The values the planner hands on: per-image results, changes, parameter edits, the app plan.

An :class:`AppPlan` is the single value consumed by the ``argocd`` writer (a JSON patch on the
Application), the ``git`` writer (files in a repository) and ``--dry-run``. Every configured image
of the application has exactly one :class:`ImageResult`; images that are updated also have an
:class:`ImageChange` carrying the exact parameter edits.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol

from argocd_image_updater.model.image import ImageRef

EditKind = Literal["helm", "kustomize", "plugin"]
SourcePath = tuple[str | int, ...]

_NO_LABELS: Mapping[str, str] = MappingProxyType({})


class Outcome(enum.StrEnum):
    UPDATED = "updated"
    UP_TO_DATE = "up-to-date"
    SKIPPED = "skipped"
    ERROR = "error"
    WAITING_FOR_SYNC = "waiting-for-sync"
    """Written earlier: the write-back target already holds the chosen tag, Argo CD has not
    synced it yet. Nothing is written, nothing counts as updated."""


class ImageReason(enum.StrEnum):
    """Machine-readable reason codes of an :class:`ImageResult`."""

    UPDATED = "updated"
    UP_TO_DATE = "up-to-date"
    ALREADY_SET = "already-set"
    NOT_LIVE = "not-live"
    TEMPLATE_MISSING_KEY = "template-missing-key"
    """A template of the image reads a label or annotation the Application does not have."""
    NO_CANDIDATE = "no-candidate"
    REGISTRY_ERROR = "registry-error"
    REGISTRY_CONFIG = "registry-config"
    INVALID_CONFIG = "invalid-config"
    PULL_SECRET_NAMESPACE = "pull-secret-namespace"
    POLICY_ERROR = "policy-error"
    VERIFICATION_FAILED = "verification-failed"
    UNSUPPORTED_SOURCE = "unsupported-source-type"
    WAITING_FOR_SYNC = "waiting-for-sync"
    WOULD_DOWNGRADE = "would-downgrade"
    HELD = "held"
    """A rollback or a manual hold keeps the image where it is (``plan.holds``)."""
    TOO_YOUNG = "too-young"
    """Every tag that would be chosen over the running one is younger than ``minAge``: the
    message says which is eligible first, and when."""
    INTERNAL_ERROR = "internal-error"


SIGNATURE_CHECK_PENDING = "signature-check-pending"
"""``detail`` of a ``verification-failed`` result whose chosen tag has not been checked yet."""


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """The signature check of an image's chosen tag: ``digest`` is the verified manifest digest
    (written with the tag), ``error`` why it was refused (``digest`` is then ``""``)."""

    tag: str
    digest: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class ParamEdit:
    """One parameter the updater manages on the Application source.

    ``name`` is the Helm parameter name, the kustomize image key (the kustomize target name, or
    the image's full name without tag) or the plugin environment variable. ``value`` is the
    parameter value, for kustomize the whole ``images`` entry (``[name=]image:tag[@digest]``).
    ``changed`` is False when the source already holds exactly this value: up-to-date images are
    re-set with their current value so that a git file can list every managed image.
    """

    kind: EditKind
    name: str
    value: str
    changed: bool
    force_string: bool = True


_NOT_CONSIDERED = frozenset({ImageReason.NOT_LIVE, ImageReason.TEMPLATE_MISSING_KEY})


@dataclass(frozen=True, slots=True)
class ImageResult:
    """What happened to one configured image, with a reason code and a human message.

    ``current`` is the live reference (``None`` when the image is not live or could not be
    parsed); ``chosen`` is the reference selected from the registry, when one was.
    """

    alias: str
    image: str
    current: str | None
    chosen: str | None
    outcome: Outcome
    reason: str
    message: str
    detail: str = ""
    """Extra machine-readable detail, e.g. the policy's summary for ``no-candidate``."""
    warnings: tuple[str, ...] = ()
    """Problems with the image's settings that did not stop it (``<object> field <path>:
    <problem>``), e.g. an unknown update strategy that fell back to semver."""

    @property
    def considered(self) -> bool:
        """The original counts every image it found live as considered (an image whose
        template could not be expanded for the application was never looked for)."""
        return self.reason not in _NOT_CONSIDERED


class ChangeGuard(Protocol):
    """A check the writer of a change's target makes before writing it, when only the writer
    reads that target: :class:`~argocd_image_updater.plan.holds.RollbackGuard`, which the git
    writer knows. The plan only carries it (a protocol, so that this module, which
    ``plan.holds`` builds on, does not import it back)."""


@dataclass(frozen=True, slots=True)
class ImageChange:
    """An image that moves to a new tag/digest, and the parameter edits that do it.

    ``image`` is the configured reference (its tag is still the version constraint). ``old_tag``
    and ``new_tag`` are rendered ``tag[@digest]`` (``old_tag`` is the digest alone when the live
    image had no tag name); ``new_digest``/``old_digest`` are ``""`` when unknown.
    """

    alias: str
    image: ImageRef
    old_tag: str
    new_tag: str
    new_digest: str
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    edits: tuple[ParamEdit, ...] = ()
    old_digest: str = ""
    guard: ChangeGuard | None = field(default=None, compare=False, repr=False)
    """Set when the write-back target may have been rolled back from a tag written earlier
    and only the writer can read it (a git file): the writer holds the change then."""

    @property
    def old_version(self) -> str:
        """The original's rendering of the old tag: the digest when known, else the name."""
        return self.old_digest or _strip_digest(self.old_tag)

    @property
    def new_version(self) -> str:
        """The original's rendering of the new tag: the digest when known, else the name."""
        return self.new_digest or _strip_digest(self.new_tag)

    @property
    def moved_tag(self) -> str:
        """The tag name when this change keeps it and only the digest differs (the tag was
        pushed again: it moved to another image), else ``""``."""
        tag = _strip_digest(self.new_tag)
        if (
            tag
            and not tag.startswith("sha256:")
            and tag == _strip_digest(self.old_tag)
            and self.old_digest
            and self.new_digest
            and self.old_digest != self.new_digest
        ):
            return tag
        return ""


def _strip_digest(text: str) -> str:
    return text.partition("@")[0]


def render_tag(tag: str | None, digest: str) -> str:
    """``tag@digest``, ``tag``, or the bare digest when there is no tag name."""
    if tag and digest:
        return f"{tag}@{digest}"
    return digest or tag or ""


@dataclass(frozen=True, slots=True)
class RevisionEdit:
    """A chart's new version in the ``targetRevision`` of one Application source.

    ``source_path`` locates the source inside the object (``("spec", "source")`` or
    ``("spec", "sources", i)``); ``alias`` is the chart's key (its alias, or its reference)."""

    alias: str
    source_path: SourcePath
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class AppPlan:
    """What to do with one Application.

    ``source_path`` locates the written source inside the object, e.g. ``("spec", "source")`` or
    ``("spec", "sources", 1)``. ``managed`` lists every parameter edit in application order,
    including unchanged re-sets of up-to-date images. The counters follow the original:
    ``considered`` counts live images, ``skipped`` not-live images and images without a
    candidate, ``updated`` changes, ``errors`` failed images. ``note`` explains an application
    that was not planned at all (e.g. an unsupported source type); it counts nothing.
    """

    app_name: str
    app_namespace: str
    source_path: SourcePath
    source_type: str
    results: tuple[ImageResult, ...]
    changes: tuple[ImageChange, ...]
    managed: tuple[ParamEdit, ...]
    considered: int
    skipped: int
    updated: int
    errors: int
    note: str = ""
    revisions: tuple[RevisionEdit, ...] = ()
    """Chart versions written to sources' ``targetRevision`` (see ``plan.charts``)."""

    @classmethod
    def build(
        cls,
        *,
        app_name: str,
        app_namespace: str,
        source_path: SourcePath,
        source_type: str,
        results: Iterable[ImageResult],
        changes: Iterable[ImageChange] = (),
        managed: Iterable[ParamEdit] = (),
        note: str = "",
        revisions: Iterable[RevisionEdit] = (),
    ) -> AppPlan:
        """Assemble a plan, deriving the counters from the results."""
        rs = tuple(results)
        return cls(
            app_name=app_name,
            app_namespace=app_namespace,
            source_path=source_path,
            source_type=source_type,
            results=rs,
            changes=tuple(changes),
            managed=tuple(managed),
            considered=sum(1 for r in rs if r.considered),
            skipped=sum(1 for r in rs if r.outcome is Outcome.SKIPPED),
            updated=sum(1 for r in rs if r.outcome is Outcome.UPDATED),
            errors=sum(1 for r in rs if r.outcome is Outcome.ERROR),
            note=note,
            revisions=tuple(revisions),
        )

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    @property
    def qualified_name(self) -> str:
        return f"{self.app_namespace}/{self.app_name}"

    def waiting_for_sync(self, messages: Mapping[str, str]) -> AppPlan:
        """This plan with the updates of the aliases in ``messages`` turned into
        ``waiting-for-sync`` results (with the message given): their target already holds the
        new value, so they are neither written again nor counted as updated. ``managed`` is
        kept, so a file written for the other images still lists every managed image."""
        if not messages:
            return self
        results = tuple(
            dataclasses.replace(
                r,
                outcome=Outcome.WAITING_FOR_SYNC,
                reason=ImageReason.WAITING_FOR_SYNC,
                message=messages[r.alias],
            )
            if r.outcome is Outcome.UPDATED and r.alias in messages
            else r
            for r in self.results
        )
        return dataclasses.replace(
            self,
            results=results,
            changes=tuple(c for c in self.changes if c.alias not in messages),
            revisions=tuple(r for r in self.revisions if r.alias not in messages),
            updated=sum(1 for r in results if r.outcome is Outcome.UPDATED),
        )

    def held(self, verdicts: Mapping[str, tuple[str, str]]) -> AppPlan:
        """This plan with the updates of the aliases in ``verdicts`` (``(message, detail)``)
        turned into ``held`` results: the writer found their target rolled back. Their edits
        are left out of ``managed`` (the target keeps what it holds)."""
        if not verdicts:
            return self
        names = {e.name for c in self.changes if c.alias in verdicts for e in c.edits}
        results = tuple(
            dataclasses.replace(
                r,
                outcome=Outcome.SKIPPED,
                reason=ImageReason.HELD,
                message=verdicts[r.alias][0],
                detail=verdicts[r.alias][1],
            )
            if r.outcome is Outcome.UPDATED and r.alias in verdicts
            else r
            for r in self.results
        )
        return dataclasses.replace(
            self,
            results=results,
            changes=tuple(c for c in self.changes if c.alias not in verdicts),
            managed=tuple(e for e in self.managed if e.name not in names),
            skipped=sum(1 for r in results if r.outcome is Outcome.SKIPPED),
            updated=sum(1 for r in results if r.outcome is Outcome.UPDATED),
        )

    def result_for(self, alias: str) -> ImageResult | None:
        for result in self.results:
            if result.alias == alias:
                return result
        return None
