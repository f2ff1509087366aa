"""Phase 2 of planning: given the registry scans, what to change and why not for the rest.

Images are decided in configuration order against a working copy of the Application source, so
each image sees the edits of the ones before it, as in the original. For each job:

1. the scan failed → error (``registry-error``);
2. the policy chooses no tag → skipped (``no-candidate``, with the policy's summary);
3. with ``pinDigest`` (a strategy choosing by name), the chosen tag takes the digest the cycle
   asked the registry for (:mod:`~argocd_image_updater.plan.pins`); none → error
   (``registry-error``), and so is a digest other than the one ``set TAG@DIGEST`` expects;
   the ``digest`` strategy picks the live container the image refers to, now that the digest is
   known;
4. *needs update* (the original's rule): for ``digest`` and pinned images, the live image has no
   digest or another one (a tag pushed again is an update); otherwise the live tag differs from the chosen one (digests decide when either side has
   one), or a kustomize target renames the image to another registry/repository;
5. the image is held (a rollback, or a manual hold: :mod:`~argocd_image_updater.plan.holds`)
   → nothing is written (``held``);
6. the chosen tag is ordered below the running one by the image's strategy → nothing is written
   (``would-downgrade``), unless the image allows downgrades (see
   :mod:`~argocd_image_updater.policy.downgrade`);
7. the new value is already in the Application spec → not an update (``already-set``);
8. otherwise an :class:`~argocd_image_updater.plan.model.ImageChange`. Images that are up to
   date are re-set to their live tag so that every managed parameter is listed.

Every result carries the warnings met reading the image's settings. An unexpected failure while
deciding one image becomes that image's error (``internal-error``); the others are decided.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from argocd_image_updater.model.image import ImageRef, match_for_digest_update, tags_equal
from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.plan.charts import ChartJob, decide_charts
from argocd_image_updater.plan.choices import ScanOutcome, ScanResultLike, ScanResults
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, ScanKey
from argocd_image_updater.plan.model import (
    SIGNATURE_CHECK_PENDING,
    AppPlan,
    ImageChange,
    ImageReason,
    ImageResult,
    Outcome,
    ParamEdit,
    SignatureCheck,
    render_tag,
)
from argocd_image_updater.plan.params import (
    apply_edit,
    helm_edits,
    kustomize_edits,
    plugin_edits,
    tag_in_source,
    thaw,
)
from argocd_image_updater.policy.downgrade import downgrade
from argocd_image_updater.policy.min_age import waiting_message
from argocd_image_updater.policy.select import PolicyError, Selection, choose
from argocd_image_updater.policy.strategies import UpdateStrategy

_NO_LABELS: Mapping[str, str] = MappingProxyType({})


def _choose(
    results: Mapping[ScanKey, ScanOutcome], job: ImageJob | ChartJob, scan: ScanResultLike
) -> Selection:
    if isinstance(results, ScanResults) and results.get(job.scan_key) is scan:
        return results.choose(job.scan_key, job.policy, scan)
    return choose(job.policy, scan.tags, scan.order_hint)


def needs_update(
    live: ImageRef | None,
    cfg: ImageRef,
    chosen: TagInfo,
    strategy: UpdateStrategy,
    *,
    kustomize_target: bool = False,
    pin: bool = False,
) -> bool:
    """The original's rule; ``live`` is ``None`` for a forced image (treated as tagless).
    ``pin`` (``pinDigest``) compares digests as the ``digest`` strategy does."""
    live_tag = live.tag if live is not None else None
    live_digest = live.digest if live is not None else ""
    if (strategy.pins_digest or pin) and (not live_digest or live_digest != chosen.digest):
        return True
    if not tags_equal(live_tag, live_digest, chosen.name, chosen.digest):
        return True
    return kustomize_target and live is not None and not cfg.matches(live)


def chosen_labels(tag: TagInfo, platforms: PlatformFilter) -> Mapping[str, str]:
    """The OCI labels of the chosen tag: those of its newest wanted image that has labels."""
    images = [i for i in tag.images if i.labels and platforms.wants(i.platform)]
    if not images:
        return _NO_LABELS
    newest = max(images, key=lambda i: i.created.timestamp() if i.created else float("-inf"))
    return newest.labels


def _edits(source: Mapping[str, Any], job: ImageJob, image: ImageRef) -> tuple[ParamEdit, ...]:
    if job.kind == "kustomize":
        return kustomize_edits(source, job.kustomize_name, image)
    if job.kind == "plugin":
        return plugin_edits(source, job.names, image)
    return helm_edits(source, job.names, image)


def _pinned(
    results: Mapping[ScanKey, ScanOutcome], key: ScanKey, tag: str
) -> str | Exception | None:
    """The digest the cycle asked the registry for, for a pinned image's chosen tag."""
    return results.pinned(key, tag) if isinstance(results, ScanResults) else None


def _has_kustomize_target(job: ImageJob) -> bool:
    return bool(job.target and job.target.kustomize and job.target.kustomize.name)


class _Planner:
    """Accumulates results, changes and edits for one application."""

    def __init__(
        self,
        jobs: AppJobs,
        rejected: Mapping[str, str],
        checks: Mapping[str, SignatureCheck],
        holds: HoldContext | None = None,
    ) -> None:
        self.holds = holds
        self._source: Mapping[str, Any] = jobs.source.raw if jobs.source is not None else {}
        self._edited: dict[str, Any] | None = None
        self.rejected = rejected
        self.checks = checks
        self.results: list[ImageResult] = []
        self.changes: list[ImageChange] = []
        self.managed: list[ParamEdit] = []

    def result(
        self,
        job: ImageJob,
        outcome: Outcome,
        reason: ImageReason,
        message: str,
        *,
        chosen: str | None = None,
        detail: str = "",
    ) -> None:
        current = job.live.full_name_with_tag if job.live is not None else None
        self.results.append(
            ImageResult(
                job.alias,
                job.image,
                current,
                chosen,
                outcome,
                reason,
                message,
                detail,
                warnings=job.warnings,
            )
        )

    @property
    def working(self) -> Mapping[str, Any]:
        """The source with the edits applied so far (read only: edits go through
        :meth:`apply`, which copies the source at the first one; most applications of a cycle
        have none)."""
        return self._edited if self._edited is not None else self._source

    def apply(self, edits: tuple[ParamEdit, ...]) -> None:
        if not edits:
            return
        if self._edited is None:
            if not any(edit.changed for edit in edits):
                # The source holds these values already (an up-to-date image, most of them):
                # later edits compare values, so it need not be copied for them.
                self.managed.extend(edits)
                return
            self._edited = thaw(self._source)
        for edit in edits:
            apply_edit(self._edited, edit)
        self.managed.extend(edits)

    def _target(self, job: ImageJob) -> str | None:
        """The tag the Application's parameters hold for ``job`` when they are its write-back
        target (the ``argocd`` method) and a write of it is remembered; else None."""
        holds = self.holds
        if holds is None or holds.via != "argocd" or job.key not in holds.writes:
            return None
        return tag_in_source(self._source, job.kind, job.names, job.kustomize_name, job.cfg)

    def decide(
        self, job: ImageJob, scan: ScanOutcome | None, results: Mapping[ScanKey, ScanOutcome]
    ) -> None:
        if scan is None:
            self.result(
                job,
                Outcome.ERROR,
                ImageReason.REGISTRY_ERROR,
                f"Could not get tags from registry: no scan result for {job.repository}",
            )
            return
        if isinstance(scan, Exception):
            self.result(
                job,
                Outcome.ERROR,
                ImageReason.REGISTRY_ERROR,
                f"Could not get tags from registry: {scan}",
            )
            return
        try:
            selection = _choose(results, job, scan)
        except PolicyError as err:
            self.result(
                job,
                Outcome.ERROR,
                ImageReason.POLICY_ERROR,
                f"Unable to find newest version from available tags: {err}",
            )
            return
        chosen = selection.chosen
        young = waiting_message(selection.eligible)
        if chosen is None and young:
            self.result(
                job, Outcome.SKIPPED, ImageReason.TOO_YOUNG, young, detail=selection.summary
            )
            return
        if chosen is None:
            self.result(
                job,
                Outcome.SKIPPED,
                ImageReason.NO_CANDIDATE,
                "No suitable image tag for upgrade found in list of available tags: "
                + selection.summary,
                detail=selection.summary,
            )
            return

        strategy = job.policy.strategy
        if not strategy.pins_digest and chosen.digest:
            # Only a strategy that pins digests writes them (GT-9): others compare and write
            # tag names, even when the scan learned the digest while reading metadata.
            chosen = dataclasses.replace(chosen, digest="")
        if job.pin_digest and not strategy.pins_digest:
            pinned = _pinned(results, job.scan_key, chosen.name)
            if not isinstance(pinned, str) or not pinned:
                self.result(
                    job,
                    Outcome.ERROR,
                    ImageReason.REGISTRY_ERROR,
                    f"Could not get the digest of tag '{chosen.name}' to pin it (pinDigest): "
                    + (str(pinned) if pinned is not None else "the registry was not asked"),
                    chosen=job.cfg.with_tag(chosen.name).full_name_with_tag,
                )
                return
            chosen = dataclasses.replace(chosen, digest=pinned)
        if job.expected_digest and chosen.digest != job.expected_digest:
            self.result(
                job,
                Outcome.ERROR,
                ImageReason.REGISTRY_ERROR,
                f"tag '{chosen.name}' of {job.cfg.full_name} now points at "
                f"{chosen.digest or 'no digest'}, not {job.expected_digest}",
                chosen=job.cfg.with_tag(chosen.name, job.expected_digest).full_name_with_tag,
            )
            return
        live = job.live
        if strategy.pins_digest and chosen.digest:
            picked = match_for_digest_update(job.cfg, job.live_candidates, chosen.digest)
            if picked is not None:
                live = picked
        new_image = job.cfg.with_tag(chosen.name, chosen.digest)
        # Interned: the plans kept for the next cycle hold these texts, and the Applications
        # of one image (its environments) repeat them.
        new_text = sys.intern(new_image.full_name_with_tag)
        current = sys.intern(live.full_name_with_tag) if live is not None else None

        def result(outcome: Outcome, reason: ImageReason, message: str) -> None:
            self.results.append(
                ImageResult(
                    job.alias,
                    job.image,
                    current,
                    new_text,
                    outcome,
                    reason,
                    message,
                    warnings=job.warnings,
                )
            )

        kustomize_target = _has_kustomize_target(job)
        order = (scan.tags, scan.order_hint, job.policy.platforms)
        if self.holds is not None and live is not None:
            self.holds.observe(job.key, live.tag, strategy, *order)
        if live is not None and not needs_update(
            live, job.cfg, chosen, strategy, kustomize_target=kustomize_target, pin=job.pin_digest
        ):
            reset = job.cfg.with_tag(live.tag or chosen.name, live.digest)
            self.apply(_edits(self.working, job, reset))
            if young:  # a newer tag waits for minAge
                result(Outcome.SKIPPED, ImageReason.TOO_YOUNG, young)
                return
            result(
                Outcome.UP_TO_DATE,
                ImageReason.UP_TO_DATE,
                sys.intern(f"Image '{current}' already on latest allowed version"),
            )
            return
        held = (
            self.holds.check(
                job.key, live.tag if live else None, chosen, strategy, *order, self._target(job)
            )
            if self.holds is not None
            else None
        )
        if held is not None:
            self.results.append(
                ImageResult(
                    job.alias,
                    job.image,
                    current,
                    new_text,
                    Outcome.ERROR if held.error else Outcome.SKIPPED,
                    ImageReason.INVALID_CONFIG if held.error else ImageReason.HELD,
                    held.message,
                    held.detail,
                    warnings=job.warnings,
                )
            )
            return
        if live is not None and not job.allow_downgrade:
            lower = downgrade(
                strategy,
                live.tag,
                chosen,
                tags=scan.tags,
                order_hint=scan.order_hint,
                platforms=job.policy.platforms,
            )
            if lower is not None:
                result(
                    Outcome.SKIPPED,
                    ImageReason.WOULD_DOWNGRADE,
                    f"Not updating image '{current}' to '{new_text}': {lower} (update strategy "
                    f"{strategy}); nothing written. The registry may have listed only part of "
                    "its tags; allowDowngrade: true (annotation <alias>.allow-downgrade) "
                    "permits it",
                )
                return

        verification = job.verification
        if verification is not None and verification.enabled:
            # Fail closed: only a tag whose signature check passed is written, pinned to the
            # digest that was verified (see argocd_image_updater.verify).
            check = self.checks.get(job.key)
            if check is None or check.tag != chosen.name:
                self.results.append(
                    ImageResult(
                        job.alias,
                        job.image,
                        current,
                        new_text,
                        Outcome.ERROR,
                        ImageReason.VERIFICATION_FAILED,
                        f"Not updating image to '{new_text}': its signature was not verified",
                        SIGNATURE_CHECK_PENDING,
                        warnings=job.warnings,
                    )
                )
                return
            if check.error or not check.digest or chosen.digest not in ("", check.digest):
                result(
                    Outcome.ERROR,
                    ImageReason.VERIFICATION_FAILED,
                    f"Not updating image to '{new_text}': signature verification failed: "
                    + (check.error or f"verified digest {check.digest or 'missing'}"),
                )
                return
            chosen = dataclasses.replace(chosen, digest=check.digest)
            new_image = job.cfg.with_tag(chosen.name, chosen.digest)
            new_text = new_image.full_name_with_tag
        edits = _edits(self.working, job, new_image)
        if not any(edit.changed for edit in edits):
            self.managed.extend(edits)
            result(
                Outcome.UP_TO_DATE,
                ImageReason.ALREADY_SET,
                f"New image {new_text} already set in spec",
            )
            return
        refusal = self.rejected.get(job.key)
        if refusal is not None:
            result(Outcome.ERROR, ImageReason.VERIFICATION_FAILED, refusal)
            return

        self.apply(edits)
        old = current if current is not None else job.cfg.full_name
        change = ImageChange(
            alias=job.alias,
            image=job.cfg,
            old_tag=render_tag(live.tag, live.digest) if live is not None else "",
            new_tag=render_tag(chosen.name, chosen.digest),
            new_digest=chosen.digest,
            labels=chosen_labels(chosen, job.policy.platforms),
            edits=tuple(edit for edit in edits if edit.changed),
            old_digest=live.digest if live is not None else "",
            guard=(
                self.holds.guard(
                    job.key, chosen, strategy, *order, (job.kind, job.names, job.kustomize_name)
                )
                if self.holds is not None
                else None
            ),
        )
        self.changes.append(change)
        moved = f": tag '{change.moved_tag}' moved to another digest" if change.moved_tag else ""
        result(
            Outcome.UPDATED,
            ImageReason.UPDATED,
            f"Successfully updated image '{old}' to '{new_text}'{moved}",
        )


def plan_app(
    jobs: AppJobs,
    results: Mapping[ScanKey, ScanOutcome],
    *,
    rejected: Mapping[str, str] | None = None,
    checks: Mapping[str, SignatureCheck] | None = None,
    holds: HoldContext | None = None,
) -> AppPlan:
    """Phase 2 for one application (pure): the plan from the scans its jobs asked for.

    ``results`` maps scan keys to scan results or the exception the scan raised; when it is a
    :class:`ScanResults`, the tag choice is made once per (scan, policy) for all applications.
    ``rejected`` maps image keys (alias, or the image when there is no alias) to the reason an
    update of that image was refused; such images become errors and their edits are not made. ``checks`` maps
    image keys to the signature checks of their chosen tags: an image with verification enabled
    is updated only with a passed check of the tag chosen, to the verified digest; without one
    it is a ``verification-failed`` error whose ``detail`` is :data:`SIGNATURE_CHECK_PENDING`.
    ``holds`` (:mod:`argocd_image_updater.plan.holds`) keeps held images from being written.
    """
    planner = _Planner(jobs, rejected or {}, checks or {}, holds)
    for item in jobs.items:
        if isinstance(item, ImageResult):
            planner.results.append(item)
        else:
            try:
                planner.decide(item, results.get(item.scan_key), results)
            except Exception as err:  # one image never stops the others
                planner.result(
                    item,
                    Outcome.ERROR,
                    ImageReason.INTERNAL_ERROR,
                    f"could not decide the update of image '{item.key}': "
                    f"{type(err).__name__}: {err}",
                )
    charts = decide_charts(
        jobs.charts,
        lambda job: results.get(job.scan_key),
        lambda job, scan: _choose(results, job, scan),
        holds,
    )
    app = jobs.config.app
    return AppPlan.build(
        app_name=app.name,
        app_namespace=app.namespace,
        source_path=jobs.source_path,
        source_type=jobs.source_type.value,
        results=[*planner.results, *charts.results],
        changes=[*planner.changes, *charts.changes],
        managed=planner.managed,
        note=jobs.note,
        revisions=charts.revisions,
    )
