"""Which shard key each selected Application belongs to and which repositories each key uses
(pure): the :class:`~argocd_image_updater.model.state_parts.Layout` by which a sharded fleet
stores its remembered record, one part per key.

A shard key is the ImageUpdater (``namespace/name``) an Application is selected by, or the
Application itself when its v0.x annotations configure it (as
:func:`argocd_image_updater.controller.shards.keep_shard` keys them). A key's repositories are
those of its Applications' images and OCI charts as the cycle names them in the record
(``<registry host>/<repository path>`` through ``registries.conf``), and the charts of Helm
repositories (``<repository URL>/<chart>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.reloading import ReloadingRegistryConfig
from argocd_image_updater.kits.same_items import changed_places
from argocd_image_updater.model.chart import ChartRef
from argocd_image_updater.model.controller_state import app_key, repo_key
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.state_parts import Layout
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.plan.scans import EndpointFor

_Place = tuple[str, str, frozenset[str]]
"""What a layout took of one configuration: its Application, key and repositories."""


def shard_key(config: AppUpdateConfig, cr: CRState | None) -> str:
    """The shard key of ``config``'s Application: its ImageUpdater's, else its own."""
    if cr is not None:
        return f"{cr.namespace}/{cr.name}"
    return app_key(config.app.namespace, config.app.name)


def repositories(config: AppUpdateConfig, endpoint_for: EndpointFor) -> frozenset[str]:
    """The repositories of ``config``'s images and charts, as the record keys them (one that
    cannot be parsed or has no endpoint is left out: it is never scanned)."""
    return frozenset(_repositories(config, endpoint_for))


def _repositories(config: AppUpdateConfig, endpoint_for: EndpointFor) -> Iterator[str]:
    for spec in config.images:
        image = _image_repository(spec.image, endpoint_for)
        if image is not None:
            yield image
    for chart in config.charts:
        found = _chart_repository(chart.chart, endpoint_for)
        if found is not None:
            yield found


def _image_repository(text: str, endpoint_for: EndpointFor) -> str | None:
    try:
        ref = ImageRef.parse(text)
        endpoint = endpoint_for(ref.registry, ref.name)
    except Exception:  # a configuration error is the image's (planning reports it)
        return None
    return repo_key(endpoint.host, endpoint.repository_path(ref.name))


def _chart_repository(text: str, endpoint_for: EndpointFor) -> str | None:
    try:
        ref = ChartRef.parse(text)
        if not ref.is_oci:
            return repo_key(ref.repository_url, ref.name)
        endpoint = endpoint_for(ref.registry, ref.repository)
    except Exception:  # as for an image
        return None
    return repo_key(endpoint.host, endpoint.repository_path(ref.repository))


class Layouts:
    """Makes the :class:`Layout` of a cycle's selection; an Application's repositories are
    worked out again only when its configuration (by identity) or ``registries.conf``
    changed.

    What is kept of each configuration is found by its identity, its ImageUpdater's key once
    per ImageUpdater: making both keys of each of a replica's 1,700 Applications again every
    cycle (one of three in ``benchmarks/sharding.py``) was half of this work (a CPU profile)."""

    def __init__(self, registries: RegistryConfig) -> None:
        self.registries = registries
        self._snapshot: RegistryConfig | None = None
        self._kept: dict[int, tuple[AppUpdateConfig, str, frozenset[str]]] = {}
        """By configuration identity: the configuration (held), its Application and
        repositories; those of the last full listing's and of the webhook events since."""
        self._last: tuple[list[CRState], list[Any], bool, Layout, list[_Place]] | None = None
        """The last selection (its lists as given), whether it was a full listing's, its
        layout, and what the layout took of each place: the same layout again for the very
        same selection (a steady fleet's), or for one whose configurations replaced in their
        places keep their Application, key and repositories (a mended one's)."""

    def layout(self, collected: Collected) -> Layout:
        """Where the entries of ``collected``'s Applications belong: their keys (an ImageUpdater
        that selected none this time is left alone: nothing of it changes)."""
        registries = self.registries
        snapshot = (
            registries.current() if isinstance(registries, ReloadingRegistryConfig) else registries
        )
        if snapshot is not self._snapshot:
            self._snapshot, self._kept, self._last = snapshot, {}, None
        last, full = self._last, bool(collected.listed)
        if (
            last is not None
            and last[2] == full
            and self._lays_out_as_last(collected, last, snapshot)
        ):
            self._last = (list(collected.crs), list(collected.configs), full, last[3], last[4])
            return last[3]
        known = self._kept
        # A full listing: forget the configurations it no longer has.
        met = {} if collected.listed else known
        key_of = {id(cr): f"{cr.namespace}/{cr.name}" for cr in collected.crs}
        apps: dict[str, str] = {}
        repos: dict[str, set[str]] = {}
        places: list[_Place] = []
        for config, cr in collected.configs:
            key = key_of.get(id(cr)) if cr is not None else None
            if key is None:
                key = shard_key(config, cr)
            kept = known.get(id(config))
            if kept is None or kept[0] is not config:
                app = app_key(config.app.namespace, config.app.name)
                kept = (config, app, repositories(config, snapshot.endpoint_for))
            met[id(config)] = kept
            apps[kept[1]] = key
            repos.setdefault(key, set()).update(kept[2])
            places.append((kept[1], key, kept[2]))
        self._kept = met
        layout = Layout(apps, {key: frozenset(names) for key, names in repos.items()})
        self._last = (list(collected.crs), list(collected.configs), full, layout, places)
        return layout

    def _lays_out_as_last(
        self,
        collected: Collected,
        last: tuple[list[CRState], list[Any], bool, Layout, list[_Place]],
        snapshot: RegistryConfig,
    ) -> bool:
        """Whether ``collected`` lays out as the selection of ``last``: the same
        configurations, or others in their places with the same Application, key and
        repositories (those are kept from now on, in place of the ones they replace)."""
        configs, before = collected.configs, last[1]
        if len(configs) != len(before):
            return False
        found: list[tuple[int, tuple[AppUpdateConfig, str, frozenset[str]]]] = []
        for i in changed_places(configs, before):
            config, cr = configs[i]
            app = app_key(config.app.namespace, config.app.name)
            key = f"{cr.namespace}/{cr.name}" if cr is not None else shard_key(config, cr)
            names = repositories(config, snapshot.endpoint_for)
            if (app, key, names) != last[4][i]:
                return False
            found.append((i, (config, app, names)))
        for i, kept in found:
            self._kept.pop(id(before[i][0]), None)
            self._kept[id(kept[0])] = kept
        return True
