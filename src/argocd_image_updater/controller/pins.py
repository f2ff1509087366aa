"""The cycle's digest pinning step (``pinDigest``): between the scans and the plans, ask the
registry for the digest of each tag chosen for a pinned image.

One request per distinct (registry, repository, credentials, chosen tag) of the cycle: a
manifest ``HEAD`` that accepts every manifest type, so a multi-arch image gives the digest of
its index (what ``docker pull <tag>`` resolves on every architecture), none when a
``newest-build`` scan of the same cycle already asked about that tag. A failure is the pinned
images' ``registry-error``; the other images are planned as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.jobs import AppJobs
from argocd_image_updater.plan.pins import PinRequest, wanted_pins
from argocd_image_updater.registry.scanner import Scanner

log = get_logger("cycle")

CredentialsFor = Callable[[RegistryEndpoint, str | None, str], CredentialProvider | None]


async def pin_digests(
    apps: Sequence[tuple[AppJobs, str]],
    results: ScanResults,
    scanner: Scanner,
    credentials_for: CredentialsFor,
    scan_round: int | None = None,
    concurrency: int = 16,
) -> int:
    """Record in ``results`` the digest of every tag chosen for a pinned image (each app's
    jobs with its namespace); the number of tags asked about."""
    wanted = wanted_pins(apps, results)
    pins = _Pins(scanner, credentials_for, scan_round, asyncio.Semaphore(concurrency))
    await asyncio.gather(*(pins.pin(request, results) for request in wanted))
    return len(wanted)


class _Pins:
    """The digest requests of one call of :func:`pin_digests`, with bounded concurrency."""

    def __init__(
        self,
        scanner: Scanner,
        credentials_for: CredentialsFor,
        scan_round: int | None,
        limit: asyncio.Semaphore,
    ) -> None:
        self.scanner = scanner
        self.credentials_for = credentials_for
        self.scan_round = scan_round
        self.limit = limit

    async def pin(self, request: PinRequest, results: ScanResults) -> None:
        job = request.job
        async with self.limit:
            digest: str | Exception
            try:
                provider = self.credentials_for(job.endpoint, job.pull_secret, request.namespace)
                digest = await self.scanner.tag_digest(
                    job.endpoint, job.repository, request.tag, provider, self.scan_round
                )
            except Exception as err:  # reported per image, never fatal
                log.error(
                    "could not get the digest of %s/%s:%s to pin it: %s",
                    job.endpoint.host,
                    job.repository,
                    request.tag,
                    str(err),
                    image_registry=job.endpoint.prefix,
                    image_name=job.repository,
                    image_tag=request.tag,
                )
                digest = err
        results.pin(results.pin_key(job.scan_key, request.tag), digest)
