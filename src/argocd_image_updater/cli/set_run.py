"""The work of ``set`` (:mod:`argocd_image_updater.cli.set_cmd`).

1. The image is held (the Application's annotation ``argocd-image-updater.argoproj.io/hold``,
   as ``hold`` puts it: through the Kubernetes API, or in the manifest in local mode), so that
   no cycle of a running controller moves it while, and after, it is written.
2. The controller ``run`` would start is built from the same options, and one cycle runs over
   the selection of :func:`~argocd_image_updater.controller.set_version.set_selection`: the
   chosen tag goes through the registry, signature verification and the Application's
   write-back method like any update. Nothing is remembered of it (the controller's record is
   the running controller's own).
3. When the tag cannot be written, the hold is taken back (the annotations as they were) and
   the command fails with the image's message. A dry run (``--dry-run``) holds nothing.

``ALIAS=DIGEST`` names no tag: between 1 and 2 the tag with that digest is found
(:mod:`~argocd_image_updater.controller.set_digest`); a digest no tag has fails as in 3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from argocd_image_updater.cli import hold_run
from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.cli.run_setup import StartupError
from argocd_image_updater.config.holds import held_annotations
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.set_digest import tag_for_digest
from argocd_image_updater.controller.set_version import (
    Assignment,
    SetError,
    parse_assignment,
    selected_image,
    set_selection,
)
from argocd_image_updater.controller.sources import collect
from argocd_image_updater.model.holds import HOLD_ANNOTATION
from argocd_image_updater.pipeline.records import Collected, CycleResult
from argocd_image_updater.plan.model import ImageReason, Outcome

SET_ERRORS: Final = (SetError, hold_run.HoldError, StartupError)
"""What ``set`` reports as a failure (exit code 1)."""

Changes = Callable[[Mapping[str, str]], dict[str, str | None]]


async def set_version(
    settings: Settings, app: str, namespace: str, image: str, until: str, reason: str
) -> str:
    """Set ``image`` (``ALIAS=TAG``, ``ALIAS=TAG@DIGEST`` or ``ALIAS=DIGEST``) of the
    Application ``app`` (see the module docs); the line to print. Raises one of
    :data:`SET_ERRORS`."""
    wanted = parse_assignment(image)
    [alias] = hold_run._aliases([wanted.alias])
    moment = hold_run._until(until)
    local = settings.applications_api == "local"
    if local and settings.local_repo:
        raise SetError(
            "set in local mode needs --local-path (the files it edits), not --local-repo"
        )
    controller, closers = await build_controller(settings)
    try:
        namespace = namespace or _default_namespace(settings, controller)
        annotations = _Annotations(settings, controller, namespace, app)
        dry_run = bool(settings.dry_run)
        if not dry_run:
            why = reason or f"set to {wanted.version}"
            await annotations.change(lambda now: held_annotations(now, [alias], moment, why))
        try:
            collected = await collect(
                controller.store, controller.namespaces, controller.legacy, controller.read_crs
            )
            tag, digest = await _tag_and_digest(controller, collected, namespace, app, wanted)
            selection = set_selection(collected, namespace, app, alias, tag, digest)
            prepare = controller.prepare

            async def prepared(selected: Collected) -> Collected:
                # after the live images are read (local mode reads the manifests again)
                ready = await prepare(selected) if prepare is not None else selected
                return set_selection(ready, namespace, app, alias, tag, digest)

            controller.prepare = prepared
            controller.state_store = None  # the running controller's record is its own
            controller.reporter = None
            result = await controller.update(selection)
            done = verdict(result, f"{namespace}/{app}", alias, tag, dry_run, wanted.version)
        except BaseException:
            if not dry_run:
                await annotations.undo()
            raise
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
    held = "" if dry_run else f"; held until released{f' or until {until}' if until else ''}"
    return done + held


async def _tag_and_digest(
    controller: Controller, collected: Collected, namespace: str, app: str, wanted: Assignment
) -> tuple[str, str]:
    """The tag to write and the digest it must have (``""``: the tag is written alone)."""
    if wanted.tag:
        return wanted.tag, wanted.digest
    config, _, spec = selected_image(collected, namespace, app, wanted.alias)
    found = await tag_for_digest(
        config,
        spec,
        wanted.digest,
        controller.registries,
        controller.scanner,
        controller.credentials,
    )
    # written as the image's strategy writes it: with the digest when it pins digests
    return found.tag, wanted.digest if found.pins else ""


def _default_namespace(settings: Settings, controller: Controller) -> str:
    if settings.applications_api == "local":
        return str(settings.argocd_namespace) or hold_run.LOCAL_NAMESPACE
    if controller.kube is None:
        raise SetError("--namespace is required without a Kubernetes API")
    return controller.kube.namespace


class _Annotations:
    """Changes the hold annotations of the Application as ``hold`` does, and takes the last
    change back."""

    def __init__(self, settings: Settings, controller: Controller, namespace: str, app: str):
        self.settings = settings
        self.kube: Any = controller.kube
        self.namespace = namespace
        self.app = app
        self.before: dict[str, str | None] = {}

    async def change(self, changes: Changes) -> str:
        def recording(current: Mapping[str, str]) -> dict[str, str | None]:
            wanted = changes(current)
            self.before = {key: current.get(key) for key in wanted}
            return wanted

        return await self._apply(recording)

    async def undo(self) -> None:
        before = dict(self.before)
        if before:
            await self._apply(lambda current: before)

    async def _apply(self, changes: Changes) -> str:
        if self.settings.applications_api == "local":
            local_path = str(self.settings.local_path)
            return hold_run._edit_manifest(local_path, self.namespace, self.app, changes)
        if self.kube is None:
            raise SetError(
                "set needs the Kubernetes API to hold the image (the Application's annotation "
                f"{HOLD_ANNOTATION}); it is disabled"
            )
        return await hold_run._patch_with(self.kube, self.namespace, self.app, changes)


def verdict(
    result: CycleResult, key: str, alias: str, tag: str, dry_run: bool, asked: str = ""
) -> str:
    """What became of the set image in ``result``; :class:`SetError` when it was not set.
    ``asked`` is the version as given (default: ``tag``)."""
    asked = asked or tag
    outcome = next((o for o in result.apps if o.app == key), None)
    if outcome is None or outcome.plan is None:
        error = outcome.error if outcome is not None and outcome.error else "it was not planned"
        raise SetError(f"cannot set {alias} of Application {key} to {asked}: {error}")
    found = next((r for r in outcome.plan.results if r.alias == alias), None)
    if found is None:
        raise SetError(f"cannot set {alias} of Application {key} to {asked}: it was not planned")
    if outcome.error:
        raise SetError(outcome.error)
    what = f"{alias} of Application {key}"
    named = f" (the tag of {asked})" if asked != tag and "@" not in asked else ""
    if found.outcome is Outcome.UPDATED:
        if dry_run:
            return f"dry run: would set {what} to {found.chosen}{named}"
        link = f" ({outcome.link})" if outcome.link else ""
        return f"set {what} to {found.chosen}{named}{link}"
    if found.outcome in (Outcome.UP_TO_DATE, Outcome.WAITING_FOR_SYNC):
        return f"{what} is already set to {found.chosen or tag}{named}"
    message = found.message
    if found.reason == ImageReason.NO_CANDIDATE:
        message = f"the registry does not list tag '{tag}' for {found.image}"
    raise SetError(f"cannot set {what} to {asked}: {message}")
