"""The records passed between the stages of a cycle.

Config sources produce a :class:`Collected` (the applications to update, with the
ImageUpdater each comes from as a :class:`CRState`); the cycle gives each application its scan
jobs (a :class:`CycleApp`) and turns them into a :class:`CycleResult` (one :class:`AppOutcome`
per application); a batch writer answers with a :class:`BatchResult`; the report stage reads
all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.jobs import AppJobs
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.moved import TagMove


@dataclass(slots=True)
class CRState:
    """What one ImageUpdater contributed to a cycle (the status writer reads this)."""

    namespace: str
    name: str
    generation: int
    resource_version: str
    error: str | None = None
    apps: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Collected:
    configs: list[tuple[AppUpdateConfig, CRState | None]] = field(default_factory=list)
    crs: list[CRState] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Objects (and, in local mode, files) that were skipped; each is an error of the cycle."""
    listed: set[str] = field(default_factory=set)
    """Every Application listed (``namespace/name``), selected or not (read it, never change
    it: a collection handed out again shares it)."""
    shared: bool = False
    """The ImageUpdaters' ``raw`` objects are a watched copy's kept objects (kept anyway, never
    changed)."""
    elsewhere: set[str] = field(default_factory=set)
    """Applications selected for the keys of another replica or static shard (``--sharding``,
    ``--shard-selector``): that one processes them and follows their changes."""
    others: list[AppUpdateConfig] = field(default_factory=list)
    """The configurations of the Applications of this static shard that other members of the
    fleet process (``--sharding``): the repositories they use are listed by their owners."""

    @property
    def errors(self) -> int:
        """Skipped files and objects, and ImageUpdaters that could not be used."""
        return len(self.problems) + sum(1 for cr in self.crs if cr.error)


@dataclass(frozen=True, slots=True)
class CycleApp:
    """One application of a cycle once its scan jobs are known: its configuration, the
    ImageUpdater it comes from (none for annotations) and what to scan for it."""

    config: AppUpdateConfig
    cr: CRState | None
    jobs: AppJobs

    @property
    def key(self) -> str:
        """``namespace/name``, the key of its outcome and of what is remembered of it."""
        app = self.config.app
        return f"{app.namespace}/{app.name}"


@dataclass(slots=True)
class AppOutcome:
    app: str
    plan: AppPlan | None
    written: bool = False
    error: str | None = None
    cr: CRState | None = None
    uid: str = ""
    pushed: tuple[str, str] | None = None
    """git method, pushed straight to the branch Argo CD follows: (repository URL, commit)."""
    link: str = ""
    """Where the written change can be seen (its pull request or commit), when known."""
    moved_tags: tuple[TagMove, ...] = ()
    """Tags its images run or chose that moved to another digest since last seen."""


@dataclass(slots=True)
class CycleResult:
    apps: list[AppOutcome] = field(default_factory=list)
    scans: int = 0
    duration: float = 0.0
    config_errors: int = 0
    """Files and objects that were skipped, and unusable ImageUpdaters (see Collected.errors)."""

    @property
    def images_considered(self) -> int:
        return sum(a.plan.considered for a in self.apps if a.plan)

    @property
    def images_skipped(self) -> int:
        return sum(a.plan.skipped for a in self.apps if a.plan)

    @property
    def images_updated(self) -> int:
        return sum(a.plan.updated for a in self.apps if a.plan and (a.written or a.error is None))

    @property
    def errors(self) -> int:
        apps = sum((a.plan.errors if a.plan else 0) + (1 if a.error else 0) for a in self.apps)
        return apps + self.config_errors


@dataclass(slots=True)
class BatchResult:
    """What a batch write did, by Application key (``namespace/name``).

    ``errors``: the Applications that failed, with the message. ``waiting``: per Application,
    the aliases whose new value the target already held (nothing written for them), each with
    a message saying where — they are ``waiting-for-sync``, not updated.
    """

    errors: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, dict[str, str]] = field(default_factory=dict)
    pushed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Per Application written with a push straight to the branch Argo CD follows (no write
    branch): the repository URL and the commit pushed."""

    links: dict[str, str] = field(default_factory=dict)
    """Per Application written through a pull/merge request: the request's web URL."""

    held: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """Per Application, the aliases not written because their target was rolled back from a
    tag written earlier: the ``held`` result's message and detail (``plan.holds``)."""

    def update(self, other: BatchResult) -> None:
        self.errors.update(other.errors)
        self.held.update(other.held)
        self.waiting.update(other.waiting)
        self.pushed.update(other.pushed)
        self.links.update(other.links)
