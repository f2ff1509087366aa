"""What ``argocd-image-updater test IMAGE`` does: which tag would be chosen, without any cluster.

The command line (options and help) is :mod:`argocd_image_updater.cli.test_cmd`, which imports
this module only when the command runs, so that ``test --help`` stays instant.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import click

from argocd_image_updater.cli.test_setup import (
    Explained,
    TestFailed,
    TestOptions,
    load_registries,
    registry_access,
)
from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.config.registries import RegistriesConfError
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.platform import Platform, PlatformFilter, runtime_platform
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.log import Logger, get_logger
from argocd_image_updater.policy.filters import parse_allow_tags
from argocd_image_updater.policy.min_age import TagAges, waiting_message
from argocd_image_updater.policy.select import (
    Policy,
    PolicyError,
    Selection,
    TagVerdict,
    choose,
    needs_metadata,
)
from argocd_image_updater.policy.strategies import parse_strategy
from argocd_image_updater.registry.credentials.errors import CredentialsError
from argocd_image_updater.registry.errors import RegistryError
from argocd_image_updater.registry.scanner import Scanner, ScanRequest

# Loaded where they are used: the signature checks with --verify-* only (cryptography).
if TYPE_CHECKING:
    from argocd_image_updater.verify.policy import TrustPolicy

EXIT_ERROR: Final = 1
EXIT_NO_CANDIDATE: Final = 3
EXIT_NOT_VERIFIED: Final = 5


def is_chart_reference(text: str) -> bool:
    """Whether ``text`` names a Helm chart (see :func:`argocd_image_updater.model.chart.
    is_chart_reference`); an image reference never contains ``://``, so only a text that does
    needs the chart module."""
    if "://" not in text:
        return False
    from argocd_image_updater.model.chart import is_chart_reference as names_a_chart

    return names_a_chart(text)


def build_policy(opts: TestOptions, image: ImageRef, log: Logger) -> Policy:
    strategy, warning = parse_strategy(opts.update_strategy)
    allow = parse_allow_tags(opts.allow_tags)
    for flag, problem in (("--update-strategy", warning), ("--allow-tags", allow.error)):
        if problem:
            log.warning(problem, field=flag)
            if opts.explain:
                click.echo(f"warning: {flag}: {problem}")
    platforms: list[Platform | str] = list(opts.platforms) or [runtime_platform()]
    try:
        min_age = parse_go_duration(opts.min_age) if opts.min_age else None
    except DurationError as err:
        raise PolicyError(f"--min-age: {err}") from None
    policy = Policy(
        strategy=strategy,
        constraint=opts.semver_constraint,
        allow=allow,
        ignore=opts.ignore_tags,
        platforms=PlatformFilter(platforms),
        min_age=min_age,
        min_age_from_created=opts.min_age_from == "created",
    )
    policy.validate(image.original or str(image))
    return policy


async def run_test(opts: TestOptions, log: Logger) -> Selection:
    """The tag ``opts`` would choose (see :func:`run_test_explained`)."""
    return (await run_test_explained(opts, log)).selection


async def run_test_explained(opts: TestOptions, log: Logger) -> Explained:
    if is_chart_reference(opts.image):
        from argocd_image_updater.cli.test_chart import run_chart_test

        return await run_chart_test(opts, log)
    try:
        image = ImageRef.parse(opts.image)
    except ImageRefError as err:
        raise TestFailed(str(err)) from None
    log = log.bind(image_name=image.name, image_registry=image.registry or "docker.io")
    try:
        registries = load_registries(opts.registries_conf_path, log)
    except (RegistriesConfError, OSError) as err:
        raise TestFailed(f"could not load registries configuration: {err}") from None
    try:
        policy = build_policy(opts, image, log)
    except PolicyError as err:
        raise TestFailed(str(err)) from None
    trust: TrustPolicy | None = None
    if opts.verifies:
        from argocd_image_updater.verify.explain import policy_from_files
        from argocd_image_updater.verify.policy import PolicyProblem

        try:
            trust = policy_from_files(
                opts.verify_key,
                opts.verify_cosign_repository,
                identity=opts.verify_identity,
                issuer=opts.verify_issuer,
                trusted_root_file=opts.verify_trusted_root,
            )
        except PolicyProblem as err:
            raise TestFailed(str(err)) from None

    endpoint, credentials, kube = await registry_access(
        opts, registries, image.registry, image.name
    )
    try:
        log.info("retrieving information about image", image_tag=image.tag or "")
        request = ScanRequest(
            endpoint=endpoint,
            repository=image.name,
            metadata=needs_metadata(policy, time_sorted=endpoint.tag_sort_mode.is_time_sorted),
            platforms=tuple(p for p in policy.platforms.platforms),
            only_tags=frozenset(policy.strategy.only_tags(policy.constraint)) or None,
            credentials=credentials,
        )
        log.info("Fetching available tags and metadata from registry")
        pinned = ""
        async with Scanner() as scanner:
            result = await scanner.scan(request)
            ages = TagAges(datetime.now(UTC)) if policy.min_age is not None else None
            selection = choose(policy, result.tags, result.order_hint, ages)
            if opts.pin_digest and not policy.strategy.pins_digest and selection.chosen:
                pinned = await scanner.tag_digest(
                    endpoint, image.name, selection.chosen.name, credentials
                )
    except (RegistryError, CredentialsError) as err:
        raise TestFailed(str(err)) from None
    finally:
        if opts.explain and credentials is not None and credentials.last_error:
            click.echo(f"credentials: login failed: {credentials.last_error}")
        if kube is not None:
            await kube.close()
    log.info("Found %d tags in registry", result.listed)
    verdict = None
    if trust is not None and selection.chosen is not None:
        from argocd_image_updater.verify.explain import verify_chosen

        chosen = selection.chosen
        digest = chosen.digest if policy.strategy.pins_digest else pinned
        verdict = await verify_chosen(
            endpoint,
            endpoint.repository_path(image.name),
            chosen.name,
            digest,
            credentials,
            trust,
            registries.endpoint_for,
            image.full_name,
        )
    return Explained(
        selection, policy, tuple(result.tags), result.order_hint, verdict, trust, pinned
    )


def print_explain(explained: Explained) -> None:
    """Every tag with its verdict: chosen first, grouped by verdict, in the strategy's order."""
    from argocd_image_updater.cli.explain import explain_lines, ordered_verdicts

    verdicts = ordered_verdicts(
        explained.selection,
        explained.policy.strategy,
        explained.tags,
        explained.policy.platforms,
        explained.order_hint,
    )
    for line in explain_lines(verdicts):
        click.echo(line)
    waiting = waiting_message(explained.selection.eligible)
    if waiting:
        click.echo(waiting)
    if explained.verdict is not None and explained.trust is not None:
        from argocd_image_updater.verify.explain import verdict_lines

        for line in verdict_lines(explained.verdict, explained.trust):
            click.echo(line)


def run_test_command(image: str, loglevel: str, **kwargs: Any) -> None:
    """What ``test IMAGE`` does once its options are parsed (exits with the documented status)."""
    try:
        logging_setup.setup(loglevel, "text")
    except logging_setup.LogConfigError as err:
        raise click.BadParameter(str(err), param_hint="--loglevel") from None
    platforms = tuple(p.strip() for item in kwargs.pop("platforms") for p in item.split(",") if p)
    opts = TestOptions(
        image=image, platforms=platforms, ignore_tags=tuple(kwargs.pop("ignore_tags")), **kwargs
    )
    log = get_logger("test", command="test")
    try:
        explained = asyncio.run(run_test_explained(opts, log))
    except TestFailed as err:
        log.error(str(err))
        sys.exit(EXIT_ERROR)
    if opts.explain:
        print_explain(explained)
    selection = explained.selection
    if selection.chosen is None:
        log.info("no newer version of image found: %s", selection.summary)
        sys.exit(EXIT_NO_CANDIDATE)
    chosen = selection.chosen
    if is_chart_reference(image):
        from argocd_image_updater.cli.test_chart import chart_result

        log.info("latest image according to constraint is %s", chart_result(image, chosen.name))
        return
    parsed = ImageRef.parse(image)
    tag = chosen.name
    digest = chosen.digest if explained.policy.strategy.pins_digest else explained.pinned
    verdict = explained.verdict
    if verdict is not None:
        if not verdict.passed:
            log.error("signature verification failed: %s", verdict.error)
            sys.exit(EXIT_NOT_VERIFIED)
        digest = verdict.digest
    result = parsed.with_tag(tag, digest)
    log.info("latest image according to constraint is %s", result.full_name_with_tag)


__all__ = [
    "Explained",
    "TagVerdict",
    "TestOptions",
    "run_test",
    "run_test_command",
    "run_test_explained",
]
