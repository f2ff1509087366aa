"""``argocd-image-updater test`` for Helm charts and OCI artifacts: which version would be chosen.

``test oci://<registry>/<path>/<name>[:<constraint>]`` lists the repository's tags through the
registry scanner (``registries.conf``, ``--credentials``, ``--plain-http`` and cloud logins as
for images); ``test https://<helm repository>/<name>[:<constraint>]`` (``http://`` too) reads
the repository's ``index.yaml`` (anonymously). The constraint is the reference's, or
``--semver-constraint`` when given. Platforms do not apply; ``digest`` is refused.
"""

from __future__ import annotations

import dataclasses

import click

from argocd_image_updater.cli.test_setup import (
    Explained,
    TestFailed,
    TestOptions,
    load_registries,
    registry_access,
)
from argocd_image_updater.config.registries import RegistriesConfError
from argocd_image_updater.model.chart import ChartRef, ChartRefError, ChartSpec
from argocd_image_updater.model.update_config import UpdateSettings
from argocd_image_updater.observe.log import Logger
from argocd_image_updater.plan.charts import chart_policy
from argocd_image_updater.policy.select import PolicyError, choose, needs_metadata
from argocd_image_updater.registry.credentials import CredentialsError
from argocd_image_updater.registry.errors import RegistryError
from argocd_image_updater.registry.helmindex import HelmIndex, HelmIndexError
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater.registry.scanner import ScanResult as RegistryScan


def chart_ref(opts: TestOptions) -> ChartRef:
    try:
        ref = ChartRef.parse(opts.image)
    except ChartRefError as err:
        raise TestFailed(str(err)) from None
    if opts.semver_constraint:
        ref = dataclasses.replace(ref, constraint=opts.semver_constraint)
    return ref


async def run_chart_test(opts: TestOptions, log: Logger) -> Explained:
    ref = chart_ref(opts)
    log = log.bind(chart=ref.location)
    spec = ChartSpec(
        "",
        opts.image,
        UpdateSettings(
            strategy=opts.update_strategy,
            allow_tags=opts.allow_tags or None,
            ignore_tags=opts.ignore_tags or None,
        ),
        origin="command line",
    )
    try:
        policy, warnings = chart_policy(spec, ref)
    except PolicyError as err:
        raise TestFailed(str(err)) from None
    for warning in warnings:
        log.warning(warning)
        if opts.explain:
            click.echo(f"warning: {warning}")
    if not ref.is_oci:
        if opts.explain:
            click.echo("credentials: none (Helm repository index, anonymous)")
        index = HelmIndex()
        try:
            log.info("Fetching available versions from Helm repository index")
            found = await index.versions(ref.repository_url, ref.name, None)
        except HelmIndexError as err:
            raise TestFailed(str(err)) from None
        finally:
            await index.aclose()
        log.info("Found %d versions in Helm repository", found.listed)
        tags, hint = found.tags, None
    else:
        try:
            registries = load_registries(opts.registries_conf_path, log)
        except (RegistriesConfError, OSError) as err:
            raise TestFailed(f"could not load registries configuration: {err}") from None
        endpoint, credentials, kube = await registry_access(
            opts, registries, ref.registry, ref.repository
        )
        request = ScanRequest(
            endpoint=endpoint,
            repository=ref.repository,
            metadata=needs_metadata(policy, time_sorted=endpoint.tag_sort_mode.is_time_sorted),
            credentials=credentials,
        )
        try:
            log.info("Fetching available tags and metadata from registry")
            async with Scanner() as scanner:
                result: RegistryScan = await scanner.scan(request)
        except (RegistryError, CredentialsError) as err:
            raise TestFailed(str(err)) from None
        finally:
            if kube is not None:
                await kube.close()
        log.info("Found %d tags in registry", result.listed)
        tags, hint = result.tags, result.order_hint
    selection = choose(policy, tags, hint)
    return Explained(selection, policy, tuple(tags), hint)


def chart_result(image: str, version: str) -> str:
    """``<chart location>:<version>`` for the result line."""
    return ChartRef.parse(image).with_version(version)
