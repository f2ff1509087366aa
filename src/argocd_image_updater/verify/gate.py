"""The cycle's hook: plan an application, verify the tags chosen for images whose verification
is enabled, and plan again with the verdicts.

Fail closed by construction: the planner never produces a change for such an image without a
passed :class:`~argocd_image_updater.plan.model.SignatureCheck` for the very tag it chose, and a
passed check pins the write to the verified digest. Whatever goes wrong here (no verifier in this
mode, a Secret that cannot be read, a registry error, an unexpected exception) becomes the
image's ``verification-failed`` error with its cause; the running tag stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig, Verification
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, ScanKey
from argocd_image_updater.plan.model import SIGNATURE_CHECK_PENDING, AppPlan, SignatureCheck
from argocd_image_updater.verify.policy import (
    ConfigMapReader,
    PolicyProblem,
    TrustPolicy,
    resolve,
)
from argocd_image_updater.verify.verifier import Target, Verifier

EndpointFor = Callable[[str, str], RegistryEndpoint]
CredentialsFor = Callable[[RegistryEndpoint, str | None, str], CredentialProvider | None]


def policy_namespace(config: AppUpdateConfig) -> str:
    """The namespace of the ImageUpdater the configuration comes from (its Secrets only)."""
    kind, _, qualified = config.origin.partition(" ")
    if kind == "imageupdater" and "/" in qualified:
        return qualified.partition("/")[0]
    return config.app.namespace


def _unavailable(chosen: str) -> SignatureCheck:
    try:
        tag = ImageRef.parse(chosen).tag or ""
    except ImageRefError:
        tag = ""
    return SignatureCheck(tag, error="signature verification is not available here")


@dataclass(slots=True)
class Gate:
    """What verification needs from the cycle; ``verifier`` ``None`` refuses every image that
    asks for verification. One gate serves one cycle: each policy's key Secret and trusted root
    ConfigMap are read once."""

    verifier: Verifier | None
    endpoint_for: EndpointFor
    credentials_for: CredentialsFor
    secrets: SecretReader | None
    config_maps: ConfigMapReader | None = None
    _policies: dict[tuple[Verification, str], asyncio.Task[TrustPolicy]] = field(
        default_factory=dict
    )

    async def policy(self, verification: Verification, namespace: str) -> TrustPolicy:
        key = (verification, namespace)
        task = self._policies.get(key)
        if task is None:
            task = asyncio.ensure_future(
                resolve(verification, namespace, self.secrets, self.config_maps)
            )
            self._policies[key] = task
        return await asyncio.shield(task)

    async def check(self, config: AppUpdateConfig, job: ImageJob, chosen: str) -> SignatureCheck:
        try:
            ref = ImageRef.parse(chosen)
        except ImageRefError as err:
            return SignatureCheck("", error=f"chosen reference '{chosen}': {err}")
        tag = ref.tag or ""
        if self.verifier is None:
            return _unavailable(chosen)
        verification = job.verification
        assert verification is not None
        namespace = policy_namespace(config)
        try:
            policy = await self.policy(verification, namespace)
            credentials = self.credentials_for(job.endpoint, job.pull_secret, config.app.namespace)
            verdict = await self.verifier.verify(
                Target(
                    job.endpoint,
                    job.repository,
                    tag,
                    ref.digest,
                    credentials,
                    name=job.cfg.full_name,
                ),
                policy,
                self.endpoint_for,
                lambda endpoint: self.credentials_for(endpoint, None, config.app.namespace),
            )
        except PolicyProblem as err:
            return SignatureCheck(tag, error=str(err))
        except Exception as err:  # fail closed: any failure refuses this image only
            return SignatureCheck(tag, error=f"{type(err).__name__}: {err}")
        return SignatureCheck(tag, verdict.digest if verdict.passed else "", verdict.error)


def _pending(jobs: AppJobs, plan: AppPlan) -> list[tuple[ImageJob, str]]:
    """The images of ``plan`` whose chosen tag waits for its signature check."""
    if not any(result.detail == SIGNATURE_CHECK_PENDING for result in plan.results):
        return []
    by_key = {job.key: job for job in jobs.jobs}
    return [
        (by_key[result.alias or result.image], result.chosen or "")
        for result in plan.results
        if result.detail == SIGNATURE_CHECK_PENDING and (result.alias or result.image) in by_key
    ]


def unverified_plan(
    jobs: AppJobs, scans: Mapping[ScanKey, Any], holds: HoldContext | None = None
) -> tuple[AppPlan, bool]:
    """The application's plan before any signature check, and whether one is pending (then
    :func:`verified_plan` completes it; else it is the verified plan already)."""
    plan = plan_app(jobs, scans, holds=holds)
    return plan, bool(_pending(jobs, plan))


async def verified_plan(
    config: AppUpdateConfig,
    jobs: AppJobs,
    scans: Mapping[ScanKey, Any],
    gate: Gate | None,
    holds: HoldContext | None = None,
    unverified: AppPlan | None = None,
) -> AppPlan:
    """The application's plan, its updates of verified images pinned to the verified digest;
    ``holds`` keeps held images from being written. ``unverified``: the plan before any check,
    when :func:`unverified_plan` made it already."""
    plan = unverified if unverified is not None else plan_app(jobs, scans, holds=holds)
    pending = _pending(jobs, plan)
    if not pending:
        return plan
    if gate is None:
        checks = {job.key: _unavailable(chosen) for job, chosen in pending}
    else:
        verdicts = await asyncio.gather(*(gate.check(config, job, c) for job, c in pending))
        checks = {job.key: check for (job, _), check in zip(pending, verdicts, strict=True)}
    return plan_app(jobs, scans, checks=checks, holds=holds)
