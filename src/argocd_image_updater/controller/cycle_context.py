"""What the stages of one cycle share: its inputs (:class:`CycleContext`, built by the runner for
each cycle) and what holds for the whole cycle once it began (:class:`Cycle`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.reloading import ReloadingRegistryConfig
from argocd_image_updater.controller.at_once import AtOnceMemory
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.plan_reuse import PlanReuse
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.ports import AppWriter, BatchWriter
from argocd_image_updater.pipeline.records import CycleApp
from argocd_image_updater.plan.choices import ChoiceMemory, ScanResults
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.verify.gate import Gate
from argocd_image_updater.verify.policy import ConfigMapReader
from argocd_image_updater.verify.verifier import Verifier


class FleetScanning(Protocol):
    """A sharded fleet member's part in the scan stage (``controller.fleet_scans.FleetScans``)."""

    @property
    def at_once(self) -> AtOnceMemory:
        """The requests and answers at once of its last full cycle's scans."""
        ...

    async def around(
        self,
        own: Awaitable[ScanResults],
        apps: Sequence[CycleApp],
        others: Sequence[AppUpdateConfig],
        cycle: Cycle,
    ) -> ScanResults:
        """The results of ``own`` (this member's scans), with the fleet's listings around them:
        those of the repositories this member owns that only ``others`` use."""
        ...


@dataclass(slots=True)
class CycleContext:
    """The inputs of one cycle.

    ``writer_for`` gives an application's writer (``None``: written with the others of its
    repository by ``batch_writer``); ``may_write`` says whether this replica may still write
    (leader election). ``verifier`` (kept across cycles for its cache) checks signatures of
    images whose verification is enabled; without one such images are refused, never written.
    ``choices`` (kept across cycles) spares choosing again from tag lists that did not change;
    ``plans`` (kept across full cycles) planning again Applications whose inputs held.
    ``state`` is what the controller remembers (the writes of this cycle are added to it;
    tags no longer in their registry are forgotten); ``now`` the time this cycle began."""

    registries: RegistryConfig
    scanner: Scanner
    credentials: CredentialsCache
    writer_for: Callable[[AppUpdateConfig], AppWriter | None]
    dry_run: bool = False
    max_concurrent_apps: int = 10
    batch_writer: BatchWriter | None = None
    may_write: Callable[[], bool] | None = None
    verifier: Verifier | None = None
    config_maps: ConfigMapReader | None = None
    choices: ChoiceMemory | None = None
    plans: PlanReuse | None = None
    state: ControllerState | None = None
    now: datetime | None = None
    fleet: FleetScanning | None = None
    """A full cycle of a sharded fleet's member: the repositories it lists for the others, the
    copies it reuses (:mod:`~argocd_image_updater.controller.fleet_tag_lists`)."""


@dataclass(slots=True)
class Cycle:
    """One cycle under way: its inputs, and what holds from its start to its end."""

    context: CycleContext
    now: datetime
    scan_round: int
    """Tag lists are fresh: listed after this cycle began (see ``Scanner.new_round``)."""
    registries: RegistryConfig
    """The registry configuration the scan jobs are planned with: one look at a reloading
    ``registries.conf`` per cycle, its endpoints hold for the cycle."""
    gate: Gate
    """Signature checks; each policy's key Secret and trusted root are read once a cycle."""
    app_slots: asyncio.Semaphore
    """``max_concurrent_apps``: the applications verified or written at the same time."""

    @classmethod
    def begin(cls, context: CycleContext) -> Cycle:
        context.credentials.new_round()
        registries = context.registries
        snapshot = registries.current() if isinstance(registries, ReloadingRegistryConfig) else None
        cycle = cls(
            context=context,
            now=context.now or datetime.now(UTC),
            scan_round=context.scanner.new_round(full=context.fleet is not None),
            registries=registries if snapshot is None else snapshot,
            gate=Gate(
                context.verifier,
                registries.endpoint_for,
                context.credentials.for_job,
                context.credentials.secrets,
                context.config_maps,
            ),
            app_slots=asyncio.Semaphore(context.max_concurrent_apps),
        )
        if context.plans is not None:
            context.plans.begin()
        return cycle

    def may_write(self) -> bool:
        """Whether this replica may still write (it is the leader, or there is no election)."""
        return self.context.may_write is None or self.context.may_write()
