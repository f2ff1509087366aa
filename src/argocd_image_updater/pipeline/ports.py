"""The small interfaces the stages of a cycle meet at; adapters (the Kubernetes API, Argo CD's
API, git, local manifest files) implement them, the cycle and the report stage use them.

* :class:`ApplicationStore` — where Applications and ImageUpdaters are listed from
  (:class:`ManifestFiles` when they come from files, in local mode; :class:`PagedApplications`
  when the Applications can be read a page at a time; :class:`RevisionedStore` when it can tell
  that they did not change);
* :class:`AppWriter` — writes one Application's plan (the ``argocd`` method), raising
  :class:`ConflictError` when the Application changed since it was read;
  :class:`BatchWriter` — writes the plans of many Applications at once (the ``git`` method,
  local mode's manifest files);
* :class:`StatusStore` — stores an ImageUpdater's ``status``; :class:`EventSink` — creates
  Kubernetes Events;
* :class:`StateStore` — loads and saves what the controller remembers across cycles and restarts
  (:class:`~argocd_image_updater.model.controller_state.ControllerState`).

Secrets are read through :class:`argocd_image_updater.config.secrets.SecretReader`, next to the
grammar of the references that name them (the registry stage uses it too).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import BatchResult
from argocd_image_updater.plan.model import AppPlan


class ConflictError(Exception):
    """The object changed between read and write (HTTP 409): re-read, re-plan, retry."""


class StoreError(Exception):
    """A store could not do a request (the message says why)."""


class ApplicationStore(Protocol):
    """Lists Applications and ImageUpdaters (the Kubernetes API, or the Argo CD API)."""

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]: ...

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]: ...

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Application as it is now; None when it no longer exists."""
        ...


@runtime_checkable
class PagedApplications(Protocol):
    """A store that can hand out its Applications a page at a time, as listed (not reduced,
    unless the page is a :class:`CompactPage`), so that the reader keeps only what it reads of
    each page before the next one is read."""

    def application_pages(self, namespace: str | None) -> AsyncIterator[list[dict[str, Any]]]: ...


Replaced = tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]
"""Applications and ImageUpdaters replaced in their places, each by (namespace, name)."""


@runtime_checkable
class RevisionedStore(Protocol):
    """A store that can tell that what it hands out did not change: the same stamp, the very
    same objects (a watched copy's)."""

    def revision(self, scopes: Sequence[str | None], image_updaters: bool) -> Hashable | None:
        """The stamp of the Applications and (``image_updaters``) ImageUpdaters of ``scopes``
        (namespaces; None: all); None when it cannot tell."""
        ...

    def replaced_since(
        self, stamp: Hashable, scopes: Sequence[str | None], image_updaters: bool
    ) -> Replaced | None:
        """The Applications and ImageUpdaters replaced in their places since :meth:`revision`
        was ``stamp``, by (namespace, name); None: something else changed too (an object added
        or deleted), or it cannot tell."""
        ...


class CompactPage(list[dict[str, Any]]):
    """A page of :meth:`PagedApplications.application_pages` whose Applications are already
    reduced to what is read (:func:`~argocd_image_updater.model.app_object.compact_object`),
    or ImageUpdaters listed already reduced: the kept objects of a watched copy. They are
    shared with the copy, which hands out an unchanged object as the same object again: read
    them, never change them."""

    __slots__ = ()


@runtime_checkable
class ManifestFiles(Protocol):
    """A store reading manifest files (local mode): it knows where each object is written and
    which files it had to skip."""

    def problems(self) -> list[str]:
        """The files and objects skipped by the last listing (already logged by the store)."""
        ...

    def origin(self, kind: str, namespace: str, name: str, path: str = "") -> str:
        """``<file>:<line>`` of an object (of its field ``path``), or ""."""
        ...


class AppWriter(Protocol):
    """Writes an :class:`AppPlan` back (``argocd`` method: Kubernetes or Argo CD API; ``git``)."""

    async def write(self, app: Application, plan: AppPlan) -> None:
        """Raise :class:`ConflictError` when the Application changed since it was read."""
        ...

    async def reread(self, app: Application) -> Application: ...


class BatchWriter(Protocol):
    """Writes the plans of many Applications at once (``git``: one commit per repository and
    branch). Returns, per app key (``namespace/name``), the errors and the updates whose new
    value the target already held."""

    async def write_batch(
        self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]
    ) -> BatchResult: ...


class KeptFields(Protocol):
    """What the API server keeps of an ImageUpdater's status: the fields of the installed CRD
    (:class:`~argocd_image_updater.report.installed_crd.InstalledCrd`)."""

    def keep_status(self, status: Mapping[str, Any]) -> dict[str, Any]:
        """``status`` without the fields the server would prune."""
        ...

    def learn(self, sent: Mapping[str, Any], answered: Any) -> None:
        """Note what a write's answer shows the server pruned (or now keeps)."""
        ...


class StatusStore(Protocol):
    """Where an ImageUpdater's ``status`` is stored (the ``/status`` subresource)."""

    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Merge ``patch`` (``status``, and the ``metadata.resourceVersion`` it was computed
        from) into the stored object and return it; None when the ImageUpdater no longer
        exists. :class:`ConflictError` when the resourceVersion is stale, :class:`StoreError`
        when the store refuses or fails."""
        ...

    async def get_image_updater(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ImageUpdater as stored now; None when it no longer exists
        (:class:`StoreError` when it cannot be read)."""
        ...


class EventSink(Protocol):
    """Creates core/v1 Events (the Kubernetes API)."""

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> Any: ...


class StateStore(Protocol):
    """Where the controller's remembered record is kept (a ConfigMap, a file)."""

    async def load(self) -> ControllerState:
        """The stored record (empty when none is stored yet). :class:`StoreError` when it
        cannot be read."""
        ...

    async def save(self, state: ControllerState) -> None:
        """Store ``state`` when it changed. When the stored copy changed since ``state`` was
        loaded, the newer copy is loaded and ``state``'s changes are applied to it (and
        ``state`` takes its contents). :class:`StoreError` when it cannot be written."""
        ...


@runtime_checkable
class RevisionFetcher(Protocol):
    """Fetches what the git clones lack to answer :class:`RevisionHistory`'s questions."""

    async def fetch_revisions(
        self,
        repo_url: str,
        revisions: Collection[str],
        since: datetime,
        credentials_ref: str,
        namespace: str,
    ) -> None:
        """Fetch ``revisions`` of ``repo_url`` with their history back to ``since`` into its
        clone (each revision once: a second call for it does nothing), with the write-back
        credentials ``credentials_ref`` of an Application of ``namespace``."""
        ...


class RevisionHistory(Protocol):
    """What the git clones already fetched know about a repository's history."""

    async def contains_commit(self, repo_url: str, commit: str, revision: str) -> bool | None:
        """Whether ``commit`` is ``revision`` or one of its ancestors; ``None`` when the local
        clone of ``repo_url`` lacks one of them (nothing is fetched to find out)."""
        ...

    async def contains_commits(
        self, repo_url: str, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], bool | None]:
        """:meth:`contains_commit` for many ``(commit, revision)`` pairs of one repository."""
        ...
