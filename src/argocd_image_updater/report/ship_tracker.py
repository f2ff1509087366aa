"""Following written changes until they are live, across cycles (the report stage's part of
ship tracking; :mod:`.shipping` is the pure core).

Each cycle the tracker first looks at the changes it follows, using the Application objects the
cycle listed anyway (no extra API call; git method: one local ``git merge-base`` in the cached
clone when Argo CD's synced revision is not the pushed commit), then starts following the
changes the cycle wrote. A newer write of the same image of the same Application replaces the
change followed so far. With a state store, what it follows is also kept in the controller
state (``shipments.json`` of the ConfigMap, ``shipments`` of ``state.json``) whenever it changed,
and read back by the first look after a start: a restart goes on following the changes (without
a store their ``status.shipments`` entries then say ``Unknown``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import RevisionFetcher, RevisionHistory, StateStore
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ParamEdit, RevisionEdit
from argocd_image_updater.plan.patch import PatchError, json_patch_ops
from argocd_image_updater.report.shipping import (
    DEFAULT_TIMEOUT,
    AppView,
    Shipment,
    Stage,
    advance,
    merge_entries,
)

log = get_logger("shipping")

STATUS_LIMIT: Final = 100
"""Entries kept in ``status.shipments``."""


def ship_timeout(cr: CRState | None) -> timedelta:
    """``spec.shipTimeout`` of ``cr`` (validated with the rest of the spec), else 30m."""
    spec = cr.raw.get("spec") if cr is not None else None
    text = spec.get("shipTimeout") if isinstance(spec, dict) else None
    if not isinstance(text, str) or not text:
        return DEFAULT_TIMEOUT
    try:
        found = parse_go_duration(text)
    except DurationError:
        return DEFAULT_TIMEOUT
    return found if found > timedelta(0) else DEFAULT_TIMEOUT


def _scope(cr: CRState | None) -> str:
    return f"{cr.namespace}/{cr.name}" if cr is not None else ""


def _one_change(plan: AppPlan, change: ImageChange) -> AppPlan:
    return dataclasses.replace(plan, changes=(change,), managed=change.edits)


def _plan_json(plan: AppPlan) -> dict[str, Any]:
    """What :func:`_one_change`'s plan needs to tell whether an Application holds it."""
    return {
        "sourcePath": list(plan.source_path),
        "sourceType": plan.source_type,
        "edits": [[e.kind, e.name, e.value, e.force_string] for e in plan.managed],
        "revisions": [[r.alias, list(r.source_path), r.old, r.new] for r in plan.revisions],
    }


def _plan_from(shipment: Shipment, raw: Any) -> AppPlan | None:
    """The plan :func:`_plan_json` wrote; None when it cannot be read."""
    if not isinstance(raw, Mapping):
        return None
    try:
        edits = tuple(ParamEdit(k, n, v, True, bool(f)) for k, n, v, f in raw["edits"])
        revisions = tuple(
            RevisionEdit(str(a), tuple(p), str(o), str(n)) for a, p, o, n in raw["revisions"]
        )
        image = ImageRef.parse(shipment.image)
        namespace, _, name = shipment.app.partition("/")
        change = ImageChange(shipment.alias, image, "", shipment.new_tag, "", edits=edits)
        return AppPlan.build(
            app_name=name,
            app_namespace=namespace,
            source_path=tuple(raw["sourcePath"]),
            source_type=str(raw["sourceType"]),
            results=(),
            changes=(change,),
            managed=edits,
            revisions=revisions,
        )
    except (KeyError, ValueError, TypeError, ImageRefError):
        return None


class ShipTracker:
    """The changes followed until they are live. ``history`` answers ancestry questions from
    the git clones (None: no git method)."""

    def __init__(
        self,
        history: RevisionHistory | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        state: StateStore | None = None,
        may_save: Callable[[], bool] = lambda: True,
        fetcher: RevisionFetcher | None = None,
    ) -> None:
        self._history = history
        self._fetcher = fetcher
        self._clock = clock
        self._state = state
        self.may_save = may_save
        """Whether this replica may store what it follows (the leader)."""
        self._restored = state is None
        self._mine: set[str] = set()
        """The Applications of the last full cycle (whose changes this replica follows)."""
        self._saved: dict[str, Any] | None = None
        self._handed: ControllerState | None = None
        """The cycle's record the changes followed were last set in (stored when it was
        saved: while it still has changes, it was not)."""
        self._pending: dict[tuple[str, str], Shipment] = {}
        self._plans: dict[tuple[str, str], AppPlan] = {}
        self._done: dict[tuple[str, str], Shipment] = {}
        self._index: tuple[dict[str, list[Shipment]], set[tuple[str, str]]] | None = None
        """The shipments by scope and every key, for :meth:`status_entries` (None: stale)."""

    @property
    def pending(self) -> Mapping[tuple[str, str], Shipment]:
        return dict(self._pending)

    async def observe(
        self,
        collected: Collected,
        result: CycleResult,
        *,
        dry_run: bool,
        partial: bool = False,
        into: ControllerState | None = None,
    ) -> list[Shipment]:
        """Move the followed changes on; return those that just became final. Then follow the
        changes this cycle wrote. ``partial`` (a webhook event's cycle): only the Applications
        it listed are looked at. ``into``: the cycle's own record, saved after this call, which
        then stores what is followed (else this tracker stores it itself)."""
        now = self._clock()
        self._index = None
        if not self._restored:
            mine = _apps(collected)
            await self._restore(mine)
            self._restored, self._mine = True, mine
        elif not partial:
            await self._take_over(collected)
        listed = (
            {
                f"{config.app.namespace}/{config.app.name}": config.app
                for config, _ in collected.configs
            }
            if self._pending or self._done
            else {}
        )
        finished: list[Shipment] = []
        raws = {
            key: app.raw
            for key, shipment in self._pending.items()
            if (app := listed.get(shipment.app)) is not None
        }
        views = {key: AppView.from_object(raw) for key, raw in raws.items()}
        ancestry = await self._ancestry(views)
        for key, shipment in list(self._pending.items()):
            raw = raws.get(key)
            if raw is None and partial:
                continue
            view = views.get(key)
            contains = await self._contains(shipment, view, raw, ancestry)
            moved = advance(shipment, view, contains=contains, now=now)
            if moved.stage.final:
                del self._pending[key]
                self._plans.pop(key, None)
                self._done[key] = moved
                finished.append(moved)
            else:
                self._pending[key] = moved
        if not partial:  # an Application gone from the listing keeps no final entry
            for key in [k for k, s in self._done.items() if s.app not in listed]:
                del self._done[key]
        written = [o for o in result.apps if o.written] if not dry_run else []
        if written:
            git = {
                f"{config.app.namespace}/{config.app.name}": config.write_back.git_credentials_ref
                or "repocreds"
                for config, _ in collected.configs
                if config.write_back.is_git
            }
            for outcome in written:
                self._follow(outcome, now, git=git.get(outcome.app))
        self._index = None
        if self._state is not None and not dry_run:
            await self._persist(into)
        return finished

    def _table(self) -> dict[str, Any]:
        """What the controller state keeps of the changes followed."""
        table: dict[str, dict[str, Any]] = {}
        for key, shipment in self._pending.items():
            entry = shipment.to_json()
            plan = self._plans.get(key)
            if plan is not None:
                entry["plan"] = _plan_json(plan)
            table.setdefault(shipment.app, {})[shipment.alias] = entry
        return table

    async def _take_over(self, collected: Collected) -> None:
        """A sharded fleet's keys move: stop following the changes of Applications now
        processed by another replica (it follows them from the stored record), and follow those
        of Applications this replica just took over from it."""
        mine = _apps(collected)
        for key in [k for k, s in self._pending.items() if s.app in collected.elsewhere]:
            del self._pending[key]
            self._plans.pop(key, None)
        for key in [k for k, s in self._done.items() if s.app in collected.elsewhere]:
            del self._done[key]
        taken = mine - self._mine
        if taken and self._state is not None:
            await self._restore(taken)
        self._mine = mine  # once read: a cycle cancelled while reading reads them again

    async def _restore(self, apps: set[str]) -> None:
        """Follow the changes of ``apps`` a run before this one followed (read at the first
        look, then for the Applications of keys taken over)."""
        assert self._state is not None
        try:
            remembered = (await self._state.load()).shipments()
        except Exception as err:  # the changes are then reported Unknown, as without a store
            log.warning("cannot read the changes followed before: %s", str(err))
            return
        for app, aliases in remembered.items():
            if app not in apps:
                continue
            for alias, raw in aliases.items() if isinstance(aliases, Mapping) else ():
                shipment = Shipment.from_json(str(app), str(alias), raw)
                if shipment is None or shipment.stage.final or shipment.key in self._pending:
                    continue
                self._pending[shipment.key] = shipment
                plan = _plan_from(shipment, raw.get("plan"))
                if plan is not None:
                    self._plans[shipment.key] = plan
        self._saved = self._table()

    async def _persist(self, into: ControllerState | None) -> None:
        """Store the changes followed when they changed since last stored: in ``into`` (the
        cycle's record, saved next), or by a save of their own."""
        assert self._state is not None
        handed, self._handed = self._handed, None
        if handed is not None and handed.changed:  # the record handed last was not saved
            self._saved = None
        table = self._table()
        if table == self._saved or not self.may_save():
            return
        if into is not None:
            into.set_shipments(table, self._mine | set(table))
            self._saved, self._handed = table, into
            return
        try:
            state = await self._state.load()
            state.set_shipments(table, self._mine | set(table))
            await self._state.save(state)
        except Exception as err:  # the next look tries again
            log.warning("cannot store the changes followed: %s", str(err))
            return
        self._saved = table

    async def _ancestry(
        self, views: Mapping[tuple[str, str], AppView]
    ) -> dict[tuple[str, str, str], bool | None]:
        """Whether each pushed commit is in the revision Argo CD synced, for every followed git
        change, asked of the clones once per repository (repository, commit, revision)."""
        asked: dict[str, list[tuple[str, str]]] = {}
        for key, view in views.items():
            shipment = self._pending[key]
            if (
                shipment.method == "git"
                and shipment.commit
                and view.sync == "Synced"
                and view.revision
                and view.revision != shipment.commit
            ):
                asked.setdefault(shipment.repository, []).append((shipment.commit, view.revision))
        if self._history is None or not asked:
            return {}
        found: dict[tuple[str, str, str], bool | None] = {}
        for repository, pairs in asked.items():
            try:
                answers = await self._history.contains_commits(repository, pairs)
                unknown = [pair for pair, answer in answers.items() if answer is None]
                if unknown and await self._fetch(repository, unknown, views):
                    answers.update(await self._history.contains_commits(repository, unknown))
            except Exception as err:  # a broken clone never stops the report
                log.warning("cannot check the synced revisions: %s", str(err))
                continue
            found.update({(repository, *pair): answer for pair, answer in answers.items()})
        return found

    async def _fetch(
        self,
        repository: str,
        pairs: list[tuple[str, str]],
        views: Mapping[tuple[str, str], AppView],
    ) -> bool:
        """Fetch the synced revisions of ``pairs`` the clone lacks (the fetcher does each
        once); whether it was asked to."""
        asking = [
            s
            for key, s in self._pending.items()
            if key in views
            and s.repository == repository
            and (s.commit, views[key].revision) in pairs
        ]
        if self._fetcher is None or not asking:
            return False
        first = asking[0]
        since = min(s.written_at for s in asking) - timedelta(days=1)  # clocks differ
        try:
            await self._fetcher.fetch_revisions(
                repository,
                {revision for _, revision in pairs},
                since,
                first.credentials or "repocreds",
                first.app.partition("/")[0],
            )
        except Exception as err:  # the ship timeout then tells
            log.warning("cannot fetch the synced revisions of %s: %s", repository, str(err))
            return False
        return True

    async def _contains(
        self,
        shipment: Shipment,
        view: AppView | None,
        raw: Mapping[str, Any] | None,
        ancestry: Mapping[tuple[str, str, str], bool | None],
    ) -> bool | None:
        """Does the revision Argo CD synced contain the change?"""
        if view is None or raw is None or view.sync != "Synced":
            return None
        if shipment.method == "git":
            if not shipment.commit:  # a pull request: merged in whatever way; the images tell
                return True
            if not view.revision:
                return None
            if shipment.commit == view.revision:
                return True
            if self._history is None:
                return None
            asked = (shipment.repository, shipment.commit, view.revision)
            if asked in ancestry:
                return ancestry[asked]
            try:
                return await self._history.contains_commit(
                    shipment.repository, shipment.commit, view.revision
                )
            except Exception as err:  # a broken clone never stops the report
                log.warning(
                    "cannot check the synced revision: %s", str(err), application=shipment.app
                )
                return None
        plan = self._plans.get(shipment.key)
        if plan is None:
            return None
        try:
            return not json_patch_ops(raw, plan)
        except PatchError:
            return False

    def _follow(self, outcome: AppOutcome, now: datetime, *, git: str | None) -> None:
        """Follow the changes ``outcome`` wrote (``git``: the credentials reference of an
        Application of the git method)."""
        plan = outcome.plan
        if not outcome.written or plan is None:
            return
        method = "git" if git is not None or outcome.pushed is not None else "argocd"
        repository, commit = outcome.pushed or ("", "")
        for change in plan.changes:
            shipment = Shipment(
                app=outcome.app,
                alias=change.alias,
                image=change.image.full_name,
                new_tag=change.new_tag,
                method=method,
                written_at=now,
                timeout=ship_timeout(outcome.cr),
                uid=outcome.uid,
                scope=_scope(outcome.cr),
                commit=commit,
                repository=repository,
                credentials=git or "",
            )
            self._index = None
            self._pending[shipment.key] = shipment  # a newer write replaces the older one
            self._plans[shipment.key] = _one_change(plan, change)
            self._done.pop(shipment.key, None)

    def status_entries(self, cr: CRState, previous: Mapping[str, Any] | None) -> list[Any]:
        """``status.shipments`` of ``cr``: the changes followed and the last final one per image
        of its Applications, and the stored entries of other changes."""
        by_scope, known = self._indexed()
        mine = by_scope.get(_scope(cr), [])
        stored = (previous or {}).get("shipments")
        return merge_entries(stored if isinstance(stored, list) else (), mine, known, STATUS_LIMIT)

    def _indexed(self) -> tuple[dict[str, list[Shipment]], set[tuple[str, str]]]:
        """The shipments by scope and every key, made once per report (not per ImageUpdater)."""
        if self._index is None:
            by_scope: dict[str, list[Shipment]] = {}
            for shipment in (*self._done.values(), *self._pending.values()):
                by_scope.setdefault(shipment.scope, []).append(shipment)
            self._index = (by_scope, set(self._pending) | set(self._done))
        return self._index


def _apps(collected: Collected) -> set[str]:
    return {f"{config.app.namespace}/{config.app.name}" for config, _ in collected.configs}


__all__ = ["ShipTracker", "Stage", "ship_timeout"]
