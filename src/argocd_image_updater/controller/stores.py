"""The ports of :mod:`argocd_image_updater.pipeline.ports` on the Kubernetes API and Argo CD's
API: where Applications and ImageUpdaters are read from, and where an ImageUpdater's status is
stored."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from argocd_image_updater.argocd.client import ArgoCDClient, ArgoCDError
from argocd_image_updater.config.imageupdater import compact_image_updater
from argocd_image_updater.kits.interning import intern_strings
from argocd_image_updater.kube.client import APPLICATIONS, IMAGE_UPDATERS, KubeClient, KubeError
from argocd_image_updater.model.app_object import compact_object
from argocd_image_updater.pipeline.ports import (
    CompactPage,
    ConflictError,
    Replaced,
    StoreError,
)
from argocd_image_updater.report.installed_crd import InstalledCrd

if TYPE_CHECKING:
    from argocd_image_updater.controller.watched_objects import WatchedFleet, WatchedObjects


def _keep_applied(crd: InstalledCrd | None) -> Callable[[str], bool] | None:
    """Keep kubectl's last-applied copy of an ImageUpdater when it may hold a spec field the
    installed CRD drops (:meth:`InstalledCrd.keeps_applied`)."""
    return crd.keeps_applied if crd is not None else None


async def _one_page(page: CompactPage) -> AsyncIterator[list[dict[str, Any]]]:
    yield page


class KubeStore:
    """Applications and ImageUpdaters from the Kubernetes API: from the watched copy while it
    is current (:attr:`watched`, :mod:`~argocd_image_updater.controller.watched_objects`),
    else listed."""

    def __init__(self, kube: KubeClient, crd: InstalledCrd | None = None) -> None:
        self.kube = kube
        self.crd = crd
        self.watched: WatchedFleet | None = None

    def _kept(self, copies: Mapping[str | None, WatchedObjects], scope: str | None) -> Any:
        copy = copies.get(scope)
        return copy.objects() if copy is not None else None

    def revision(self, scopes: Sequence[str | None], image_updaters: bool) -> Hashable | None:
        """A stamp of what :meth:`application_pages` and (``image_updaters``)
        :meth:`list_image_updaters` hand out for ``scopes`` now: the same stamp, the very same
        objects (:attr:`WatchedObjects.revision`); None while one of them would be listed."""
        copies = self._copies(scopes, image_updaters)
        return tuple(copy.revision for _, copy in copies) if copies is not None else None

    def replaced_since(
        self, stamp: Hashable, scopes: Sequence[str | None], image_updaters: bool
    ) -> Replaced | None:
        """The objects replaced in their places since :meth:`revision` was ``stamp``
        (:meth:`WatchedObjects.replaced_since`); None when anything else changed."""
        copies = self._copies(scopes, image_updaters)
        if copies is None or not isinstance(stamp, tuple) or len(stamp) != len(copies):
            return None
        if not all(isinstance(since, int) for since in stamp):
            return None
        found: Replaced = ({}, {})
        for (kind, copy), since in zip(copies, stamp, strict=True):
            keys = copy.replaced_since(since)
            if keys is None:
                return None
            for key in keys:
                obj = copy.kept(key)
                if obj is None:
                    return None
                found[kind][key] = obj
        return found

    def _copies(
        self, scopes: Sequence[str | None], image_updaters: bool
    ) -> list[tuple[int, WatchedObjects]] | None:
        """The watched copies serving ``scopes`` (0: Applications, 1: ImageUpdaters), or None
        while one of them is not current."""
        if self.watched is None:
            return None
        kinds = [self.watched.applications]
        if image_updaters:
            kinds.append(self.watched.image_updaters)
        found: list[tuple[int, WatchedObjects]] = []
        for kind, copies in enumerate(kinds):
            for scope in scopes:
                copy = copies.get(scope)
                if copy is None or not copy.current:
                    return None
                found.append((kind, copy))
        return found

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        """The Applications, read a page at a time and each reduced to what the updater reads
        (:func:`~argocd_image_updater.model.app_object.compact_object`): a cycle holds the
        whole listing only in that form."""
        items: list[dict[str, Any]] = []
        async for page in self.kube.list_pages(APPLICATIONS, namespace):
            items.extend(compact_object(obj) for obj in page)
        return items

    def application_pages(self, namespace: str | None) -> AsyncIterator[list[dict[str, Any]]]:
        """The Applications kept by the watched copy, as one :class:`CompactPage`, or, while
        the copy is not current, as listed a page at a time (the cycle reads each page into
        its views before the next one is read)."""
        if self.watched is not None:
            kept = self._kept(self.watched.applications, namespace)
            if kept is not None:
                return _one_page(CompactPage(kept))
        return self.kube.list_pages(APPLICATIONS, namespace)

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        """The ImageUpdaters, read a page at a time (with their statuses, a listing of
        thousands is tens of MB of JSON: read at once, its text, its decoding and the
        connection's read buffer would be that large together), each without what nothing
        reads (:func:`~argocd_image_updater.config.imageupdater.compact_image_updater`), their
        strings interned (they are kept until the next listing: see
        :mod:`~argocd_image_updater.kits.interning`); those the watched copy keeps while it
        is current, as a :class:`CompactPage` (shared: read them, never change them)."""
        if self.watched is not None:
            kept = self._kept(self.watched.image_updaters, namespace)
            if kept is not None:
                return CompactPage(kept)
        items: list[dict[str, Any]] = []
        async for page in self.kube.list_pages(IMAGE_UPDATERS, namespace):
            keep = _keep_applied(self.crd)
            page = [compact_image_updater(obj, keep) for obj in page]
            intern_strings(page)
            items.extend(page)
        return items

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.kube.get_object(APPLICATIONS, namespace, name)
        except KubeError as err:
            if err.is_not_found:
                return None
            raise


class ArgoCDStore:
    """Applications from Argo CD's API; ImageUpdaters (if any) still from Kubernetes."""

    def __init__(
        self,
        client: ArgoCDClient,
        kube: KubeClient | None,
        label_selector: str = "",
        crd: InstalledCrd | None = None,
    ) -> None:
        self.client = client
        self.kube = kube
        self._selector = label_selector
        self.crd = crd

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        items = await self.client.list_applications(self._selector, namespace or "")
        return [compact_object(obj) for obj in items]

    async def application_pages(self, namespace: str | None) -> AsyncIterator[list[dict[str, Any]]]:
        """The Applications as listed, in one page (Argo CD's API does not page)."""
        yield await self.client.list_applications(self._selector, namespace or "")

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get_application(name, namespace)
        except ArgoCDError as err:
            if err.status == 404:
                return None
            raise

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        if self.kube is None:
            return []
        items, _ = await self.kube.list_objects(IMAGE_UPDATERS, namespace)
        keep = _keep_applied(self.crd)
        items = [compact_image_updater(obj, keep) for obj in items]
        intern_strings(items)
        return items


class KubeStatusStore:
    """ImageUpdater statuses through the ``/status`` subresource (a merge patch). ``written``
    is handed each ImageUpdater a write answers or a re-read returns (the watched copy folds
    it in)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.written: Callable[[dict[str, Any]], None] | None = None

    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        try:
            answer = await self.kube.merge_patch_status(IMAGE_UPDATERS, namespace, name, patch)
        except KubeError as err:
            if err.is_not_found:
                return None
            if err.is_conflict:
                raise ConflictError(str(err)) from err
            raise StoreError(str(err)) from err
        if self.written is not None:
            self.written(answer)
        return answer

    async def get_image_updater(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found = await self.kube.get_object(IMAGE_UPDATERS, namespace, name)
        except KubeError as err:
            if err.is_not_found:
                return None
            raise StoreError(str(err)) from err
        if self.written is not None:
            self.written(found)
        return found
