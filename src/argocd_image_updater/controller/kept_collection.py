"""The last cycle's collection handed out again, whole while nothing it read changed, and mended
where only a few objects were replaced.

A fleet's cycle reads mostly the same Applications and ImageUpdaters from the watched copy as
the cycle before (:mod:`~argocd_image_updater.controller.watched_objects`: every change of a
copy takes a new stamp, and the objects replaced in their place are journaled:
:meth:`~argocd_image_updater.controller.stores.KubeStore.replaced_since`). What
:func:`~argocd_image_updater.controller.sources.collect` makes of them depends on them alone
(and on the controller's flags), so:

* while the stamp holds, the last collection is handed out again: the same configurations and
  ImageUpdater states (objects the stages after it recognise by identity), in new lists, and the
  same log lines said again;
* when only some objects were replaced in their place (a write, a status, Argo CD's own updates
  of an Application), only the ImageUpdaters that changed, and those whose candidates include a
  changed Application, select again; when each of them selects the Applications it selected
  before, their configurations are put in their places. Anything else (an object added or
  deleted, a malformed one, an ImageUpdater that fails or selects others, an Application no
  ImageUpdater selects while the v0.x annotations are read) and the cycle collects everything.

Even with every view and selection found by identity, collecting 5,000 Applications of 1,000
ImageUpdaters walks them all: 10-20 ms of CPU a cycle, paid by every replica of a sharded fleet
as by a single one; handed out again it is the copy of two lists, and mended it costs what
changed (``benchmarks/sharding.py``, the part "list and select the whole fleet"; 2 vCPU AMD
EPYC, CPython 3.11).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.imageupdater import ImageUpdater
from argocd_image_updater.config.selection import (
    SelectionMemory,
    SelectionResult,
    select_applications,
)
from argocd_image_updater.controller.views import ApplicationViews, ImageUpdaterViews
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import RevisionedStore
from argocd_image_updater.pipeline.records import Collected, CRState

log = get_logger("sources")

STALE_SHARE: Final = 4
STALE_MIN: Final = 1000
"""A whole collection once more Applications were replaced than one in :data:`STALE_SHARE` of
those listed (and than :data:`STALE_MIN`): the views of the objects they replaced, still known
by identity, are let go then."""


@dataclass(frozen=True, slots=True)
class _Line:
    level: str
    message: str
    args: tuple[Any, ...]
    fields: Mapping[str, Any]


@dataclass(slots=True)
class Said:
    """The log lines of a collection: said as they are made (unless ``quiet``), and kept to be
    said again."""

    lines: list[_Line] = field(default_factory=list)
    quiet: bool = False

    def _say(self, level: str, message: str, args: tuple[Any, ...], fields: dict[str, Any]) -> None:
        line = _Line(level, message, args, fields)
        self.lines.append(line)
        if not self.quiet:
            _emit(line)

    def error(self, message: str, *args: Any, **fields: Any) -> None:
        self._say("error", message, args, fields)

    def warning(self, message: str, *args: Any, **fields: Any) -> None:
        self._say("warning", message, args, fields)

    def debug(self, message: str, *args: Any, **fields: Any) -> None:
        self._say("debug", message, args, fields)


def _emit(line: _Line) -> None:
    getattr(log, line.level)(line.message, *line.args, **line.fields)


def part_lines(cr: ImageUpdater, result: SelectionResult, taken: Sequence[int], said: Said) -> None:
    """Say what the selection of ``cr`` found: its warnings, the Applications it skipped, its
    error, and each of its configurations (by position) not in ``taken`` (selected first by
    another ImageUpdater)."""
    for warning in result.warnings:
        said.warning(warning, imageUpdater_namespace=cr.namespace, imageUpdater_name=cr.name)
    for app_name, reason in result.skipped:
        said.debug(
            "skipping app: %s",
            reason,
            application=f"{cr.namespace}/{app_name}",
            imageUpdater_name=cr.name,
        )
    if result.error:
        said.error(result.error, imageUpdater_namespace=cr.namespace, imageUpdater_name=cr.name)
        return
    mine = set(taken)
    for position, config in enumerate(result.configs):
        if position not in mine:
            said.warning(
                "Application is selected by more than one ImageUpdater; only the first one "
                "updates it",
                application=f"{config.app.namespace}/{config.app.name}",
                imageUpdater_name=cr.name,
            )


@dataclass(slots=True)
class Part:
    """What one ImageUpdater's selection contributed to a collection."""

    state: CRState
    cr: ImageUpdater
    memory: SelectionMemory | None
    names: tuple[str, ...]
    """The Applications its selection configured, in order."""
    taken: tuple[int, ...]
    """The positions among them that are its own (the others were selected first by another)."""
    start: int
    """Where its configurations begin in the collection's ``configs``."""
    at: int
    """Its state's position in the collection's ``crs``."""
    lines: list[_Line]
    failed: bool = False


@dataclass(slots=True)
class Made:
    """A whole collection as made, with what mending it needs."""

    collected: Collected
    said: Said
    parts: list[Part]
    head: int
    """The lines said before the first part's (ImageUpdaters that could not be read)."""
    tail: int
    """Where the lines said after the last part's begin (v0.x annotations, problems)."""
    indexes: dict[str, AppIndex]
    selected: set[tuple[str, str]]
    legacy: bool


class Stamp(NamedTuple):
    """What a collection was made from: the store's revision and the controller's flags."""

    revision: Hashable
    scopes: tuple[str | None, ...]
    legacy: Hashable
    """The v0.x annotations' filter (``sources.LegacyFilter``)."""
    image_updaters: bool


def _copy(collected: Collected, configs: list[Any], crs: list[CRState]) -> Collected:
    return Collected(
        configs=configs,
        crs=crs,
        problems=list(collected.problems),
        listed=collected.listed,
        shared=collected.shared,
    )


class KeptCollection:
    """The last collection made from a store that can tell what changed, with the stamp of
    what it read (see the module)."""

    def __init__(self) -> None:
        self._stamp: Stamp | None = None
        self._made: Made | None = None
        self._readers: dict[tuple[str, int], list[int]] | None = None
        self._everyone: dict[str, list[int]] = {}
        self._part_at: dict[tuple[str, str], int] | None = None
        """Each part's place by its ImageUpdater (namespace, name), made when first needed."""
        self._replaced = 0
        self.handed_out = 0
        """How many collections were handed out again (for tests and benchmarks)."""
        self.mended = 0
        """How many were mended where objects were replaced."""

    def again(self, stamp: Stamp | None) -> Collected | None:
        """The last collection again, its lines said again, when ``stamp`` (None: unknown) is
        the one it was made under; None: collect."""
        made = self._made
        if stamp is None or made is None or stamp != self._stamp:
            return None
        for line in made.said.lines:
            _emit(line)
        self.handed_out += 1
        kept = made.collected
        return _copy(kept, list(kept.configs), list(kept.crs))

    def keep(self, stamp: Stamp | None, made: Made) -> None:
        """Keep a whole collection (made under ``stamp``; None: nothing is kept) as made: the
        stages after it narrow a collection by binding new lists, never by changing these."""
        if stamp is None:
            self._stamp, self._made = None, None
            return
        kept = made.collected
        made.collected = _copy(kept, list(kept.configs), list(kept.crs))
        self._stamp, self._made = stamp, made
        self._readers, self._everyone, self._replaced = None, {}, 0
        self._part_at = None

    def _readers_of(self, namespace: str, position: int) -> list[int]:
        """The parts whose candidates include the Application at ``position`` of
        ``namespace``."""
        made = self._made
        assert made is not None
        if self._readers is None:
            readers: dict[tuple[str, int], list[int]] = {}
            everyone: dict[str, list[int]] = {}
            for i, part in enumerate(made.parts):
                namespace_of = part.cr.namespace
                index = made.indexes.get(namespace_of)
                if index is None:
                    continue
                found = part.memory.candidate_positions(index) if part.memory else None
                if found is None:
                    everyone.setdefault(namespace_of, []).append(i)
                    continue
                for at in found:
                    readers.setdefault((namespace_of, at), []).append(i)
            self._readers, self._everyone = readers, everyone
        return [*self._readers.get((namespace, position), ()), *self._everyone.get(namespace, ())]

    def mend(
        self,
        store: RevisionedStore,
        stamp: Stamp | None,
        scopes: Sequence[str | None],
        views: ApplicationViews,
        cr_views: ImageUpdaterViews,
    ) -> Collected | None:
        """The last collection with the objects replaced since put in their places (its lines
        said), when that is all that changed and every ImageUpdater concerned selects what it
        selected before; None: collect (see the module)."""
        made, last = self._made, self._stamp
        if stamp is None or made is None or last is None:
            return None
        if last._replace(revision=None) != stamp._replace(revision=None):  # other flags
            return None
        if any(part.failed for part in made.parts):
            return None
        found = store.replaced_since(last.revision, scopes, stamp.image_updaters)
        if found is None:
            return None
        apps, updaters = found
        self._replaced += len(apps)
        if self._replaced > max(len(made.collected.listed) // STALE_SHARE, STALE_MIN):
            return None
        indexes = dict(made.indexes)
        touched: set[int] = set()
        lists: dict[str, list[Any]] = {}
        for (namespace, name), obj in apps.items():
            index = indexes.get(namespace)
            position = index.position(name) if index is not None else None
            if index is None or position is None:
                return None  # malformed, or in no namespace selected from
            if made.legacy and (namespace, name) not in made.selected:
                return None
            try:
                app = views.replaced(obj, f"{namespace}/{name}")
            except Exception:  # read again by the whole collection, which says why
                return None
            lists.setdefault(namespace, list(index.apps))[position] = app
            touched.update(self._readers_of(namespace, position))
        for namespace, found_apps in lists.items():
            indexes[namespace] = indexes[namespace].renewed(found_apps)
            views.renewed_index(namespace, indexes[namespace])
        parts = list(made.parts)
        if updaters and self._part_at is None:
            self._part_at = {(p.cr.namespace, p.cr.name): i for i, p in enumerate(parts)}
        for key, obj in updaters.items():
            i = self._part_at.get(key) if self._part_at is not None else None
            if i is None:
                return None  # it could not be read before
            try:
                cr, memory = cr_views.reparse(obj)
            except Exception:
                return None
            if memory is not parts[i].memory:  # another spec: its candidates are found anew
                self._readers = None
            state = _state(obj, parts[i].state.apps)
            parts[i] = dataclasses.replace(parts[i], state=state, cr=cr, memory=memory)
            touched.add(i)
        configs = list(made.collected.configs)
        crs = list(made.collected.crs)
        for i in sorted(touched):
            part = parts[i]
            try:
                index = indexes.get(part.cr.namespace) or AppIndex([])
                result = select_applications(part.cr, index, part.memory)
            except Exception:
                return None
            names = tuple(config.app.name for config in result.configs)
            if result.error or names != part.names:
                return None
            quiet = Said(quiet=True)
            part_lines(part.cr, result, part.taken, quiet)
            segment: list[tuple[AppUpdateConfig, CRState | None]] = [
                (result.configs[j], part.state) for j in part.taken
            ]
            configs[part.start : part.start + len(segment)] = segment
            crs[part.at] = part.state
            parts[i] = dataclasses.replace(part, names=names, lines=quiet.lines)
        lines = made.said.lines
        said = Said(
            [
                *lines[: made.head],
                *(line for part in parts for line in part.lines),
                *lines[made.tail :],
            ]
        )
        for line in said.lines:
            _emit(line)
        collected = _copy(made.collected, configs, crs)
        self._made = Made(
            collected,
            said,
            parts,
            made.head,
            len(said.lines) - (len(lines) - made.tail),
            indexes,
            made.selected,
            made.legacy,
        )
        self._stamp = stamp
        self.mended += 1
        return _copy(collected, list(configs), list(crs))


def cr_state(obj: Any) -> CRState:
    """What the status writer needs of an ImageUpdater, read leniently: its problems are
    reported by parsing it."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    generation = meta.get("generation")
    return CRState(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        generation=generation if isinstance(generation, int) else 0,
        resource_version=str(meta.get("resourceVersion", "")),
        raw=obj if isinstance(obj, dict) else {},
    )


def _state(obj: Any, apps: list[str]) -> CRState:
    state = cr_state(obj)
    state.apps = list(apps)
    return state
