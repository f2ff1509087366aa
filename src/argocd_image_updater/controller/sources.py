"""Config sources of a cycle: which Applications to update, and with which settings.

Two origins, merged per cycle:

* ``ImageUpdater`` CRs in the watched namespaces, each selecting Applications in its own namespace;
* (unless disabled) Applications carrying the v0.x ``image-list`` (or ``chart-list``)
  annotation that no CR selected.

Applications are listed once per namespace per cycle, however many CRs live there; with the
Kubernetes API they come from the watched copy instead while it is current
(:mod:`~argocd_image_updater.controller.watched_objects`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.imageupdater import (
    ImageUpdater,
    ImageUpdaterError,
    parse_image_updater,
)
from argocd_image_updater.config.selection import (
    SelectionMemory,
    SelectionResult,
    select_applications,
)
from argocd_image_updater.config.selection_v0 import select_applications_v0
from argocd_image_updater.controller.kept_collection import (
    KeptCollection,
    Made,
    Part,
    Said,
    Stamp,
    cr_state,
    part_lines,
)
from argocd_image_updater.controller.views import ApplicationViews, ImageUpdaterViews
from argocd_image_updater.model.app_object import compact_object
from argocd_image_updater.model.application import Application, ApplicationError
from argocd_image_updater.pipeline.ports import (
    ApplicationStore,
    CompactPage,
    ManifestFiles,
    PagedApplications,
    RevisionedStore,
)
from argocd_image_updater.pipeline.records import Collected, CRState


@dataclass(frozen=True, slots=True)
class LegacyFilter:
    """The v0.x ``run`` flags that narrow which annotated Applications are processed."""

    enabled: bool = True
    namespace: str = ""
    name_patterns: tuple[str, ...] = ()
    label: str = ""


def _key(obj: Any) -> str:
    meta = (obj.get("metadata") if isinstance(obj, dict) else None) or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _parse_apps(
    objects: Iterable[dict[str, Any]],
    listed: set[str],
    problems: list[str],
    files: ManifestFiles | None,
    views: ApplicationViews | None = None,
    *,
    compact: bool = False,
    shared: bool = False,
) -> list[Application]:
    """The views of ``objects``, each listed in ``listed``; ``compact``: they are whole
    objects as listed, each reduced to what is read when it has to be read; ``shared``: a
    watched copy's kept objects (:meth:`ApplicationViews.same_object`)."""
    apps = []
    for obj in objects:
        if shared and views is not None:
            known = views.same_object(obj)
            if known is not None:
                apps.append(known[0])
                listed.add(known[1])
                continue
        key = _key(obj)
        listed.add(key)
        try:
            if views is not None:
                apps.append(views.view(obj, compact=compact, shared_as=key if shared else ""))
            else:
                apps.append(Application.from_object(compact_object(obj) if compact else obj))
        except ApplicationError as err:
            meta = obj.get("metadata") or {}
            namespace, name = str(meta.get("namespace")), str(meta.get("name"))
            where = files.origin("Application", namespace, name) if files is not None else ""
            problems.append(
                f"{where + ': ' if where else ''}skipping malformed Application "
                f"{namespace}/{name}: {err}"
            )
    return apps


def _invalid_image_updater(
    err: ImageUpdaterError, state: CRState, files: ManifestFiles | None
) -> str:
    """The log line of an unusable ImageUpdater: the file and line of the first bad field in
    local mode; the advice fits where the resource comes from."""
    if files is None:
        return f"{err}; skipping it"
    first = err.errors[0].partition(": ")[0] if err.errors else ""
    where = files.origin("ImageUpdater", state.namespace, state.name, first)
    problems = "; ".join(err.errors) or str(err)
    return (
        f"{where + ': ' if where else ''}invalid ImageUpdater {state.namespace}/{state.name}, "
        f"skipped: {problems} (fix the file; the next cycle reads it again)"
    )


async def collect(
    store: ApplicationStore,
    namespaces: Sequence[str] | None,
    legacy: LegacyFilter,
    read_crs: bool = True,
    views: ApplicationViews | None = None,
    cr_views: ImageUpdaterViews | None = None,
    kept: KeptCollection | None = None,
) -> Collected:
    """Gather the AppUpdateConfigs of a cycle. ``namespaces`` None means every namespace.
    ``views`` (kept across cycles) reuses the views of Applications that did not change;
    ``cr_views`` those of ImageUpdaters, and what they selected of unchanged Applications;
    ``kept`` the whole last collection while the store tells that nothing changed."""
    scopes: list[str | None] = list(namespaces) if namespaces is not None else [None]
    stamp = None
    if kept is not None and isinstance(store, RevisionedStore):
        revision = store.revision(scopes, read_crs)
        stamp = Stamp(revision, tuple(scopes), legacy, read_crs) if revision is not None else None
        again = kept.again(stamp)
        if again is None and views is not None and cr_views is not None:
            again = kept.mend(store, stamp, scopes, views, cr_views)
        if again is not None:
            return again
    made = await _collect(store, scopes, legacy, read_crs, views, cr_views)
    out = made.collected
    if kept is not None:
        kept.keep(stamp, made)  # a copy of it: the cycle narrows ``out``
    return out


async def _collect(
    store: ApplicationStore,
    scopes: list[str | None],
    legacy: LegacyFilter,
    read_crs: bool,
    views: ApplicationViews | None,
    cr_views: ImageUpdaterViews | None,
) -> Made:
    said = Said()
    out = Collected(shared=read_crs)
    apps: list[Application] = []
    crs: list[ImageUpdater] = []
    files = store if isinstance(store, ManifestFiles) else None
    memories: dict[tuple[str, str], SelectionMemory | None] = {}
    if views is not None:
        views.begin()
    if cr_views is not None:
        cr_views.begin()
    for scope in scopes:
        if isinstance(store, PagedApplications):
            # Page by page: only one page of listed objects is alive at a time, and an
            # Application whose view is kept is never copied (a watched copy's page is
            # reduced already).
            async for page in store.application_pages(scope):
                kept = isinstance(page, CompactPage)
                apps.extend(
                    _parse_apps(
                        page,
                        out.listed,
                        out.problems,
                        files,
                        views,
                        compact=not kept,
                        shared=kept,
                    )
                )
                del page
        else:
            listed = await store.list_applications(scope)
            apps.extend(_parse_apps(listed, out.listed, out.problems, files, views))
            del listed
        if not read_crs:
            continue
        updaters = await store.list_image_updaters(scope)
        shared = isinstance(updaters, CompactPage)
        out.shared = out.shared and shared
        for obj in updaters:
            state = cr_state(obj)
            out.crs.append(state)
            try:
                if cr_views is not None:
                    parsed, memory = cr_views.parse(obj, shared=shared)
                    memories[(state.namespace, state.name)] = memory
                else:
                    parsed = parse_image_updater(obj)
                crs.append(parsed)
            except ImageUpdaterError as err:
                state.error = str(err)
                said.error(
                    _invalid_image_updater(err, state, files),
                    imageUpdater_namespace=state.namespace,
                    imageUpdater_name=state.name,
                )
            except Exception as err:  # one resource never stops the others
                state.error = (
                    f"could not read ImageUpdater {state.namespace}/{state.name}: "
                    f"{type(err).__name__}: {err}"
                )
                said.error(
                    state.error,
                    imageUpdater_namespace=state.namespace,
                    imageUpdater_name=state.name,
                )
    if views is not None:
        views.end()
    if cr_views is not None:
        cr_views.end()
    by_namespace: dict[str, list[Application]] = {}
    for app in apps:
        by_namespace.setdefault(app.namespace, []).append(app)

    indexes = (
        views.indexes(by_namespace)
        if views is not None
        else {namespace: AppIndex(found) for namespace, found in by_namespace.items()}
    )
    selected: set[tuple[str, str]] = set()
    states = {(s.namespace, s.name): (i, s) for i, s in enumerate(out.crs)}
    parts: list[Part] = []
    head = len(said.lines)
    for cr in crs:
        at, state = states[(cr.namespace, cr.name)]
        selection_memory = memories.get((cr.namespace, cr.name))
        try:
            result = select_applications(
                cr,
                indexes.get(cr.namespace) or AppIndex([]),
                selection_memory,
            )
        except Exception as err:  # one resource never stops the others
            result = SelectionResult(
                error=f"could not select the applications of ImageUpdater {cr.namespace}/"
                f"{cr.name}: {type(err).__name__}: {err}"
            )
        taken: list[int] = []
        if result.error:
            state.error = result.error
        else:
            for position, config in enumerate(result.configs):
                key = (config.app.namespace, config.app.name)
                if key not in selected:
                    selected.add(key)
                    taken.append(position)
        start, first_line = len(out.configs), len(said.lines)
        part_lines(cr, result, taken, said)
        for position in taken:
            config = result.configs[position]
            state.apps.append(config.app.name)
            out.configs.append((config, state))
        names = tuple(config.app.name for config in result.configs)
        lines = said.lines[first_line:]
        parts.append(
            Part(
                state,
                cr,
                selection_memory,
                names,
                tuple(taken),
                start,
                at,
                lines,
                bool(result.error),
            )
        )
    tail = len(said.lines)

    if legacy.enabled:
        candidates = [
            app
            for app in apps
            if (app.namespace, app.name) not in selected
            and (not legacy.namespace or app.namespace == legacy.namespace)
        ]
        result = select_applications_v0(candidates, legacy.name_patterns, legacy.label)
        for warning in result.warnings:
            said.warning(warning)
        out.configs.extend(
            (config, None) for config in result.configs if config.images or config.charts
        )
    for problem in out.problems:
        said.error(problem)
    if files is not None:
        out.problems.extend(files.problems())
    return Made(out, said, parts, head, tail, indexes, selected, legacy.enabled)
